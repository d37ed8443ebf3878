// The flip probability's calibration in the noise model's own world, by simulation: every run's
// margin at a position is the prompt's true gap plus Gaussian noise of one spread shared by every
// prompt, level and position. Grouped by its own prediction, p_flip must match the share of
// prompts the audit saw unstable within sampling error, at the bottom of its range and at the top,
// where treating the runs as independent of the shared reference over-predicted (0.88 against
// 0.70). Seeded, so every run of the test draws the same audit.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <numbers>
#include <string>
#include <vector>

#include "core/analysis.hpp"
#include "core/random.hpp"
#include "tests/support/request_records.hpp"

using namespace llmrepro::core;
using llmrepro::testing::numbered_suite;
using llmrepro::testing::ok_record;

namespace {

constexpr double k_sigma = 0.1; // one run's noise on the margin
constexpr int k_prompts = 3000;
constexpr int k_positions = 2;
// The true gaps are uniform over [0, k_widest_gap): wide enough that the predictions spread over
// (0, 1), from gaps many σ wide to ties.
constexpr double k_widest_gap = 0.5;

// A standard normal draw (Box-Muller; 1 − u keeps the logarithm finite).
double gaussian(SplitMix64& random) {
  const double u = 1.0 - random.uniform();
  const double v = random.uniform();
  return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * std::numbers::pi * v);
}

// One run of a prompt: at each position the true top two swap where the noise pushes the margin
// below zero, and the runner-up trails the chosen token by the observed margin.
Completion run_of(const std::vector<double>& true_gaps, SplitMix64& random) {
  static const char* const k_candidates[k_positions][2] = {{" a", " b"}, {" c", " d"}};
  Completion completion;
  completion.has_logprobs = true;
  for (std::size_t position = 0; position < true_gaps.size(); ++position) {
    const double margin = true_gaps[position] + k_sigma * gaussian(random);
    const char* chosen = k_candidates[position][margin < 0 ? 1 : 0];
    const char* runner_up = k_candidates[position][margin < 0 ? 0 : 1];
    TokenLogprob token;
    token.token = chosen;
    token.logprob = -0.25;
    token.top = {{chosen, -0.25}, {runner_up, -0.25 - std::abs(margin)}};
    completion.text += chosen;
    completion.tokens.push_back(std::move(token));
  }
  return completion;
}

// An audit of k_prompts prompts with `runs` runs at each of `levels`, analysed.
AuditAnalysis simulated_audit(const std::vector<int>& levels, int runs, std::uint64_t seed) {
  SplitMix64 random(seed);
  std::vector<RequestRecord> records;
  for (int prompt = 0; prompt < k_prompts; ++prompt) {
    std::vector<double> true_gaps;
    for (int position = 0; position < k_positions; ++position)
      true_gaps.push_back(k_widest_gap * random.uniform());
    for (int level : levels)
      for (int repeat = 0; repeat < runs; ++repeat)
        records.push_back(ok_record(prompt, level, repeat, run_of(true_gaps, random)));
  }
  return analyse(numbered_suite(k_prompts), records, AnalysisConfig{});
}

std::string bins_text(const std::vector<ReliabilityBin>& bins) {
  std::string text;
  char line[128];
  for (const ReliabilityBin& bin : bins) {
    if (bin.items == 0) continue;
    std::snprintf(line, sizeof line, "[%.1f, %.1f): %4d prompts, predicted %.3f, observed %.3f\n",
                  bin.lower, bin.upper, bin.items, *bin.mean_predicted, *bin.observed_rate);
    text += line;
  }
  return text;
}

// Every bin with enough prompts to say anything: the observed unstable share within 3 binomial
// standard errors of the mean prediction (the spread of the observed share were the prediction
// right), and no more.
void check_calibrated(const AuditAnalysis& analysis) {
  const FlipCalibration& calibration = analysis.summary.flip_calibration;
  REQUIRE(calibration.prompts == k_prompts);
  const std::string text = bins_text(calibration.reliability);
  MESSAGE("p_flip reliability:\n" << text);
  int checked = 0;
  for (const ReliabilityBin& bin : calibration.reliability) {
    if (bin.items < 50) continue;
    ++checked;
    const double predicted = *bin.mean_predicted;
    const double error = std::sqrt(predicted * (1.0 - predicted) / bin.items);
    CAPTURE(bin.lower);
    CAPTURE(bin.items);
    CHECK(std::abs(*bin.observed_rate - predicted) <= 3.0 * error);
  }
  CHECK_MESSAGE(checked >= 8, "the predictions spread over most of (0, 1)");
}

} // namespace

TEST_CASE("analysis: p_flip is calibrated in Gaussian noise shared by every prompt") {
  SUBCASE("5 runs at one level") { check_calibrated(simulated_audit({1}, 5, 0x5eed01)); }
  SUBCASE("5 runs at each of two levels") {
    check_calibrated(simulated_audit({1, 4}, 5, 0x5eed02));
  }
  SUBCASE("10 runs at one level") { check_calibrated(simulated_audit({1}, 10, 0x5eed03)); }
}

TEST_CASE("audit_flip_probability: at one run, the per-level probability in Gaussian noise") {
  // 20000 samples |Δgap| of two runs with error σ each: |N(0, 2σ²)|.
  SplitMix64 random(0x5eed04);
  std::vector<double> samples;
  for (int i = 0; i < 20000; ++i)
    samples.push_back(std::abs(std::sqrt(2.0) * k_sigma * gaussian(random)));
  const NoiseDistribution noise(std::move(samples));
  for (double gap : {0.0, 0.05, 0.1, 0.2, 0.3}) {
    CAPTURE(gap);
    const double per_level = position_flip_probability(noise, gap);
    const double one_run = audit_flip_probability(noise, {{&noise, 1}}, {gap});
    MESSAGE("gap " << gap << ": per level " << per_level << ", one run " << one_run);
    CHECK(std::abs(one_run - per_level) <= 0.005);
  }
}
