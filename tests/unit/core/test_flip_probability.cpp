// The noise estimator, the flip probability and its scores, on hand-computed cases. Numbers are
// dyadic (0.125, 0.25, ...) so that every expected value is exact in binary floating point.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/analysis.hpp"
#include "core/flip_probability.hpp"
#include "core/logprob_floor.hpp"
#include "tests/support/request_records.hpp"

using namespace llmrepro::core;
using llmrepro::testing::ok_record;

namespace {

// One position: the chosen token with its logprob, then the runner-up and its logprob.
struct Position {
  const char* token;
  double logprob;
  const char* runner_up;
  double runner_up_logprob;
};

Completion completion_of(const std::vector<Position>& positions) {
  Completion completion;
  completion.has_logprobs = true;
  for (const auto& p : positions) {
    TokenLogprob token;
    token.token = p.token;
    token.logprob = p.logprob;
    token.top = {{p.token, p.logprob}, {p.runner_up, p.runner_up_logprob}};
    completion.text += p.token;
    completion.tokens.push_back(std::move(token));
  }
  return completion;
}

} // namespace

TEST_CASE("add_gap_noise") {
  // Gaps 1, 0.5 and 0.125.
  const Completion reference =
      completion_of({{"a", 0.0, "x", -1.0}, {"b", -0.25, "y", -0.75}, {"c", -0.5, "z", -0.625}});
  std::vector<double> deviations;

  SUBCASE("the same numbers: a zero per position") {
    add_gap_noise(deviations, reference, reference);
    CHECK(deviations == std::vector<double>{0.0, 0.0, 0.0});
  }
  SUBCASE("a moved margin gives |Δgap|, whichever way it moved") {
    const Completion other =
        completion_of({{"a", -0.25, "x", -1.0}, {"b", -0.25, "y", -0.5}, {"c", -0.5, "z", -0.625}});
    add_gap_noise(deviations, reference, other);
    CHECK(deviations == std::vector<double>{0.25, 0.25, 0.0});
  }
  SUBCASE("a swap of the top two is measured, then the comparison ends") {
    // At position 2 the other run chose "z" over "c" by 0.125: the margin moved by 0.25.
    const Completion other =
        completion_of({{"a", 0.0, "x", -1.0}, {"b", -0.25, "y", -0.75}, {"z", -0.5, "c", -0.625}});
    add_gap_noise(deviations, reference, other);
    CHECK(deviations == std::vector<double>{0.0, 0.0, 0.25});
  }
  SUBCASE("an unrelated token gives no sample and ends the comparison") {
    const Completion other =
        completion_of({{"a", 0.0, "x", -1.0}, {"q", -0.25, "r", -0.75}, {"c", -0.5, "z", -0.625}});
    add_gap_noise(deviations, reference, other);
    CHECK(deviations == std::vector<double>{0.0});
  }
  SUBCASE("an unknown gap is skipped, the positions after it still count") {
    Completion other = reference;
    other.tokens[0].top[1].logprob = k_unknown_logprob;
    CHECK(add_gap_noise(deviations, reference, other) == 1);
    CHECK(deviations == std::vector<double>{0.0, 0.0});
  }
  SUBCASE("a runner-up at the logprob floor (-Infinity) is left out and counted") {
    // Its "gap" would be 9999 nats of distance to the floor, not a margin: against the
    // reference's 1 it read as 9998 nats of noise.
    Completion other = reference;
    other.tokens[0].top[1].logprob = k_logprob_floor;
    CHECK(add_gap_noise(deviations, reference, other) == 1);
    CHECK(deviations == std::vector<double>{0.0, 0.0});
    CHECK_FALSE(measured_gap(other.tokens[0]));
    CHECK(other.tokens[0].gap() == 9999.0);
  }
  SUBCASE("a missing runner-up is left out and counted, in either run") {
    Completion other = reference;
    other.tokens[1].top.resize(1);
    CHECK(add_gap_noise(deviations, other, reference) == 1);
    CHECK(deviations == std::vector<double>{0.0, 0.0});
  }
}

