#include <doctest/doctest.h>

#include <algorithm>

#include "core/analysis.hpp"
#include "core/determinism_check.hpp"
#include "core/plan.hpp"
#include "core/probe_text.hpp"
#include "core/verdict.hpp"
#include "tests/support/request_records.hpp"

using namespace llmrepro::core;

namespace {

// A level of a prompt: `runs` successful runs, a drift against the prompt's reference of
// `drift` nats from token `from` over 8 positions, and where a run left the reference.
LevelAnalysis level_of(int concurrency, double drift = 0, std::optional<int> divergence = {},
                       int from = 3) {
  LevelAnalysis level;
  level.concurrency = concurrency;
  level.runs = 2;
  level.drift_from_reference.max_abs = drift;
  level.drift_from_reference.positions_compared = 8;
  if (drift > 0) level.drift_from_reference.first_position = from;
  level.divergence_from_reference = divergence;
  return level;
}

PromptAnalysis prompt_of(const std::string& id, std::vector<LevelAnalysis> levels) {
  PromptAnalysis prompt;
  prompt.id = id;
  prompt.by_concurrency = std::move(levels);
  return prompt;
}

PrefixPromptDrift prefix_of(const std::string& id, double warm_drift,
                            std::optional<int> warm_divergence = {}) {
  PrefixPromptDrift prefix;
  prefix.id = id;
  prefix.cold_runs = 2;
  prefix.warm_runs = 2;
  prefix.cold_drift_from_reference.positions_compared = 8;
  prefix.warm_drift_from_reference.positions_compared = 8;
  prefix.warm_drift_from_reference.max_abs = warm_drift;
  if (warm_drift > 0) prefix.warm_drift_from_reference.first_position = 0;
  prefix.warm_divergence_from_reference = warm_divergence;
  return prefix;
}

} // namespace

