#include "report/detail/flip_summary.hpp"

#include <fmt/format.h>

namespace llmrepro::report {
namespace {

std::string score_text(const core::PredictorScore& score) {
  const auto value = [](const std::optional<double>& v, const char* spec) {
    return v ? fmt::format(fmt::runtime(spec), *v) : std::string("n/a");
  };
  return fmt::format("Brier {} AUC {}", value(score.brier, "{:.3f}"), value(score.auc, "{:.2f}"));
}

} // namespace

std::string nats_text(double value) { return value == 0.0 ? "0" : fmt::format("{:.2g}", value); }

std::string predictor_comparison_line(const core::FlipCalibration& calibration, double tau) {
  std::string tau_text = "noise implies τ n/a (no noise sample)";
  // Zero noise predicts no flip; beside flips that happened it is evidence that something other
  // than noise flips them (a sampling server, a replica answering on its own), not a guarantee.
  if (calibration.recommended_tau)
    tau_text = *calibration.recommended_tau != 0.0
                   ? "noise implies τ " + nats_text(*calibration.recommended_tau)
               : calibration.unstable > 0
                   ? fmt::format("noise is zero, yet {} prompt{} flipped: something other than "
                                 "noise flips them",
                                 calibration.unstable, calibration.unstable == 1 ? "" : "s")
                   : "noise is zero: no flip predicted";
  if (calibration.prompts == 0)
    return "not scored (no judged prompt has both p_flip and the gap rule known) · " + tau_text;
  return fmt::format("p_flip {} · gap rule (τ {:g}) {} ({} prompt{}, {} unstable) · {}",
                     score_text(calibration.p_flip), tau, score_text(calibration.gap_rule),
                     calibration.prompts, calibration.prompts == 1 ? "" : "s", calibration.unstable,
                     tau_text);
}

std::string noise_text(const core::NoiseEstimate& noise) {
  // The positions left out (a runner-up missing or at the floor) are named, never silently gone.
  const std::string left_out =
      noise.left_out == 0
          ? ""
          : fmt::format(", {} left out: runner-up missing or at the floor", noise.left_out);
  if (noise.positions == 0 || !noise.median)
    return left_out.empty() ? "no sample" : "no sample (" + left_out.substr(2) + ")";
  if (noise.nonzero == 0) return fmt::format("zero ({} positions{})", noise.positions, left_out);
  return fmt::format("median {}, p99 {}, max {} ({} positions, {} moved{})",
                     nats_text(*noise.median), nats_text(*noise.p99), nats_text(*noise.max),
                     noise.positions, noise.nonzero, left_out);
}

} // namespace llmrepro::report
