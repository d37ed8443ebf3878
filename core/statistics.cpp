// Statistics for `llmrepro diff`.
//
// An audit answers "did this prompt give one completion or several", and a diff asks whether
// the share of prompts that did changed between A and B by more than chance. The prompts are
// the same on both sides, so the tests are paired: McNemar's test looks only at the prompts
// whose outcome changed (stable in A and unstable in B, or the reverse); under "no change"
// each such prompt is equally likely to have gone either way, so the count in one direction
// is Binomial(n, 1/2) and the exact binomial tail is the p-value. Suites are small (tens to
// hundreds of prompts), which is why every test here is exact rather than a chi-square
// approximation. Rates get Wilson intervals, which stay inside [0, 1] and behave at 0 and n.
//
// Mean differences (distinct completions per prompt) have no convenient exact null, so they
// get a paired bootstrap: resample prompts with replacement and read the percentile interval
// and the two-sided tail of the resampled means. The generator is SplitMix64 from a seed the
// caller passes, and quantiles use one fixed rule (linear interpolation between order
// statistics), so the same inputs and seed give the same numbers on every platform.
#include "core/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numbers>
#include <numeric>

#include "core/random.hpp"

namespace llmrepro::core {
namespace {

double log_choose(int n, int k) {
  return std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0);
}

// Relative slack when comparing probabilities of outcomes "at most as likely": equal
// probabilities computed along different paths must compare equal.
constexpr double k_tie_tolerance = 1e-7;

// log(sum(exp(x))) over `terms`, stable for very small probabilities.
double log_sum_exp(const std::vector<double>& terms) {
  if (terms.empty()) return -INFINITY;
  const double top = *std::max_element(terms.begin(), terms.end());
  double sum = 0.0;
  for (double t : terms) sum += std::exp(t - top);
  return top + std::log(sum);
}

// Linear interpolation between order statistics (Hyndman and Fan type 7) of sorted values.
double quantile_sorted(const std::vector<double>& sorted, double q) {
  const double position = q * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  const std::size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = position - static_cast<double>(below);
  return sorted[below] + fraction * (sorted[above] - sorted[below]);
}

} // namespace

double normal_quantile(double p) {
  // Acklam's rational approximation (relative error below 1.2e-9), then one Halley step
  // against erfc, which brings it to full double precision.
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                 -2.759285104469687e+02, 1.383577518672690e+02,
                                 -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                 -1.556989798598866e+02, 6.680131188771972e+01,
                                 -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                 -2.400758277161838e+00, -2.549732539343734e+00,
                                 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                                 2.445134137142996e+00, 3.754408661907416e+00};
  constexpr double low = 0.02425;
  double x = 0.0;
  if (p < low) {
    const double q = std::sqrt(-2.0 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  } else if (p <= 1.0 - low) {
    const double q = p - 0.5;
    const double r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
  } else {
    const double q = std::sqrt(-2.0 * std::log(1.0 - p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  }
  const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
  const double u = e * std::sqrt(2.0 * std::numbers::pi) * std::exp(x * x / 2.0);
  return x - u / (1.0 + x * u / 2.0);
}

Interval wilson_interval(int successes, int trials, double alpha) {
  if (trials <= 0) return {0.0, 1.0};
  const double n = trials;
  const double p = successes / n;
  const double z = normal_quantile(1.0 - alpha / 2.0);
  const double z2 = z * z;
  const double denominator = 1.0 + z2 / n;
  const double centre = (p + z2 / (2.0 * n)) / denominator;
  const double half = z / denominator * std::sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n));
  // At k = 0 and k = n the exact bound is 0 (or 1); rounding must not move it off.
  const double low = successes == 0 ? 0.0 : std::max(0.0, centre - half);
  const double high = successes == trials ? 1.0 : std::min(1.0, centre + half);
  return {low, high};
}

