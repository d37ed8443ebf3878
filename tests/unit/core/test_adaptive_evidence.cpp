#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/adaptive.hpp"
#include "core/adaptive_evidence.hpp"

using namespace llmrepro::core;

namespace {

TokenLogprob named_token_with_gap(const std::string& text, double gap) {
  TokenLogprob token;
  token.token = text;
  token.logprob = -0.1;
  token.top = {{text, -0.1}, {"other", -0.1 - gap}};
  return token;
}

// A prompt that agrees over `runs` runs at concurrency 1, whose reference has 8 tokens of gap 2.0
// (with `small_gap` at position 3 where given).
PromptAnalysis agreeing_prompt(int index, int runs, std::optional<double> small_gap = {}) {
  PromptAnalysis prompt;
  prompt.id = "p" + std::to_string(index);
  prompt.prompt_index = index;
  prompt.status = PromptStatus::stable;
  prompt.unique_completions = 1;
  prompt.runs = runs;
  DistinctCompletion reference;
  reference.is_reference = true;
  reference.count = runs;
  reference.count_by_concurrency[1] = runs;
  for (int i = 0; i < 8; ++i)
    reference.tokens.push_back(
        named_token_with_gap("t" + std::to_string(i), i == 3 && small_gap ? *small_gap : 2.0));
  prompt.completions.push_back(reference);
  LevelAnalysis level;
  level.concurrency = 1;
  level.runs = runs;
  prompt.by_concurrency.push_back(level);
  return prompt;
}

// The same prompt where `departed` of its runs parted from the reference at position `at`.
PromptAnalysis departing_prompt(int index, int runs, int departed, int at,
                                std::optional<double> small_gap = {}) {
  PromptAnalysis prompt = agreeing_prompt(index, runs, small_gap);
  prompt.status = PromptStatus::unstable;
  prompt.unstable = true;
  prompt.unique_completions = 2;
  prompt.completions[0].count = runs - departed;
  prompt.completions[0].count_by_concurrency[1] = runs - departed;
  DistinctCompletion other;
  other.count = departed;
  other.count_by_concurrency[1] = departed;
  other.divergence = at;
  other.divergence_kind = DivergenceKind::token;
  prompt.completions.push_back(other);
  return prompt;
}

// An analysis of one level (concurrency 1) with these noise samples.
AuditAnalysis analysis_with_noise(const std::vector<double>& samples) {
  AuditAnalysis analysis;
  analysis.noise[1] = NoiseDistribution(samples);
  LevelSummary level;
  level.concurrency = 1;
  level.noise = estimate_of(analysis.noise[1]);
  analysis.summary.by_concurrency.push_back(level);
  return analysis;
}

AdaptiveOutcome outcome_of(int prompts, AdaptiveAssumption assumption = AdaptiveAssumption::none) {
  Suite suite;
  for (int p = 0; p < prompts; ++p) {
    Prompt prompt;
    prompt.id = "p" + std::to_string(p);
    prompt.text = "prompt";
    suite.prompts.push_back(prompt);
  }
  PlanConfig plan;
  plan.levels = {1};
  AdaptiveConfig config;
  config.assumption = assumption;
  AdaptiveOutcome outcome;
  initial_adaptive_plan(suite, plan, config, outcome);
  return outcome;
}

std::vector<double> quiet_pool() {
  std::vector<double> samples(1998, 0.001);
  samples.push_back(0.5);
  samples.push_back(0.6);
  return samples;
}

bool has_note(const AdaptiveOutcome& outcome, const std::string& text) {
  for (const auto& note : adaptive_notes(outcome))
    if (note == text) return true;
  return false;
}

} // namespace

TEST_CASE("poisson_tail and binomial_tail: exact one-sided tails") {
  CHECK(poisson_tail(0, 2.0) == 1.0);
  CHECK(poisson_tail(1, 0.0) == 0.0);
  CHECK(poisson_tail(1, 2.0) == doctest::Approx(1.0 - std::exp(-2.0)));
  CHECK(poisson_tail(3, 0.5) == doctest::Approx(1.0 - std::exp(-0.5) * (1.0 + 0.5 + 0.125)));
  CHECK(poisson_tail(2000, 1000.0) < 1e-100);
  CHECK(binomial_tail(0, 10, 0.3) == 1.0);
  CHECK(binomial_tail(11, 10, 0.3) == 0.0);
  CHECK(binomial_tail(10, 10, 0.5) == doctest::Approx(std::pow(0.5, 10)));
  CHECK(binomial_tail(1, 4, 0.1) == doctest::Approx(1.0 - std::pow(0.9, 4)));
}