TEST_CASE("check_determinism") {
  AuditAnalysis sweep;
  AuditAnalysis mixed;
  std::vector<PrefixPromptDrift> prefix{prefix_of("a", 0), prefix_of("b", 0)};

  SUBCASE("every cell bit-identical: held, no break, cells in test order") {
    sweep.prompts = {prompt_of("a", {level_of(1), level_of(8)}),
                     prompt_of("b", {level_of(1), level_of(8)})};
    mixed.prompts = {prompt_of("a", {level_of(1)})};
    const std::string flushed = "after a flush through /flush_cache";
    const DeterminismCheck check =
        check_determinism({{ProbeKind::sweep, &sweep, nullptr, ""},
                           {ProbeKind::mixed, &mixed, nullptr, ""},
                           {ProbeKind::prefix, nullptr, &prefix, flushed}});
    CHECK(check.held);
    CHECK_FALSE(check.first_break);
    REQUIRE(check.cells.size() == 5);
    // Sweep by level, then cold and warm prefix, then filler traffic.
    CHECK(check.cells[0].level == 1);
    CHECK(check.cells[1].level == 8);
    CHECK(check.cells[1].probe == ProbeKind::sweep);
    CHECK(check.cells[2].shape == DeterminismShape::cold_prefix);
    CHECK(check.cells[3].shape == DeterminismShape::warm_prefix);
    CHECK(check.cells[4].probe == ProbeKind::mixed);
    CHECK(check.cells[0].prompts == 2);
    CHECK(check.cells[0].positions_compared == 16);
    CHECK(determinism_line(check) == "determinism claim held on every level and probe");
  }

  SUBCASE("a shared prefix cut to fit is noted on both prefix cells; none at all leaves them "
          "untested") {
    ProbeActivity activity;
    activity.prefix_shortened = true;
    activity.prefix_words = 52;
    const std::string flushed = "after a flush through /flush_cache";
    const DeterminismCheck cut =
        check_determinism({{ProbeKind::prefix, nullptr, &prefix, flushed, &activity}});
    REQUIRE(cut.cells.size() == 2);
    CHECK(cut.held);
    for (const auto& cell : cut.cells) {
      CHECK(cell.tested);
      CHECK(cell.note ==
            "shared prefix cut to 52 of 160 words to fit the server's context per slot");
    }
    CHECK(determinism_coverage_line(cut).find(
              "Sized to fit: cold prefix cache: shared prefix cut to 52 of 160 words") !=
          std::string::npos);

    activity.prefix_words = 0;
    const DeterminismCheck none =
        check_determinism({{ProbeKind::prefix, nullptr, &prefix, flushed, &activity}});
    CHECK_FALSE(none.held);
    CHECK(none.untested_cells() == 2);
    CHECK(none.cells[0].untested_reason ==
          "not one word of the shared prefix fits the server's context per slot beside the "
          "longest prompt, so the trials share no prefix");
  }

  SUBCASE("no cold mode: the cold cell is not tested, never held, and nothing breaks there") {
    sweep.prompts = {prompt_of("a", {level_of(1)}), prompt_of("b", {level_of(1)})};
    // The cold trials moved: without a flush they ran on a warm cache, which says nothing.
    prefix[1].cold_divergence_from_reference = 2;
    const DeterminismCheck check = check_determinism(
        {{ProbeKind::sweep, &sweep, nullptr, ""}, {ProbeKind::prefix, nullptr, &prefix, ""}});
    CHECK_FALSE(check.held);
    CHECK_FALSE(check.first_break);
    REQUIRE(check.cells.size() == 3);
    CHECK_FALSE(check.cells[1].tested);
    CHECK_FALSE(check.cells[1].held());
    CHECK(check.untested_cells() == 1);
    CHECK(determinism_line(check) ==
          "determinism claim not checked on a cold prefix cache: the endpoint offered no cold "
          "mode (no cache flush route answered, no per-request cache switch), so its cold trials "
          "ran on whatever the cache held; every other level and probe held");

    // With the cache off per request the same trials are a real break, named with the mode.
    const DeterminismCheck cold =
        check_determinism({{ProbeKind::sweep, &sweep, nullptr, ""},
                           {ProbeKind::prefix, nullptr, &prefix,
                            "with the prompt cache off per request (cache_prompt: false)"}});
    REQUIRE(cold.first_break);
    CHECK(cold.first_break->shape == DeterminismShape::cold_prefix);
    CHECK(determinism_line(cold) ==
          "determinism claim broken at c=1 (cold prefix cache with the prompt cache off per "
          "request (cache_prompt: false)): tokens differ from the reference from token 2, prompt "
          "b");
  }

  SUBCASE("logprobs move at c=9 and tokens at c=16: the first level names logprobs") {
    sweep.prompts = {
        prompt_of("a", {level_of(1), level_of(8), level_of(9, 0.001), level_of(16, 0.2, 4)}),
        prompt_of("b", {level_of(1), level_of(8), level_of(9, 0.00390625, {}, 5), level_of(16)})};
    const DeterminismCheck check = check_determinism({{ProbeKind::sweep, &sweep, nullptr}});
    CHECK_FALSE(check.held);
    REQUIRE(check.first_break);
    CHECK(check.first_break->level == 9);
    CHECK(check.first_break->probe == ProbeKind::sweep);
    CHECK(check.first_break->what == DeterminismBreak::logprobs);
    // The prompt with the largest drift at that level, and its first moved position.
    CHECK(check.first_break->prompt == "b");
    CHECK(check.first_break->position == 5);
    CHECK(check.first_break->drift == 0.00390625);
    CHECK(check.cells[2].logprob_breaks == 2);
    CHECK(check.cells[3].token_breaks == 1);
    CHECK(determinism_line(check) ==
          "determinism claim broken at c=9 (sweep): logprobs drift 0.0039 nats, tokens identical "
          "(from token 5), prompt b");
  }

  SUBCASE("a token break outranks a logprob break at the same level, earliest divergence wins") {
    sweep.prompts = {prompt_of("a", {level_of(1), level_of(2, 0.5)}),
                     prompt_of("b", {level_of(1), level_of(2, 0.01, 7)}),
                     prompt_of("c", {level_of(1), level_of(2, 0.02, 3)})};
    const DeterminismCheck check = check_determinism({{ProbeKind::sweep, &sweep, nullptr}});
    REQUIRE(check.first_break);
    CHECK(check.first_break->level == 2);
    CHECK(check.first_break->what == DeterminismBreak::tokens);
    CHECK(check.first_break->prompt == "c");
    CHECK(check.first_break->position == 3);
    CHECK(check.cells[1].token_breaks == 2);
    CHECK(check.cells[1].logprob_breaks == 1);
    CHECK(determinism_line(check) == "determinism claim broken at c=2 (sweep): tokens differ from "
                                     "the reference from token 3, prompt c");
  }

  SUBCASE("the sweep holds and the warm prefix cache breaks before filler traffic") {
    sweep.prompts = {prompt_of("a", {level_of(1), level_of(16)})};
    mixed.prompts = {prompt_of("a", {level_of(1, 0.25)})};
    prefix = {prefix_of("a", 0.0625), prefix_of("b", 0)};
    const DeterminismCheck check = check_determinism({{ProbeKind::sweep, &sweep, nullptr},
                                                      {ProbeKind::mixed, &mixed, nullptr},
                                                      {ProbeKind::prefix, nullptr, &prefix}});
    REQUIRE(check.first_break);
    CHECK(check.first_break->shape == DeterminismShape::warm_prefix);
    CHECK(check.first_break->level == 1);
    CHECK(check.first_break->prompt == "a");
    CHECK(determinism_line(check) == "determinism claim broken at c=1 (warm prefix cache): "
                                     "logprobs drift 0.062 nats, tokens identical (from token 0), "
                                     "prompt a");
  }

  SUBCASE("fillers the server refused leave their level's mixed cell untested") {
    sweep.prompts = {prompt_of("a", {level_of(1), level_of(2)})};
    // The mixed runs at c=2 moved, but beside refused fillers: no evidence either way.
    mixed.prompts = {prompt_of("a", {level_of(1), level_of(2, 0.5, 1)})};
    ProbeActivity activity;
    FillerLevel& one = filler_level(activity, 1);
    one.sent = 48;
    one.shortened = 31;
    FillerLevel& two = filler_level(activity, 2);
    two.sent = 24;
    two.refused = 12;
    two.refusal = "HTTP 400: request (300 tokens) exceeds the available context size (256 tokens)";
    const DeterminismCheck check = check_determinism(
        {{ProbeKind::sweep, &sweep, nullptr, "", &activity},
         {ProbeKind::mixed, &mixed, nullptr, "", &activity},
         {ProbeKind::prefix, nullptr, &prefix, "after a flush through /flush_cache"}});
    CHECK_FALSE(check.held);
    CHECK_FALSE(check.first_break);
    REQUIRE(check.cells.size() == 6);
    CHECK(check.cells[4].tested);
    CHECK(check.cells[4].note == "31 of 48 fillers shortened to fit the server's context per slot");
    CHECK_FALSE(check.cells[5].tested);
    CHECK(check.cells[5].untested_reason ==
          "12 of 24 fillers refused (HTTP 400: request (300 tokens) exceeds the available context "
          "size (256 tokens))");
    CHECK(determinism_line(check) ==
          "determinism claim not checked with filler traffic at c=2: 12 of 24 fillers refused "
          "(HTTP 400: request (300 tokens) exceeds the available context size (256 tokens)); "
          "every other level and probe held");
    CHECK(determinism_coverage_line(check) ==
          "determinism coverage: ran sweep c=1,2; cold prefix cache; warm prefix cache; with "
          "filler traffic c=1. Sized to fit: with filler traffic c=1: 31 of 48 fillers shortened "
          "to fit the server's context per slot. Not tested: with filler traffic c=2: 12 of 24 "
          "fillers refused (HTTP 400: request (300 tokens) exceeds the available context size "
          "(256 tokens)); restart (no --restart-cmd)");

    // No filler fitting at all is as untested; a long prompt's cut context is noted.
    two.refused = 0;
    two.unfit = true;
    activity.long_shortened = 6;
    activity.long_context_words_min = 12;
    AuditAnalysis long_prompts;
    long_prompts.prompts = {prompt_of("a", {level_of(1)})};
    const DeterminismCheck unfit =
        check_determinism({{ProbeKind::mixed, &mixed, nullptr, "", &activity},
                           {ProbeKind::long_prompt, &long_prompts, nullptr, "", &activity}});
    REQUIRE(unfit.cells.size() == 3);
    CHECK(unfit.cells[1].untested_reason ==
          "no filler fits the server's context per slot, so none was sent");
    CHECK(unfit.cells[2].note == "6 long prompts' context cut to as few as 12 of 480 words to fit "
                                 "the server's context per slot");
    CHECK(determinism_coverage_line(unfit) ==
          "determinism coverage: ran with filler traffic c=1; long prompts c=1. Sized to fit: "
          "with filler traffic c=1: 31 of 48 fillers shortened to fit the server's context per "
          "slot; long prompts c=1: 6 long prompts' context cut to as few as 12 of 480 words to "
          "fit the server's context per slot. Not tested: with filler traffic c=2: no filler "
          "fits the server's context per slot, so none was sent; restart (no --restart-cmd)");
  }

  SUBCASE("sampled filler traffic is a cell of its own, after the greedy fillers' cells") {
    sweep.prompts = {prompt_of("a", {level_of(1), level_of(2)})};
    mixed.prompts = {prompt_of("a", {level_of(1), level_of(2)})};
    // Beside sampled fillers the greedy runs at c=2 left the reference from token 4.
    AuditAnalysis sampled;
    sampled.prompts = {prompt_of("a", {level_of(1), level_of(2, 0.5, 4)}),
                       prompt_of("b", {level_of(1), level_of(2)})};
    const DeterminismCheck check =
        check_determinism({{ProbeKind::sweep, &sweep, nullptr},
                           {ProbeKind::mixed_sampling, &sampled, nullptr},
                           {ProbeKind::mixed, &mixed, nullptr},
                           {ProbeKind::prefix, nullptr, &prefix, "after a flush through /x"}});
    REQUIRE(check.cells.size() == 8);
    CHECK(check.cells[4].probe == ProbeKind::mixed);
    CHECK(check.cells[5].probe == ProbeKind::mixed);
    CHECK(check.cells[6].probe == ProbeKind::mixed_sampling);
    CHECK(check.cells[6].level == 1);
    CHECK(check.cells[7].probe == ProbeKind::mixed_sampling);
    CHECK(check.cells[7].level == 2);
    CHECK(check.cells[7].prompts == 2);
    CHECK(check.cells[7].token_breaks == 1);
    REQUIRE(check.first_break);
    CHECK(check.first_break->probe == ProbeKind::mixed_sampling);
    CHECK(determinism_line(check) ==
          "determinism claim broken at c=2 (with sampled filler traffic): tokens differ from the "
          "reference from token 4, prompt a");
    CHECK(determinism_coverage_line(check) ==
          "determinism coverage: ran sweep c=1,2; cold prefix cache; warm prefix cache; with "
          "filler traffic c=1,2; with sampled filler traffic c=1,2. Not tested: restart (no "
          "--restart-cmd)");
  }

  SUBCASE("each filler probe is judged by its own fillers: sampled ones refused, greedy ones not") {
    mixed.prompts = {prompt_of("a", {level_of(1), level_of(2)})};
    AuditAnalysis sampled;
    sampled.prompts = {prompt_of("a", {level_of(1), level_of(2, 0.5, 1)})};
    ProbeActivity activity;
    filler_level(activity, 2).sent = 24;
    FillerLevel& cut = filler_level(activity, 1, true);
    cut.sent = 48;
    cut.shortened = 5;
    FillerLevel& refused = filler_level(activity, 2, true); // the last added: stays valid
    refused.sent = 24;
    refused.refused = 24;
    refused.refusal = "HTTP 400: 'temperature' must be 0";
    const DeterminismCheck check =
        check_determinism({{ProbeKind::mixed, &mixed, nullptr, "", &activity},
                           {ProbeKind::mixed_sampling, &sampled, nullptr, "", &activity}});
    REQUIRE(check.cells.size() == 4);
    CHECK(check.cells[1].tested); // greedy fillers at c=2: sent, none refused
    CHECK(check.cells[1].note.empty());
    CHECK(check.cells[2].note == "5 of 48 fillers shortened to fit the server's context per slot");
    CHECK_FALSE(check.cells[3].tested);
    CHECK_FALSE(check.first_break);
    CHECK(determinism_line(check) ==
          "determinism claim not checked with sampled filler traffic at c=2: 24 of 24 fillers "
          "refused (HTTP 400: 'temperature' must be 0); every other level and probe held");
    CHECK(determinism_coverage_line(check) ==
          "determinism coverage: ran with filler traffic c=1,2; with sampled filler traffic c=1. "
          "Sized to fit: with sampled filler traffic c=1: 5 of 48 fillers shortened to fit the "
          "server's context per slot. Not tested: with sampled filler traffic c=2: 24 of 24 "
          "fillers refused (HTTP 400: 'temperature' must be 0); restart (no --restart-cmd)");

    // No sampled filler fitting is as untested.
    refused.refused = 0;
    refused.unfit = true;
    const DeterminismCheck unfit =
        check_determinism({{ProbeKind::mixed_sampling, &sampled, nullptr, "", &activity}});
    REQUIRE(unfit.cells.size() == 2);
    CHECK(unfit.cells[1].untested_reason ==
          "no filler fits the server's context per slot, so none was sent");
  }

  SUBCASE("no logprob compared anywhere: not held, and no break to name") {
    sweep.prompts = {prompt_of("a", {level_of(1)})};
    sweep.prompts[0].by_concurrency[0].drift_from_reference.positions_compared = 0;
    const DeterminismCheck check = check_determinism({{ProbeKind::sweep, &sweep, nullptr}});
    CHECK_FALSE(check.held);
    CHECK_FALSE(check.first_break);
    CHECK(determinism_line(check) ==
          "determinism claim not checked: no logprobs to compare at some level or probe");
  }
}

