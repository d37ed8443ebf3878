#include <doctest/doctest.h>

#include <initializer_list>
#include <map>
#include <utility>

#include "core/analysis.hpp"
#include "tests/support/request_records.hpp"

using namespace llmrepro::core;
using llmrepro::testing::failed_record;
using llmrepro::testing::numbered_suite;
using llmrepro::testing::ok_record;

namespace {

// A completion from (token, top1-top2 gap) pairs; the top-1 candidate is the token itself.
Completion completion_of(std::initializer_list<std::pair<const char*, double>> tokens) {
  Completion completion;
  completion.has_logprobs = true;
  for (const auto& [text, gap] : tokens) {
    TokenLogprob token;
    token.token = text;
    token.logprob = -0.1;
    token.top = {{text, -0.1}, {"alt", -0.1 - gap}};
    completion.text += text;
    completion.tokens.push_back(token);
  }
  return completion;
}

} // namespace

TEST_CASE("analyse") {
  // p0: stable, large gaps. p1: diverges at token 2 where the reference's gap is 0.02.
  // p2: unstable with large gaps everywhere (a miss of the predictor). p3: fragile but stable.
  const auto a = completion_of({{"The", 1.0}, {" sky", 1.0}, {" is", 0.02}, {" blue", 1.0}});
  const auto b = completion_of({{"The", 1.0}, {" sky", 1.0}, {" was", 0.02}, {" grey", 1.0}});
  const auto c = completion_of({{"One", 0.5}, {" two", 0.5}});
  const auto d = completion_of({{"One", 0.5}, {" three", 0.5}});
  const auto e = completion_of({{"Yes", 0.01}});
  std::vector<RequestRecord> records;
  for (int r = 0; r < 3; ++r) records.push_back(ok_record(0, 1, r, completion_of({{"Hi", 2.0}})));
  records.push_back(ok_record(1, 1, 0, a));
  records.push_back(ok_record(1, 8, 0, b));
  records.push_back(ok_record(1, 8, 1, a));
  records.push_back(ok_record(1, 8, 2, b));
  records.push_back(ok_record(1, 1, 1, a));
  records.push_back(ok_record(2, 8, 0, d));
  records.push_back(ok_record(2, 1, 0, c));
  records.push_back(ok_record(3, 1, 0, e));
  records.push_back(failed_record(3, 8, 0, "HTTP 500 after 4 attempts", 4));

  const AuditAnalysis analysis = analyse(numbered_suite(4), records, AnalysisConfig{});
  REQUIRE(analysis.prompts.size() == 4);

  SUBCASE("a stable prompt") {
    const auto& p = analysis.prompts[0];
    CHECK(p.id == "p0");
    CHECK(p.runs == 3);
    CHECK(p.unique_completions == 1);
    CHECK_FALSE(p.unstable);
    CHECK_FALSE(p.first_divergence.has_value());
    CHECK(p.min_gap == doctest::Approx(2.0));
    CHECK(p.min_gap_position == 0);
    CHECK(p.fragile == false);
    CHECK(p.status == PromptStatus::stable);
  }
  SUBCASE("the modal completion is the reference; divergence is read off it") {
    const auto& p = analysis.prompts[1];
    CHECK(p.runs == 5);
    CHECK(p.unique_completions == 2);
    CHECK(p.unstable);
    REQUIRE(p.completions.size() == 2);
    CHECK(p.completions[0].is_reference);
    CHECK(p.completions[0].text == "The sky is blue");
    CHECK(p.completions[0].count == 3);
    CHECK(p.completions[1].count == 2);
    CHECK(p.completions[1].divergence == 2);
    CHECK(p.first_divergence == 2);
    CHECK(*p.gap_at_divergence == doctest::Approx(0.02));
    CHECK(p.min_gap_position == 2);
    CHECK(p.fragile == true);
    CHECK(p.status == PromptStatus::unstable);
    CHECK(p.divergence_kind == DivergenceKind::token);
    REQUIRE(p.candidates_at_divergence.size() == 2);
    CHECK(p.candidates_at_divergence[0].token == " is");
    REQUIRE(p.by_concurrency.size() == 2);
    CHECK(p.by_concurrency[0].concurrency == 1);
    CHECK(p.by_concurrency[0].unique_completions == 1);
    CHECK_FALSE(p.by_concurrency[0].first_divergence.has_value());
    CHECK(p.by_concurrency[1].concurrency == 8);
    CHECK(p.by_concurrency[1].runs == 3);
    CHECK(p.by_concurrency[1].unique_completions == 2);
    CHECK(p.by_concurrency[1].first_divergence == 2);
    CHECK(p.by_concurrency[0].status == PromptStatus::stable);
    CHECK(p.by_concurrency[1].status == PromptStatus::unstable);
    // Level 8's modal completion (" was grey", 2 of 3) is not the serial one.
    CHECK_FALSE(p.by_concurrency[0].differs_from_serial);
    CHECK(p.by_concurrency[1].differs_from_serial);
  }
  SUBCASE("ties go to the completion first seen at the lowest level") {
    const auto& p = analysis.prompts[2];
    CHECK(p.completions[0].text == "One two"); // seen at c=1, though recorded after c=8's
    CHECK(p.first_divergence == 1);
    CHECK(*p.gap_at_divergence == doctest::Approx(0.5));
    CHECK(p.fragile == false);
    // One run per level: neither level alone is evidence, but the two differ.
    CHECK(p.status == PromptStatus::unstable);
    CHECK(p.by_concurrency[0].status == PromptStatus::inconclusive);
    CHECK(p.by_concurrency[1].status == PromptStatus::inconclusive);
    CHECK(p.by_concurrency[1].differs_from_serial);
  }
  SUBCASE("failures are counted, not compared, and never make a prompt stable") {
    const auto& p = analysis.prompts[3];
    CHECK(p.runs == 1);
    CHECK(p.failed == 1);
    CHECK(p.unique_completions == 1);
    CHECK(p.fragile == true);
    CHECK_FALSE(p.unstable);
    CHECK(p.status == PromptStatus::inconclusive);
  }
  SUBCASE("summary") {
    const auto& s = analysis.summary;
    CHECK(s.prompts == 4);
    CHECK(s.requests == 12);
    CHECK(s.failed_requests == 1);
    CHECK(s.unstable_prompts == 2);
    CHECK(s.stable_prompts == 1);
    CHECK(s.inconclusive_prompts == 1);
    CHECK(s.prompts_with_two_completions == 3);
    CHECK(s.fragile_prompts == 2);
    CHECK(s.fragility_unknown_prompts == 0);
    CHECK(s.tarr == doctest::Approx(0.25)); // only p0: p3 had a failure
    // p3 is inconclusive: its stability is unknown, so it stays out of the predictor.
    CHECK(s.predictor.true_positive == 1); // p1
    CHECK(s.predictor.false_positive == 0);
    CHECK(s.predictor.false_negative == 1); // p2
    CHECK(s.predictor.true_negative == 1);  // p0
    CHECK(*s.predictor.precision == doctest::Approx(1.0));
    CHECK(*s.predictor.recall == doctest::Approx(0.5));
    REQUIRE(s.failure_reasons.size() == 1);
    CHECK(s.failure_reasons[0].first == "HTTP 500 after 4 attempts");
    CHECK(s.failure_reasons[0].second == 1);
    REQUIRE(s.by_concurrency.size() == 2);
    CHECK(s.by_concurrency[0].concurrency == 1);
    CHECK(s.by_concurrency[0].runs == 7);
    CHECK(s.by_concurrency[0].unstable_prompts == 0);
    CHECK(s.by_concurrency[1].concurrency == 8);
    CHECK(s.by_concurrency[1].runs == 4);
    CHECK(s.by_concurrency[1].failed == 1);
    CHECK(s.by_concurrency[1].unstable_prompts == 1);
    CHECK(s.by_concurrency[0].inconclusive_prompts == 2); // p2 and p3 ran once at c=1
    CHECK(s.by_concurrency[1].inconclusive_prompts == 2); // p2 ran once, p3 failed
    CHECK(s.by_concurrency[0].differs_from_serial_prompts == 0);
    CHECK(s.by_concurrency[1].differs_from_serial_prompts == 2); // p1 and p2
  }
}

