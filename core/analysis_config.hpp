// The analysis settings of an audit: the fragility rule (τ, W, or a flip probability), the part
// of a reasoning model's completions compared and the price of its tokens. The one place where
// the defaults of τ and W are written: every flag, report and tool that needs them reads these.
#pragma once

#include <optional>

#include "core/cost.hpp"
#include "core/reasoning.hpp"

namespace llmrepro::core {

// τ: a prompt is fragile when a gap between its top two candidates in the window is below it
// (nats; docs/design.md "Analysis: definitions").
inline constexpr double k_default_fragile_gap = 0.05;
// W: the leading tokens of the reference completion whose gaps the fragility rule reads.
inline constexpr int k_default_fragile_window = 50;

struct AnalysisConfig {
  double fragile_gap = k_default_fragile_gap;    // τ, nats
  int fragile_window = k_default_fragile_window; // W, tokens
  // When set, a prompt is fragile when its flip probability (p_flip) is at least this, instead of
  // when a gap in the window is below τ.
  std::optional<double> fragile_p;
  // The part of a reasoning model's completions compared (core/reasoning.hpp); checkers always
  // read the answer.
  CompareOn compare_on = CompareOn::both;
  // --price: what the usage costs (UsageSummary::cost); empty leaves every cost empty. Not a
  // judging value: it prices the usage, it decides no verdict.
  std::optional<Price> price;

  friend bool operator==(const AnalysisConfig&, const AnalysisConfig&) = default;
};

} // namespace llmrepro::core
