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

// Prepares the prefix trial `planned`, blocking until its side traffic has answered (the prefix
// probe runs one request at a time, so nothing else is in flight). A warm trial
// (core::prefix_trial_is_warm) is preceded by a priming request; a cold one by a cache flush, by
// the first of k_flush_routes that answers 2xx, looked up once per endpoint and remembered in
// `activity`; when none does, cold trials run without a flush. Counts everything in `activity`.
void prepare_prefix_trial(HttpTransport& transport, const EndpointTarget& target,
                          const SchedulerConfig& config, const core::PlannedRequest& planned,
                          core::ProbeActivity& activity);

} // namespace llmrepro::probes::detail