TEST_CASE("judge adds the determinism gate first, scoped to the first break") {
  AuditAnalysis sweep;
  sweep.summary.prompts = 1;
  sweep.summary.stable_prompts = 1;
  sweep.summary.prompts_with_two_completions = 1;
  sweep.summary.requests = 4;
  sweep.prompts = {prompt_of("a", {level_of(1), level_of(9, 0.5)})};
  GateConfig gates;
  gates.max_unique = 1;
  std::vector<DeterminismCheck> checks{check_determinism({{ProbeKind::sweep, &sweep, nullptr}})};
  const Verdict verdict = judge({{0, ProbeKind::sweep, &sweep}}, std::nullopt, gates,
                                RunFacts{4, 4, false, ""}, &checks);
  CHECK(verdict.status == VerdictStatus::fail);
  REQUIRE(verdict.gates.size() == 3);
  const GateResult& gate = verdict.gates.front();
  CHECK(gate.name == "determinism");
  CHECK_FALSE(gate.passed);
  CHECK(gate.scope.endpoint == 0);
  CHECK(gate.scope.probe == ProbeKind::sweep);
  CHECK(gate.scope.level == 9);
  CHECK(gate.figure == 0.5);
  CHECK(verdict.headline ==
        "FAIL: 1 of 3 gates failed: determinism claim broken at c=9 (sweep): logprobs drift 0.5 "
        "nats, tokens identical (from token 3), prompt a (--profile deterministic)");

  // Held: the gate passes with figure 0 and no level in its scope.
  sweep.prompts[0].by_concurrency[1] = level_of(9);
  checks = {check_determinism({{ProbeKind::sweep, &sweep, nullptr}})};
  const Verdict held = judge({{0, ProbeKind::sweep, &sweep}}, std::nullopt, gates,
                             RunFacts{4, 4, false, ""}, &checks);
  CHECK(held.status == VerdictStatus::pass);
  CHECK(held.gates.front().passed);
  CHECK(held.gates.front().figure == 0.0);
  CHECK_FALSE(held.gates.front().scope.level);

  // Nothing broke but the cold cell could not be tested: not judged, an error (exit 3), never a
  // failure of the claim and never a pass.
  std::vector<PrefixPromptDrift> prefix{prefix_of("a", 0)};
  checks = {check_determinism(
      {{ProbeKind::sweep, &sweep, nullptr}, {ProbeKind::prefix, nullptr, &prefix, ""}})};
  const Verdict untested = judge({{0, ProbeKind::sweep, &sweep}}, std::nullopt, gates,
                                 RunFacts{4, 4, false, ""}, &checks);
  CHECK(untested.status == VerdictStatus::error);
  CHECK_FALSE(untested.gates.front().passed);
  CHECK(untested.gates.front().message.rfind("not judged: determinism claim not checked on a "
                                             "cold prefix cache: ",
                                             0) == 0);
  CHECK(untested.headline.rfind("ERROR: the audit could not be judged: determinism claim not "
                                "checked on a cold prefix cache: the endpoint offered no cold "
                                "mode",
                                0) == 0);

  // A cold trial the server served partly from its cache is not a confirmed cold trial.
  prefix[0].cold_cache_reused = 1;
  checks = {check_determinism({{ProbeKind::sweep, &sweep, nullptr},
                               {ProbeKind::prefix, nullptr, &prefix,
                                "with the prompt cache off per request (cache_prompt: false)"}})};
  REQUIRE(checks[0].cells.size() == 4);
  CHECK_FALSE(checks[0].cells[2].tested);
  CHECK(determinism_line(checks[0]) ==
        "determinism claim not checked on a cold prefix cache: cold mode not confirmed: 1 of 2 "
        "cold trials reused the cache; every other level and probe held");
  CHECK(judge({{0, ProbeKind::sweep, &sweep}}, std::nullopt, gates, RunFacts{4, 4, false, ""},
              &checks)
            .status == VerdictStatus::error);
}

