// What the configured gates need of an adaptive audit (--adaptive): when a prompt may stop
// without starving a gate of its evidence, and, when `report` re-judges with other gates, which
// of them the stops did not wait for. docs/design.md "Adaptive runs" states the rules.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/adaptive_outcome.hpp"
#include "core/analysis.hpp"
#include "core/audit.hpp"
#include "core/verdict.hpp"

namespace llmrepro::core {

// Whether the drift gate (--max-logprob-drift L) already fails whatever is sampled next: a
// prompt stopped at an earlier look (so its records are final) is judged (not inconclusive) and
// its logprobs drifted by more than L. False where the gate is not set.
bool drift_gate_already_failed(const AdaptiveOutcome& outcome, const AuditAnalysis& analysis);

// The flip probability (PromptAnalysis::p_flip) the prompt would have with `runs` runs at each of
// its levels, under this look's noise: 1 − Π (1 − p_level)^(runs − 1 at the reference's level).
// Empty where its p_flip or any level's is unknown.
std::optional<double> flip_probability_at(const PromptAnalysis& prompt, int runs);

// The gate rule: whether every gate `config` carries has the evidence it needs from `prompt` for
// the prompt to stop now (as unstable, or as robust once its bound holds):
//  - --max-unique N: an unstable prompt only once it has more than N distinct completions (the
//    gate needs the count); a stable one is bounded by the flip bound like any other;
//  - --max-logprob-drift L: only when its own runs already drifted by more than L (stopping
//    keeps that evidence), or `drift_failed` (drift_gate_already_failed); else never before
//    --runs at every level, since drift is judged over pairs of agreeing runs and every run
//    withheld can only understate it. Unstable prompts too: the gate reads their agreeing runs;
//  - --min-tara: an unstable prompt only once its answers disagree (TARa counts prompts whose
//    runs all give one answer; more runs can only break that);
//  - --fragile-p P: only when its fragility is decided: its flip probability is known and
//    either already at least P (more runs only raise it) or below P even at --runs at every
//    level (flip_probability_at), under this look's noise.
bool gates_allow_stop(const AdaptiveConfig& config, const PromptAnalysis& prompt,
                      bool drift_failed);

// The gates `judged` applies that the adaptive audit's stops did not wait for, each with its
// line for the verdict: --max-logprob-drift above the limit sampled for (or not sampled for at
// all), --max-unique above the one sampled for (none: 1), --min-tara not sampled for (any limit
// sampled for will do: the rule does not read it), --fail-on fragile under a --fragile-p or
// --fragile-window other than the one sampled for. Empty where no prompt stopped before
// --runs at every level: then every gate has the fixed plan's evidence.
std::vector<UnsampledGate> unsampled_gates(const AdaptiveOutcome& outcome,
                                           const AuditConfig& judged);

} // namespace llmrepro::core
