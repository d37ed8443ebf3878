#include <doctest/doctest.h>

#include "core/recorded_requests.hpp"

using namespace llmrepro::core;

TEST_CASE("RecordedRequests") {
  const PlannedRequest recorded{.endpoint_index = 1,
                                .prompt_index = 2,
                                .concurrency = 8,
                                .probe = ProbeKind::mixed,
                                .repeat = 3};
  const RecordedRequests set({recorded});

  SUBCASE("holds the requests it was given") {
    CHECK(set.contains(recorded));
    CHECK(set.size() == 1);
  }
  SUBCASE("a request differing in any part of its identity is not held") {
    PlannedRequest other = recorded;
    other.endpoint_index = 0;
    CHECK_FALSE(set.contains(other));
    other = recorded;
    other.prompt_index = 3;
    CHECK_FALSE(set.contains(other));
    other = recorded;
    other.concurrency = 1;
    CHECK_FALSE(set.contains(other));
    other = recorded;
    other.probe = ProbeKind::sweep;
    CHECK_FALSE(set.contains(other));
    other = recorded;
    other.repeat = 0;
    CHECK_FALSE(set.contains(other));
  }
  SUBCASE("a duplicate counts once; insert adds") {
    RecordedRequests grown({recorded, recorded});
    CHECK(grown.size() == 1);
    PlannedRequest next = recorded;
    next.repeat = 4;
    CHECK_FALSE(grown.contains(next));
    grown.insert(next);
    CHECK(grown.contains(next));
    CHECK(grown.size() == 2);
  }
  SUBCASE("the empty set holds nothing") {
    CHECK_FALSE(RecordedRequests{}.contains(recorded));
    CHECK(RecordedRequests{}.size() == 0);
  }
}
