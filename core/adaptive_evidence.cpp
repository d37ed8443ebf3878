// The noise model's checks. Each one looks for a flip, or a noise, the model cannot produce:
// a model that tightens a bound must first explain what the audit saw.
#include "core/adaptive_evidence.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace llmrepro::core {
namespace {

std::string short_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

std::string runs_text(int runs) { return std::to_string(runs) + (runs == 1 ? " run" : " runs"); }

const DistinctCompletion* reference_of(const PromptAnalysis& prompt) {
  for (const auto& completion : prompt.completions)
    if (completion.is_reference) return &completion;
  return nullptr;
}

// The largest noise sample of the level, counted exactly (not only the kept ones).
double largest_sample(const AuditAnalysis& analysis, int concurrency) {
  for (const auto& level : analysis.summary.by_concurrency)
    if (level.concurrency == concurrency && level.noise.max) return *level.noise.max;
  const auto found = analysis.noise.find(concurrency);
  return found == analysis.noise.end() || found->second.empty() ? 0.0
                                                                : found->second.sorted().back();
}

} // namespace

double poisson_tail(long k, double mean) {
  if (k <= 0) return 1.0;
  if (mean <= 0.0) return 0.0;
  const auto term = [&](long j) {
    const auto events = static_cast<double>(j);
    return std::exp(-mean + events * std::log(mean) - std::lgamma(events + 1.0));
  };
  // Above the mean the terms fall from k on: summed upward, so that a tiny tail keeps its digits
  // (1 − P(X < k) would leave rounding error); at or below it, 1 − P(X < k).
  if (static_cast<double>(k) > mean) {
    double tail = 0.0;
    for (long j = k;; ++j) {
      const double next = term(j);
      tail += next;
      if (next <= tail * 1e-17) break;
    }
    return std::min(tail, 1.0);
  }
  double below = 0.0;
  for (long j = 0; j < k; ++j) below += term(j);
  return std::clamp(1.0 - below, 0.0, 1.0);
}

double binomial_tail(long k, long n, double p) {
  if (k <= 0) return 1.0;
  if (k > n || p <= 0.0) return 0.0;
  if (p >= 1.0) return 1.0;
  const auto trials = static_cast<double>(n);
  double tail = 0.0;
  for (long j = k; j <= n; ++j) {
    const auto events = static_cast<double>(j);
    tail += std::exp(std::lgamma(trials + 1.0) - std::lgamma(events + 1.0) -
                     std::lgamma(trials - events + 1.0) + events * std::log(p) +
                     (trials - events) * std::log1p(-p));
  }
  return std::clamp(tail, 0.0, 1.0);
}

LevelEvidence level_evidence(const AuditAnalysis& analysis, int concurrency) {
  LevelEvidence evidence;
  const auto noise = analysis.noise.find(concurrency);
  const NoiseDistribution empty;
  const NoiseDistribution& pool = noise == analysis.noise.end() ? empty : noise->second;
  for (const auto& level : analysis.summary.by_concurrency)
    if (level.concurrency == concurrency) evidence.nonzero_samples = level.noise.nonzero;
  const double largest = largest_sample(analysis, concurrency);
  for (const auto& prompt : analysis.prompts) {
    const LevelAnalysis* level = level_of(prompt, concurrency);
    if (!level) continue;
    evidence.below_runner_up_runs += level->below_runner_up_runs;
    const DistinctCompletion* reference = reference_of(prompt);
    if (!reference || prompt.text_mode) continue;
    // The model's flip probability of one run: ½ · Σ_i P(|Δgap| > gap_i) over the reference's
    // positions (the sum the bound rests on, its point estimate).
    double flip = 0.0;
    for (const auto& token : reference->tokens)
      if (const auto gap = measured_gap(token)) flip += 0.5 * pool.exceedance(*gap);
    evidence.predicted_departures += level->runs * std::min(1.0, flip);
    for (const auto& completion : prompt.completions) {
      if (completion.is_reference) continue;
      const auto seen = completion.count_by_concurrency.find(concurrency);
      if (seen == completion.count_by_concurrency.end() || seen->second == 0) continue;
      evidence.departed_runs += seen->second;
      // The model flips a position only where a noise sample reaches its gap.
      const auto at = static_cast<std::size_t>(completion.divergence.value_or(0));
      const auto gap = at < reference->tokens.size() ? measured_gap(reference->tokens[at])
                                                     : std::optional<double>{};
      if (!gap || largest < *gap) evidence.unexplained_runs += seen->second;
    }
  }
  return evidence;
}

std::string noise_model_contradiction(const LevelEvidence& evidence, double alpha) {
  if (evidence.below_runner_up_runs > 0)
    return runs_text(evidence.below_runner_up_runs) +
           " chose a token below its runner-up: the endpoint samples";
  if (evidence.departed_runs > 0 && evidence.nonzero_samples == 0)
    return "the noise is zero, yet " + runs_text(evidence.departed_runs) +
           " departed from their reference: something other than noise flips them";
  if (evidence.unexplained_runs > 0)
    return runs_text(evidence.unexplained_runs) +
           " departed at a gap no noise sample of the level reaches";
  if (poisson_tail(evidence.departed_runs, evidence.predicted_departures) < alpha)
    return runs_text(evidence.departed_runs) + " departed from their reference where the noise " +
           "predicts " + short_number(evidence.predicted_departures) + " (Poisson p < " +
           short_number(alpha) + ")";
  return {};
}

std::string prompt_noise_louder(const PromptAnalysis& prompt, const AuditAnalysis& analysis,
                                int concurrency, double alpha) {
  const LevelAnalysis* level = level_of(prompt, concurrency);
  const auto pool = analysis.noise.find(concurrency);
  if (!level || level->own_noise.empty() || pool == analysis.noise.end() || pool->second.empty())
    return {};
  const double loud = pool->second.quantile(k_loud_quantile);
  const double pool_share = pool->second.exceedance(loud);
  const auto& own = level->own_noise.sorted();
  const long samples = static_cast<long>(own.size());
  const long above = own.end() - std::upper_bound(own.begin(), own.end(), loud);
  if (binomial_tail(above, samples, pool_share) >= alpha) return {};
  return "its own noise at c=" + std::to_string(concurrency) + " is louder than the pool's (" +
         std::to_string(above) + " of " + std::to_string(samples) + " samples above " +
         short_number(loud) + ", where " + short_number(100.0 * pool_share) +
         "% of the pool's are)";
}

} // namespace llmrepro::core
