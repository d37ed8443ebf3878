// Private to probes: the side traffic of the prefix probe, sent before each trial so that a warm
// trial finds its shared prefix cached and a cold one finds the cache empty.
#pragma once

#include <optional>
#include <string_view>

#include "core/audit.hpp"
#include "core/plan.hpp"
#include "probes/http_transport.hpp"
#include "probes/scheduler.hpp"

namespace llmrepro::probes::detail {

// The priming request of a warm trial: core::prefix_priming_prompt with `prefix_words` words of
// shared prefix, one token, not streamed.
HttpRequest priming_request(const EndpointTarget& target, const SchedulerConfig& config,
                            int prefix_words);

// Whether the dialect can leave the prompt cache out of one request (llamacpp's
// `"cache_prompt": false`, GenerationParams::bypass_prompt_cache): its cold trials then need no
// flush, and are cold whatever else the server caches.
bool has_per_request_cold_mode(Dialect dialect);

// Whether a flush route's answer flushed: a 2xx, except vLLM's `{"success": false}` (200, the
// cache was not reset, e.g. requests were running), which is a refusal.
bool flush_answered(const HttpResponse& response);

// vLLM's count of the prompt tokens its prefix cache served (the counter
// `vllm:prefix_cache_hits_total` of its Prometheus `/metrics`, vllm/v1/metrics/loggers.py),
// summed over its label sets; empty where the text holds no sample of it.
std::optional<long> parse_prefix_cache_hits(std::string_view metrics);

// GET /metrics on the target and parse_prefix_cache_hits of its answer; empty where it does not
// answer 2xx or holds no such counter.
std::optional<long> read_prefix_cache_hits(HttpTransport& transport, const EndpointTarget& target,
                                           const SchedulerConfig& config);

// The route of vLLM's prefix-cache reset, after which a cold trial is confirmed by its counter.
inline constexpr const char* k_vllm_flush_route = "/reset_prefix_cache";

// Prepares the prefix trial `planned`, blocking until its side traffic has answered (the prefix
// probe runs one request at a time, so nothing else is in flight). A warm trial
// (core::prefix_trial_is_warm) is preceded by a priming request (with `prefix_words` words of
// shared prefix, as the trial has); a cold one, where the dialect
// has a per-request cold mode, by nothing (the trial itself asks for it; activity says so), else
// by a cache flush, by the first of k_flush_routes that flush_answered, looked up once per
// endpoint and remembered in `activity`; when none does, cold trials run without a flush and the
// determinism check leaves them untested. Counts everything in `activity`. Returns, for a cold
// trial after vLLM's reset answered, its prefix-cache counter read after the reset (empty
// elsewhere): the scheduler reads it again when the trial has answered, and the difference is the
// trial's cached prompt tokens where the answer does not give them (core::TokenUsage::
// cached_prompt), which confirms the cold trial or not.
std::optional<long> prepare_prefix_trial(HttpTransport& transport, const EndpointTarget& target,
                                         const SchedulerConfig& config,
                                         const core::PlannedRequest& planned, int prefix_words,
                                         core::ProbeActivity& activity);

} // namespace llmrepro::probes::detail
