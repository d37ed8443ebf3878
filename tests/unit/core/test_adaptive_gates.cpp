#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/adaptive.hpp"
#include "core/adaptive_gates.hpp"
#include "core/verdict.hpp"
#include "tests/unit/core/adaptive_test_support.hpp"

using namespace llmrepro::core;
using llmrepro::core::test::suite_of;
using llmrepro::core::test::token_with_gap;

namespace {

// A prompt of 8 tokens, every gap 2 nats (far above any noise below), in `status`, whose
// agreeing runs drifted by `drift` nats over 40 compared positions.
PromptAnalysis prompt_state(int index, PromptStatus status, double drift) {
  PromptAnalysis prompt;
  prompt.id = "p" + std::to_string(index);
  prompt.prompt_index = index;
  prompt.status = status;
  prompt.unstable = status == PromptStatus::unstable;
  prompt.unique_completions = status == PromptStatus::unstable ? 2 : 1;
  prompt.runs = 6;
  DistinctCompletion reference;
  reference.is_reference = true;
  for (int i = 0; i < 8; ++i) reference.tokens.push_back(token_with_gap(2.0));
  prompt.completions.push_back(reference);
  prompt.logprob_drift.max_abs = drift;
  prompt.logprob_drift.positions_compared = 40;
  return prompt;
}

AdaptiveOutcome outcome_after_initial(int prompts, const AdaptiveConfig& config) {
  PlanConfig plan;
  plan.levels = {1, 8};
  AdaptiveOutcome outcome;
  initial_adaptive_plan(suite_of(prompts), plan, config, outcome);
  return outcome;
}

// Two levels of 2000 noise samples, none above 0.01: every prompt above is bounded robust at
// epsilon 0.05 (½ · 8 · (1 − α^(1/2000)): 0.0088 at look 1, 0.011 at look 2).
AuditAnalysis quiet_noise() {
  AuditAnalysis analysis;
  analysis.noise[1] = NoiseDistribution(std::vector<double>(2000, 0.001));
  analysis.noise[8] = NoiseDistribution(std::vector<double>(2000, 0.01));
  return analysis;
}

// A prompt whose window's flip probability is `level_p` at each of levels 1 and 8 (3 runs each).
PromptAnalysis with_flip(PromptAnalysis prompt, std::optional<double> level_p) {
  for (int level : {1, 8}) {
    LevelAnalysis analysis;
    analysis.concurrency = level;
    analysis.runs = 3;
    analysis.p_flip = level_p;
    prompt.by_concurrency.push_back(analysis);
  }
  if (level_p) prompt.p_flip = 1.0 - std::pow(1.0 - *level_p, 5); // 2 + 3 chances
  return prompt;
}

} // namespace

TEST_CASE("judge_look: under --max-logprob-drift no prompt stops before the gate has its runs") {
  AdaptiveConfig config;
  config.epsilon = 0.05;
  config.max_logprob_drift = 0.0;
  AdaptiveOutcome outcome = outcome_after_initial(4, config);
  AuditAnalysis analysis = quiet_noise();
  // p0: agrees, bound below epsilon, no drift yet. p1: the same, but its runs drifted by 0.002.
  // p2: unstable without drift. p3: unstable, drifting.
  analysis.prompts.push_back(prompt_state(0, PromptStatus::stable, 0.0));
  analysis.prompts.push_back(prompt_state(1, PromptStatus::stable, 0.002));
  analysis.prompts.push_back(prompt_state(2, PromptStatus::unstable, 0.0));
  analysis.prompts.push_back(prompt_state(3, PromptStatus::unstable, 0.002));
  judge_look(outcome, analysis);
  CHECK(*outcome.prompts[0].p_flip_bound < 0.05);
  CHECK(outcome.prompts[0].stop == AdaptiveStop::undecided); // without the gate: robust
  CHECK(outcome.prompts[1].stop == AdaptiveStop::robust);    // its drift already fails the gate
  CHECK(outcome.prompts[2].stop == AdaptiveStop::undecided); // the gate reads its agreeing runs
  CHECK(outcome.prompts[3].stop == AdaptiveStop::unstable);
  // Look 2: p1 and p3 stopped with drift over the limit, so the gate fails whatever comes next,
  // and it holds no prompt back any longer.
  judge_look(outcome, analysis);
  CHECK(outcome.prompts[0].stop == AdaptiveStop::robust);
  CHECK(outcome.prompts[0].stopped_at_look == 2);
  CHECK(outcome.prompts[2].stop == AdaptiveStop::unstable);
  CHECK(outcome.finished);

  SUBCASE("a drift within the limit holds the prompts to --runs") {
    AdaptiveConfig loose = config;
    loose.max_logprob_drift = 0.01;
    AdaptiveOutcome held = outcome_after_initial(4, loose);
    judge_look(held, analysis);
    judge_look(held, analysis);
    CHECK(held.count(AdaptiveStop::undecided) == 4);
    for (auto& prompt : held.prompts) prompt.planned = {{1, 10}, {8, 10}};
    judge_look(held, analysis);
    CHECK(held.count(AdaptiveStop::max_runs) == 4);
  }
}