TEST_CASE("deterministic_levels") {
  CHECK(deterministic_levels(128) == std::vector<int>{1, 2, 8, 9, 16, 32, 44, 64, 128});
  CHECK(deterministic_levels(16) == std::vector<int>{1, 2, 8, 9, 16});
  CHECK(deterministic_levels(43) == std::vector<int>{1, 2, 8, 9, 16, 32});
  CHECK(deterministic_levels(1) == std::vector<int>{1});
  CHECK(deterministic_levels(0).empty());
}

TEST_CASE("filler_prompt across 256 tokens") {
  const FillerShape across{true, 7};
  for (std::uint64_t index = 0; index < 40; ++index) {
    const int words = filler_word_count(index, across);
    // Even fillers stay below 256 tokens, odd ones above it.
    if (index % 2 == 0) {
      CHECK(words >= 16);
      CHECK(words <= 200);
    } else {
      CHECK(words >= 300);
      CHECK(words <= 480);
    }
    const std::string text = *filler_prompt(index, across).text;
    CHECK(static_cast<int>(std::count(text.begin(), text.end(), ' ')) == words - 1);
  }
  // The seed changes the lengths; the standard shape ignores it and keeps its old stream.
  CHECK(filler_word_count(1, {true, 7}) != filler_word_count(1, {true, 8}));
  CHECK(filler_prompt(3, {}).text == filler_prompt(3, {false, 99}).text);
}

