#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/adaptive.hpp"
#include "tests/unit/core/adaptive_test_support.hpp"

using namespace llmrepro::core;
using llmrepro::core::test::suite_of;
using llmrepro::core::test::token_with_gap;

namespace {

// A prompt as the analysis leaves it: its state, its distinct completions, and a reference whose
// gaps are `gaps` (none: text mode).
PromptAnalysis prompt_state(int index, PromptStatus status, int unique, int runs,
                            const std::vector<double>& gaps) {
  PromptAnalysis prompt;
  prompt.id = "p" + std::to_string(index);
  prompt.prompt_index = index;
  prompt.status = status;
  prompt.unstable = status == PromptStatus::unstable;
  prompt.unique_completions = unique;
  prompt.runs = runs;
  DistinctCompletion reference;
  reference.is_reference = true;
  for (double gap : gaps) reference.tokens.push_back(token_with_gap(gap));
  prompt.text_mode = gaps.empty();
  prompt.completions.push_back(reference);
  return prompt;
}

AdaptiveOutcome outcome_after_initial(int prompts, const std::vector<int>& levels,
                                      AdaptiveConfig config = {}) {
  PlanConfig plan;
  plan.levels = levels;
  AdaptiveOutcome outcome;
  initial_adaptive_plan(suite_of(prompts), plan, config, outcome);
  return outcome;
}

} // namespace

TEST_CASE("binomial_upper_bound: exact for no events, the Chernoff bound otherwise") {
  CHECK(binomial_upper_bound(0, 100, 0.05) == doctest::Approx(1.0 - std::pow(0.05, 0.01)));
  CHECK(binomial_upper_bound(0, 100, 0.05) == doctest::Approx(0.029513049607039932));
  // The largest p with 100 · KL(0.05 ‖ p) <= ln 20, computed apart by bisection in Python.
  CHECK(binomial_upper_bound(5, 100, 0.05) == doctest::Approx(0.12152703644289259).epsilon(1e-9));
  CHECK(binomial_upper_bound(3, 0, 0.05) == 1.0);
  CHECK(binomial_upper_bound(100, 100, 0.05) == 1.0);
  // More trials with the same share: a tighter bound.
  CHECK(binomial_upper_bound(50, 1000, 0.05) < binomial_upper_bound(5, 100, 0.05));
}

TEST_CASE("look_alpha spends 1 - confidence over every look and level") {
  CHECK(look_alpha(0.95, 1, 2) == doctest::Approx(0.05 / 4));
  CHECK(look_alpha(0.95, 3, 1) == doctest::Approx(0.05 / 12));
  double spent = 0.0;
  for (int look = 1; look <= 100000; ++look) spent += 2 * look_alpha(0.95, look, 2);
  CHECK(spent == doctest::Approx(0.05).epsilon(1e-4));
  CHECK(spent < 0.05);
}

TEST_CASE("noise_flip_bound: half the positions times the tail bound above the smallest gap") {
  const NoiseDistribution zeros(std::vector<double>(1000, 0.0));
  CHECK(noise_flip_bound(zeros, 0.5, 10, 0.0125) ==
        doctest::Approx(0.5 * 10 * (1.0 - std::pow(0.0125, 1.0 / 1000))));
  CHECK(noise_flip_bound(zeros, 0.5, 10, 0.0125) == doctest::Approx(0.0218621978233563));
  // Two of 1000 samples above the gap.
  std::vector<double> samples(998, 0.001);
  samples.push_back(0.7);
  samples.push_back(0.9);
  const NoiseDistribution two_above(samples);
  CHECK(noise_flip_bound(two_above, 0.5, 10, 0.0125) ==
        doctest::Approx(0.5 * 10 * binomial_upper_bound(2, 1000, 0.0125)));
  CHECK(noise_flip_bound(two_above, 0.5, 1000, 0.0125) == 1.0);
}

TEST_CASE("runs_flip_bound: zero flips in n agreeing runs") {
  CHECK(runs_flip_bound(0, 0.05) == 1.0);
  CHECK(runs_flip_bound(9, 0.05) == doctest::Approx(1.0 - std::pow(0.05, 1.0 / 9)));
}