TEST_CASE("analyse without logprobs") {
  Completion x;
  x.text = "Paris";
  Completion y;
  y.text = "Paris.";
  std::vector<RequestRecord> records{ok_record(0, 1, 0, x), ok_record(0, 1, 1, x),
                                     ok_record(0, 1, 2, y)};
  const auto analysis = analyse(numbered_suite(1), records, AnalysisConfig{});
  const auto& p = analysis.prompts.at(0);
  CHECK(p.unique_completions == 2);
  CHECK_FALSE(p.has_logprobs);
  CHECK(p.first_divergence == 5); // characters of the text
  CHECK(p.text_mode);
  CHECK(p.divergence_kind == DivergenceKind::length); // "Paris" ends where "Paris." goes on
  CHECK_FALSE(p.gap_at_divergence.has_value());
  CHECK_FALSE(p.fragile.has_value());
  CHECK(p.fragility_reason == "text mode: a completion came back without tokens");
  CHECK(analysis.summary.fragility_unknown_prompts == 1);
  CHECK(analysis.summary.prompts_without_logprobs == 1);
  CHECK(analysis.summary.predictor.true_positive + analysis.summary.predictor.false_negative == 0);
}

TEST_CASE("text mode counts divergence in characters") {
  Completion x;
  x.text = "caf\xC3\xA9 au lait";
  Completion y;
  y.text = "caf\xC3\xA8 noir";
  const std::vector<RequestRecord> records{ok_record(0, 1, 0, x), ok_record(0, 1, 1, x),
                                           ok_record(0, 1, 2, y)};
  const auto analysis = analyse(numbered_suite(1), records, AnalysisConfig{});
  const auto& p = analysis.prompts.at(0);
  CHECK(p.text_mode);
  CHECK(p.first_divergence == 3); // "caf", then é against è (the bytes differ at the second)
  CHECK(p.divergence_kind == DivergenceKind::token);

  Completion z;
  z.text = "caf\xC3\xA9";
  const std::vector<RequestRecord> shorter{ok_record(0, 1, 0, x), ok_record(0, 1, 1, x),
                                           ok_record(0, 1, 2, z)};
  const auto shorter_analysis = analyse(numbered_suite(1), shorter, AnalysisConfig{});
  const auto& q = shorter_analysis.prompts.at(0);
  CHECK(q.first_divergence == 4);
  CHECK(q.divergence_kind == DivergenceKind::length); // "café" ends where "café au lait" goes on
}

