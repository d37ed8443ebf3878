#include <doctest/doctest.h>

#include <string>

#include "probes/detail/unreachable_rule.hpp"

using llmrepro::probes::detail::UnreachableRule;

TEST_CASE("UnreachableRule") {
  UnreachableRule rule;
  const std::string refused = "connection refused";

  SUBCASE("eight refused attempts of a wide wave: nothing is listening") {
    rule.begin_wave(20, 4);
    for (int attempt = 1; attempt < 8; ++attempt)
      CHECK_FALSE(rule.attempt_ended(true, refused, false));
    CHECK(rule.attempt_ended(true, refused, false));
    CHECK(rule.unreachable());
    CHECK(rule.error() == refused);
  }
  SUBCASE("a small wave is watched for every attempt it may make") {
    // One request with one retry: two attempts in all.
    rule.begin_wave(1, 2);
    CHECK_FALSE(rule.attempt_ended(true, refused, false));
    CHECK(rule.attempt_ended(true, refused, false));
  }
  SUBCASE("a request that spent its attempts decides at once") {
    rule.begin_wave(20, 4);
    CHECK_FALSE(rule.attempt_ended(true, refused, false));
    CHECK(rule.attempt_ended(true, "TLS failure", true));
    // The first failure names the cause.
    CHECK(rule.error() == refused);
  }
  SUBCASE("any answer, even an error status, turns the rule off for the run") {
    rule.begin_wave(20, 4);
    CHECK_FALSE(rule.attempt_ended(true, refused, false));
    CHECK_FALSE(rule.attempt_ended(false, "HTTP 500: oops", false));
    for (int attempt = 0; attempt < 20; ++attempt)
      CHECK_FALSE(rule.attempt_ended(true, refused, true));
    CHECK_FALSE(rule.unreachable());
  }
  SUBCASE("only the first wave with work is watched") {
    rule.begin_wave(0, 4); // nothing to run: not watched, and the next wave still is
    rule.begin_wave(1, 1);
    CHECK(rule.attempt_ended(true, refused, true));
    UnreachableRule later;
    later.begin_wave(3, 1);
    for (int attempt = 0; attempt < 3; ++attempt) later.attempt_ended(false, "", true);
    later.begin_wave(5, 4);
    for (int attempt = 0; attempt < 10; ++attempt)
      CHECK_FALSE(later.attempt_ended(true, refused, true));
    CHECK(later.error().empty());
  }
  SUBCASE("a wave with work that failed once, then reached, is not unreachable") {
    rule.begin_wave(2, 1);
    CHECK_FALSE(rule.attempt_ended(false, "", false));
    CHECK_FALSE(rule.attempt_ended(true, refused, true));
    CHECK_FALSE(rule.unreachable());
  }
}