TEST_CASE("drift_gate_already_failed: only stopped, judged prompts' drift counts") {
  AdaptiveConfig config;
  config.max_logprob_drift = 0.001;
  AdaptiveOutcome outcome = outcome_after_initial(3, config);
  AuditAnalysis analysis;
  analysis.prompts.push_back(prompt_state(0, PromptStatus::stable, 0.002));
  analysis.prompts.push_back(prompt_state(1, PromptStatus::inconclusive, 0.5));
  analysis.prompts.push_back(prompt_state(2, PromptStatus::stable, 0.001));
  CHECK_FALSE(drift_gate_already_failed(outcome, analysis)); // p0 may still get runs
  outcome.prompts[1].stop = AdaptiveStop::max_runs;
  outcome.prompts[2].stop = AdaptiveStop::robust;
  CHECK_FALSE(drift_gate_already_failed(outcome, analysis)); // inconclusive; at the limit
  outcome.prompts[0].stop = AdaptiveStop::robust;
  CHECK(drift_gate_already_failed(outcome, analysis));
  outcome.config.max_logprob_drift.reset();
  CHECK_FALSE(drift_gate_already_failed(outcome, analysis));
}

TEST_CASE("gates_allow_stop: --fragile-p waits until fragility is decided") {
  AdaptiveConfig config;
  config.max_runs = 10;
  config.fragile_p = 0.5;
  const PromptAnalysis stable = prompt_state(0, PromptStatus::stable, 0.0);
  // 5 chances at 0.2 each: 0.67 >= 0.5, fragile already.
  CHECK(gates_allow_stop(config, with_flip(stable, 0.2), false));
  // 0.01 each: 0.049 now and 1 − 0.99^19 = 0.174 at --runs: not fragile even then.
  CHECK(*flip_probability_at(with_flip(stable, 0.01), 10) ==
        doctest::Approx(1.0 - std::pow(0.99, 19)));
  CHECK(gates_allow_stop(config, with_flip(stable, 0.01), false));
  // 0.05 each: 0.226 now, 1 − 0.95^19 = 0.623 at --runs: undecided.
  CHECK_FALSE(gates_allow_stop(config, with_flip(stable, 0.05), false));
  // Unknown: undecided.
  CHECK_FALSE(gates_allow_stop(config, with_flip(stable, std::nullopt), false));
  CHECK_FALSE(flip_probability_at(with_flip(stable, std::nullopt), 10));
  config.fragile_p.reset();
  CHECK(gates_allow_stop(config, with_flip(stable, 0.05), false));
}

TEST_CASE("gates_allow_stop: --max-unique holds unstable prompts at or below it") {
  AdaptiveConfig config;
  config.max_unique = 2;
  PromptAnalysis unstable = prompt_state(0, PromptStatus::unstable, 0.0);
  CHECK_FALSE(gates_allow_stop(config, unstable, false));
  unstable.unique_completions = 3;
  CHECK(gates_allow_stop(config, unstable, false));
  CHECK(gates_allow_stop(config, prompt_state(1, PromptStatus::stable, 0.0), false));
}

TEST_CASE("gates_allow_stop: --min-tara holds unstable prompts while their answers agree") {
  AdaptiveConfig config;
  config.min_tara = 0.9;
  PromptAnalysis unstable = prompt_state(0, PromptStatus::unstable, 0.0);
  unstable.answers_agree = true; // the completions differ, their answers not yet
  CHECK_FALSE(gates_allow_stop(config, unstable, false));
  unstable.answers_agree = false;
  CHECK(gates_allow_stop(config, unstable, false));
  PromptAnalysis stable = prompt_state(1, PromptStatus::stable, 0.0);
  stable.answers_agree = true;
  CHECK(gates_allow_stop(config, stable, false));
  config.min_tara.reset();
  unstable.answers_agree = true;
  CHECK(gates_allow_stop(config, unstable, false));
}

