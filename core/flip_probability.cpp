// The flip probability, exactly as docs/design.md "Noise and the flip probability" states it.
//
// At temperature 0 a run departs from another where the noise in its logits moves the top-1/
// top-2 margin by more than the margin itself. Where two runs agree on the context, the
// difference of their margins at a position is one draw of that noise, so an audit that repeats
// each prompt measures its endpoint's noise for free; reading the reference's gaps against that
// distribution predicts which prompts flip, and the audit's own flips tell how well it did.
#include "core/flip_probability.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/logprob_drift.hpp"
#include "core/logprob_floor.hpp"
#include "core/run_numbers.hpp"

namespace llmrepro::core {
namespace {

static_assert(std::is_sorted(k_noise_decades.begin(), k_noise_decades.end()));

// The decade bin of a sample: 0 for exactly zero, then (0, 1e-6], (1e-6, 1e-5], ..., and > 1.
std::size_t decade_of(double value) {
  if (!(value > 0)) return 0;
  // The bounds rise, so the bin is one past the bounds the value exceeds: counted without a
  // branch a bound, for every noise sample of an audit comes here.
  std::size_t bin = 1;
  for (double bound : k_noise_decades) bin += value > bound ? 1 : 0;
  return bin;
}

} // namespace

bool chose_below_runner_up(const Completion& completion) {
  if (!completion.has_logprobs) return false;
  // Plain loops: std::any_of's unrolled search cost more than two candidates' comparisons.
  for (const TokenLogprob& token : completion.tokens) {
    if (!is_known_logprob(token.logprob) || token.logprob <= k_logprob_floor) continue;
    const double above = token.logprob + k_greedy_tolerance;
    for (const TokenCandidate& candidate : token.top)
      if (is_known_logprob(candidate.logprob) && candidate.logprob > above) return true;
  }
  return false;
}

int add_gap_noise(std::vector<double>& deviations, const Completion& reference,
                  const Completion& other) {
  if (!reference.has_logprobs || !other.has_logprobs) return 0;
  std::vector<PositionNumbers> numbers[2];
  read_run_numbers(reference, numbers[0]);
  read_run_numbers(other, numbers[1]);
  return compare_runs(numbers[0], numbers[1], &deviations).left_out;
}

NoiseDistribution::NoiseDistribution(std::vector<double> deviations)
    : m_sorted(std::move(deviations)) {
  std::sort(m_sorted.begin(), m_sorted.end());
  for (std::size_t i = 0; i < m_sorted.size(); i += k_index_stride) m_index.push_back(m_sorted[i]);
}

namespace {

// The position `bound` (std::lower_bound or std::upper_bound) finds in `sorted`, found first in
// its every-stride-th `index`: the first index entry it passes bounds the block to search.
template <typename Bound>
std::size_t indexed_bound(const std::vector<double>& sorted, const std::vector<double>& index,
                          std::size_t stride, double value, Bound bound) {
  const auto block =
      static_cast<std::size_t>(bound(index.begin(), index.end(), value) - index.begin());
  const std::size_t first = block == 0 ? 0 : (block - 1) * stride;
  const std::size_t last = std::min(sorted.size(), block * stride);
  const auto begin = sorted.begin();
  return static_cast<std::size_t>(bound(begin + static_cast<std::ptrdiff_t>(first),
                                        begin + static_cast<std::ptrdiff_t>(last), value) -
                                  begin);
}

} // namespace

std::size_t NoiseDistribution::at_least(double value) const {
  const auto below =
      indexed_bound(m_sorted, m_index, k_index_stride, value, [](auto first, auto last, double v) {
        return std::lower_bound(first, last, v);
      });
  return m_sorted.size() - below;
}

std::size_t NoiseDistribution::above(double value) const {
  const auto up_to =
      indexed_bound(m_sorted, m_index, k_index_stride, value, [](auto first, auto last, double v) {
        return std::upper_bound(first, last, v);
      });
  return m_sorted.size() - up_to;
}

int NoiseDistribution::nonzero() const {
  const auto zeros = std::upper_bound(m_sorted.begin(), m_sorted.end(), 0.0) - m_sorted.begin();
  return positions() - static_cast<int>(zeros);
}

double NoiseDistribution::exceedance(double gap) const {
  if (m_sorted.empty()) return 0.0;
  const auto above = m_sorted.end() - std::upper_bound(m_sorted.begin(), m_sorted.end(), gap);
  return static_cast<double>(above) / static_cast<double>(m_sorted.size());
}

double NoiseDistribution::quantile(double q) const {
  if (m_sorted.empty()) return 0.0;
  // The smallest rank k (1-based) with k / n >= q.
  const auto n = static_cast<double>(m_sorted.size());
  auto rank = static_cast<std::size_t>(std::ceil(q * n - 1e-9));
  rank = std::clamp<std::size_t>(rank, 1, m_sorted.size());
  return m_sorted[rank - 1];
}

double position_flip_probability(const NoiseDistribution& noise, double gap) {
  return 0.5 * noise.exceedance(gap);
}

double window_flip_probability(const NoiseDistribution& noise, const std::vector<double>& gaps) {
  double stays = 1.0;
  for (double gap : gaps) stays *= 1.0 - position_flip_probability(noise, gap);
  return 1.0 - stays;
}

double run_error_at_least(const NoiseDistribution& noise, double x) {
  const auto& sorted = noise.sorted();
  if (sorted.empty()) return x <= 0 ? 1.0 : 0.0;
  // e ≥ x with x > 0 needs s = +1 and d ≥ √2 · x; e < x with x ≤ 0 needs s = −1 and
  // d > √2 · |x|. Either way half the share of samples past the threshold.
  const double n = static_cast<double>(sorted.size());
  if (x > 0) return 0.5 * static_cast<double>(noise.at_least(std::sqrt(2.0) * x)) / n;
  return 1.0 - 0.5 * static_cast<double>(noise.above(-std::sqrt(2.0) * x)) / n;
}

std::vector<double> run_error_quantiles(const NoiseDistribution& noise) {
  // The quantile of e at u > ½ is d's at 2u − 1, over √2; at 1 − u its negative. The midpoints
  // u = (k + ½) / K of K equal slices pair up as ±, with d's quantiles at (2j + 1) / K.
  constexpr int half = k_reference_quantiles / 2;
  std::vector<double> quantiles;
  quantiles.reserve(k_reference_quantiles);
  for (int j = 0; j < half; ++j) {
    const double magnitude =
        noise.quantile((2.0 * j + 1.0) / k_reference_quantiles) / std::sqrt(2.0);
    quantiles.push_back(magnitude);
    quantiles.push_back(-magnitude);
  }
  return quantiles;
}

double audit_flip_probability(const NoiseDistribution& reference_noise,
                              const std::vector<LevelChances>& levels,
                              const std::vector<double>& gaps) {
  const std::vector<double> reference_errors = run_error_quantiles(reference_noise);
  // A gap wider than the reference's largest error plus any run's stays at every quantile: most
  // of a completion's positions, skipped without a search.
  double reach = 0.0;
  for (const LevelChances& level : levels)
    if (level.runs > 0 && level.noise != nullptr && !level.noise->empty())
      reach = std::max(reach, level.noise->sorted().back() / std::sqrt(2.0));
  const double widest_error = reference_errors.empty() ? 0.0
                                                       : *std::max_element(reference_errors.begin(),
                                                                           reference_errors.end());
  const double safe_gap = (widest_error + reach) * (1.0 + 1e-9);
  double stays = 1.0;
  for (double gap : gaps) {
    if (gap > safe_gap) continue;
    double position_stays = 0.0;
    for (double reference_error : reference_errors) {
      double all_stay = 1.0;
      for (const LevelChances& level : levels) {
        if (level.runs <= 0 || level.noise == nullptr) continue;
        all_stay *= std::pow(run_error_at_least(*level.noise, reference_error - gap), level.runs);
      }
      position_stays += all_stay;
    }
    stays *= position_stays / static_cast<double>(reference_errors.size());
  }
  return 1.0 - stays;
}

NoiseEstimate estimate_of(const NoiseDistribution& noise) {
  NoiseEstimate estimate;
  estimate.positions = noise.positions();
  estimate.nonzero = noise.nonzero();
  if (noise.empty()) return estimate;
  estimate.median = noise.quantile(0.5);
  estimate.p90 = noise.quantile(0.9);
  estimate.p99 = noise.quantile(0.99);
  estimate.max = noise.quantile(1.0);
  for (double value : noise.sorted()) ++estimate.decade_counts[decade_of(value)];
  return estimate;
}

NoiseSamples::NoiseSamples(std::size_t capacity) : m_capacity(std::max<std::size_t>(capacity, 1)) {}

// In loops of one kind each: the counts over every sample, which the compiler unrolls, then the
// reservoir's, which alone draws (one draw a sample beyond the capacity, in order).
void NoiseSamples::add(std::span<const double> deviations) {
  for (double deviation : deviations) {
    if (deviation > 0) ++m_nonzero;
    m_max = std::max(m_max, deviation);
    ++m_decade_counts[decade_of(deviation)];
  }
  auto next = deviations.begin();
  for (; next != deviations.end() && m_kept.size() < m_capacity; ++next) {
    ++m_seen;
    m_kept.push_back(*next);
  }
  // Algorithm R: the n-th sample replaces a kept one with probability capacity / n.
  for (; next != deviations.end(); ++next) {
    const std::uint64_t slot = m_random.below(++m_seen);
    if (slot < m_capacity) m_kept[slot] = *next;
  }
}

NoiseDistribution NoiseSamples::distribution() const { return NoiseDistribution(m_kept); }

NoiseEstimate NoiseSamples::estimate(const NoiseDistribution& kept) const {
  NoiseEstimate estimate = estimate_of(kept);
  estimate.left_out = static_cast<int>(m_left_out);
  if (m_seen == 0) return estimate;
  estimate.positions = static_cast<int>(m_seen);
  estimate.nonzero = static_cast<int>(m_nonzero);
  estimate.max = m_max;
  estimate.decade_counts = m_decade_counts;
  return estimate;
}

std::optional<double> recommended_tau(const std::vector<const NoiseDistribution*>& levels) {
  std::optional<double> tau;
  for (const NoiseDistribution* noise : levels) {
    if (noise == nullptr || noise->empty()) continue;
    tau = std::max(tau.value_or(0.0), noise->quantile(0.99));
  }
  return tau;
}

PredictorScore score_predictor(const std::vector<double>& predicted,
                               const std::vector<bool>& observed) {
  PredictorScore score;
  const std::size_t n = std::min(predicted.size(), observed.size());
  if (n == 0) return score;
  double squared = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double y = observed[i] ? 1.0 : 0.0;
    squared += (predicted[i] - y) * (predicted[i] - y);
  }
  score.brier = squared / static_cast<double>(n);