TEST_CASE("analyse window") {
  const auto a = completion_of({{"a", 1.0}, {"b", 1.0}, {"c", 0.01}});
  std::vector<RequestRecord> records{ok_record(0, 1, 0, a)};
  AnalysisConfig config;
  config.fragile_window = 2;
  CHECK(analyse(numbered_suite(1), records, config).prompts[0].fragile == false);
  config.fragile_window = 3;
  CHECK(analyse(numbered_suite(1), records, config).prompts[0].fragile == true);
  config.fragile_gap = 0.005;
  CHECK(analyse(numbered_suite(1), records, config).prompts[0].fragile == false);
}

TEST_CASE("analyse throughput") {
  auto a = completion_of({{"a", 1.0}, {"b", 1.0}});
  std::vector<RequestRecord> records{ok_record(0, 1, 0, a), ok_record(0, 1, 1, a)};
  records[0].outcome.started_ms = 1000;
  records[0].outcome.finished_ms = 1500;
  records[1].outcome.started_ms = 1500;
  records[1].outcome.finished_ms = 2000;
  const auto analysis = analyse(numbered_suite(1), records, AnalysisConfig{});
  CHECK(analysis.summary.by_concurrency[0].tokens_per_second == doctest::Approx(4.0));
  CHECK(analysis.summary.by_concurrency[0].mean_latency_ms == doctest::Approx(500.0));
}