TEST_CASE("unsampled_gates: the gates a re-judged adaptive audit's stops did not wait for") {
  AdaptiveConfig sampled;
  sampled.max_runs = 10;
  AdaptiveOutcome outcome = outcome_after_initial(3, sampled);
  outcome.prompts[0].stop = AdaptiveStop::robust;   // 3 runs a level: stopped early
  outcome.prompts[1].stop = AdaptiveStop::unstable; // likewise
  outcome.prompts[2].stop = AdaptiveStop::max_runs;
  outcome.prompts[2].planned = {{1, 10}, {8, 10}};
  AuditConfig judged;
  judged.gates.max_logprob_drift = 0.0;
  auto gates = unsampled_gates(outcome, judged);
  REQUIRE(gates.size() == 1);
  CHECK(gates[0].gate == "max_logprob_drift");
  CHECK(gates[0].line ==
        "--max-logprob-drift 0 was not sampled for (the adaptive audit's stops waited for no "
        "drift gate): 2 prompts stopped before --runs carry no evidence for it: p0, p1 (audit "
        "again with the gate, or without --adaptive)");
  // Sampled for 0.1: a stricter limit is judged soundly, a looser one is not.
  outcome.config.max_logprob_drift = 0.1;
  CHECK(unsampled_gates(outcome, judged).empty());
  judged.gates.max_logprob_drift = 0.2;
  REQUIRE(unsampled_gates(outcome, judged).size() == 1);
  judged.gates.max_logprob_drift.reset();

  // Without --max-unique an unstable prompt stopped at two completions: only 1 is sound.
  judged.gates.max_unique = 1;
  CHECK(unsampled_gates(outcome, judged).empty());
  judged.gates.max_unique = 3;
  gates = unsampled_gates(outcome, judged);
  REQUIRE(gates.size() == 1);
  CHECK(gates[0].gate == "max_unique");
  judged.gates.max_unique.reset();

  judged.gates.min_tara = 0.9;
  gates = unsampled_gates(outcome, judged);
  REQUIRE(gates.size() == 1);
  CHECK(gates[0].gate == "min_tara");
  outcome.config.min_tara = 0.5; // the rule does not read the limit: any will do
  CHECK(unsampled_gates(outcome, judged).empty());
  judged.gates.min_tara.reset();

  judged.gates.fail_on.fragile = true;
  CHECK(unsampled_gates(outcome, judged).empty()); // the gap rule: not a flip probability
  judged.analysis.fragile_p = 0.3;
  REQUIRE(unsampled_gates(outcome, judged).size() == 1);
  CHECK(unsampled_gates(outcome, judged)[0].gate == "fail_on_fragile");
  outcome.config.fragile_p = 0.3;
  CHECK(unsampled_gates(outcome, judged).empty());
  judged.analysis.fragile_window = 20;
  CHECK(unsampled_gates(outcome, judged).size() == 1);

  // Every prompt at --runs everywhere: the fixed plan's evidence, every gate judged.
  judged.gates.max_logprob_drift = 5.0;
  for (auto& prompt : outcome.prompts) prompt.planned = {{1, 10}, {8, 10}};
  CHECK(unsampled_gates(outcome, judged).empty());
}

TEST_CASE("judge: an unsampled gate that passes is not judged; one that fails still fails") {
  AuditAnalysis analysis;
  analysis.summary.prompts = 2;
  analysis.summary.stable_prompts = 2;
  analysis.summary.prompts_with_two_completions = 2;
  analysis.summary.requests = 12;
  analysis.summary.max_logprob_drift = 0.0;
  const std::vector<JudgedScope> scopes{{0, ProbeKind::sweep, &analysis}};
  GateConfig gates;
  gates.max_logprob_drift = 0.0;
  RunFacts facts;
  facts.planned_requests = 12;
  facts.recorded_requests = 12;
  CHECK(judge(scopes, std::nullopt, gates, facts).status == VerdictStatus::pass);
  facts.unsampled_gates.push_back({"max_logprob_drift", "--max-logprob-drift 0 was not sampled"});
  Verdict verdict = judge(scopes, std::nullopt, gates, facts);
  CHECK(verdict.status == VerdictStatus::error);
  CHECK(verdict.headline ==
        "ERROR: the audit could not be judged: --max-logprob-drift 0 was not sampled");
  REQUIRE(verdict.gates.size() == 2);
  CHECK_FALSE(verdict.gates[1].passed);
  CHECK(verdict.gates[1].message == "not judged: --max-logprob-drift 0 was not sampled");
  // Drift already over the limit: more runs could only add to it, so the gate fails as judged.
  analysis.summary.max_logprob_drift = 0.25;
  verdict = judge(scopes, std::nullopt, gates, facts);
  CHECK(verdict.status == VerdictStatus::fail);
  CHECK(verdict.errors.empty());
  CHECK(verdict.gates[1].message.find("largest logprob drift 0.25 nats") == 0);
}
