// The words every report uses for the flip probability: the one-line comparison of the two
// predictors and each level's noise, so that the terminal, Markdown and HTML say the same.
#pragma once

#include <string>
#include <vector>

#include "core/analysis.hpp"

namespace llmrepro::report {

// "p_flip Brier 0.081 AUC 0.91 · gap rule (τ 0.05) Brier 0.220 AUC 0.70 (42 prompts, 9
// unstable) · noise implies τ 0.031"; says so when no prompt could be scored. `tau` is τ.
std::string predictor_comparison_line(const core::FlipCalibration& calibration, double tau);

// One level's noise in words: "zero (400 positions)", "median 0, p99 0.0039, max 0.012 (380
// positions, 31 moved)", or "no sample".
std::string noise_text(const core::NoiseEstimate& noise);

// A number of nats in at most 2 significant digits ("0.0039", "0.12", "1.5", "0").
std::string nats_text(double value);

} // namespace llmrepro::report
