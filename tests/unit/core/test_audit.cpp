#include <doctest/doctest.h>

#include "core/audit.hpp"

using namespace llmrepro::core;

TEST_CASE("judging_differs") {
  const AuditConfig stored;
  SUBCASE("the same judging settings do not differ") {
    CHECK_FALSE(judging_differs(stored, stored));
  }
  SUBCASE("plan-defining values do not count") {
    AuditConfig other = stored;
    other.plan.runs = 9;
    other.plan.levels = {4};
    other.plan.api = "tgi";
    other.requests.timeout_s = 1;
    CHECK_FALSE(judging_differs(stored, other));
  }
  SUBCASE("a gate differs") {
    AuditConfig other = stored;
    other.gates.fail_on.unstable = true;
    CHECK(judging_differs(stored, other));
    other = stored;
    other.gates.max_unique = 2;
    CHECK(judging_differs(stored, other));
    other = stored;
    other.gates.max_failed_rate = 0.5;
    CHECK(judging_differs(other, stored));
  }
  SUBCASE("a fragility setting differs") {
    AuditConfig other = stored;
    other.analysis.fragile_gap = 0.2;
    CHECK(judging_differs(stored, other));
    other = stored;
    other.analysis.fragile_window = 10;
    CHECK(judging_differs(stored, other));
  }
}

TEST_CASE("audit_complete") {
  SUBCASE("every planned request recorded") { CHECK(audit_complete(12, 12, false)); }
  SUBCASE("more recorded than planned (an earlier run's failures count too)") {
    CHECK(audit_complete(13, 12, false));
  }
  SUBCASE("a request missing") { CHECK_FALSE(audit_complete(11, 12, false)); }
  SUBCASE("an interrupted run is partial even with every request recorded") {
    CHECK_FALSE(audit_complete(12, 12, true));
  }
  SUBCASE("an empty plan is complete at once") { CHECK(audit_complete(0, 0, false)); }
}

TEST_CASE("audit_status") {
  CHECK(std::string(audit_status(true)) == "complete");
  CHECK(std::string(audit_status(false)) == "partial");
}

TEST_CASE("header_name") {
  CHECK(header_name("X-Org: acme") == "X-Org");
  CHECK(header_name("  X-Team\t:value:with:colons") == "X-Team");
  // A line without a colon names nothing (it is stored nowhere: it may be a bare secret).
  CHECK(header_name("sk-secret") == "");
}
