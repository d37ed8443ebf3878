#include "report/detail/usage_text.hpp"

#include <fmt/format.h>

#include <cmath>

namespace llmrepro::report {

std::string cost_number(double cost) { return fmt::format("{:.6g}", cost); }

std::string usage_text(const core::UsageSummary& usage) {
  if (usage.requests == 0) return "";
  std::string in = usage.requests_with_prompt_usage == 0 ? std::string("unknown")
                                                         : std::to_string(usage.prompt_tokens);
  if (usage.requests_with_prompt_usage > 0 && !usage.prompt_usage_complete())
    in += fmt::format(" ({} of {} requests reported theirs)", usage.requests_with_prompt_usage,
                      usage.requests);
  std::string text = fmt::format("tokens in {} \u00b7 out {}", in, usage.completion_tokens);
  if (usage.reasoning_tokens > 0) text += fmt::format(" ({} reasoning)", usage.reasoning_tokens);
  if (usage.cost)
    text += (usage.prompt_usage_complete() ? " \u00b7 cost " : " \u00b7 cost at least ") +
            cost_number(*usage.cost);
  return text;
}

std::string speed_text(const core::LevelSummary& level) {
  if (level.runs == 0) return {};
  // A level whose requests all started and ended within one millisecond has no measured rate.
  const auto figure = [](const char* format, double value) {
    return std::isfinite(value) ? fmt::format(fmt::runtime(format), value) : std::string("unknown");
  };
  return figure("{:.1f}", level.tokens_per_second) + " tok/s, latency mean " +
         figure("{:.1f}", level.mean_latency_ms) + " ms, median " +
         figure("{:.0f}", level.median_latency_ms) + " ms, p95 " +
         figure("{:.0f}", level.p95_latency_ms) + " ms";
}

std::string level_usage_text(const std::vector<core::LevelSummary>& levels,
                             const std::string& separator) {
  std::string out;
  for (const auto& level : levels) {
    const std::string text = usage_text(level.usage);
    if (text.empty()) continue;
    out += (out.empty() ? std::string() : separator) + "c=" + std::to_string(level.concurrency) +
           ": " + text;
  }
  return out;
}

} // namespace llmrepro::report