namespace {

// A completion of `tokens`, each with the chosen token's logprob and one alternative 0.5 nats
// below it.
Completion run_of(std::initializer_list<std::pair<const char*, double>> tokens) {
  Completion completion;
  completion.has_logprobs = true;
  for (const auto& [text, logprob] : tokens) {
    TokenLogprob token;
    token.token = text;
    token.logprob = logprob;
    token.top = {{text, logprob}, {"alt", logprob - 0.5}};
    completion.text += text;
    completion.tokens.push_back(token);
  }
  return completion;
}

// A successful run of the one prompt.
RequestRecord record_of(int concurrency, int repeat, Completion completion,
                        ProbeKind probe = ProbeKind::sweep) {
  return llmrepro::testing::ok_record(0, concurrency, repeat, std::move(completion), probe);
}

} // namespace

TEST_CASE("analyse: drift_from_reference and divergence_from_reference per level") {
  Suite suite;
  suite.prompts.push_back(Prompt{.id = "p", .text = "x"});
  // The reference is c=1 repeat 0 (recorded second: by repeat, not by recording order).
  const std::vector<RequestRecord> records{
      record_of(1, 1, run_of({{"a", -0.5}, {"b", -1.0}})),
      record_of(1, 0, run_of({{"a", -0.5}, {"b", -1.0}})),
      // c=8: both runs equal each other (no drift within the level) but not the reference.
      record_of(8, 0, run_of({{"a", -0.5}, {"b", -1.25}})),
      record_of(8, 1, run_of({{"a", -0.5}, {"b", -1.25}})),
      // c=16: one run leaves the reference at token 1, after a drift of 0.125 at token 0.
      record_of(16, 0, run_of({{"a", -0.375}, {"c", -1.0}})),
      record_of(16, 1, run_of({{"a", -0.5}, {"b", -1.0}}))};
  const AuditAnalysis analysis = analyse(suite, records, AnalysisConfig{});
  REQUIRE(analysis.prompts.size() == 1);
  const auto& levels = analysis.prompts[0].by_concurrency;
  REQUIRE(levels.size() == 3);
  CHECK(levels[0].drift_from_reference.max_abs == 0);
  CHECK(levels[0].drift_from_reference.positions_compared == 4);
  CHECK_FALSE(levels[0].divergence_from_reference);
  CHECK(levels[1].logprob_drift.max_abs == 0); // within the level nothing moved
  CHECK(levels[1].drift_from_reference.max_abs == 0.25);
  CHECK(levels[1].drift_from_reference.first_position == 1);
  CHECK_FALSE(levels[1].divergence_from_reference);
  CHECK(levels[2].drift_from_reference.max_abs == 0.125);
  CHECK(levels[2].drift_from_reference.first_position == 0);
  CHECK(levels[2].divergence_from_reference == 1);

  const DeterminismCheck check = check_determinism({{ProbeKind::sweep, &analysis, nullptr}});
  REQUIRE(check.first_break);
  CHECK(check.first_break->level == 8);
  CHECK(check.first_break->what == DeterminismBreak::logprobs);
  CHECK(check.first_break->drift == 0.25);
}