TEST_CASE("analysis: a -Infinity runner-up moves neither the noise nor p_flip") {
  // Two prompts, four runs each at c=1 and c=2, every number identical from run to run, except
  // that one run of "floored" reports its first runner-up as -Infinity (the floor). Kept in the
  // samples, that run's 9998.875 nats of "noise" made the bitwise-stable "quiet" prompt's
  // p_flip 0.4 and the τ the noise implies 1e+04.
  const Completion quiet = completion_of({{"a", -0.125, "x", -1.0}, {"b", -0.25, "y", -0.5}});
  const Completion floored = completion_of({{"c", 0.0, "z", -2.0}, {"d", -0.5, "w", -1.5}});
  Completion floored_run = floored;
  floored_run.tokens[0].top[1].logprob = k_logprob_floor;
  std::vector<RequestRecord> records;
  for (int concurrency : {1, 2})
    for (int repeat = 0; repeat < 2; ++repeat) {
      records.push_back(ok_record(0, concurrency, repeat, quiet));
      records.push_back(ok_record(1, concurrency, repeat,
                                  concurrency == 2 && repeat == 1 ? floored_run : floored));
    }
  Suite suite;
  suite.prompts.push_back(Prompt{.id = "quiet", .text = "q"});
  suite.prompts.push_back(Prompt{.id = "floored", .text = "f"});

  const AuditAnalysis analysis = analyse(suite, records, AnalysisConfig{});
  const auto& levels = analysis.summary.by_concurrency;
  REQUIRE(levels.size() == 2);
  // c=2: quiet 2 runs × 2 positions, floored 2 + 1 (its first position left out).
  CHECK(levels[1].noise.positions == 7);
  CHECK(levels[1].noise.left_out == 1);
  CHECK(levels[1].noise.nonzero == 0);
  CHECK(levels[1].noise.max == 0.0);
  CHECK(levels[0].noise.left_out == 0);
  CHECK(analysis.summary.flip_calibration.recommended_tau == 0.0);
  for (const PromptAnalysis& prompt : analysis.prompts) {
    CAPTURE(prompt.id);
    CHECK(prompt.status == PromptStatus::stable);
    CHECK(prompt.p_flip == 0.0);
  }
  // The floored reference position adds no flip chance instead of making p_flip unknown.
  Completion floored_reference = floored;
  floored_reference.tokens[1].top[1].logprob = k_logprob_floor;
  records[1].outcome.completion = floored_reference;
  const AuditAnalysis again = analyse(suite, records, AnalysisConfig{});
  CHECK(again.prompts[1].p_flip == 0.0);
  CHECK(again.prompts[1].p_flip_reason.empty());
}

TEST_CASE("NoiseDistribution and the flip probability") {
  const NoiseDistribution noise({0.03125, 0.0, 0.0078125, 0.0});
  CHECK(noise.positions() == 4);
  CHECK(noise.nonzero() == 2);
  CHECK(noise.exceedance(0.015625) == 0.25);
  CHECK_MESSAGE(noise.exceedance(0.0) == 0.5, "strictly above: the zeros do not exceed a tie");
  CHECK(noise.exceedance(0.03125) == 0.0);
  CHECK(noise.quantile(0.5) == 0.0);
  CHECK(noise.quantile(0.75) == 0.0078125);
  CHECK(noise.quantile(0.99) == 0.03125);
  CHECK(noise.quantile(1.0) == 0.03125);

  SUBCASE("one position: half the chance the margin moves by more than the gap") {
    CHECK(position_flip_probability(noise, 0.015625) == 0.125);
    CHECK(position_flip_probability(noise, 0.0) == 0.25);
    CHECK(position_flip_probability(noise, 1.0) == 0.0);
  }
  SUBCASE("a window: 1 − Π(1 − p_i)") {
    // p = 0.125, 0.25 and 0: 1 − 0.875 · 0.75 = 0.34375.
    CHECK(window_flip_probability(noise, {0.015625, 0.0, 1.0}) == 0.34375);
    CHECK(window_flip_probability(noise, {}) == 0.0);
  }
  SUBCASE("noise that never moved flips nothing, not even a tie") {
    const NoiseDistribution silent({0.0, 0.0, 0.0});
    CHECK(position_flip_probability(silent, 0.0) == 0.0);
    CHECK(window_flip_probability(silent, {0.0, 0.0}) == 0.0);
  }
  SUBCASE("no sample at all predicts nothing either") {
    const NoiseDistribution none;
    CHECK(none.empty());
    CHECK(position_flip_probability(none, 0.0) == 0.0);
  }
}

