#include "core/capabilities.hpp"

#include <array>
#include <utility>

namespace llmrepro::core {

namespace {

constexpr std::array<std::pair<CapabilityOutcome, const char*>, 9> k_outcome_names{{
    {CapabilityOutcome::unchecked, "unchecked"},
    {CapabilityOutcome::accepted, "accepted"},
    {CapabilityOutcome::refused, "refused"},
    {CapabilityOutcome::ignored, "ignored"},
    {CapabilityOutcome::unconfirmed, "unconfirmed"},
    {CapabilityOutcome::honoured, "honoured"},
    {CapabilityOutcome::not_honoured, "not honoured"},
    {CapabilityOutcome::not_sent, "not sent"},
    {CapabilityOutcome::untested, "untested"},
}};

std::string with_detail(std::string head, const CapabilityCheck& check) {
  if (!check.detail.empty()) head += " (" + check.detail + ")";
  return head;
}

std::string requested_temperature(const EndpointCapabilities& c) {
  return c.requested == TemperatureMode::zero ? "temperature 0" : "the provider's default";
}

// ": audited at ..." where what was in effect is not what was requested.
std::string effect_suffix(const EndpointCapabilities& c) {
  if (c.in_effect == c.requested) return {};
  return c.in_effect == TemperatureMode::provider_default ? ": audited at the provider's default"
                                                          : ": audited at temperature 0";
}

std::string temperature_finding(const EndpointCapabilities& c) {
  return with_detail(requested_temperature(c) + " " + to_string(c.temperature.outcome),
                     c.temperature) +
         effect_suffix(c);
}

std::string logprobs_finding(const EndpointCapabilities& c) {
  switch (c.logprobs.outcome) {
  case CapabilityOutcome::accepted:
    return "logprobs returned, " +
           (c.candidates_returned == 1 ? std::string("1 candidate")
                                       : std::to_string(c.candidates_returned) + " candidates") +
           (c.candidates_returned < c.candidates_requested
                ? " of " + std::to_string(c.candidates_requested) + " asked"
                : std::string());
  case CapabilityOutcome::ignored:
    return with_detail("logprobs not returned", c.logprobs) +
           ": completions compared by text alone";
  case CapabilityOutcome::refused:
    return with_detail("logprobs refused", c.logprobs) + ": requests sent without them";
  default: return with_detail(std::string("logprobs ") + to_string(c.logprobs.outcome), c.logprobs);
  }
}

} // namespace

const char* to_string(TemperatureMode mode) {
  return mode == TemperatureMode::zero ? "0" : "default";
}

Result<TemperatureMode> parse_temperature_mode(const std::string& text) {
  if (text == "0") return TemperatureMode::zero;
  if (text == "default") return TemperatureMode::provider_default;
  return make_error(ErrorCode::input, "--temperature must be 0 or default (got '" + text + "')");
}

const char* to_string(CapabilityOutcome outcome) {
  for (const auto& [value, name] : k_outcome_names)
    if (value == outcome) return name;
  return "unchecked";
}

Result<CapabilityOutcome> parse_capability_outcome(const std::string& text) {
  for (const auto& [value, name] : k_outcome_names)
    if (text == name) return value;
  return make_error(ErrorCode::input, "unknown capability outcome '" + text + "'");
}

std::vector<std::string> capability_findings(const EndpointCapabilities& c) {
  std::vector<std::string> findings;
  if (!c.checked()) return findings;
  if (!c.failure.empty()) findings.push_back("request failed (" + c.failure + ")");
  findings.push_back(temperature_finding(c));
  findings.push_back(logprobs_finding(c));
  findings.push_back(with_detail(std::string("seed ") + to_string(c.seed.outcome), c.seed));
  if (!c.model.empty()) findings.push_back("model " + c.model + " answered");
  return findings;
}

std::string capabilities_line(const EndpointCapabilities& c) {
  if (!c.checked()) return {};
  std::string line = "preflight (" + std::to_string(c.requests) +
                     (c.requests == 1 ? " request): " : " requests): ");
  const auto findings = capability_findings(c);
  for (std::size_t i = 0; i < findings.size(); ++i) line += (i ? "; " : "") + findings[i];
  return line;
}

std::string temperature_effect_line(const EndpointCapabilities& c) {
  if (!c.checked() || c.in_effect == c.requested) return {};
  return requested_temperature(c) + " " + to_string(c.temperature.outcome) + effect_suffix(c);
}

} // namespace llmrepro::core
