// Private to probes: the side traffic of the prefix probe, sent before each trial so that a warm
// trial finds its shared prefix cached and a cold one finds the cache empty.
#pragma once

#include "core/audit.hpp"
#include "core/plan.hpp"
#include "probes/http_transport.hpp"
#include "probes/scheduler.hpp"

namespace llmrepro::probes::detail {

// The priming request of a warm trial: core::prefix_priming_prompt, one token, not streamed.
HttpRequest priming_request(const EndpointTarget& target, const SchedulerConfig& config);

// Whether the dialect can leave the prompt cache out of one request (llamacpp's
// `"cache_prompt": false`, GenerationParams::bypass_prompt_cache): its cold trials then need no
// flush, and are cold whatever else the server caches.
bool has_per_request_cold_mode(Dialect dialect);

// Whether a flush route's answer flushed: a 2xx, except vLLM's `{"success": false}` (200, the
// cache was not reset, e.g. requests were running), which is a refusal.
bool flush_answered(const HttpResponse& response);

// Prepares the prefix trial `planned`, blocking until its side traffic has answered (the prefix
// probe runs one request at a time, so nothing else is in flight). A warm trial
// (core::prefix_trial_is_warm) is preceded by a priming request; a cold one, where the dialect
// has a per-request cold mode, by nothing (the trial itself asks for it; activity says so), else
// by a cache flush, by the first of k_flush_routes that flush_answered, looked up once per
// endpoint and remembered in `activity`; when none does, cold trials run without a flush and the
// determinism check leaves them untested. Counts everything in `activity`.
void prepare_prefix_trial(HttpTransport& transport, const EndpointTarget& target,
                          const SchedulerConfig& config, const core::PlannedRequest& planned,
                          core::ProbeActivity& activity);

} // namespace llmrepro::probes::detail
