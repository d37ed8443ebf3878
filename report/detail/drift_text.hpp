// Logprob drift, stability tiers and a reasoning model's compared part as every human-readable
// report words them, so that the terminal, Markdown and HTML say the same thing in the same
// numbers.
#pragma once

#include <optional>
#include <string>

#include "core/analysis.hpp"

namespace llmrepro::report {

// A drift in nats with three significant digits ("0.000977", "0"); the JSON keeps every digit.
std::string drift_nats(double drift);

// The audit's largest drift, "0.000977 nats", or "no logprobs compared" when it is empty.
std::string max_drift_text(const std::optional<double>& max_logprob_drift);

// A level's drift, "0.000977 nats over 9 positions", or "no logprobs compared" when it compared
// no position.
std::string level_drift_text(const core::LogprobDrift& drift);

// The prompts per tier: "bitwise 1   token 2   unstable 0   inconclusive 0", `separator`
// between the tiers. Token-tier prompts are the stable ones that are not bitwise.
std::string tier_counts_text(const core::AuditSummary& summary, const std::string& separator);

// What was compared of a reasoning model's completions and what came back: "compared: answer ·
// 40 of 40 completions carried reasoning, 40 with tokens of their own". Empty when no completion
// carried reasoning and both parts were compared (the default, which then compares the answer).
std::string reasoning_summary_text(const core::ReasoningSummary& reasoning);

} // namespace llmrepro::report
