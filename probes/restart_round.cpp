#include "probes/detail/restart_round.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "probes/detail/request_builder.hpp"
#include "probes/restart_command.hpp"

namespace llmrepro::probes::detail {
namespace {

using Steady = std::chrono::steady_clock;

constexpr double k_readiness_poll_s = 0.1;
// One readiness request waits at most this long: a server still loading may accept and stall.
constexpr double k_readiness_request_s = 2.0;

bool answered_ready(const HttpResponse& response) {
  return response.failure == TransportFailure::none && response.http_status >= 200 &&
         response.http_status < 300;
}

} // namespace

const char* readiness_route(Dialect dialect) {
  switch (dialect) {
  case Dialect::llamacpp:
  case Dialect::sglang:
  case Dialect::tgi: return "/health";
  case Dialect::ollama: return "/api/tags";
  case Dialect::openai_chat:
  case Dialect::openai_completions:
  case Dialect::openai_responses:
  case Dialect::gemini:
  case Dialect::anthropic: break;
  }
  return "/v1/models";
}

std::optional<std::string> restart_endpoint(HttpTransport& transport, const EndpointTarget& target,
                                            const SchedulerConfig& config,
                                            const RestartSettings& settings,
                                            core::ProbeActivity& activity) {
  ++activity.restarts_run;
  transport.close_connections();
  const Steady::time_point start = Steady::now();
  const CommandOutcome outcome = run_restart_command(settings.command, settings.timeout_s);
  if (!outcome.ok()) {
    ++activity.restarts_failed;
    return describe_failure(outcome, settings.timeout_s);
  }
  HttpRequest probe = get_request(target, config, readiness_route(target.dialect));
  for (;;) {
    const double left =
        settings.timeout_s - std::chrono::duration<double>(Steady::now() - start).count();
    if (left <= 0) break;
    probe.timeout_s = std::min(left, k_readiness_request_s);
    const Steady::time_point sent = Steady::now();
    if (answered_ready(transport.perform(probe))) {
      const auto ready_ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(Steady::now() - start).count();
      activity.restart_ready_ms_max =
          std::max(activity.restart_ready_ms_max, static_cast<int>(ready_ms));
      return std::nullopt;
    }
    const auto next = sent + std::chrono::duration_cast<Steady::duration>(
                                 std::chrono::duration<double>(k_readiness_poll_s));
    std::this_thread::sleep_until(next);
  }
  ++activity.restarts_failed;
  return fmt::format("endpoint not ready {:g} s after the restart command", settings.timeout_s);
}

} // namespace llmrepro::probes::detail