TEST_CASE("stability needs evidence") {
  const auto a = completion_of({{"a", 1.0}});
  SUBCASE("one successful completion is inconclusive") {
    const std::vector<RequestRecord> records{ok_record(0, 1, 0, a)};
    CHECK(analyse(numbered_suite(1), records, AnalysisConfig{}).prompts[0].status ==
          PromptStatus::inconclusive);
  }
  SUBCASE("no successful completion is inconclusive, with unknown fragility") {
    const std::vector<RequestRecord> records{failed_record(0, 1, 0), failed_record(0, 1, 1)};
    const auto analysis = analyse(numbered_suite(1), records, AnalysisConfig{});
    const auto& p = analysis.prompts[0];
    CHECK(p.status == PromptStatus::inconclusive);
    CHECK_FALSE(p.fragile.has_value());
    CHECK(p.fragility_reason == "no successful completion");
    CHECK(analysis.summary.stable_prompts == 0);
    CHECK(analysis.summary.inconclusive_prompts == 1);
    CHECK(analysis.summary.prompts_with_two_completions == 0);
    CHECK(analysis.summary.tarr == doctest::Approx(0.0));
  }
  SUBCASE("always X serially, always Y batched: unstable though each level agrees") {
    const auto b = completion_of({{"b", 1.0}});
    std::vector<RequestRecord> records;
    for (int r = 0; r < 3; ++r) {
      records.push_back(ok_record(0, 1, r, a));
      records.push_back(ok_record(0, 16, r, b));
    }
    const auto analysis = analyse(numbered_suite(1), records, AnalysisConfig{});
    const auto& p = analysis.prompts[0];
    CHECK(p.status == PromptStatus::unstable);
    CHECK(p.by_concurrency[0].status == PromptStatus::stable);
    CHECK(p.by_concurrency[1].status == PromptStatus::stable);
    CHECK(p.by_concurrency[1].differs_from_serial);
    CHECK(analysis.summary.by_concurrency[0].unstable_prompts == 0);
    CHECK(analysis.summary.by_concurrency[1].unstable_prompts == 0);
    CHECK(analysis.summary.by_concurrency[1].differs_from_serial_prompts == 1);
    CHECK(analysis.summary.unstable_prompts == 1);
  }
}

TEST_CASE("identity is tokens and text") {
  // Byte-fragment tokens returned as U+FFFD: equal token strings, different texts.
  auto x = completion_of({{"\xEF\xBF\xBD", 1.0}, {"!", 1.0}});
  auto y = x;
  x.text = "\xC3\xA9!";
  y.text = "\xC3\xA8!";
  const std::vector<RequestRecord> records{ok_record(0, 1, 0, x), ok_record(0, 1, 1, x),
                                           ok_record(0, 1, 2, y)};
  const auto analysis = analyse(numbered_suite(1), records, AnalysisConfig{});
  const auto& p = analysis.prompts[0];
  CHECK(p.unique_completions == 2);
  CHECK(p.status == PromptStatus::unstable);
  CHECK(p.first_divergence == 0); // the first token covers the byte where the texts part
  CHECK(p.token_text_mismatch == 3);
  CHECK(analysis.summary.token_text_mismatch_prompts == 1);
  CHECK_FALSE(p.text_mode);
}

