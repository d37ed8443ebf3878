// The requests an audit already holds, by their identity in the plan: what --resume skips.
#pragma once

#include <cstddef>
#include <set>
#include <tuple>
#include <vector>

#include "core/plan.hpp"

namespace llmrepro::core {

// A set of planned requests keyed by their identity (endpoint, prompt, concurrency, probe kind,
// repeat), which is unique within an audit.
class RecordedRequests {
public:
  RecordedRequests() = default;
  // The set holding each of `requests` (duplicates count once).
  explicit RecordedRequests(const std::vector<PlannedRequest>& requests);

  void insert(const PlannedRequest& request);
  // Whether a request with the identity of `request` is in the set.
  bool contains(const PlannedRequest& request) const;
  std::size_t size() const { return m_keys.size(); }

private:
  using Key = std::tuple<int, int, int, int, int>;
  static Key key_of(const PlannedRequest& request);

  std::set<Key> m_keys;
};

} // namespace llmrepro::core
