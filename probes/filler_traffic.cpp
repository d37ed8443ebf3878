#include "probes/detail/filler_traffic.hpp"

#include <algorithm>

#include "core/budget.hpp"
#include "core/probe_text.hpp"
#include "probes/detail/request_builder.hpp"

namespace llmrepro::probes::detail {

int filler_max_tokens(const SchedulerConfig& config, std::uint64_t index) {
  return core::capped_max_tokens(core::filler_max_tokens(index), config.stop_after);
}

HttpRequest filler_request(const EndpointTarget& target, const SchedulerConfig& config,
                           std::uint64_t index) {
  GenerationParams params = params_for(target, config);
  params.max_tokens = filler_max_tokens(config, index);
  params.stream = false;
  return generation_request(target, config, core::filler_prompt(index, config.filler_shape),
                            params);
}

void FillerTraffic::top_up(HttpTransport& transport, const EndpointTarget& target,
                           std::size_t count, core::ProbeActivity& activity,
                           core::BudgetLedger* budget) {
  while (m_in_flight.size() < count) {
    std::optional<core::BudgetLedger::Ticket> ticket;
    if (budget != nullptr) {
      const core::TokenBound bound{
          core::prompt_token_bound(core::filler_prompt(m_next_index, m_config.filler_shape)),
          filler_max_tokens(m_config, m_next_index)};
      ticket = budget->try_start(bound);
      if (!ticket) return;
    }
    m_in_flight.emplace(transport.submit(filler_request(target, m_config, m_next_index++)), ticket);
    ++activity.filler_sent;
  }
}

bool FillerTraffic::take(const HttpTransport::Finished& finished, core::ProbeActivity& activity,
                         core::BudgetLedger* budget) {
  const auto found = m_in_flight.find(finished.id);
  if (found == m_in_flight.end()) return false;
  if (budget != nullptr && found->second) budget->settle(*found->second, std::nullopt);
  m_in_flight.erase(found);
  const HttpResponse& response = finished.response;
  if (response.failure != TransportFailure::none || response.http_status < 200 ||
      response.http_status >= 300)
    ++activity.filler_failed;
  return true;
}

} // namespace llmrepro::probes::detail
