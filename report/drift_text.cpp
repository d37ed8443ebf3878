#include "report/detail/drift_text.hpp"

#include <fmt/format.h>

namespace llmrepro::report {

std::string drift_nats(double drift) { return fmt::format("{:.3g}", drift); }

std::string max_drift_text(const std::optional<double>& max_logprob_drift) {
  if (!max_logprob_drift) return "no logprobs compared";
  return drift_nats(*max_logprob_drift) + " nats";
}

std::string level_drift_text(const core::LogprobDrift& drift) {
  if (drift.positions_compared == 0) return "no logprobs compared";
  return fmt::format("{} nats over {} positions", drift_nats(drift.max_abs),
                     drift.positions_compared);
}

std::string tier_counts_text(const core::AuditSummary& summary, const std::string& separator) {
  return fmt::format("bitwise {}{}token {}{}unstable {}{}inconclusive {}",
                     summary.bitwise_stable_prompts, separator,
                     summary.stable_prompts - summary.bitwise_stable_prompts, separator,
                     summary.unstable_prompts, separator, summary.inconclusive_prompts);
}

std::string reasoning_summary_text(const core::ReasoningSummary& reasoning) {
  if (reasoning.with_reasoning == 0 && reasoning.compare_on == core::CompareOn::both) return "";
  std::string text = std::string("compared: ") + core::to_string(reasoning.compare_on) +
                     " \u00b7 " + std::to_string(reasoning.with_reasoning) + " of " +
                     std::to_string(reasoning.completions) + " completions carried reasoning";
  if (reasoning.with_reasoning > 0)
    text += ", " + std::to_string(reasoning.with_reasoning_tokens) + " with tokens of their own";
  if (reasoning.joined > 0)
    text += ", " + std::to_string(reasoning.joined) +
            " in one stream with the answer that could not be split (their parts compared by "
            "text)";
  return text;
}

} // namespace llmrepro::report