TEST_CASE("initial_adaptive_plan: the first repeats of the fixed plan, shard by shard") {
  PlanConfig plan;
  plan.levels = {1, 8};
  plan.runs = 10;
  plan.shard_index = 1;
  plan.shard_count = 2;
  AdaptiveOutcome outcome;
  AdaptiveConfig three;
  three.initial_runs = 3;
  const Plan first = initial_adaptive_plan(suite_of(5), plan, three, outcome);
  REQUIRE(first.waves.size() == 2);
  CHECK(first.size() == 2 * 2 * 3); // prompts 1 and 3, two levels, three runs
  for (const auto& wave : first.waves)
    for (const auto& request : wave.requests) {
      CHECK(request.repeat < 3);
      CHECK(request.prompt_index % 2 == 1);
    }
  REQUIRE(outcome.prompts.size() == 2);
  CHECK(outcome.prompts[0].id == "p1");
  CHECK(outcome.prompts[1].planned == std::map<int, int>{{1, 3}, {8, 3}});
  CHECK(outcome.planned_requests() == 12);
  CHECK_FALSE(outcome.finished);
}

TEST_CASE("judge_look: unstable, robust, undecided and max_runs on scripted states") {
  AdaptiveConfig config;
  config.max_runs = 10;
  config.epsilon = 0.05;
  AdaptiveOutcome outcome = outcome_after_initial(5, {1, 8}, config);
  AuditAnalysis analysis;
  analysis.noise[1] = NoiseDistribution(std::vector<double>(2000, 0.0));
  std::vector<double> level8(1998, 0.01);
  level8.push_back(0.3);
  level8.push_back(0.4);
  analysis.noise[8] = NoiseDistribution(level8);
  // p0: two completions. p1: agrees, 8 tokens whose gaps all exceed every sample. p2: agrees,
  // but a gap of 0.2 that two samples exceed over 40 tokens. p3: a failed request. p4: agrees,
  // text mode (no gaps): only its own 5 agreeing runs bound it.
  analysis.prompts.push_back(prompt_state(0, PromptStatus::unstable, 2, 6, {1.0, 1.0}));
  analysis.prompts.push_back(
      prompt_state(1, PromptStatus::stable, 1, 6, std::vector<double>(8, 2.0)));
  std::vector<double> gaps2(40, 2.0);
  gaps2[7] = 0.2;
  analysis.prompts.push_back(prompt_state(2, PromptStatus::stable, 1, 6, gaps2));
  analysis.prompts.push_back(prompt_state(3, PromptStatus::inconclusive, 1, 5, {1.0}));
  analysis.prompts.push_back(prompt_state(4, PromptStatus::stable, 1, 6, {}));
  judge_look(outcome, analysis);
  CHECK(outcome.looks == 1);
  const double alpha = look_alpha(0.95, 1, 2);
  CHECK(outcome.prompts[0].stop == AdaptiveStop::unstable);
  CHECK(outcome.prompts[0].stopped_at_look == 1);
  CHECK(outcome.prompts[1].stop == AdaptiveStop::robust);
  CHECK(outcome.prompts[1].basis == BoundBasis::noise);
  // The level 8 bound (2000 samples, none above 2.0) is the larger of the two, equal here.
  CHECK(*outcome.prompts[1].p_flip_bound ==
        doctest::Approx(0.5 * 8 * (1.0 - std::pow(alpha, 1.0 / 2000))));
  CHECK(outcome.prompts[2].stop == AdaptiveStop::undecided);
  CHECK(*outcome.prompts[2].p_flip_bound ==
        doctest::Approx(0.5 * 40 * binomial_upper_bound(2, 2000, alpha)));
  CHECK(outcome.prompts[3].stop == AdaptiveStop::undecided);
  CHECK_FALSE(outcome.prompts[3].p_flip_bound);
  CHECK(outcome.prompts[4].stop == AdaptiveStop::undecided);
  CHECK(outcome.prompts[4].basis == BoundBasis::runs);
  CHECK(*outcome.prompts[4].p_flip_bound ==
        doctest::Approx(1.0 - std::pow(look_alpha(0.95, 1, 1), 1.0 / 5)));
  CHECK_FALSE(outcome.finished);

  // At --runs everywhere, the undecided ones stop there.
  for (auto& prompt : outcome.prompts) prompt.planned = {{1, 10}, {8, 10}};
  judge_look(outcome, analysis);
  CHECK(outcome.prompts[2].stop == AdaptiveStop::max_runs);
  CHECK(outcome.prompts[2].stopped_at_look == 2);
  CHECK(outcome.prompts[3].stop == AdaptiveStop::max_runs);
  CHECK(outcome.prompts[0].stopped_at_look == 1); // decided once, never judged again
  CHECK(outcome.finished);
  CHECK(outcome.count(AdaptiveStop::max_runs) == 3);
}

