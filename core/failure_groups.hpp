// Failed requests grouped by cause, for the summary's failure reasons: one line per cause, not
// one per request when the endpoint's message names request-specific numbers (a prompt's token
// count, an output position).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/request_record.hpp"

namespace llmrepro::core {

// One line saying why a request failed: "HTTP <status>: " (unless the error names it already)
// and the first line of the error, cut at 160 bytes.
std::string failure_reason(const RequestOutcome& outcome);

// The cause a reason groups under: the reason with every run of digits replaced by "N",
// except in its leading "HTTP <status>" and its trailing " after <n> attempt(s)", so that
// "HTTP 400: request (312 tokens) exceeds the available context size (256 tokens) after 1
// attempt" and its 290-token sibling are one cause while a 500 and a 503 stay apart.
std::string failure_cause(std::string_view reason);

class FailureGroups {
public:
  void add(const RequestOutcome& outcome);

  // (reason, count) per cause, most frequent first, then by cause. The reason is the cause's
  // one reason where all its failures read the same, else the cause itself (numbers as "N").
  std::vector<std::pair<std::string, int>> sorted() const;

private:
  struct Group {
    std::string first_reason;
    bool alike = true;
    int count = 0;
  };
  std::map<std::string, Group> m_groups;
};

} // namespace llmrepro::core