TEST_CASE("analyse: where a level's runs leave the reference, at its end and past it") {
  Suite suite;
  suite.prompts.push_back(Prompt{.id = "p", .text = "x"});
  // The same tokens spelling another text: placed at the token covering the first differing
  // byte ("ab|c" against "ab|d": the third token).
  Completion respelled = run_of({{"ab", -0.5}, {"c", -1.0}, {"d", -1.0}});
  respelled.text = "abcX";
  const std::vector<RequestRecord> records{
      record_of(1, 0, run_of({{"ab", -0.5}, {"c", -1.0}, {"d", -1.0}})),
      record_of(1, 1, run_of({{"ab", -0.5}, {"c", -1.0}, {"d", -1.0}})),
      record_of(2, 0, run_of({{"ab", -0.5}, {"c", -1.0}})),                           // shorter
      record_of(4, 0, run_of({{"ab", -0.5}, {"c", -1.0}, {"d", -1.0}, {"e", -1.0}})), // longer
      record_of(8, 0, std::move(respelled))};
  const AuditAnalysis analysis = analyse(suite, records, AnalysisConfig{});
  REQUIRE(analysis.prompts.size() == 1);
  const auto& levels = analysis.prompts[0].by_concurrency;
  REQUIRE(levels.size() == 4);
  CHECK_FALSE(levels[0].divergence_from_reference);
  CHECK(levels[1].divergence_from_reference == 2);
  CHECK(levels[2].divergence_from_reference == 3);
  CHECK(levels[3].divergence_from_reference == 2);
  // Every shared position compared, the reference's own included.
  CHECK(levels[0].drift_from_reference.positions_compared == 6);
  CHECK(levels[1].drift_from_reference.positions_compared == 2);
  CHECK(levels[2].drift_from_reference.positions_compared == 3);
  CHECK(levels[3].drift_from_reference.positions_compared == 3);
}

