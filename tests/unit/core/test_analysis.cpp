#include <doctest/doctest.h>

#include <initializer_list>
#include <utility>

#include "core/analysis.hpp"

using namespace llmrepro::core;

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

RequestRecord ok_record(int prompt, int concurrency, int repeat, Completion completion) {
  RequestRecord record;
  record.planned = {0, prompt, concurrency, ProbeKind::sweep, repeat};
  record.outcome.ok = true;
  record.outcome.attempts = 1;
  record.outcome.completion = std::move(completion);
  return record;
}

RequestRecord failed_record(int prompt, int concurrency, int repeat) {
  RequestRecord record;
  record.planned = {0, prompt, concurrency, ProbeKind::sweep, repeat};
  record.outcome.error = "HTTP 500 after 4 attempts";
  record.outcome.http_status = 500;
  record.outcome.attempts = 4;
  return record;
}

Suite suite_of(int prompts) {
  Suite suite;
  for (int i = 0; i < prompts; ++i) suite.prompts.push_back(Prompt{.id = "p" + std::to_string(i), .text = "x"});
  return suite;
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
  records.push_back(failed_record(3, 8, 0));

  const AuditAnalysis analysis = analyse(suite_of(4), records, AnalysisConfig{});
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
    CHECK_FALSE(p.fragile);
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
    CHECK(p.fragile);
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
  }
  SUBCASE("ties go to the completion first seen at the lowest level") {
    const auto& p = analysis.prompts[2];
    CHECK(p.completions[0].text == "One two"); // seen at c=1, though recorded after c=8's
    CHECK(p.first_divergence == 1);
    CHECK(*p.gap_at_divergence == doctest::Approx(0.5));
    CHECK_FALSE(p.fragile);
  }
  SUBCASE("failures are counted, not compared") {
    const auto& p = analysis.prompts[3];
    CHECK(p.runs == 1);
    CHECK(p.failed == 1);
    CHECK(p.unique_completions == 1);
    CHECK(p.fragile);
    CHECK_FALSE(p.unstable);
  }
  SUBCASE("summary") {
    const auto& s = analysis.summary;
    CHECK(s.prompts == 4);
    CHECK(s.requests == 12);
    CHECK(s.failed_requests == 1);
    CHECK(s.unstable_prompts == 2);
    CHECK(s.fragile_prompts == 2);
    CHECK(s.tarr == doctest::Approx(0.25)); // only p0: p3 had a failure
    CHECK(s.predictor.true_positive == 1);  // p1
    CHECK(s.predictor.false_positive == 1); // p3
    CHECK(s.predictor.false_negative == 1); // p2
    CHECK(s.predictor.true_negative == 1);  // p0
    CHECK(*s.predictor.precision == doctest::Approx(0.5));
    CHECK(*s.predictor.recall == doctest::Approx(0.5));
    REQUIRE(s.by_concurrency.size() == 2);
    CHECK(s.by_concurrency[0].concurrency == 1);
    CHECK(s.by_concurrency[0].runs == 7);
    CHECK(s.by_concurrency[0].unstable_prompts == 0);
    CHECK(s.by_concurrency[1].concurrency == 8);
    CHECK(s.by_concurrency[1].runs == 4);
    CHECK(s.by_concurrency[1].failed == 1);
    CHECK(s.by_concurrency[1].unstable_prompts == 1);
  }
}

TEST_CASE("analyse without logprobs") {
  Completion x;
  x.text = "Paris";
  Completion y;
  y.text = "Paris.";
  std::vector<RequestRecord> records{ok_record(0, 1, 0, x), ok_record(0, 1, 1, x), ok_record(0, 1, 2, y)};
  const auto analysis = analyse(suite_of(1), records, AnalysisConfig{});
  const auto& p = analysis.prompts.at(0);
  CHECK(p.unique_completions == 2);
  CHECK_FALSE(p.has_logprobs);
  CHECK(p.first_divergence == 5); // characters of the text
  CHECK_FALSE(p.gap_at_divergence.has_value());
  CHECK_FALSE(p.fragile);
  CHECK(analysis.summary.prompts_without_logprobs == 1);
  CHECK(analysis.summary.predictor.true_positive + analysis.summary.predictor.false_negative == 0);
}

TEST_CASE("analyse window") {
  const auto a = completion_of({{"a", 1.0}, {"b", 1.0}, {"c", 0.01}});
  std::vector<RequestRecord> records{ok_record(0, 1, 0, a)};
  AnalysisConfig config;
  config.fragile_window = 2;
  CHECK_FALSE(analyse(suite_of(1), records, config).prompts[0].fragile);
  config.fragile_window = 3;
  CHECK(analyse(suite_of(1), records, config).prompts[0].fragile);
  config.fragile_gap = 0.005;
  CHECK_FALSE(analyse(suite_of(1), records, config).prompts[0].fragile);
}

TEST_CASE("analyse throughput") {
  auto a = completion_of({{"a", 1.0}, {"b", 1.0}});
  std::vector<RequestRecord> records{ok_record(0, 1, 0, a), ok_record(0, 1, 1, a)};
  records[0].outcome.started_ms = 1000;
  records[0].outcome.finished_ms = 1500;
  records[1].outcome.started_ms = 1500;
  records[1].outcome.finished_ms = 2000;
  const auto analysis = analyse(suite_of(1), records, AnalysisConfig{});
  CHECK(analysis.summary.by_concurrency[0].tokens_per_second == doctest::Approx(4.0));
  CHECK(analysis.summary.by_concurrency[0].mean_latency_ms == doctest::Approx(500.0));
}
