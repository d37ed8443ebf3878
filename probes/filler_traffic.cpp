#include "probes/detail/filler_traffic.hpp"

#include <algorithm>

#include "core/budget.hpp"
#include "core/probe_text.hpp"
#include "core/server_description.hpp"
#include "probes/detail/request_builder.hpp"
#include "probes/dialect.hpp"

namespace llmrepro::probes::detail {

int filler_max_tokens(const SchedulerConfig& config, std::uint64_t index) {
  return core::capped_max_tokens(core::filler_max_tokens(index), config.stop_after);
}

core::SizedPrompt sized_filler(const EndpointTarget& target, const SchedulerConfig& config,
                               std::uint64_t index) {
  return core::sized_filler(index, config.filler_shape, filler_max_tokens(config, index),
                            target.context_per_slot);
}

namespace {

HttpRequest request_of(const EndpointTarget& target, const SchedulerConfig& config,
                       const core::SizedPrompt& filler, std::uint64_t index, bool sampled) {
  GenerationParams params = params_for(target, config);
  params.max_tokens = filler.max_tokens;
  params.stream = false;
  if (sampled) {
    params.sampled = true;
    params.seed = filler_seed(config, index);
  }
  return generation_request(target, config, filler.prompt, params);
}

} // namespace

std::uint64_t filler_seed(const SchedulerConfig& config, std::uint64_t index) {
  return config.params.seed + 1 + index;
}

HttpRequest filler_request(const EndpointTarget& target, const SchedulerConfig& config,
                           std::uint64_t index, bool sampled) {
  return request_of(target, config, sized_filler(target, config, index), index, sampled);
}

bool filler_refused(const HttpResponse& response) {
  const int status = response.http_status;
  return response.failure == TransportFailure::none && status >= 400 && status < 500 &&
         status != 408 && status != 425 && status != 429;
}

void FillerTraffic::top_up(HttpTransport& transport, const EndpointTarget& target,
                           std::size_t count, int level, bool sampled,
                           core::ProbeActivity& activity, core::BudgetLedger* budget) {
  while (m_in_flight.size() < count) {
    const core::SizedPrompt filler = sized_filler(target, m_config, m_next_index);
    if (!filler.fits) {
      core::filler_level(activity, level, sampled).unfit = true;
      return;
    }
    std::optional<core::BudgetLedger::Ticket> ticket;
    if (budget != nullptr) {
      const core::TokenBound bound{core::prompt_token_bound(filler.prompt), filler.max_tokens};
      ticket = budget->try_start(bound);
      if (!ticket) return;
    }
    const std::uint64_t index = m_next_index++;
    m_in_flight.emplace(transport.submit(request_of(target, m_config, filler, index, sampled)),
                        InFlight{ticket, level, sampled});
    ++activity.filler_sent;
    if (sampled) ++activity.sampled_filler_sent;
    core::FillerLevel& counts = core::filler_level(activity, level, sampled);
    ++counts.sent;
    if (filler.shortened) ++counts.shortened;
  }
}

bool FillerTraffic::take(const HttpTransport::Finished& finished, core::ProbeActivity& activity,
                         core::BudgetLedger* budget) {
  const auto found = m_in_flight.find(finished.id);
  if (found == m_in_flight.end()) return false;
  if (budget != nullptr && found->second.ticket)
    budget->settle(*found->second.ticket, std::nullopt);
  const int level = found->second.level;
  const bool sampled = found->second.sampled;
  m_in_flight.erase(found);
  const HttpResponse& response = finished.response;
  if (response.failure != TransportFailure::none || response.http_status < 200 ||
      response.http_status >= 300) {
    ++activity.filler_failed;
    if (sampled) ++activity.sampled_filler_failed;
  }
  if (filler_refused(response)) {
    core::FillerLevel& counts = core::filler_level(activity, level, sampled);
    if (counts.refused++ == 0)
      counts.refusal = core::server_text("HTTP " + std::to_string(response.http_status) + ": " +
                                         describe_error_body(response.body));
  }
  return true;
}

} // namespace llmrepro::probes::detail
