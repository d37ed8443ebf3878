// Whether an adaptive audit's own records support the noise model that tightens a robust bound
// (greedy decoding, noise shared across prompts): the checks of docs/design.md "Adaptive runs",
// level by level and prompt by prompt. Where a check fails, a prompt's bound rests on its own
// runs alone, and the reason is stored and reported.
#pragma once

#include <map>
#include <string>

#include "core/analysis.hpp"

namespace llmrepro::core {

// The fraction of a level's noise samples that sets "loud": a prompt's own samples above the
// pool's quantile at this level are compared with the pool's share above it.
inline constexpr double k_loud_quantile = 0.9;

// P(X >= k) for X ~ Poisson(mean); 1 for k <= 0, 0 for mean 0 and k > 0.
double poisson_tail(long k, double mean);

// P(X >= k) for X ~ Binomial(n, p); 1 for k <= 0, 0 for k > n.
double binomial_tail(long k, long n, double p);

// What the records of one level say of the noise model, over every prompt.
struct LevelEvidence {
  int below_runner_up_runs = 0; // runs that chose a token below its runner-up (endpoint samples)
  int departed_runs = 0;        // runs that differ from their prompt's reference
  // Departed runs whose first divergence is at a position the model cannot flip: a reference gap
  // no noise sample of the level reaches, an unknown gap, or past the reference's end.
  int unexplained_runs = 0;
  double predicted_departures = 0.0; // the model's expected count of departed runs
  int nonzero_samples = 0;           // the level's noise samples above zero
};
LevelEvidence level_evidence(const AuditAnalysis& analysis, int concurrency);

// The first failed check of `evidence` in words ("3 runs chose a token below its runner-up: the
// endpoint samples"), the calibration test at `alpha`; empty where every check passes.
std::string noise_model_contradiction(const LevelEvidence& evidence, double alpha);

// Why the noise model does not hold for this prompt at this level: its own noise samples are
// louder than the pool's (significantly more of them above the pool's k_loud_quantile than the
// pool's own share, a one-sided binomial test at `alpha`). Empty where it holds or the prompt has
// no sample there.
std::string prompt_noise_louder(const PromptAnalysis& prompt, const AuditAnalysis& analysis,
                                int concurrency, double alpha);

} // namespace llmrepro::core
