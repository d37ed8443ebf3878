#include "probes/detail/prefix_trial.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

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

HttpRequest priming_request(const EndpointTarget& target, const SchedulerConfig& config,
                            int prefix_words) {
  GenerationParams params = params_for(target, config);
  params.max_tokens = 1;
  params.stream = false;
  return generation_request(target, config, core::prefix_priming_prompt(prefix_words), params);
}

std::optional<long> parse_prefix_cache_hits(std::string_view metrics) {
  constexpr std::string_view name = "vllm:prefix_cache_hits_total";
  std::optional<long> total;
  while (!metrics.empty()) {
    const std::size_t end = std::min(metrics.find('\n'), metrics.size());
    std::string_view line = metrics.substr(0, end);
    metrics.remove_prefix(std::min(end + 1, metrics.size()));
    // A sample: the name, its labels in braces or none, a blank, the value (a timestamp may
    // follow). Comments (# HELP, # TYPE) and other names are skipped.
    if (!line.starts_with(name)) continue;
    line.remove_prefix(name.size());
    if (line.starts_with('{')) {
      const std::size_t close = line.find('}');
      if (close == std::string_view::npos) continue;
      line.remove_prefix(close + 1);
    }
    if (line.empty() || (line.front() != ' ' && line.front() != '\t')) continue;
    const std::string value(line.substr(line.find_first_not_of(" \t")));
    char* rest = nullptr;
    const double number = std::strtod(value.c_str(), &rest);
    if (rest == value.c_str() || !std::isfinite(number) || number < 0) continue;
    total = total.value_or(0) + static_cast<long>(number);
  }
  return total;
}

std::optional<long> read_prefix_cache_hits(HttpTransport& transport, const EndpointTarget& target,
                                           const SchedulerConfig& config) {
  const HttpResponse response = transport.perform(get_request(target, config, "/metrics"));
  if (!answered_2xx(response)) return std::nullopt;
  return parse_prefix_cache_hits(response.body);
}

std::optional<long> prepare_prefix_trial(HttpTransport& transport, const EndpointTarget& target,
                                         const SchedulerConfig& config,
                                         const core::PlannedRequest& planned, int prefix_words,
                                         core::ProbeActivity& activity) {
  if (core::prefix_trial_is_warm(planned.repeat)) {
    ++activity.primes_sent;
    if (!answered_2xx(transport.perform(priming_request(target, config, prefix_words))))
      ++activity.primes_failed;
    return std::nullopt;
  }
  if (has_per_request_cold_mode(target.dialect)) {
    activity.cold_per_request = true;
    return std::nullopt;
  }
  bool flushed = false;
  if (!activity.flush_looked_up) {
    activity.flush_looked_up = true;
    for (const char* route : k_flush_routes) {
      ++activity.flushes_sent;
      if (flush_answered(transport.perform(post_request(target, config, route, "{}")))) {
        activity.flush_route = route;
        flushed = true;
        break;
      }
      ++activity.flushes_failed;
    }
  } else if (!activity.flush_route.empty()) {
    ++activity.flushes_sent;
    flushed =
        flush_answered(transport.perform(post_request(target, config, activity.flush_route, "{}")));
    if (!flushed) ++activity.flushes_failed;
  }
  if (!flushed || activity.flush_route != k_vllm_flush_route) return std::nullopt;
  return read_prefix_cache_hits(transport, target, config);
}

} // namespace llmrepro::probes::detail