TEST_CASE("prefix_drift_of_prompt compares every trial with the first cold one") {
  Suite suite;
  suite.prompts.push_back(Prompt{.id = "p", .text = "x"});
  const std::vector<RequestRecord> records{
      record_of(1, 0, run_of({{"a", -0.5}, {"b", -1.0}}), ProbeKind::prefix),    // cold, reference
      record_of(1, 1, run_of({{"a", -0.5}, {"b", -1.0625}}), ProbeKind::prefix), // warm
      record_of(1, 2, run_of({{"a", -0.5}, {"b", -1.0}}), ProbeKind::prefix),    // cold
      record_of(1, 3, run_of({{"a", -0.5}, {"d", -1.0}}), ProbeKind::prefix)};   // warm
  std::vector<const RequestRecord*> pointers;
  for (const auto& record : records) pointers.push_back(&record);
  const auto drift = prefix_drift_of_prompt(suite, 0, pointers, AnalysisConfig{}, 0);
  REQUIRE(drift);
  CHECK(drift->cold_drift_from_reference.max_abs == 0);
  CHECK(drift->cold_drift_from_reference.positions_compared == 4);
  CHECK_FALSE(drift->cold_divergence_from_reference);
  CHECK(drift->warm_drift_from_reference.max_abs == 0.0625);
  CHECK(drift->warm_divergence_from_reference == 1);

  const std::vector<PrefixPromptDrift> prefix{*drift};
  const DeterminismCheck check =
      check_determinism({{ProbeKind::prefix, nullptr, &prefix, "after a flush through /flush"}});
  REQUIRE(check.first_break);
  CHECK(check.first_break->shape == DeterminismShape::warm_prefix);
  CHECK(check.first_break->what == DeterminismBreak::tokens);
  CHECK(check.first_break->position == 1);
}