TEST_CASE("judge_look: under --max-unique N an unstable prompt samples on until it exceeds N") {
  AdaptiveConfig config;
  config.max_unique = 3;
  AdaptiveOutcome outcome = outcome_after_initial(1, {1}, config);
  AuditAnalysis analysis;
  analysis.prompts.push_back(prompt_state(0, PromptStatus::unstable, 3, 3, {1.0}));
  judge_look(outcome, analysis);
  CHECK(outcome.prompts[0].stop == AdaptiveStop::undecided);
  analysis.prompts[0].unique_completions = 4;
  judge_look(outcome, analysis);
  CHECK(outcome.prompts[0].stop == AdaptiveStop::unstable);
}

TEST_CASE("next_adaptive_round: one run per undecided prompt per level, never past --runs") {
  AdaptiveConfig config;
  config.initial_runs = 3;
  config.max_runs = 10;
  AdaptiveOutcome outcome = outcome_after_initial(4, {1, 8}, config);
  outcome.prompts[1].stop = AdaptiveStop::robust;
  outcome.prompts[3].planned[8] = 9;  // one run left at level 8
  outcome.prompts[2].planned[1] = 10; // none left at level 1
  outcome.looks = 1;
  PlanConfig plan;
  plan.levels = {1, 8};
  AdaptiveOutcome again = outcome;
  const Plan round = next_adaptive_round(outcome, plan);
  REQUIRE(round.waves.size() == 2);
  const auto repeats_of = [](const Wave& wave) {
    std::map<int, std::vector<int>> repeats;
    for (const auto& request : wave.requests)
      repeats[request.prompt_index].push_back(request.repeat);
    return repeats;
  };
  // Level 1: p0 and p3 one run each; p2 is at --runs there, p1 stopped.
  CHECK(round.waves[0].concurrency == 1);
  CHECK(repeats_of(round.waves[0]) == std::map<int, std::vector<int>>{{0, {3}}, {3, {3}}});
  // Level 8: three undecided prompts, three requests, though the level is 8: a wave never sends
  // a prompt a run the next look may show it did not need.
  CHECK(round.waves[1].concurrency == 8);
  CHECK(repeats_of(round.waves[1]) ==
        std::map<int, std::vector<int>>{{0, {3}}, {2, {3}}, {3, {9}}});
  CHECK(outcome.prompts[0].planned == std::map<int, int>{{1, 4}, {8, 4}});
  CHECK(outcome.prompts[2].planned == std::map<int, int>{{1, 10}, {8, 4}});
  CHECK(outcome.prompts[3].planned[8] == 10);
  CHECK(outcome.planned_requests() == again.planned_requests() + 5);
  // The same decisions give the same round: what --resume relies on.
  const Plan replayed = next_adaptive_round(again, plan);
  REQUIRE(replayed.waves.size() == round.waves.size());
  for (std::size_t w = 0; w < round.waves.size(); ++w)
    CHECK(replayed.waves[w].requests == round.waves[w].requests);
  // Nothing left to run: no wave at all.
  for (auto& prompt : outcome.prompts) prompt.planned = {{1, 10}, {8, 10}};
  CHECK(next_adaptive_round(outcome, plan).waves.empty());
}

TEST_CASE("close_undecided and the unfinished message") {
  AdaptiveOutcome outcome = outcome_after_initial(3, {1});
  outcome.prompts[0].stop = AdaptiveStop::unstable;
  CHECK(adaptive_unfinished_message(outcome) ==
        "adaptive: the audit ended with 2 of 3 prompts undecided: p1, p2 (--resume continues it)");
  close_undecided(outcome, AdaptiveStop::budget);
  CHECK(outcome.finished);
  CHECK(outcome.count(AdaptiveStop::budget) == 2);
  CHECK(adaptive_unfinished_message(outcome).empty());
  CHECK(adaptive_unfinished_message(std::nullopt).empty());
}

TEST_CASE("adaptive stops and bases read back from their names") {
  for (AdaptiveStop stop : {AdaptiveStop::undecided, AdaptiveStop::unstable, AdaptiveStop::robust,
                            AdaptiveStop::max_runs, AdaptiveStop::budget})
    CHECK(*parse_adaptive_stop(to_string(stop)) == stop);
  CHECK_FALSE(parse_adaptive_stop("done"));
  CHECK(*parse_bound_basis("noise") == BoundBasis::noise);
  CHECK_FALSE(parse_bound_basis("gap"));
}