  // Mann-Whitney over every (positive, negative) pair; the audits are small enough for the
  // quadratic count, and it is the definition with ties exactly ½.
  double wins = 0.0;
  double pairs = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!observed[i]) continue;
    for (std::size_t j = 0; j < n; ++j) {
      if (observed[j]) continue;
      pairs += 1.0;
      if (predicted[i] > predicted[j])
        wins += 1.0;
      else if (predicted[i] == predicted[j])
        wins += 0.5;
    }
  }
  if (pairs > 0) score.auc = wins / pairs;
  return score;
}

std::vector<ReliabilityBin> reliability_bins(const std::vector<double>& predicted,
                                             const std::vector<bool>& observed, int bins) {
  bins = std::max(bins, 1);
  std::vector<ReliabilityBin> out(static_cast<std::size_t>(bins));
  std::vector<double> sums(out.size(), 0.0);
  for (std::size_t b = 0; b < out.size(); ++b) {
    out[b].lower = static_cast<double>(b) / bins;
    out[b].upper = static_cast<double>(b + 1) / bins;
  }
  const std::size_t n = std::min(predicted.size(), observed.size());
  for (std::size_t i = 0; i < n; ++i) {
    const double p = std::clamp(predicted[i], 0.0, 1.0);
    const auto b = std::min(static_cast<std::size_t>(p * bins), out.size() - 1);
    ++out[b].items;
    if (observed[i]) ++out[b].observed;
    sums[b] += predicted[i];
  }
  for (std::size_t b = 0; b < out.size(); ++b) {
    if (out[b].items == 0) continue;
    out[b].mean_predicted = sums[b] / out[b].items;
    out[b].observed_rate = static_cast<double>(out[b].observed) / out[b].items;
  }
  return out;
}

} // namespace llmrepro::core