TEST_CASE("token bytes") {
  CHECK(token_bytes("bytes:\\xe2\\x80") == "\xE2\x80");
  CHECK(token_bytes("bytes: plain") == "bytes: plain");
  CHECK(token_bytes("hello") == "hello");
  Completion c = completion_of({{"bytes:\\xc3", 1.0}, {"bytes:\\xa9", 1.0}});
  c.text = "\xC3\xA9";
  CHECK(tokens_match_text(c));
  c.text = "e";
  CHECK_FALSE(tokens_match_text(c));
}

TEST_CASE("an empty completion is an empty token sequence, not text mode") {
  const auto a = completion_of({{"a", 1.0}});
  Completion empty;
  empty.has_logprobs = true;
  const std::vector<RequestRecord> records{ok_record(0, 1, 0, a), ok_record(0, 1, 1, a),
                                           ok_record(0, 1, 2, empty)};
  const auto analysis = analyse(numbered_suite(1), records, AnalysisConfig{});
  const auto& p = analysis.prompts[0];
  CHECK_FALSE(p.text_mode);
  CHECK(p.unique_completions == 2);
  CHECK(p.first_divergence == 0);
  CHECK(p.divergence_kind == DivergenceKind::length);
  CHECK_FALSE(p.gap_at_divergence.has_value()); // the reference's candidates lack the end
  CHECK(p.fragile == false);
}

TEST_CASE("fragility is three-valued") {
  AnalysisConfig config;
  config.fragile_window = 3;
  const auto run = [&](const Completion& c) {
    const std::vector<RequestRecord> records{ok_record(0, 1, 0, c), ok_record(0, 1, 1, c)};
    return analyse(numbered_suite(1), records, config);
  };
  SUBCASE("one candidate per token: unknown") {
    Completion c = completion_of({{"a", 1.0}, {"b", 1.0}});
    for (auto& token : c.tokens) token.top.resize(1);
    const auto analysis = run(c);
    const auto& p = analysis.prompts[0];
    CHECK_FALSE(p.fragile.has_value());
    CHECK(p.fragility_reason == "fewer than two candidates at 2 of 2 positions");
    CHECK(p.min_candidates == 1);
    CHECK(analysis.summary.fragility_unknown_prompts == 1);
    CHECK(analysis.summary.predictor.true_negative == 0); // unknown stays out
  }
  SUBCASE("one unknown gap among large ones: unknown") {
    Completion c = completion_of({{"a", 1.0}, {"b", 1.0}, {"c", 1.0}});
    c.tokens[1].top[1].logprob = k_unknown_logprob;
    const auto analysis = run(c);
    const auto& p = analysis.prompts[0];
    CHECK_FALSE(p.fragile.has_value());
    CHECK(p.fragility_reason == "a logprob that was not a number at 1 of 3 positions");
  }
  SUBCASE("both kinds of unknown") {
    Completion c = completion_of({{"a", 1.0}, {"b", 1.0}, {"c", 1.0}});
    c.tokens[1].top[0].logprob = k_unknown_logprob;
    c.tokens[2].top.resize(1);
    const auto analysis = run(c);
    CHECK(analysis.prompts[0].fragility_reason ==
          "gap unknown at 2 of 3 positions (1 with fewer than two candidates, 1 with a logprob "
          "that was not a number)");
  }
  SUBCASE("a known gap below τ is fragile whatever else is unknown") {
    Completion c = completion_of({{"a", 0.01}, {"b", 1.0}});
    c.tokens[1].top.clear();
    CHECK(run(c).prompts[0].fragile == true);
  }
  SUBCASE("unknown beyond the window does not matter") {
    Completion c = completion_of({{"a", 1.0}, {"b", 1.0}, {"c", 1.0}, {"d", 1.0}});
    c.tokens[3].top.clear();
    CHECK(run(c).prompts[0].fragile == false);
  }
}

