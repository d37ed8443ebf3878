// What an endpoint does with the parameters an audit sends, as the capability preflight found it
// before the plan ran (probes/capability_preflight.hpp): whether temperature 0 is accepted,
// refused or ignored, whether logprobs come back and how many candidates, whether a seed is
// accepted and honoured, and which model answered. Stored with the audit and shown in every
// report, so that what was requested and what was in effect are never confused.
// docs/design.md "Capability preflight".
#pragma once

#include <string>
#include <vector>

#include "core/result.hpp"

namespace llmrepro::core {

// --temperature: greedy decoding (0), or the provider's default sampling, where the request
// names no temperature at all (docs/design.md "Distribution mode").
enum class TemperatureMode { zero, provider_default };

// "0", "default".
const char* to_string(TemperatureMode mode);
// "0" or "default"; anything else is an input error naming --temperature.
Result<TemperatureMode> parse_temperature_mode(const std::string& text);

enum class CapabilityOutcome {
  unchecked,    // the preflight did not get that far (its request failed)
  accepted,     // sent and answered as asked
  refused,      // a 400 or 422 whose reason names the parameter: the audit does not send it
  ignored,      // accepted, yet the answers show it had no effect
  unconfirmed,  // temperature 0 sent, two identical requests differed, no logprobs to say why
  honoured,     // seed: two identical sampled requests with it answered alike
  not_honoured, // seed: two identical sampled requests with it answered differently
  not_sent,     // the API takes no such parameter, or the audit does not ask for it
  untested,     // seed under greedy decoding: it changes nothing there
};

// "unchecked", "accepted", "refused", "ignored", "unconfirmed", "honoured", "not honoured",
// "not sent", "untested".
const char* to_string(CapabilityOutcome outcome);
Result<CapabilityOutcome> parse_capability_outcome(const std::string& text);

// One parameter's fate, with the evidence in words (server text, made safe by
// core::server_text): "HTTP 400: `temperature` is deprecated for this model.".
struct CapabilityCheck {
  CapabilityOutcome outcome = CapabilityOutcome::unchecked;
  std::string detail;
  friend bool operator==(const CapabilityCheck&, const CapabilityCheck&) = default;
};

struct EndpointCapabilities {
  // The preflight's requests, every one counted (and charged to the budgets); 0 where none ran:
  // the embedded engine, --preflight off, audits stored before it was.
  int requests = 0;
  std::string model; // the model the answers named (server text); empty: they named none
  TemperatureMode requested = TemperatureMode::zero;
  TemperatureMode in_effect = TemperatureMode::zero;
  CapabilityCheck temperature;
  CapabilityCheck logprobs;
  int candidates_requested = 0; // top_logprobs asked for
  int candidates_returned = 0;  // the most any position carried
  CapabilityCheck seed;
  // A request the preflight could not get answered (its last status or failure, in words):
  // what it did not learn stays unchecked, and the audit sends what it was asked to.
  std::string failure;

  bool checked() const { return requests > 0; }
  friend bool operator==(const EndpointCapabilities&, const EndpointCapabilities&) = default;
};

// Each finding in words, in this order: temperature, logprobs, seed, model; empty when the
// preflight did not run. "temperature 0 refused (HTTP 400: ...): audited at the provider's
// default", "logprobs returned, 2 candidates", "seed untested (greedy decoding)", "model
// claude-opus-4-8 answered".
std::vector<std::string> capability_findings(const EndpointCapabilities& capabilities);

// "preflight (3 requests): " and the findings joined with "; "; empty when it did not run.
std::string capabilities_line(const EndpointCapabilities& capabilities);

// What was requested against what was in effect, where they differ: "temperature 0 refused:
// audited at the provider's default" (or "... ignored: ..."); empty when they agree.
std::string temperature_effect_line(const EndpointCapabilities& capabilities);

} // namespace llmrepro::core
