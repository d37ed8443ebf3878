// An endpoint's capability preflight (core/capabilities.hpp) as the JSON report writes it: null
// where none ran, else what was requested and what was in effect, each parameter's outcome with
// its evidence, and the one-line summary the other reports show. Private to report/.
#pragma once

#include <nlohmann/json.hpp>

#include "core/capabilities.hpp"

namespace llmrepro::report::detail {

// `Json`: nlohmann::json or nlohmann::ordered_json, as the report builds its document.
template <typename Json = nlohmann::json>
Json capabilities_json(const core::EndpointCapabilities& found) {
  if (!found.checked()) return nullptr;
  const auto check = [](const core::CapabilityCheck& c) {
    Json out;
    out["outcome"] = core::to_string(c.outcome);
    out["detail"] = c.detail;
    return out;
  };
  Json logprobs = check(found.logprobs);
  logprobs["candidates_requested"] = found.candidates_requested;
  logprobs["candidates_returned"] = found.candidates_returned;
  Json out;
  out["requests"] = found.requests;
  out["requested_temperature"] = core::to_string(found.requested);
  out["temperature_in_effect"] = core::to_string(found.in_effect);
  out["temperature"] = check(found.temperature);
  out["logprobs"] = logprobs;
  out["seed"] = check(found.seed);
  out["model"] = found.model.empty() ? Json(nullptr) : Json(found.model);
  out["failure"] = found.failure.empty() ? Json(nullptr) : Json(found.failure);
  out["summary"] = core::capabilities_line(found);
  return out;
}

} // namespace llmrepro::report::detail