TEST_CASE("greedy check") {
  Completion c = completion_of({{"a", 1.0}, {"b", 1.0}, {"c", 1.0}});
  // Position 1: the sampled token ranks below another candidate; position 2: it is absent.
  c.tokens[1].top = {{"x", -0.05}, {"b", -0.1}};
  c.tokens[2].top = {{"x", -0.05}, {"y", -0.2}};
  CHECK(c.tokens[0].greedy() == true);
  CHECK(c.tokens[1].greedy() == false);
  CHECK(c.tokens[2].greedy() == false);
  TokenLogprob tie{"b", -0.1, {{"a", -0.1}, {"b", -0.1}}};
  CHECK(tie.greedy() == true);
  const std::vector<RequestRecord> records{ok_record(0, 1, 0, c), ok_record(0, 1, 1, c)};
  const auto analysis = analyse(numbered_suite(1), records, AnalysisConfig{});
  CHECK(analysis.prompts[0].non_greedy_tokens == 2); // counted once per distinct completion
  CHECK(analysis.summary.non_greedy_prompts == 1);
}

TEST_CASE("who answered and how each completion ended") {
  auto a = completion_of({{"a", 1.0}});
  auto b = completion_of({{"b", 1.0}});
  a.model = "m-a";
  a.finish_reason = "stop";
  a.system_fingerprint = "fp1";
  b.model = "m-b";
  b.finish_reason = "length";
  b.system_fingerprint = "fp2";
  a.numbers.nan = 1;
  b.numbers.negative_infinity = 2;
  const std::vector<RequestRecord> records{ok_record(0, 1, 0, a), ok_record(0, 1, 1, b),
                                           ok_record(0, 1, 2, a)};
  const auto analysis = analyse(numbered_suite(1), records, AnalysisConfig{});
  const auto& p = analysis.prompts[0];
  REQUIRE(p.completions.size() == 2);
  CHECK(p.completions[0].models == std::map<std::string, int>{{"m-a", 2}});
  CHECK(p.completions[0].finish_reasons == std::map<std::string, int>{{"stop", 2}});
  CHECK(p.completions[1].models == std::map<std::string, int>{{"m-b", 1}});
  CHECK(p.completions[1].fingerprints == std::map<std::string, int>{{"fp2", 1}});
  CHECK(analysis.summary.models_seen == std::map<std::string, int>{{"m-a", 2}, {"m-b", 1}});
  CHECK(p.numbers.nan == 2);
  CHECK(p.numbers.negative_infinity == 2);
  CHECK(analysis.summary.numbers.total() == 4);
}

namespace {

// The prompt's analysis from `records` both ways: add_prompt, and streamed (begin_prompt,
// add_run in analysis_order, end_prompt), each record's tokens cleared once added, as a streamed
// load drops them.
std::pair<PromptAnalysis, PromptAnalysis> analysed_both_ways(const std::vector<RequestRecord>& in) {
  const Suite suite = numbered_suite(1);
  AnalysisBuilder whole(suite, AnalysisConfig{});
  std::vector<const RequestRecord*> pointers;
  for (const auto& record : in) pointers.push_back(&record);
  const PromptAnalysis* added = whole.add_prompt(0, pointers);
  REQUIRE(added != nullptr);

  std::vector<RequestRecord> records = in;
  pointers.clear();
  for (const auto& record : records) pointers.push_back(&record);
  AnalysisBuilder streamed(suite, AnalysisConfig{});
  streamed.begin_prompt(0);
  for (std::size_t position : analysis_order(pointers)) {
    streamed.add_run(records[position], position);
    records[position].outcome.completion.tokens.clear();
  }
  const PromptAnalysis* ended = streamed.end_prompt(pointers);
  REQUIRE(ended != nullptr);
  return {*added, *ended};
}

} // namespace

