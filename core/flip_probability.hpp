// The flip probability: how likely an endpoint's own numerical noise is to flip the argmax at a
// position, estimated from the audit itself, and how well that prediction (and the fixed gap
// rule beside it) matched what the audit observed. Definitions: docs/design.md "Noise and the
// flip probability".
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/completion.hpp"
#include "core/logprob_floor.hpp"
#include "core/random.hpp"

namespace llmrepro::core {

// The top-1/top-2 margin as a measurement: TokenLogprob::gap(), but empty where either of the two
// sits at the logprob floor (k_logprob_floor: -Infinity, negative overflow, or the floor an
// endpoint sends itself). Such a candidate has no measured probability, and its "gap" is the
// distance to the floor: one floored runner-up beside a finite one would read as thousands of
// nats of noise.
// As a double, NaN where it is empty: the form for the loops that ask it of every token of every
// run (an std::optional<double> is built and read back through memory, which stalled them).
inline double measured_gap_or_nan(const TokenLogprob& token) {
  if (token.top.size() < 2) return k_unknown_logprob;
  const double first = token.top[0].logprob;
  const double second = token.top[1].logprob;
  if (!is_known_logprob(first) || !is_known_logprob(second) || first <= k_logprob_floor ||
      second <= k_logprob_floor)
    return k_unknown_logprob;
  return first - second;
}
inline std::optional<double> measured_gap(const TokenLogprob& token) {
  const double gap = measured_gap_or_nan(token);
  if (std::isnan(gap)) return std::nullopt;
  return gap;
}

// A chosen token whose own logprob is below another candidate's by more than this (nats) was not
// the greedy choice; less is rounding in the endpoint's numbers.
inline constexpr double k_greedy_tolerance = 1e-6;

// Whether some token of `completion` has a known candidate whose logprob is above the token's own
// by more than k_greedy_tolerance: the endpoint chose a token below its runner-up (it samples, or
// decodes on other numbers than it reports). False without logprobs.
bool chose_below_runner_up(const Completion& completion);

// Adds to `deviations` the noise samples `other` gives against `reference`: at each position
// where the two runs agree on every earlier token (the same context) and both gaps are measured
// (measured_gap), |gap(other) − gap(reference)| where they chose the same token, and
// gap(other) + gap(reference) where they swapped their top two (each chose the other's
// runner-up): the margin moved by that much. A position where they chose unrelated tokens gives
// no sample, and the comparison ends at the first differing token, past which the contexts
// differ. Runs without logprobs give none. Returns the positions of the same context left out
// because a gap was not measured (a runner-up missing, unknown or at the floor, in either run).
int add_gap_noise(std::vector<double>& deviations, const Completion& reference,
                  const Completion& other);

// The distribution of one level's noise samples: the empirical distribution of |Δgap|, with no
// shape assumed, so that a few large deviations move the tail and nothing else.
class NoiseDistribution {
public:
  NoiseDistribution() = default;
  explicit NoiseDistribution(std::vector<double> deviations); // sorts them