double binomial_two_sided_p(int k, int n) {
  if (n <= 0) return 1.0;
  const double log_half_n = n * std::log(0.5);
  const double observed = log_choose(n, k) + log_half_n;
  std::vector<double> terms;
  for (int i = 0; i <= n; ++i) {
    const double term = log_choose(n, i) + log_half_n;
    if (term <= observed + k_tie_tolerance) terms.push_back(term);
  }
  return std::min(1.0, std::exp(log_sum_exp(terms)));
}

double mcnemar_exact_p(int only_a, int only_b) {
  return binomial_two_sided_p(only_a, only_a + only_b);
}

double sign_test_p(const std::vector<double>& differences) {
  int positive = 0;
  int nonzero = 0;
  for (double d : differences) {
    if (d == 0.0) continue;
    ++nonzero;
    if (d > 0.0) ++positive;
  }
  return binomial_two_sided_p(positive, nonzero);
}

double fisher_exact_p(int a_successes, int a_trials, int b_successes, int b_trials) {
  if (a_trials <= 0 || b_trials <= 0) return 1.0;
  const int successes = a_successes + b_successes;
  const int total = a_trials + b_trials;
  // P(X = x) for X the successes in A, given the margins: hypergeometric.
  const auto log_probability = [&](int x) {
    return log_choose(a_trials, x) + log_choose(b_trials, successes - x) -
           log_choose(total, successes);
  };
  const double observed = log_probability(a_successes);
  std::vector<double> terms;
  const int lowest = std::max(0, successes - b_trials);
  const int highest = std::min(successes, a_trials);
  for (int x = lowest; x <= highest; ++x) {
    const double term = log_probability(x);
    if (term <= observed + k_tie_tolerance) terms.push_back(term);
  }
  return std::min(1.0, std::exp(log_sum_exp(terms)));
}

double fisher_one_sided_p(int a_successes, int a_trials, int b_successes, int b_trials) {
  if (a_trials <= 0 || b_trials <= 0) return 1.0;
  const int successes = a_successes + b_successes;
  const int total = a_trials + b_trials;
  std::vector<double> terms;
  // P(Y = y) for Y the successes in B, given the margins; summed over y <= b_successes.
  for (int y = std::max(0, successes - a_trials); y <= b_successes; ++y) {
    terms.push_back(log_choose(b_trials, y) + log_choose(a_trials, successes - y) -
                    log_choose(total, successes));
  }
  return terms.empty() ? 1.0 : std::min(1.0, std::exp(log_sum_exp(terms)));
}

double fisher_one_sided_min_p(int a_successes, int a_trials, int b_successes, int b_trials) {
  if (a_trials <= 0 || b_trials <= 0) return 1.0;
  const int successes = a_successes + b_successes;
  return fisher_one_sided_p(successes - std::max(0, successes - a_trials), a_trials,
                            std::max(0, successes - a_trials), b_trials);
}

double stratified_one_sided_p(const std::vector<Stratum>& strata) {
  // The distribution of the sum, by convolution: distribution[s] = P(sum of B's successes = s),
  // offset by the smallest sum the margins allow.
  std::vector<double> distribution{1.0};
  int observed = 0;
  int lowest_sum = 0;
  for (const Stratum& stratum : strata) {
    if (stratum.a_trials <= 0 || stratum.b_trials <= 0) continue;
    const int successes = stratum.a_successes + stratum.b_successes;
    const int total = stratum.a_trials + stratum.b_trials;
    const int low = std::max(0, successes - stratum.a_trials);
    const int high = std::min(successes, stratum.b_trials);
    std::vector<double> next(distribution.size() + static_cast<std::size_t>(high - low), 0.0);
    for (int y = low; y <= high; ++y) {
      const double probability =
          std::exp(log_choose(stratum.b_trials, y) + log_choose(stratum.a_trials, successes - y) -
                   log_choose(total, successes));
      for (std::size_t s = 0; s < distribution.size(); ++s)
        next[s + static_cast<std::size_t>(y - low)] += distribution[s] * probability;
    }
    distribution = std::move(next);
    observed += stratum.b_successes;
    lowest_sum += low;
  }
  double p = 0.0;
  for (int s = 0; s <= observed - lowest_sum && s < static_cast<int>(distribution.size()); ++s)
    p += distribution[static_cast<std::size_t>(s)];
  return std::min(1.0, p);
}