TEST_CASE("NoiseDistribution::at_least and above: the indexed search counts as a full one") {
  // 1000 samples in 250 distinct values (ties across the index's blocks), searched at every
  // value, between them and beyond both ends.
  std::vector<double> samples;
  for (int i = 0; i < 1000; ++i) samples.push_back(static_cast<double>((i * 37) % 250) / 8.0);
  const NoiseDistribution noise(samples);
  const auto& sorted = noise.sorted();
  for (int k = -4; k <= 2 * 250 + 4; ++k) {
    const double value = k / 16.0;
    CAPTURE(value);
    const auto at_least = sorted.end() - std::lower_bound(sorted.begin(), sorted.end(), value);
    const auto above = sorted.end() - std::upper_bound(sorted.begin(), sorted.end(), value);
    CHECK(noise.at_least(value) == static_cast<std::size_t>(at_least));
    CHECK(noise.above(value) == static_cast<std::size_t>(above));
  }
  CHECK(NoiseDistribution().at_least(0.0) == 0);
  CHECK(NoiseDistribution().above(-1.0) == 0);
}

TEST_CASE("run_error_at_least: one run's signed error, s · d / √2") {
  // Thresholds √2 · |x| of 0.71 and 1.41 against samples 0 and 1.
  const NoiseDistribution noise({0.0, 1.0, 0.0, 1.0});
  CHECK_MESSAGE(run_error_at_least(noise, 0.5) == 0.25, "s = +1 and d ≥ 0.71: half of 2 in 4");
  CHECK(run_error_at_least(noise, 1.0) == 0.0);
  CHECK_MESSAGE(run_error_at_least(noise, 0.0) == 0.75, "below 0 only where s = −1 and d > 0");
  CHECK(run_error_at_least(noise, -0.5) == 0.75);
  CHECK(run_error_at_least(noise, -1.0) == 1.0);
  SUBCASE("noise that never moved: the error is 0") {
    for (const NoiseDistribution& silent : {NoiseDistribution({0.0, 0.0}), NoiseDistribution()}) {
      CHECK(run_error_at_least(silent, 0.0) == 1.0);
      CHECK(run_error_at_least(silent, -0.125) == 1.0);
      CHECK(run_error_at_least(silent, 0.125) == 0.0);
    }
  }
}

TEST_CASE("run_error_quantiles: symmetric midpoints of equal slices") {
  // d's quantiles at (2j + 1) / 64: 0 up to ½ (j < 16), then 1.
  const std::vector<double> quantiles =
      run_error_quantiles(NoiseDistribution({0.0, 1.0, 0.0, 1.0}));
  REQUIRE(quantiles.size() == static_cast<std::size_t>(k_reference_quantiles));
  const double magnitude = 1.0 / std::sqrt(2.0);
  CHECK(std::count(quantiles.begin(), quantiles.end(), 0.0) == 32);
  CHECK(std::count(quantiles.begin(), quantiles.end(), magnitude) == 16);
  CHECK(std::count(quantiles.begin(), quantiles.end(), -magnitude) == 16);
}