TEST_CASE("chose_below_runner_up: a chosen token below another candidate beyond rounding") {
  Completion completion;
  completion.has_logprobs = true;
  completion.tokens.push_back(named_token_with_gap("a", 1.0));
  CHECK_FALSE(chose_below_runner_up(completion));
  TokenLogprob rounded = named_token_with_gap("b", 0.0);
  rounded.logprob = -0.1 - 5e-7; // below by less than k_greedy_tolerance
  completion.tokens.push_back(rounded);
  CHECK_FALSE(chose_below_runner_up(completion));
  TokenLogprob sampled;
  sampled.token = "c";
  sampled.logprob = -1.0;
  sampled.top = {{"d", -0.5}, {"c", -1.0}};
  completion.tokens.push_back(sampled);
  CHECK(chose_below_runner_up(completion));
  completion.has_logprobs = false;
  CHECK_FALSE(chose_below_runner_up(completion));
}

TEST_CASE("analyse: each level counts runs below their runner-up and keeps the prompt's noise") {
  Suite suite;
  Prompt prompt;
  prompt.id = "p0";
  prompt.text = "prompt";
  suite.prompts.push_back(prompt);
  const auto run = [](int repeat, double gap, bool sampled) {
    RequestRecord record;
    record.planned = {0, 0, 1, ProbeKind::sweep, repeat};
    record.outcome.ok = true;
    Completion& completion = record.outcome.completion;
    completion.has_logprobs = true;
    TokenLogprob token = named_token_with_gap("a", gap);
    if (sampled) token.logprob = -0.1 - gap; // reports "a" ahead, but took its runner-up's value
    completion.tokens = {token, named_token_with_gap("b", 2.0)};
    completion.text = "ab";
    return record;
  };
  const AuditAnalysis analysis =
      analyse(suite, {run(0, 1.0, false), run(1, 1.25, false), run(2, 1.0, true)}, {});
  REQUIRE(analysis.prompts[0].by_concurrency.size() == 1);
  const LevelAnalysis& level = analysis.prompts[0].by_concurrency[0];
  CHECK(level.below_runner_up_runs == 1);
  // Runs 1 and 2 against run 0, two positions each.
  CHECK(level.own_noise.sorted() == std::vector<double>{0.0, 0.0, 0.0, 0.25});
}

TEST_CASE("judge_look: the noise bound stands where the evidence supports the model") {
  AdaptiveOutcome outcome = outcome_of(2);
  AuditAnalysis analysis = analysis_with_noise(quiet_pool());
  analysis.prompts = {agreeing_prompt(0, 6), agreeing_prompt(1, 6)};
  judge_look(outcome, analysis);
  CHECK(outcome.contradicted.empty());
  CHECK(outcome.prompts[0].stop == AdaptiveStop::robust);
  CHECK(outcome.prompts[0].basis == BoundBasis::noise);
  CHECK(outcome.prompts[0].basis_reason.empty());
  CHECK(adaptive_notes(outcome).empty());
  CHECK(adaptive_guarantee(outcome).find("2 from the level's noise, under the noise model") !=
        std::string::npos);
}

TEST_CASE("judge_look: each failed check of the noise model puts the bounds on the runs") {
  AdaptiveOutcome outcome = outcome_of(2);
  AuditAnalysis analysis = analysis_with_noise(quiet_pool());
  std::string reason;
  SUBCASE("a run chose a token below its runner-up: the endpoint samples") {
    analysis.prompts = {agreeing_prompt(0, 6), agreeing_prompt(1, 6)};
    analysis.prompts[1].by_concurrency[0].below_runner_up_runs = 3;
    reason = "3 runs chose a token below its runner-up: the endpoint samples";
  }
  SUBCASE("zero noise is no evidence that nothing flips") {
    analysis = analysis_with_noise(std::vector<double>(2000, 0.0));
    analysis.prompts = {agreeing_prompt(0, 6), departing_prompt(1, 6, 2, 3, 0.0)};
    reason = "the noise is zero, yet 2 runs departed from their reference: something other than "
             "noise flips them";
  }
  SUBCASE("a flip at a gap no noise sample reaches") {
    analysis.prompts = {agreeing_prompt(0, 6), departing_prompt(1, 6, 1, 3, 0.7)};
    reason = "1 run departed at a gap no noise sample of the level reaches";
  }
  SUBCASE("more flips than the noise predicts") {
    // Gap 0.3 at one position: 2 of 2000 samples above it, so 10 runs flip 0.005 times.
    analysis.prompts = {agreeing_prompt(0, 6), departing_prompt(1, 10, 3, 3, 0.3)};
    reason = "3 runs departed from their reference where the noise predicts 0.005 (Poisson p < "
             "0.025)";
  }
  judge_look(outcome, analysis);
  REQUIRE(outcome.contradicted.count(1) == 1);
  CHECK(outcome.contradicted.at(1).look == 1);
  CHECK(outcome.contradicted.at(1).reason == reason);
  CHECK(outcome.prompts[0].stop == AdaptiveStop::undecided);
  CHECK(outcome.prompts[0].basis == BoundBasis::runs);
  CHECK(outcome.prompts[0].basis_reason == "the noise model is contradicted at c=1");
  CHECK(*outcome.prompts[0].p_flip_bound ==
        doctest::Approx(runs_flip_bound(5, look_alpha(0.95, 1, 1))));
  CHECK(has_note(outcome, "adaptive: the noise model is contradicted at c=1 from look 1 (" +
                              reason + "); bounds rest on each prompt's own runs"));
  // A contradiction stays: the next look's prompts rest on their runs though nothing new came.
  analysis.prompts[1] = agreeing_prompt(1, 6);
  judge_look(outcome, analysis);
  CHECK(outcome.contradicted.at(1).look == 1);
  CHECK(outcome.prompts[0].basis == BoundBasis::runs);
}

