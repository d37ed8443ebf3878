#include <doctest/doctest.h>

#include "core/failure_groups.hpp"

using llmrepro::core::failure_cause;
using llmrepro::core::FailureGroups;
using llmrepro::core::RequestOutcome;

namespace {

RequestOutcome failed(int status, std::string error) {
  RequestOutcome outcome;
  outcome.http_status = status;
  outcome.error = std::move(error);
  return outcome;
}

} // namespace

TEST_CASE("failure_cause") {
  CHECK(failure_cause("HTTP 400: request (312 tokens) exceeds the available context size (256 "
                      "tokens) after 1 attempt") ==
        "HTTP 400: request (N tokens) exceeds the available context size (N tokens) after 1 "
        "attempt");
  CHECK(failure_cause("HTTP 503: busy after 4 attempts") == "HTTP 503: busy after 4 attempts");
  CHECK(failure_cause("timed out after 12000 ms after 2 attempts") ==
        "timed out after N ms after 2 attempts");
  CHECK(failure_cause("no digits") == "no digits");
}

TEST_CASE("FailureGroups") {
  SUBCASE("one cause whatever the request-specific numbers, shown with N") {
    FailureGroups groups;
    groups.add(failed(400, "HTTP 400: request (312 tokens) exceeds the available context size "
                           "(256 tokens) after 1 attempt"));
    groups.add(failed(400, "HTTP 400: request (290 tokens) exceeds the available context size "
                           "(256 tokens) after 1 attempt"));
    groups.add(failed(500, "HTTP 500: boom after 4 attempts"));
    const auto sorted = groups.sorted();
    REQUIRE(sorted.size() == 2);
    CHECK(sorted[0].first == "HTTP 400: request (N tokens) exceeds the available context size "
                             "(N tokens) after 1 attempt");
    CHECK(sorted[0].second == 2);
    CHECK(sorted[1] == std::pair<std::string, int>{"HTTP 500: boom after 4 attempts", 1});
  }
  SUBCASE("failures that read the same keep their own words; statuses stay apart") {
    FailureGroups groups;
    for (int i = 0; i < 3; ++i)
      groups.add(failed(0, "connect to 127.0.0.1:9 refused after 1 attempt"));
    groups.add(failed(503, "overloaded after 4 attempts"));
    groups.add(failed(500, "overloaded after 4 attempts"));
    const auto sorted = groups.sorted();
    REQUIRE(sorted.size() == 3);
    CHECK(sorted[0] ==
          std::pair<std::string, int>{"connect to 127.0.0.1:9 refused after 1 attempt", 3});
    CHECK(sorted[1].first == "HTTP 500: overloaded after 4 attempts");
    CHECK(sorted[2].first == "HTTP 503: overloaded after 4 attempts");
  }
}
