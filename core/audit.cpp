#include "core/audit.hpp"

#include "core/probe_text.hpp"

namespace llmrepro::core {

const char* to_string(FailOn fail_on) {
  switch (fail_on) {
  case FailOn::unstable: return "unstable";
  case FailOn::fragile: return "fragile";
  case FailOn::disagree: return "disagree";
  case FailOn::shift: return "shift";
  }
  return "unstable";
}

std::string header_name(const std::string& line) {
  const std::size_t colon = line.find(':');
  if (colon == std::string::npos) return {};
  std::size_t begin = 0;
  std::size_t end = colon;
  while (begin < end && (line[begin] == ' ' || line[begin] == '\t')) ++begin;
  while (end > begin && (line[end - 1] == ' ' || line[end - 1] == '\t')) --end;
  return line.substr(begin, end - begin);
}

std::size_t recorded_requests(const AuditData& data) {
  return data.records.size() + data.records_not_kept;
}

TemperatureMode temperature_in_effect(const AuditData& data) {
  if (data.config.plan.temperature == TemperatureMode::provider_default)
    return TemperatureMode::provider_default;
  for (const EndpointInfo& endpoint : data.endpoints)
    if (endpoint.capabilities.checked() &&
        endpoint.capabilities.in_effect == TemperatureMode::provider_default)
      return TemperatureMode::provider_default;
  return TemperatureMode::zero;
}

std::string to_string(const FailOnSet& fail_on) {
  std::string out;
  const auto add = [&out](bool on, const char* name) {
    if (!on) return;
    if (!out.empty()) out += ',';
    out += name;
  };
  add(fail_on.unstable, "unstable");
  add(fail_on.fragile, "fragile");
  add(fail_on.disagree, "disagree");
  add(fail_on.shift, "shift");
  return out.empty() ? "none" : out;
}

Result<FailOnSet> parse_fail_on(const std::string& text) {
  FailOnSet set;
  if (text == "none") return set;
  std::size_t from = 0;
  while (from <= text.size()) {
    const auto comma = text.find(',', from);
    const std::string item =
        text.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
    bool* slot = item == "unstable"   ? &set.unstable
                 : item == "fragile"  ? &set.fragile
                 : item == "disagree" ? &set.disagree
                 : item == "shift"    ? &set.shift
                                      : nullptr;
    if (slot == nullptr)
      return make_error(
          ErrorCode::usage,
          "unknown --fail-on value '" + item +
              "' (expected none, or a comma list of unstable, fragile, disagree, shift)");
    if (*slot) return make_error(ErrorCode::usage, "--fail-on names '" + item + "' twice");
    *slot = true;
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  return set;
}

const char* to_string(AuditProfile profile) {
  switch (profile) {
  case AuditProfile::standard: return "standard";
  case AuditProfile::deterministic: return "deterministic";
  case AuditProfile::adi: return "adi";
  }
  return "standard";
}

Result<AuditProfile> parse_audit_profile(const std::string& text) {
  if (text == "standard") return AuditProfile::standard;
  if (text == "deterministic") return AuditProfile::deterministic;
  if (text == "adi") return AuditProfile::adi;
  return make_error(ErrorCode::usage,
                    "unknown --profile '" + text + "' (expected standard, deterministic or adi)");
}

bool judging_differs(const AuditConfig& a, const AuditConfig& b) {
  // The price only prices the usage: the analyses compared without it.
  AnalysisConfig judged_a = a.analysis;
  AnalysisConfig judged_b = b.analysis;
  judged_a.price.reset();
  judged_b.price.reset();
  return a.gates != b.gates || judged_a != judged_b;
}

bool audit_complete(std::size_t recorded, std::size_t planned, bool interrupted) {
  return recorded >= planned && !interrupted;
}

const char* audit_status(bool complete) { return complete ? "complete" : "partial"; }

std::string cold_mode_text(const ProbeActivity& activity) {
  if (activity.cold_per_request)
    return "with the prompt cache off per request (cache_prompt: false)";
  if (!activity.flush_route.empty()) return "after a flush through " + activity.flush_route;
  return {};
}

std::vector<ProbeActivity> earlier_prefix_sizing(const std::vector<ProbeActivity>& before) {
  std::vector<ProbeActivity> now(before.size());
  for (std::size_t e = 0; e < before.size(); ++e) {
    now[e].prefix_shortened = before[e].prefix_shortened;
    now[e].prefix_words = before[e].prefix_words;
  }
  return now;
}

std::string prefix_sizing_text(const ProbeActivity& activity) {
  if (!activity.prefix_shortened) return {};
  if (activity.prefix_words == 0)
    return "not one word of the shared prefix fits the server's context per slot beside the "
           "longest prompt, so the trials share no prefix";
  return "shared prefix cut to " + std::to_string(activity.prefix_words) + " of " +
         std::to_string(k_prefix_words) + " words to fit the server's context per slot";
}

FillerLevel& filler_level(ProbeActivity& activity, int level, bool sampled) {
  for (FillerLevel& each : activity.filler_levels)
    if (each.level == level && each.sampled == sampled) return each;
  activity.filler_levels.push_back(FillerLevel{level, sampled});
  return activity.filler_levels.back();
}

int fillers_sent(const ProbeActivity& activity, ProbeKind probe) {
  if (!probe_uses_fillers(probe)) return 0;
  return fillers_sampled(probe) ? activity.sampled_filler_sent
                                : activity.filler_sent - activity.sampled_filler_sent;
}

int fillers_failed(const ProbeActivity& activity, ProbeKind probe) {
  if (!probe_uses_fillers(probe)) return 0;
  return fillers_sampled(probe) ? activity.sampled_filler_failed
                                : activity.filler_failed - activity.sampled_filler_failed;
}

const FillerLevel* find_filler_level(const ProbeActivity& activity, int level, bool sampled) {
  for (const FillerLevel& each : activity.filler_levels)
    if (each.level == level && each.sampled == sampled) return &each;
  return nullptr;
}

PlanConfig plan_config_of(const AuditConfig& config, int endpoints) {
  PlanConfig plan;
  plan.endpoints = endpoints < 1 ? 1 : endpoints;
  plan.levels = config.plan.levels;
  plan.probes = config.plan.probes;
  plan.runs = config.plan.runs;
  plan.serial_runs = config.plan.serial_runs;
  // The leaderboard's protocol: each prompt's burst on its own, serial runs in rounds.
  plan.bursts = plan.serial_rounds = config.plan.profile == AuditProfile::adi;
  plan.seed = config.plan.seed;
  plan.shard_index = config.plan.shard_index;
  plan.shard_count = config.plan.shard_count;
  return plan;
}

} // namespace llmrepro::core
