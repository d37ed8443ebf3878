#include "report/detail/report_text.hpp"

#include <fmt/format.h>

#include "core/plan.hpp"

namespace llmrepro::report {

std::string percent_text(double share) { return fmt::format("{:.1f}%", 100.0 * share); }

int distinct_completions(const core::AuditAnalysis& analysis) {
  int total = 0;
  for (const auto& prompt : analysis.prompts) total += prompt.unique_completions;
  return total;
}

std::string gate_scope_text(const core::GateScope& scope) {
  std::string out;
  const auto add = [&out](const std::string& part) {
    out += (out.empty() ? "" : " \u00b7 ") + part;
  };
  if (scope.endpoint) add(fmt::format("endpoint {}", *scope.endpoint));
  if (scope.probe) add(core::to_string(*scope.probe));
  if (scope.level) add(fmt::format("c={}", *scope.level));
  return out.empty() ? "whole audit" : out;
}

} // namespace llmrepro::report