TEST_CASE("audit_flip_probability: the runs share the reference's error") {
  const NoiseDistribution noise({0.0, 1.0, 0.0, 1.0});
  SUBCASE("a reference without error: the runs are independent") {
    // P(e ≥ −0.5)² = 0.75² at the gap of 0.5; the gap of 2 is beyond every sample.
    const NoiseDistribution silent({0.0, 0.0});
    CHECK(audit_flip_probability(silent, {{&noise, 2}}, {0.5, 2.0}) == 0.4375);
    CHECK_MESSAGE(audit_flip_probability(silent, {{&noise, 0}}, {0.5}) == 0.0,
                  "a level of the reference's run alone has no chance");
    CHECK(audit_flip_probability(silent, {{&silent, 4}}, {0.0}) == 0.0);
    CHECK(audit_flip_probability(silent, {{&noise, 2}}, {}) == 0.0);
  }
  SUBCASE("a reference with error: the expectation over its quantiles") {
    // e_ref = 0 (32 of 64): 0.75² stays; +0.71 (16): P(e ≥ 0.21)² = 0.25²; −0.71 (16): 1.
    // (32 · 0.5625 + 16 · 0.0625 + 16) / 64 = 35/64 stays.
    CHECK(audit_flip_probability(noise, {{&noise, 2}}, {0.5}) == 29.0 / 64.0);
    // A second level multiplies inside the expectation. Its runs never err, so they stay
    // wherever the reference erred low or not at all, and flip where it erred high enough to
    // show the true margin negative: (32 · 0.5625 · 1 + 16 · 0.0625 · 0 + 16) / 64 = 34/64.
    const NoiseDistribution silent({0.0});
    CHECK(audit_flip_probability(noise, {{&noise, 2}, {&silent, 3}}, {0.5}) == 30.0 / 64.0);
  }
}

TEST_CASE("estimate_of: quantiles and counts per decade") {
  const NoiseEstimate estimate =
      estimate_of(NoiseDistribution({0.0, 0.0, 5e-7, 2e-6, 0.003, 0.25, 3.0}));
  CHECK(estimate.positions == 7);
  CHECK(estimate.nonzero == 5);
  CHECK(estimate.median == 2e-6);
  CHECK(estimate.p90 == 3.0);
  CHECK(estimate.max == 3.0);
  // 0 | (0,1e-6] | (1e-6,1e-5] | (1e-5,1e-4] | (1e-4,1e-3] | (1e-3,1e-2] | (1e-2,0.1] | (0.1,1] |
  // >1
  CHECK(estimate.decade_counts == std::array<int, 9>{2, 1, 1, 0, 0, 1, 0, 1, 1});
  const NoiseEstimate empty = estimate_of(NoiseDistribution());
  CHECK(empty.positions == 0);
  CHECK_FALSE(empty.median);
}

TEST_CASE("recommended_tau: the noisiest level's 0.99-quantile") {
  const NoiseDistribution silent({0.0, 0.0});
  const NoiseDistribution noisy({0.0, 0.125, 0.0625});
  const NoiseDistribution none;
  CHECK(recommended_tau({&silent, &noisy, &none}) == 0.125);
  CHECK_MESSAGE(recommended_tau({&silent}) == 0.0, "noise that never moved: nothing can flip");
  CHECK_FALSE(recommended_tau({&none}));
  CHECK_FALSE(recommended_tau({}));
}

TEST_CASE("score_predictor: Brier score and ROC AUC") {
  SUBCASE("probabilities") {
    const auto score = score_predictor({0.875, 0.25, 0.5, 0.125}, {true, false, false, true});
    // (0.125² + 0.25² + 0.5² + 0.875²) / 4 = (0.015625 + 0.0625 + 0.25 + 0.765625) / 4.
    CHECK(score.brier == 0.2734375);
    // Positives 0.875 and 0.125 against negatives 0.25 and 0.5: 2 of 4 pairs ranked right.
    CHECK(score.auc == 0.5);
  }
  SUBCASE("a rule of 0 and 1: ties count a half, AUC = (1 + TPR − FPR) / 2") {
    const auto score = score_predictor({1.0, 0.0, 0.0}, {true, false, true});
    CHECK(score.brier == doctest::Approx(1.0 / 3.0));
    CHECK(score.auc == 0.75);
  }
  SUBCASE("one outcome only: no AUC; no item: nothing") {
    CHECK_FALSE(score_predictor({0.5, 0.25}, {false, false}).auc);
    CHECK(score_predictor({0.5, 0.25}, {false, false}).brier == 0.15625);
    const auto empty = score_predictor({}, {});
    CHECK_FALSE(empty.brier);
    CHECK_FALSE(empty.auc);
  }
}

