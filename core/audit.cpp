#include "core/audit.hpp"

namespace llmrepro::core {

const char* to_string(FailOn fail_on) {
  switch (fail_on) {
  case FailOn::none: return "none";
  case FailOn::unstable: return "unstable";
  case FailOn::fragile: return "fragile";
  }
  return "none";
}

Result<FailOn> parse_fail_on(const std::string& text) {
  if (text == "none") return FailOn::none;
  if (text == "unstable") return FailOn::unstable;
  if (text == "fragile") return FailOn::fragile;
  return make_error(ErrorCode::usage,
                    "unknown --fail-on value '" + text + "' (expected none, unstable or fragile)");
}

PlanConfig plan_config_of(const AuditConfig& config, int endpoints) {
  PlanConfig plan;
  plan.endpoints = endpoints < 1 ? 1 : endpoints;
  plan.levels = config.levels;
  plan.probes = config.probes;
  plan.runs = config.runs;
  plan.seed = config.seed;
  plan.shard_index = config.shard_index;
  plan.shard_count = config.shard_count;
  return plan;
}

} // namespace llmrepro::core
