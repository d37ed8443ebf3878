// --profile adi's figures (core/adi_protocol.hpp) and a completion set's text divergence
// (core/text_divergence.hpp) as the JSON report writes them. Private to report/.
#pragma once

#include <cmath>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/adi_protocol.hpp"
#include "core/text_divergence.hpp"

namespace llmrepro::report::detail {

// {bytes, characters}, or null where the texts do not part.
template <typename Json = nlohmann::json>
Json text_divergence_json(const std::optional<core::TextDivergence>& divergence) {
  if (!divergence) return nullptr;
  Json out;
  out["bytes"] = divergence->bytes;
  out["characters"] = divergence->characters;
  return out;
}

// Each endpoint's figures of the leaderboard's protocol, in endpoint order; null where the audit
// did not run --profile adi.
template <typename Json = nlohmann::json>
Json adi_json(const std::vector<core::AdiSummary>& endpoints) {
  if (endpoints.empty()) return nullptr;
  const auto optional = [](const auto& value) {
    return value && std::isfinite(static_cast<double>(*value)) ? Json(*value) : Json(nullptr);
  };
  Json out = Json::array();
  for (const core::AdiSummary& s : endpoints) {
    Json endpoint;
    endpoint["burst"] = s.burst;
    endpoint["serial_runs"] = s.serial_runs;
    endpoint["serial_spacing_s"] = s.serial_spacing_s;
    endpoint["cases"] = s.cases;
    endpoint["diverged"] = s.diverged;
    endpoint["burst_diverged"] = s.burst_diverged;
    endpoint["serial_diverged"] = s.serial_diverged;
    endpoint["burst_differs_from_serial"] = s.burst_differs_from_serial;
    endpoint["text_diverged"] = s.text_diverged;
    endpoint["min_divergence_bytes"] = optional(s.min_divergence_bytes);
    endpoint["median_divergence_bytes"] = optional(s.median_divergence_bytes);
    endpoint["min_divergence_characters"] = optional(s.min_divergence_characters);
    endpoint["median_divergence_characters"] = optional(s.median_divergence_characters);
    endpoint["mean_modal_share"] = optional(s.mean_modal_share);
    endpoint["min_modal_share"] = optional(s.min_modal_share);
    endpoint["fingerprints"] = s.fingerprints;
    endpoint["fingerprint_drift_cases"] = s.fingerprint_drift_cases;
    endpoint["diverged_with_fingerprint_drift"] = s.diverged_with_fingerprint_drift;
    endpoint["lines"] = core::adi_lines(s);
    out.push_back(std::move(endpoint));
  }
  return out;
}

} // namespace llmrepro::report::detail
