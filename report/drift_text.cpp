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

} // namespace llmrepro::report
