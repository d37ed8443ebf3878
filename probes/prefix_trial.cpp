#include "probes/detail/prefix_trial.hpp"

#include <nlohmann/json.hpp>

#include "core/probe_text.hpp"
#include "probes/detail/request_builder.hpp"

namespace llmrepro::probes::detail {
namespace {

bool answered_2xx(const HttpResponse& response) {
  return response.failure == TransportFailure::none && response.http_status >= 200 &&
         response.http_status < 300;
}

} // namespace

bool has_per_request_cold_mode(Dialect dialect) { return dialect == Dialect::llamacpp; }

bool flush_answered(const HttpResponse& response) {
  if (!answered_2xx(response)) return false;
  // SGLang answers plain text ("Cache flushed..."), older vLLM nothing: only an explicit
  // refusal in JSON counts against it.
  const auto body = nlohmann::json::parse(response.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) return true;
  const auto success = body.find("success");
  return success == body.end() || !success->is_boolean() || success->get<bool>();
}

HttpRequest priming_request(const EndpointTarget& target, const SchedulerConfig& config) {
  GenerationParams params = params_for(target, config);
  params.max_tokens = 1;
  params.stream = false;
  return generation_request(target, config, core::prefix_priming_prompt(), params);
}

void prepare_prefix_trial(HttpTransport& transport, const EndpointTarget& target,
                          const SchedulerConfig& config, const core::PlannedRequest& planned,
                          core::ProbeActivity& activity) {
  if (core::prefix_trial_is_warm(planned.repeat)) {
    ++activity.primes_sent;
    if (!answered_2xx(transport.perform(priming_request(target, config)))) ++activity.primes_failed;
    return;
  }
  if (has_per_request_cold_mode(target.dialect)) {
    activity.cold_per_request = true;
    return;
  }
  if (!activity.flush_looked_up) {
    activity.flush_looked_up = true;
    for (const char* route : k_flush_routes) {
      ++activity.flushes_sent;
      if (flush_answered(transport.perform(post_request(target, config, route, "{}")))) {
        activity.flush_route = route;
        return;
      }
      ++activity.flushes_failed;
    }
    return;
  }
  if (activity.flush_route.empty()) return;
  ++activity.flushes_sent;
  if (!flush_answered(transport.perform(post_request(target, config, activity.flush_route, "{}"))))
    ++activity.flushes_failed;
}

} // namespace llmrepro::probes::detail