TEST_CASE("reliability_bins") {
  const auto bins =
      reliability_bins({0.0625, 0.125, 0.1875, 0.9375, 1.0}, {false, true, false, true, true});
  REQUIRE(bins.size() == 10);
  CHECK(bins[0].items == 1);
  CHECK(bins[0].observed == 0);
  CHECK(bins[0].mean_predicted == 0.0625);
  CHECK(bins[0].observed_rate == 0.0);
  CHECK(bins[1].items == 2);
  CHECK(bins[1].mean_predicted == 0.15625);
  CHECK(bins[1].observed_rate == 0.5);
  CHECK_MESSAGE(bins[9].items == 2, "1.0 falls in the last bin");
  CHECK(bins[9].observed_rate == 1.0);
  CHECK(bins[5].items == 0);
  CHECK_FALSE(bins[5].mean_predicted);
  CHECK(bins[3].lower == 0.3);
}

namespace {

// Two prompts at levels 1 and 4, two runs each. "steady" has gaps 1 and 0.5 and one run at c=4
// whose first margin moved by 0.25; "tied" has gaps 0.125 and 2 and one run at c=4 that swapped
// its first two candidates (a flip whose margin moved by 0.25).
std::vector<RequestRecord> two_prompt_audit() {
  const Completion steady = completion_of({{"a", 0.0, "x", -1.0}, {"b", -0.25, "y", -0.75}});
  const Completion steady_moved =
      completion_of({{"a", -0.25, "x", -1.0}, {"b", -0.25, "y", -0.75}});
  const Completion tied = completion_of({{"yes", -0.5, "no", -0.625}, {".", 0.0, "!", -2.0}});
  const Completion flipped = completion_of({{"no", -0.5, "yes", -0.625}, {"!", 0.0, ".", -2.0}});
  return {ok_record(0, 1, 0, steady),       ok_record(0, 1, 1, steady), ok_record(0, 4, 0, steady),
          ok_record(0, 4, 1, steady_moved), ok_record(1, 1, 0, tied),   ok_record(1, 1, 1, tied),
          ok_record(1, 4, 0, tied),         ok_record(1, 4, 1, flipped)};
}

Suite two_prompts() {
  Suite suite;
  suite.prompts.push_back(Prompt{.id = "steady", .text = "s"});
  suite.prompts.push_back(Prompt{.id = "tied", .text = "t"});
  return suite;
}

} // namespace