TEST_CASE("the first of a completion is the first recorded at the lowest level, whatever order "
          "the repeats came in") {
  // Recorded: repeat 2 (B), repeat 0 (A), repeat 1 (B), then level 8's repeat 0 (A). The runs
  // are added by repeat, so B's repeat 1 comes before its repeat 2, which was recorded first.
  auto b_first = completion_of({{"x", 1.0}, {"b", 0.5}});
  b_first.tokens[1].logprob = -0.25;
  b_first.tokens[1].top[0].logprob = -0.25;
  const auto a = completion_of({{"x", 1.0}, {"a", 0.5}});
  const auto b_later = completion_of({{"x", 1.0}, {"b", 0.5}});
  const std::vector<RequestRecord> records{ok_record(0, 1, 2, b_first), ok_record(0, 1, 0, a),
                                           ok_record(0, 1, 1, b_later), ok_record(0, 8, 0, a)};
  const auto [whole, streamed] = analysed_both_ways(records);
  for (const PromptAnalysis* p : {&whole, &streamed}) {
    CAPTURE(p == &streamed);
    REQUIRE(p->completions.size() == 2);
    // A tie (2 and 2): the reference is the one recorded first at level 1, B.
    CHECK(p->completions[0].text == "xb");
    CHECK(p->completions[0].is_reference);
    CHECK(p->completions[0].tokens[1].logprob == -0.25); // repeat 2's, the first recorded
    CHECK(p->completions[1].text == "xa");
    CHECK(p->completions[1].divergence == 1);
    CHECK(p->first_divergence == 1);
    REQUIRE(p->by_concurrency.size() == 2);
    // The drift reference is the lowest repeat at level 1 (A): level 1's B runs leave it at 1.
    CHECK(p->by_concurrency[0].divergence_from_reference == 1);
    CHECK_FALSE(p->by_concurrency[1].divergence_from_reference.has_value());
    CHECK(p->by_concurrency[1].differs_from_serial); // level 8 saw only A
    // B's two runs differ in one logprob by 0.15: the prompt's drift spans them.
    CHECK(p->logprob_drift.max_abs == doctest::Approx(0.15));
    CHECK(p->by_concurrency[1].logprob_drift.positions_compared == 0);
  }
}

TEST_CASE("a run without tokens joins the completions of one text") {
  // "xb" came back as x+b and as xb+(nothing): two token sequences, one text. One run without
  // tokens puts the prompt in text mode, where they are one completion.
  const auto split = completion_of({{"x", 1.0}, {"b", 0.5}});
  const auto whole_token = completion_of({{"xb", 1.0}});
  Completion no_tokens;
  no_tokens.text = "xc";
  const std::vector<RequestRecord> records{ok_record(0, 1, 1, whole_token),
                                           ok_record(0, 1, 0, split), ok_record(0, 1, 2, no_tokens),
                                           ok_record(0, 4, 0, whole_token)};
  const auto [whole, streamed] = analysed_both_ways(records);
  for (const PromptAnalysis* p : {&whole, &streamed}) {
    CAPTURE(p == &streamed);
    CHECK(p->text_mode);
    CHECK(p->unique_completions == 2);
    REQUIRE(p->completions.size() == 2);
    CHECK(p->completions[0].text == "xb");
    CHECK(p->completions[0].count == 3);
    CHECK(p->completions[0].count_by_concurrency == std::map<int, int>{{1, 2}, {4, 1}});
    REQUIRE(p->completions[0].tokens.size() == 1); // the first recorded: the whole token's
    CHECK(p->completions[1].text == "xc");
    CHECK(p->completions[1].divergence == 1); // in characters
    REQUIRE(p->by_concurrency.size() == 2);
    CHECK(p->by_concurrency[0].unique_completions == 2);
    // The drift reference is repeat 0 at level 1 (x+b): by text, only "xc" leaves it.
    CHECK(p->by_concurrency[0].divergence_from_reference == 1);
    CHECK_FALSE(p->by_concurrency[1].divergence_from_reference.has_value());
  }
}