std::vector<double> tarone_bh_adjust(const std::vector<double>& p_values,
                                     const std::vector<double>& min_p, double alpha) {
  const std::size_t m = p_values.size();
  std::vector<double> adjusted(m, 1.0);
  // Tarone: the smallest k with at most k tests able to reach alpha / k.
  std::size_t family_size = 0;
  double threshold = 0.0;
  for (std::size_t k = 1; k <= m; ++k) {
    const double level = alpha / static_cast<double>(k);
    std::size_t able = 0;
    for (const double floor : min_p) able += floor <= level ? 1 : 0;
    if (able <= k) {
      family_size = able;
      threshold = level;
      break;
    }
  }
  std::vector<std::size_t> family;
  for (std::size_t i = 0; i < m; ++i) {
    if (family_size > 0 && min_p[i] <= threshold) family.push_back(i);
  }
  std::stable_sort(family.begin(), family.end(),
                   [&](std::size_t x, std::size_t y) { return p_values[x] < p_values[y]; });
  // BH step-up: adjusted p of rank r (1-based) is min over ranks >= r of n / rank * p.
  const double n = static_cast<double>(family.size());
  double running = 1.0;
  for (std::size_t rank = family.size(); rank >= 1; --rank) {
    const std::size_t i = family[rank - 1];
    running = std::min(running, n / static_cast<double>(rank) * p_values[i]);
    adjusted[i] = running;
  }
  return adjusted;
}

std::vector<double> holm_adjust(const std::vector<double>& p_values) {
  const std::size_t m = p_values.size();
  std::vector<std::size_t> order(m);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return p_values[x] < p_values[y]; });
  std::vector<double> adjusted(m, 1.0);
  double running = 0.0;
  for (std::size_t rank = 0; rank < m; ++rank) {
    const std::size_t i = order[rank];
    const double scaled = static_cast<double>(m - rank) * p_values[i];
    running = std::max(running, std::min(1.0, scaled));
    adjusted[i] = running;
  }
  return adjusted;
}

BootstrapResult paired_bootstrap_mean(const std::vector<double>& differences, int resamples,
                                      std::uint64_t seed, double alpha) {
  BootstrapResult result;
  result.resamples = std::max(resamples, 0);
  if (differences.empty()) return result;
  const std::size_t n = differences.size();
  result.mean =
      std::accumulate(differences.begin(), differences.end(), 0.0) / static_cast<double>(n);
  if (result.resamples == 0) {
    result.interval = {result.mean, result.mean};
    return result;
  }
  SplitMix64 random(seed);
  std::vector<double> means;
  means.reserve(static_cast<std::size_t>(result.resamples));
  int at_or_below_zero = 0;
  int at_or_above_zero = 0;
  for (int r = 0; r < result.resamples; ++r) {
    double sum = 0.0;
    for (std::size_t i = 0; i < n; ++i) sum += differences[random.below(n)];
    const double mean = sum / static_cast<double>(n);
    if (mean <= 0.0) ++at_or_below_zero;
    if (mean >= 0.0) ++at_or_above_zero;
    means.push_back(mean);
  }
  std::sort(means.begin(), means.end());
  result.interval = {quantile_sorted(means, alpha / 2.0),
                     quantile_sorted(means, 1.0 - alpha / 2.0)};
  const int tail = std::min(at_or_below_zero, at_or_above_zero);
  result.p_value = std::min(1.0, (2.0 * tail + 2.0) / (result.resamples + 1.0));
  return result;
}

} // namespace llmrepro::core
