// Private to probes: the start of a restart-probe round, run by the scheduler before the round's
// first request: the restart command, then the wait until the endpoint answers again.
#pragma once

#include <optional>
#include <string>

#include "core/audit.hpp"
#include "probes/http_transport.hpp"
#include "probes/scheduler.hpp"

namespace llmrepro::probes::detail {

// The route whose 2xx says the endpoint serves again: GET /health where the server has one
// (llama.cpp, SGLang, TGI), /api/tags for Ollama, /v1/models for the rest.
const char* readiness_route(Dialect dialect);

// Runs settings.command (run_restart_command, within settings.timeout_s), then polls the
// target's readiness route about every 100 ms until it answers 2xx within what is left of the
// timeout. Nothing else may be in flight on `transport` (the restart probe is serial). Counts the
// restart in `activity` (run, failed, slowest until ready). Returns empty when the endpoint is
// ready, else why not, in words that never name the command: "restart command exited 3:
// <output>", "endpoint not ready 120 s after the restart command".
std::optional<std::string> restart_endpoint(HttpTransport& transport, const EndpointTarget& target,
                                            const SchedulerConfig& config,
                                            const RestartSettings& settings,
                                            core::ProbeActivity& activity);

} // namespace llmrepro::probes::detail