TEST_CASE("judge_look: a prompt whose own noise is louder than the pool's rests on its runs") {
  AdaptiveOutcome outcome = outcome_of(2);
  // 100 of the pool's 2000 samples are p0's, all at 0.3; its gaps (2.0) are above every sample.
  std::vector<double> pool(1900, 0.001);
  pool.insert(pool.end(), 100, 0.3);
  AuditAnalysis analysis = analysis_with_noise(pool);
  analysis.prompts = {agreeing_prompt(0, 6), agreeing_prompt(1, 6)};
  analysis.prompts[0].by_concurrency[0].own_noise =
      NoiseDistribution(std::vector<double>(100, 0.3));
  judge_look(outcome, analysis);
  CHECK(outcome.contradicted.empty());
  const std::string reason = "its own noise at c=1 is louder than the pool's (100 of 100 samples "
                             "above 0.001, where 5% of the pool's are)";
  CHECK(outcome.prompts[0].stop == AdaptiveStop::undecided);
  CHECK(outcome.prompts[0].basis == BoundBasis::runs);
  CHECK(outcome.prompts[0].basis_reason == reason);
  CHECK(outcome.prompts[1].stop == AdaptiveStop::robust);
  CHECK(outcome.prompts[1].basis == BoundBasis::noise);
  CHECK(has_note(outcome, "adaptive: the noise model does not hold for 1 prompt (p0: " + reason +
                              "); their bounds rest on their own runs"));
}

TEST_CASE("judge_look: --adaptive-assume greedy-shared-noise trusts the model unchecked") {
  AdaptiveOutcome outcome = outcome_of(2, AdaptiveAssumption::greedy_shared_noise);
  AuditAnalysis analysis = analysis_with_noise(quiet_pool());
  analysis.prompts = {agreeing_prompt(0, 6), agreeing_prompt(1, 6)};
  analysis.prompts[1].by_concurrency[0].below_runner_up_runs = 3;
  judge_look(outcome, analysis);
  CHECK(outcome.contradicted.empty());
  CHECK(outcome.prompts[0].stop == AdaptiveStop::robust);
  CHECK(outcome.prompts[0].basis == BoundBasis::noise);
  CHECK(has_note(outcome, "adaptive: assumed (--adaptive-assume greedy-shared-noise) that the "
                          "endpoint decodes greedily and its noise is shared across prompts; "
                          "bounds from the noise rest on that, unchecked"));
  CHECK(adaptive_guarantee(outcome).find("under the assumption --adaptive-assume "
                                         "greedy-shared-noise") != std::string::npos);
}

TEST_CASE("adaptive_guarantee: no confidence for robust stops the audit later contradicted") {
  AdaptiveOutcome outcome = outcome_of(3);
  outcome.looks = 2;
  outcome.prompts[0].stop = AdaptiveStop::robust;
  outcome.prompts[0].stopped_at_look = 1;
  outcome.prompts[0].basis = BoundBasis::noise;
  outcome.prompts[1].stop = AdaptiveStop::robust;
  outcome.prompts[1].stopped_at_look = 2;
  outcome.prompts[1].basis = BoundBasis::runs;
  outcome.prompts[2].stop = AdaptiveStop::unstable;
  outcome.contradicted[1] = {2, "3 runs chose a token below its runner-up: the endpoint samples"};
  CHECK(adaptive_guarantee(outcome) ==
        "the 1 prompt stopped as robust with a standing bound has, with 95% confidence "
        "(valid at every look), a probability below 0.01 that one more run at any level departs "
        "from its reference: 1 from its own agreeing runs alone, assuming nothing of the "
        "endpoint; for 1 prompt stopped as robust on the noise model before the audit "
        "contradicted it at c=1 (look 2) no confidence is claimed; unstable prompts were seen to "
        "differ; prompts stopped at --runs or by a budget carry no bound");
  outcome.prompts[1].stop = AdaptiveStop::max_runs;
  CHECK(adaptive_guarantee(outcome).rfind("for 1 prompt stopped as robust on the noise model", 0) ==
        0);
}

TEST_CASE("adaptive assumptions read back from their names") {
  for (AdaptiveAssumption assumption :
       {AdaptiveAssumption::none, AdaptiveAssumption::greedy_shared_noise})
    CHECK(*parse_adaptive_assumption(to_string(assumption)) == assumption);
  CHECK(to_string(AdaptiveAssumption::greedy_shared_noise) == std::string("greedy-shared-noise"));
  CHECK_FALSE(parse_adaptive_assumption("greedy"));
}