TEST_CASE("analysis: noise per level, p_flip per prompt, and both predictors scored") {
  const Suite suite = two_prompts();
  const auto records = two_prompt_audit();
  AnalysisConfig config;
  config.fragile_gap = 0.25; // the gap rule calls "tied" (0.125) fragile and "steady" not

  const AuditAnalysis analysis = analyse(suite, records, config);
  const auto& summary = analysis.summary;
  REQUIRE(summary.by_concurrency.size() == 2);

  // c=1: every run equals the reference, 4 positions of zeros. c=4: against the c=1 reference,
  // steady gives 0, 0 then 0.25, 0; tied gives 0, 0 then the swap, 0.25.
  const NoiseEstimate& serial = summary.by_concurrency[0].noise;
  CHECK(serial.positions == 4);
  CHECK(serial.nonzero == 0);
  CHECK(serial.max == 0.0);
  const NoiseEstimate& busy = summary.by_concurrency[1].noise;
  CHECK(busy.positions == 7);
  CHECK(busy.nonzero == 2);
  CHECK(busy.median == 0.0);
  CHECK(busy.max == 0.25);
  CHECK(busy.decade_counts[0] == 5);
  CHECK(busy.decade_counts[7] == 2);

  const PromptAnalysis& steady = analysis.prompts[0];
  REQUIRE(steady.by_concurrency.size() == 2);
  CHECK(steady.by_concurrency[0].p_flip == 0.0);
  CHECK_MESSAGE(steady.by_concurrency[1].p_flip == 0.0, "no noise sample exceeds 0.5");
  CHECK(steady.p_flip == 0.0);

  const PromptAnalysis& tied = analysis.prompts[1];
  CHECK(tied.by_concurrency[0].p_flip == 0.0);
  // c=4: P(|Δ| > 0.125) = 2/7, halved; the gap of 2 adds nothing.
  CHECK(tied.by_concurrency[1].p_flip == doctest::Approx(1.0 / 7.0));
  // One chance at c=1 (the reference is the other run), two at c=4: 1 − (6/7)² = 13/49.
  CHECK(tied.p_flip == doctest::Approx(13.0 / 49.0));

  const FlipCalibration& calibration = summary.flip_calibration;
  CHECK(calibration.prompts == 2);
  CHECK(calibration.unstable == 1);
  CHECK(calibration.gap_rule.brier == 0.0);
  CHECK(calibration.gap_rule.auc == 1.0);
  // ((0 − 0)² + (13/49 − 1)²) / 2 = (36/49)² / 2.
  CHECK(calibration.p_flip.brier == doctest::Approx(36.0 * 36.0 / (49.0 * 49.0) / 2.0));
  CHECK(calibration.p_flip.auc == 1.0);
  CHECK(calibration.reliability[0].items == 1);
  CHECK(calibration.reliability[2].items == 1);
  CHECK(calibration.reliability[2].observed_rate == 1.0);
  CHECK(calibration.recommended_tau == 0.25);

  // The gap rule is what `fragile` follows by default.
  CHECK(steady.fragile == false);
  CHECK(tied.fragile == true);
  CHECK(summary.predictor.true_positive == 1);
  CHECK(summary.predictor.true_negative == 1);
}

TEST_CASE("analysis: --fragile-p flags prompts by probability") {
  const Suite suite = two_prompts();
  const auto records = two_prompt_audit();
  AnalysisConfig config; // τ = 0.05: the gap rule calls neither prompt fragile
  SUBCASE("P = 0.25: tied (13/49) is fragile") {
    config.fragile_p = 0.25;
    const auto analysis = analyse(suite, records, config);
    CHECK(analysis.prompts[0].fragile == false);
    CHECK(analysis.prompts[1].fragile == true);
    CHECK_MESSAGE(analysis.prompts[1].fragile_by_gap == false, "the gap rule is kept beside it");
    CHECK(analysis.summary.fragile_prompts == 1);
    CHECK(analysis.summary.predictor.true_positive == 1);
    CHECK(analysis.summary.predictor.true_negative == 1);
  }
  SUBCASE("P = 0.5: neither") {
    config.fragile_p = 0.5;
    const auto analysis = analyse(suite, records, config);
    CHECK(analysis.summary.fragile_prompts == 0);
    CHECK(analysis.summary.predictor.false_negative == 1);
  }
  SUBCASE("without logprobs p_flip is unknown, and so is fragility, with the reason") {
    auto text_only = records;
    for (auto& record : text_only) record.outcome.completion.has_logprobs = false;
    config.fragile_p = 0.25;
    const auto analysis = analyse(suite, text_only, config);
    CHECK_FALSE(analysis.prompts[1].p_flip);
    CHECK(analysis.prompts[1].p_flip_reason == "no logprobs");
    CHECK_FALSE(analysis.prompts[1].fragile);
    CHECK(analysis.prompts[1].fragility_reason == "flip probability unknown: no logprobs");
    CHECK(analysis.summary.fragility_unknown_prompts == 2);
  }
}

