#include <doctest/doctest.h>

#include <string>

#include "core/result.hpp"

namespace {

using llmrepro::core::Error;
using llmrepro::core::ErrorCode;
using llmrepro::core::make_error;
using llmrepro::core::Result;

Result<int> number_or_error(bool ok, int value) {
  if (!ok) return make_error(ErrorCode::input, "no number");
  return value;
}

Result<void> nothing_or_error(bool ok) {
  if (!ok) return make_error(ErrorCode::endpoint, "refused");
  return {};
}

// Adds two numbers, each of which may fail; counts how far it got.
Result<int> sum_of(bool first_ok, bool second_ok, int& steps) {
  int a = 0;
  int b = 0;
  LLMREPRO_TRY_ASSIGN(a, number_or_error(first_ok, 2));
  ++steps;
  LLMREPRO_TRY_ASSIGN(b, number_or_error(second_ok, 3));
  ++steps;
  return a + b;
}

Result<std::string> checked(bool ok, int& steps) {
  LLMREPRO_TRY(nothing_or_error(ok));
  ++steps;
  LLMREPRO_TRY(number_or_error(ok, 7)); // a Result<T> whose value is not needed
  ++steps;
  return std::string("checked");
}

} // namespace

TEST_CASE("LLMREPRO_TRY_ASSIGN") {
  int steps = 0;
  SUBCASE("assigns each value and goes on") {
    auto sum = sum_of(true, true, steps);
    REQUIRE(sum);
    CHECK(*sum == 5);
    CHECK(steps == 2);
  }
  SUBCASE("returns the first error, unchanged, and stops there") {
    auto sum = sum_of(true, false, steps);
    REQUIRE_FALSE(sum);
    CHECK(sum.error().code == ErrorCode::input);
    CHECK(sum.error().message == "no number");
    CHECK(steps == 1);
  }
}

TEST_CASE("LLMREPRO_TRY") {
  int steps = 0;
  SUBCASE("goes on past successes") {
    auto result = checked(true, steps);
    REQUIRE(result);
    CHECK(*result == "checked");
    CHECK(steps == 2);
  }
  SUBCASE("returns a Result<void>'s error into a Result<T> function") {
    auto result = checked(false, steps);
    REQUIRE_FALSE(result);
    CHECK(result.error().code == ErrorCode::endpoint);
    CHECK(result.error().message == "refused");
    CHECK(steps == 0);
  }
}
