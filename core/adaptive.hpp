// --adaptive: an audit that spends its runs where they can still change a verdict. Every prompt
// gets a few runs at each level first; then, after each round of waves (a look), each prompt is
// judged undecided or stopped, and the next round gives undecided prompts one more run at each
// level. docs/design.md "Adaptive runs" states the rules and the guarantee.
#pragma once

#include <string>
#include <vector>

#include "core/adaptive_outcome.hpp"
#include "core/analysis.hpp"
#include "core/plan.hpp"
#include "core/result.hpp"
#include "core/suite.hpp"

namespace llmrepro::core {

// The adaptive settings of an audit configured with --adaptive: its initial runs and epsilon,
// `runs` as the most a prompt gets at a level, the gates its stops wait for (--max-unique,
// --max-logprob-drift, --min-tara, --fragile-p with --fragile-window), and 95% confidence.
AdaptiveConfig adaptive_config_of(const AuditConfig& config);

// The error line of an adaptive audit whose stored decisions are unfinished: "adaptive: the
// audit ended with 3 of 48 prompts undecided: p1, p2, p3 (--resume continues it)"; empty when
// the outcome is finished or absent.
std::string adaptive_unfinished_message(const std::optional<AdaptiveOutcome>& outcome);

// The share of the confidence's error probability one look at `look` (1-based) may spend on one
// of `levels` levels: (1 − confidence) / (levels · look · (look + 1)). Summed over every look and
// level it is 1 − confidence, so every bound holds at every look at once (a union bound).
double look_alpha(double confidence, int look, int levels);

// An upper bound on a binomial probability from `k` events in `n` trials, valid with probability
// at least 1 − alpha: the largest p with n · KL(k/n ‖ p) <= ln(1/alpha) (Chernoff), which for
// k = 0 is 1 − alpha^(1/n), the exact Clopper–Pearson bound. 1 when n == 0.
double binomial_upper_bound(long k, long n, double alpha);

// The per-run flip probability bound of a prompt whose runs agree, from one level's noise: a run
// departs only where some position's margin moves by more than its gap (sign even odds), so
// P(flip) <= ½ · Σ_i q(gap_i) <= ½ · positions · q(min_gap), with q(g) = P(|Δgap| > g) bounded
// above from the samples above min_gap among the level's samples. Capped at 1.
double noise_flip_bound(const NoiseDistribution& noise, double min_gap, int positions,
                        double alpha);

// The bound from the prompt's own runs alone: `agreeing` runs beyond the reference all agreed,
// so P(flip) <= 1 − alpha^(1/agreeing) (exact for zero events); 1 with none.
double runs_flip_bound(int agreeing, double alpha);

// The first plan: every planned prompt's first `initial_runs` repeats at each level (those of
// make_plan with runs = initial_runs), and the outcome with every prompt undecided.
Plan initial_adaptive_plan(const Suite& suite, const PlanConfig& plan, const AdaptiveConfig& config,
                           AdaptiveOutcome& outcome);

// One look: judges every undecided prompt of `outcome` from `analysis` (the analysis of the
// records of every round planned so far) and advances outcome.looks. A prompt is stopped
// unstable when its runs differ, robust when they agree and its bound is below epsilon, either
// only where gates_allow_stop (core/adaptive_gates.hpp) says every gate has its evidence;
// max_runs when no level can take another run; else it stays undecided. The bound is the runs
// bound, or the noise bound where the reference's gaps and every level's noise are known and the
// noise model holds for the prompt (core/adaptive_evidence.hpp; unchecked under --adaptive-assume
// greedy-shared-noise). Levels whose records contradict the model are recorded in
// outcome.contradicted, for good.
void judge_look(AdaptiveOutcome& outcome, const AuditAnalysis& analysis);

// The next round: at each level in order one wave giving each undecided prompt below max_runs
// there exactly one more run (never more: a batch of c forms only while c prompts are
// undecided), shuffled with the plan's seed and the look. Empty when no prompt is undecided.
// outcome.planned counts the runs it adds.
Plan next_adaptive_round(AdaptiveOutcome& outcome, const PlanConfig& plan);

// Marks every undecided prompt with `stop` (budget) and the outcome finished.
void close_undecided(AdaptiveOutcome& outcome, AdaptiveStop stop);

// The guarantee in words, for every report, with what each robust bound rests on: "each of the
// 31 prompts stopped as robust has, with 95% confidence (valid at every look), a probability
// below 0.01 that one more run at any level departs from its reference: 3 from its own agreeing
// runs alone, ...; 28 from the level's noise, under the noise model ...". Prompts stopped on the
// noise model before a later look contradicted it are named apart, with no confidence claimed.
std::string adaptive_guarantee(const AdaptiveOutcome& outcome);

// The lines every report shows beside the guarantee: the assumption an audit was told to make
// (--adaptive-assume), each level where the audit's records contradicted the noise model and
// why, and the prompts whose own noise the model does not hold for. Empty when none applies.
std::vector<std::string> adaptive_notes(const AdaptiveOutcome& outcome);

// The requests a fixed audit of the same prompts and levels would send: prompts x levels x runs.
std::size_t fixed_plan_requests(const AdaptiveOutcome& outcome);

// The line every report shows near the verdict of an adaptive audit: "adaptive: 412 of 960
// requests (42.9%) over 8 looks; stopped: 28 unstable, 5 robust, 15 at --runs 10".
std::string adaptive_line(const AdaptiveOutcome& outcome);

} // namespace llmrepro::core
