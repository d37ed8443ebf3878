#include "probes/detail/filler_traffic.hpp"

#include "core/probe_text.hpp"
#include "probes/detail/request_builder.hpp"

namespace llmrepro::probes::detail {

HttpRequest filler_request(const EndpointTarget& target, const SchedulerConfig& config,
                           std::uint64_t index) {
  GenerationParams params = params_for(target, config);
  params.max_tokens = core::filler_max_tokens(index);
  params.stream = false;
  return generation_request(target, config, core::filler_prompt(index, config.filler_shape),
                            params);
}

void FillerTraffic::top_up(HttpTransport& transport, const EndpointTarget& target,
                           std::size_t count, core::ProbeActivity& activity) {
  while (m_in_flight.size() < count) {
    m_in_flight.insert(transport.submit(filler_request(target, m_config, m_next_index++)));
    ++activity.filler_sent;
  }
}

bool FillerTraffic::take(const HttpTransport::Finished& finished, core::ProbeActivity& activity) {
  if (m_in_flight.erase(finished.id) == 0) return false;
  const HttpResponse& response = finished.response;
  if (response.failure != TransportFailure::none || response.http_status < 200 ||
      response.http_status >= 300)
    ++activity.filler_failed;
  return true;
}

} // namespace llmrepro::probes::detail