TEST_CASE("with_earlier_cold_modes: a run that made no cold trial keeps the earlier run's mode") {
  ProbeActivity flushed;
  flushed.flush_looked_up = true;
  flushed.flush_route = "/flush_cache";
  ProbeActivity per_request;
  per_request.cold_per_request = true;
  ProbeActivity resumed; // found every trial recorded: sent nothing, looked nothing up
  resumed.filler_sent = 3;
  const auto kept = with_earlier_cold_modes({resumed, resumed}, {flushed, per_request});
  REQUIRE(kept.size() == 2);
  CHECK(kept[0].flush_route == "/flush_cache");
  CHECK(kept[0].flush_looked_up);
  CHECK(kept[0].filler_sent == 3); // its own counts stay
  CHECK(kept[1].cold_per_request);
  // A run that looked its own mode up keeps it, even when it found none.
  ProbeActivity looked;
  looked.flush_looked_up = true;
  CHECK(with_earlier_cold_modes({looked}, {flushed})[0].flush_route.empty());
  // An endpoint the earlier run did not have keeps what it has.
  CHECK(with_earlier_cold_modes({resumed, resumed}, {flushed})[1].flush_route.empty());
}

TEST_CASE("check_determinism: the restart cell") {
  AuditAnalysis sweep;
  sweep.prompts = {prompt_of("a", {level_of(1)})};
  ProbeActivity activity;
  activity.restarts_run = 2;

  SUBCASE("first and later requests equal the first after a restart: held") {
    const std::vector<PrefixPromptDrift> restart{prefix_of("a", 0)};
    const DeterminismCheck check =
        check_determinism({{ProbeKind::sweep, &sweep, nullptr, ""},
                           {ProbeKind::restart, nullptr, &restart, "", &activity}});
    CHECK(check.held);
    REQUIRE(check.cells.size() == 2);
    CHECK(check.cells[1].shape == DeterminismShape::restart);
    CHECK(check.cells[1].prompts == 1);
    CHECK(check.cells[1].positions_compared == 16);
    CHECK(determinism_coverage_line(check) == "determinism coverage: ran sweep c=1; restart");
  }
  SUBCASE("a later request left the first one's tokens: broken there, with prompt and position") {
    const std::vector<PrefixPromptDrift> restart{prefix_of("a", 0, 3)};
    const DeterminismCheck check =
        check_determinism({{ProbeKind::sweep, &sweep, nullptr, ""},
                           {ProbeKind::restart, nullptr, &restart, "", &activity}});
    CHECK_FALSE(check.held);
    REQUIRE(check.first_break);
    CHECK(check.first_break->shape == DeterminismShape::restart);
    CHECK(check.first_break->what == DeterminismBreak::tokens);
    CHECK(check.first_break->position == 3);
    CHECK(determinism_line(check) ==
          "determinism claim broken at c=1 (restart): tokens differ from the reference from "
          "token 3, prompt a");
  }
  SUBCASE("no round restarted and became ready: not tested, never held") {
    activity.restarts_failed = 2;
    const std::vector<PrefixPromptDrift> restart;
    const DeterminismCheck check =
        check_determinism({{ProbeKind::sweep, &sweep, nullptr, ""},
                           {ProbeKind::restart, nullptr, &restart, "", &activity}});
    CHECK_FALSE(check.held);
    CHECK_FALSE(check.first_break);
    REQUIRE(check.cells.size() == 2);
    CHECK_FALSE(check.cells[1].tested);
    CHECK(check.cells[1].untested_reason ==
          "no round restarted and became ready (2 of 2 restarts failed)");
    CHECK(determinism_line(check) ==
          "determinism claim not checked after a restart: no round restarted and became ready "
          "(2 of 2 restarts failed); every other level and probe held");
  }
  SUBCASE("the probe not planned: the coverage line names the restart cell as not tested") {
    const DeterminismCheck check = check_determinism({{ProbeKind::sweep, &sweep, nullptr, ""}});
    CHECK(check.held);
    CHECK(determinism_coverage_line(check) ==
          "determinism coverage: ran sweep c=1. Not tested: restart (no --restart-cmd)");
  }
}
