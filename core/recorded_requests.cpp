#include "core/recorded_requests.hpp"

namespace llmrepro::core {

RecordedRequests::RecordedRequests(const std::vector<PlannedRequest>& requests) {
  for (const auto& request : requests) insert(request);
}

void RecordedRequests::insert(const PlannedRequest& request) { m_keys.insert(key_of(request)); }

bool RecordedRequests::contains(const PlannedRequest& request) const {
  return m_keys.count(key_of(request)) > 0;
}

RecordedRequests::Key RecordedRequests::key_of(const PlannedRequest& request) {
  return {request.endpoint_index, request.prompt_index, request.concurrency,
          static_cast<int>(request.probe), request.repeat};
}

} // namespace llmrepro::core