  int positions() const { return static_cast<int>(m_sorted.size()); }
  bool empty() const { return m_sorted.empty(); }
  // Samples strictly above zero: the positions where the numbers moved at all.
  int nonzero() const;
  // The fraction of samples strictly greater than `gap`; 0 when there are none.
  double exceedance(double gap) const;
  // The smallest sample x with at least a fraction q of the samples <= x, 0 < q <= 1; 0 when
  // there are none.
  double quantile(double q) const;
  // The samples, ascending.
  const std::vector<double>& sorted() const { return m_sorted; }
  // How many samples are >= `value`, and how many > `value`: a search of a coarse index (every
  // k_index_stride-th sample) and then of one block, so that the flip probability's many searches
  // per position touch a few cache lines instead of a path through up to 2 MiB of samples.
  std::size_t at_least(double value) const;
  std::size_t above(double value) const;

private:
  static constexpr std::size_t k_index_stride = 64;
  std::vector<double> m_sorted;
  std::vector<double> m_index; // m_sorted[k · k_index_stride]
};

// The probability that one run flips the argmax at a position whose reference gap is `gap`:
// the perturbation of the margin must exceed the gap and point the other way, so with noise that
// is symmetric in sign, P = ½ · P(|Δgap| > gap). Zero wherever the noise never moved (a tie
// included: an endpoint that always computes the same numbers always breaks it the same way).
double position_flip_probability(const NoiseDistribution& noise, double gap);

// The probability that one run flips somewhere among these positions, independent positions
// assumed: 1 − Π(1 − p_i).
double window_flip_probability(const NoiseDistribution& noise, const std::vector<double>& gaps);

// One run's signed error on the gap, as a level's noise implies it: e = s · d / √2, d a sample
// |Δgap| of the level and s an even-odds sign. A sample is the difference of two runs' errors, so
// (for Gaussian noise) its variance is twice one run's. P(e ≥ x), read from the samples by binary
// search; where the noise never moved e is 0, so P = 1 for x ≤ 0 and 0 above.
double run_error_at_least(const NoiseDistribution& noise, double x);

// The reference run's error as the expectation over it is taken: k_reference_quantiles quantiles
// of e, at the midpoints of equal slices of probability, symmetric about 0, each of weight
// 1 / k_reference_quantiles.
inline constexpr int k_reference_quantiles = 64;
std::vector<double> run_error_quantiles(const NoiseDistribution& noise);

// The runs of one level that can depart from the reference: all of them, less the reference's
// own at the lowest level.
struct LevelChances {
  const NoiseDistribution* noise = nullptr;
  int runs = 0;
};

// The probability that the audit's runs show a flip among the reference's positions with these
// gaps. Every run is measured against the same reference, whose observed gap G = g + e_ref
// carries its own error, so the runs' flips are correlated through it: a run flips at a position
// when g + e_run < 0, i.e. e_run < e_ref − G, and
//   P(no flip at i) = E over e_ref [ Π_levels P_level(e ≥ e_ref − G_i)^runs_level ],
// the expectation over `reference_noise` (the lowest level's) at its k_reference_quantiles
// quantiles; positions independent: 1 − Π_i P(no flip at i). At one run this is the per-level
// probability where the noise is Gaussian (the difference of two runs' errors is a sample).
double audit_flip_probability(const NoiseDistribution& reference_noise,
                              const std::vector<LevelChances>& levels,
                              const std::vector<double>& gaps);

// Summary figures of a level's noise, for reports: how many positions it rests on, how many
// moved, its quantiles, and counts per decade (k_noise_decades) for the distribution chart.
inline constexpr std::array<double, 7> k_noise_decades{1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0};
struct NoiseEstimate {
  int positions = 0;
  int nonzero = 0;
  // Empty when positions == 0.
  std::optional<double> median;
  std::optional<double> p90;
  std::optional<double> p99;
  std::optional<double> max;
  // Samples that are exactly 0, then those in (0, 1e-6], (1e-6, 1e-5], ... (1e-1, 1], and > 1.
  std::array<int, k_noise_decades.size() + 2> decade_counts{};
  // Positions of the same context that gave no sample because a gap was not measured
  // (add_gap_noise's count): a runner-up missing, unknown or at the logprob floor.
  int left_out = 0;
};
NoiseEstimate estimate_of(const NoiseDistribution& noise);

// The samples a level's noise keeps at most: beyond them a uniform sample stands for the rest, so
// that the analysis of an audit with many runs of long completions stays bounded in memory
// (2 MiB a level).
inline constexpr std::size_t k_noise_sample_capacity = std::size_t{1} << 18;

// One level's noise samples as they stream in, prompt after prompt: every sample is counted
// exactly (positions, nonzero, maximum, decades), and at most `capacity` of them are kept for the
// quantiles and the flip probability, by reservoir sampling with a fixed seed, so that the same
// records in the same order always keep the same sample. Up to `capacity` samples every one is
// kept and every figure is exact.
class NoiseSamples {
public:
  explicit NoiseSamples(std::size_t capacity = k_noise_sample_capacity);

  void add(double deviation) { add(std::span<const double>(&deviation, 1)); }
  void add(std::span<const double> deviations); // in order
  // Counts positions that gave no sample (add_gap_noise's return value).
  void leave_out(int positions) { m_left_out += static_cast<std::uint64_t>(positions); }
  // The kept samples' distribution.
  NoiseDistribution distribution() const;
  // Exact counts and maximum, with the quantiles of the kept samples.
  NoiseEstimate estimate() const { return estimate(distribution()); }
  // The same, from distribution() built already (sorting the kept samples is most of the cost).
  NoiseEstimate estimate(const NoiseDistribution& kept) const;

private:
  std::size_t m_capacity;
  std::uint64_t m_seen = 0;
  std::uint64_t m_nonzero = 0;
  std::uint64_t m_left_out = 0;
  double m_max = 0.0;
  std::array<int, k_noise_decades.size() + 2> m_decade_counts{};
  std::vector<double> m_kept;
  SplitMix64 m_random{0x6e6f697365ULL};
};

// The τ this noise implies: the gap below which a position flips in at least 1 run of 200 at the
// noisiest level, that is the largest 0.99-quantile over the levels. 0 where no level's noise
// ever moved (nothing can flip); empty when no level has a sample.
std::optional<double> recommended_tau(const std::vector<const NoiseDistribution*>& levels);

// How well a probability predicted a binary outcome over the same items.
struct PredictorScore {
  std::optional<double> brier; // mean (p − y)²; empty without items
  // ROC AUC: the probability that an item with the outcome scores above one without (ties
  // count ½); empty unless both outcomes occur.
  std::optional<double> auc;
};
PredictorScore score_predictor(const std::vector<double>& predicted,
                               const std::vector<bool>& observed);

// Predicted against observed frequency over the items whose prediction falls in a bin.
struct ReliabilityBin {
  double lower = 0.0;
  double upper = 0.0; // bins are [lower, upper), the last one [lower, 1]
  int items = 0;
  int observed = 0;                     // items with the outcome
  std::optional<double> mean_predicted; // empty when items == 0
  std::optional<double> observed_rate;  // observed / items; empty when items == 0
};
// `bins` equal bins over [0, 1].
std::vector<ReliabilityBin> reliability_bins(const std::vector<double>& predicted,
                                             const std::vector<bool>& observed, int bins = 10);

} // namespace llmrepro::core