TEST_CASE("analysis: a level without any noise sample leaves p_flip unknown") {
  // One run per level: nothing to compare at c=4, so its noise rests on no position.
  const Suite suite = two_prompts();
  const Completion steady = completion_of({{"a", 0.0, "x", -1.0}});
  const std::vector<RequestRecord> records = {
      ok_record(0, 1, 0, steady), ok_record(0, 1, 1, steady), ok_record(0, 4, 0, steady)};
  const auto analysis = analyse(suite, records, AnalysisConfig{});
  // The c=4 run is compared with the c=1 reference, so c=4 has a sample after all; only a
  // level whose every run is the reference itself has none.
  CHECK(analysis.summary.by_concurrency[1].noise.positions == 1);
  CHECK(analysis.prompts[0].p_flip == 0.0);

  const std::vector<RequestRecord> alone = {ok_record(0, 1, 0, steady)};
  const auto single = analyse(suite, alone, AnalysisConfig{});
  CHECK_FALSE(single.prompts[0].p_flip);
  CHECK(single.prompts[0].p_flip_reason == "no noise sample at concurrency 1");
}

TEST_CASE("NoiseSamples: exact counts, a bounded sample") {
  SUBCASE("under the capacity every sample is kept: the same figures as the whole distribution") {
    NoiseSamples samples(8);
    for (double value : {0.0, 0.25, 0.0, 0.0078125}) samples.add(value);
    CHECK(samples.distribution().sorted() == std::vector<double>{0.0, 0.0, 0.0078125, 0.25});
    const NoiseEstimate estimate = samples.estimate();
    const NoiseEstimate whole = estimate_of(NoiseDistribution({0.0, 0.25, 0.0, 0.0078125}));
    CHECK(estimate.positions == whole.positions);
    CHECK(estimate.nonzero == whole.nonzero);
    CHECK(estimate.median == whole.median);
    CHECK(estimate.p99 == whole.p99);
    CHECK(estimate.max == whole.max);
    CHECK(estimate.decade_counts == whole.decade_counts);
  }
  SUBCASE("beyond it: counts, maximum and decades stay exact, at most `capacity` are kept") {
    NoiseSamples samples(4);
    for (int i = 0; i < 1000; ++i) samples.add(i % 10 == 0 ? 0.0 : i / 1000.0);
    CHECK(samples.distribution().positions() == 4);
    const NoiseEstimate estimate = samples.estimate();
    CHECK(estimate.positions == 1000);
    CHECK(estimate.nonzero == 900);
    CHECK(estimate.max == 0.999);
    CHECK(estimate.decade_counts[0] == 100);
    // (1e-3, 1e-2]: 0.002 ... 0.009 (0.001 falls in (1e-4, 1e-3], 0.010 is a multiple of 10).
    CHECK(estimate.decade_counts[5] == 8);
    // The same samples in the same order keep the same sample.
    NoiseSamples again(4);
    for (int i = 0; i < 1000; ++i) again.add(i % 10 == 0 ? 0.0 : i / 1000.0);
    CHECK(again.distribution().sorted() == samples.distribution().sorted());
  }
  SUBCASE("a run's samples added at once keep what adding them one at a time keeps") {
    SplitMix64 random(11);
    for (std::size_t capacity : {1U, 7U, 256U}) {
      NoiseSamples one(capacity);
      NoiseSamples batch(capacity);
      for (int run = 0; run < 60; ++run) {
        std::vector<double> deviations(random.below(40));
        for (double& deviation : deviations)
          deviation = random.below(3) == 0 ? 0.0 : random.uniform() * 2.0 - 0.5; // some below 0
        for (double deviation : deviations) one.add(deviation);
        batch.add(deviations);
      }
      CAPTURE(capacity);
      CHECK(batch.distribution().sorted() == one.distribution().sorted());
      const NoiseEstimate a = one.estimate();
      const NoiseEstimate b = batch.estimate();
      CHECK(b.positions == a.positions);
      CHECK(b.nonzero == a.nonzero);
      CHECK(b.max == a.max);
      CHECK(b.decade_counts == a.decade_counts);
      CHECK(b.median == a.median);
    }
  }
  SUBCASE("a uniform sample: its exceedance tracks the whole stream's") {
    NoiseSamples samples(4096);
    for (int i = 0; i < 100000; ++i) samples.add((i % 1000) / 1000.0);
    // A quarter of the stream is above 0.75; the kept 4096 say so within a few hundredths.
    CHECK(samples.distribution().exceedance(0.7495) == doctest::Approx(0.25).epsilon(0.1));
  }
}
