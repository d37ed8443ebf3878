#include "core/cache_state.hpp"

namespace llmrepro::core {

std::string cache_state_line(const std::vector<LevelSummary>& levels) {
  if (levels.empty()) return {};
  const LevelSummary& serial = levels.front();
  const UsageSummary& usage = serial.usage;
  if (usage.warm_requests == 0) return {};
  std::string line = "c=" + std::to_string(serial.concurrency) + ": " +
                     std::to_string(usage.warm_requests) + " of " +
                     std::to_string(usage.requests_with_cache_state) + " runs warm (prefix cache)";
  // Warm and cold prefills compute the same prompt in different chunks; where both ran, what
  // moved between this level's runs can be that alone.
  const bool mixed = usage.warm_requests < usage.requests_with_cache_state;
  if (!mixed || serial.noise.nonzero == 0) return line;
  if (serial.concurrency == 1)
    return line + ", so its noise is cache state (warm and cold prefills), not batching: one "
                  "request at a time shares no batch";
  return line + ", so its noise coincides with cache state (warm and cold prefills)";
}

} // namespace llmrepro::core
