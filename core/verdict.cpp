#include "core/verdict.hpp"

#include <cstdio>

namespace llmrepro::core {

namespace {

std::string format_rate(double rate) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3f", rate);
  return buffer;
}

} // namespace

Verdict judge(const AuditAnalysis& analysis, const GateConfig& gates, std::optional<double> tara) {
  Verdict verdict;
  const AuditSummary& summary = analysis.summary;
  const std::string of_prompts = " of " + std::to_string(summary.prompts) + " prompts";

  if (gates.fail_on == FailOn::unstable) {
    const bool passed = summary.unstable_prompts == 0;
    verdict.gates.push_back({"fail_on",
                             std::to_string(summary.unstable_prompts) + of_prompts +
                                 " unstable (--fail-on unstable)",
                             passed});
  } else if (gates.fail_on == FailOn::fragile) {
    const bool passed = summary.fragile_prompts == 0;
    verdict.gates.push_back({"fail_on",
                             std::to_string(summary.fragile_prompts) + of_prompts +
                                 " fragile (--fail-on fragile)",
                             passed});
  }
  if (gates.max_unique) {
    int worst = 0;
    std::string worst_id;
    for (const auto& prompt : analysis.prompts) {
      if (prompt.unique_completions > worst) {
        worst = prompt.unique_completions;
        worst_id = prompt.id;
      }
    }
    const bool passed = worst <= *gates.max_unique;
    std::string message = "most distinct completions: " + std::to_string(worst);
    if (!worst_id.empty()) message += " (prompt " + worst_id + ")";
    message += ", limit " + std::to_string(*gates.max_unique) + " (--max-unique)";
    verdict.gates.push_back({"max_unique", message, passed});
  }
  if (gates.max_unstable_rate) {
    const double rate = summary.prompts > 0
                            ? static_cast<double>(summary.unstable_prompts) / summary.prompts
                            : 0.0;
    verdict.gates.push_back({"max_unstable_rate",
                             "unstable rate " + format_rate(rate) + ", limit " +
                                 format_rate(*gates.max_unstable_rate) + " (--max-unstable-rate)",
                             rate <= *gates.max_unstable_rate});
  }
  if (gates.min_tara) {
    if (tara) {
      verdict.gates.push_back({"min_tara",
                               "TARa " + format_rate(*tara) + ", minimum " +
                                   format_rate(*gates.min_tara) + " (--min-tara)",
                               *tara >= *gates.min_tara});
    } else {
      verdict.gates.push_back(
          {"min_tara", "TARa was not computed, minimum " + format_rate(*gates.min_tara) + " (--min-tara)",
           false});
    }
  }
  for (const auto& gate : verdict.gates)
    if (!gate.passed) verdict.passed = false;
  return verdict;
}

} // namespace llmrepro::core
