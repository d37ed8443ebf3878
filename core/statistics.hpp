// Small-sample statistics for deciding whether a difference between two audits exceeds the
// run-to-run noise: Wilson intervals for rates, exact McNemar and sign tests for paired
// binary outcomes, Fisher's exact test for two independent rates, and a seeded paired
// bootstrap for mean differences. Pure functions; randomness only through an explicit seed.
#pragma once

#include <cstdint>
#include <vector>

namespace llmrepro::core {

struct Interval {
  double low = 0.0;
  double high = 0.0;
};

// The standard normal quantile: z such that P(Z <= z) = p, for 0 < p < 1.
double normal_quantile(double p);

// Wilson score interval for `successes` of `trials` at confidence 1 - alpha. [0, 1] when
// trials == 0 (nothing is known). Requires 0 <= successes <= trials.
Interval wilson_interval(int successes, int trials, double alpha = 0.05);

// Two-sided exact binomial test of k successes in n trials against p = 1/2: the sum of the
// probabilities of every outcome at most as likely as k. 1 when n == 0.
double binomial_two_sided_p(int k, int n);

// Exact McNemar test over paired binary outcomes: `only_a` pairs had the event in A only,
// `only_b` in B only. Concordant pairs carry no information and are not passed.
double mcnemar_exact_p(int only_a, int only_b);

// Exact sign test of paired differences: zeros dropped, then the binomial test of the
// positive count among the non-zero ones.
double sign_test_p(const std::vector<double>& differences);

// Two-sided Fisher exact test of two independent rates (a_successes of a_trials against
// b_successes of b_trials). 1 when either side has no trials.
double fisher_exact_p(int a_successes, int a_trials, int b_successes, int b_trials);

// Holm's step-down adjustment for testing many hypotheses at once: the same order as given,
// each adjusted p at least as large as the raw one, monotone in the raw p, capped at 1.
std::vector<double> holm_adjust(const std::vector<double>& p_values);

// Fisher's exact test, one-sided: the probability, given the margins, that B has at most
// `b_successes` of its trials succeed (B worse than A, or as bad); 1 without trials. For the
// other direction swap A and B.
double fisher_one_sided_p(int a_successes, int a_trials, int b_successes, int b_trials);

// The smallest value fisher_one_sided_p can take at these margins (B with as few successes as
// the margins allow): 1 when no table is more extreme than another (no failures at all).
double fisher_one_sided_min_p(int a_successes, int a_trials, int b_successes, int b_trials);

// Benjamini–Hochberg over the tests that can reach significance, chosen by Tarone's rule
// (Gilbert 2005): K is the smallest k such that at most k tests have a smallest attainable p
// (`min_p`) at or below alpha / k; the family is those tests, and BH runs over them with its own
// size. A test outside the family (it could not be significant at any table its margins allow)
// gets 1. A discrete test on a few runs has a floor under its p; counting the hopeless tests in
// the family, as plain BH or Holm does, would drown the few prompts that did change.
// One stratum of a stratified exact test: A's successes of trials and B's.
struct Stratum {
  int a_successes = 0;
  int a_trials = 0;
  int b_successes = 0;
  int b_trials = 0;
};

// The exact stratified test of "B succeeds less than A" (an exact Cochran–Mantel–Haenszel):
// given each stratum's margins, B's successes in it are hypergeometric; the probability that
// their sum over the strata is at most the observed sum. Valid whatever each stratum's own rate
// (a prompt's flip probability), which the margins absorb. 1 without strata.
double stratified_one_sided_p(const std::vector<Stratum>& strata);

std::vector<double> tarone_bh_adjust(const std::vector<double>& p_values,
                                     const std::vector<double>& min_p, double alpha);

struct BootstrapResult {
  double mean = 0.0;    // of the observed differences
  Interval interval;    // percentile interval at confidence 1 - alpha
  double p_value = 1.0; // two-sided, (2 * min(#<=0, #>=0) + 2) / (resamples + 1), capped at 1
  int resamples = 0;
};

// Paired bootstrap of the mean of per-pair differences: `resamples` resamples of the pairs
// with replacement, drawn from SplitMix64(seed), so a seed names one result everywhere.
// With no differences the mean is 0, the interval [0, 0] and p 1.
BootstrapResult paired_bootstrap_mean(const std::vector<double>& differences, int resamples,
                                      std::uint64_t seed, double alpha = 0.05);

} // namespace llmrepro::core
