// The request checked and turned into the configuration a new audit runs with: every value's
// range, the profile's levels and probes, the budgets and the adaptive settings.
#pragma once

#include <string>
#include <vector>

#include "audit/request.hpp"
#include "core/audit.hpp"
#include "core/result.hpp"

namespace llmrepro::audit {

// Every value checked (NaN, infinities and out-of-range values are usage errors naming the flag)
// and gathered into the configuration a new audit runs with.
core::Result<core::AuditConfig> config_from(const AuditRequest& request);

// The embedded engine's settings as the request gives them.
core::EngineSettings engine_settings_of(const AuditRequest& request);

// The names of the request's header lines; their values are secrets and are never stored.
std::vector<std::string> header_names_of(const AuditRequest& request);

} // namespace llmrepro::audit
