#include <doctest/doctest.h>

#include <limits>
#include <string>

#include "engine/api_request.hpp"

using namespace llmrepro::engine;

namespace {

// The ApiError a body raises: status, param and message.
struct Raised {
  int status = 0;
  std::string param;
  std::string message;
};

Raised raised(const std::string& body, ApiKind kind) {
  try {
    (void)parse_api_request(body, kind);
  } catch (const ApiError& error) {
    return {error.status(), error.param(), error.what()};
  }
  FAIL("no ApiError for " << body);
  return {};
}

std::string chat(const std::string& fields) {
  return R"({"messages": [{"role": "user", "content": "the cat"}], )" + fields + "}";
}

std::string completion(const std::string& fields) {
  return R"({"prompt": "the cat", )" + fields + "}";
}

void check_raised(const std::string& body, ApiKind kind, const std::string& param,
                  const std::string& message) {
  const Raised error = raised(body, kind);
  CHECK(error.status == 400);
  CHECK(error.param == param);
  CHECK(error.message == message);
}

} // namespace

TEST_CASE("parse_api_request: numbers past a double are a 400 naming the field") {
  check_raised(chat(R"("temperature": 1e400)"), ApiKind::chat_completions, "temperature",
               "'temperature' is out of range: 1e400 overflows a 64-bit number");
  check_raised(chat(R"("top_p": -1e400)"), ApiKind::chat_completions, "top_p",
               "'top_p' is out of range: -1e400 overflows a 64-bit number");
  check_raised(completion(R"("max_tokens": 1e400)"), ApiKind::completions, "max_tokens",
               "'max_tokens' is out of range: 1e400 overflows a 64-bit number");
  // Nested: the path of keys down to the number.
  check_raised(chat(R"("stream": true, "stream_options": {"include_usage": 2e999})"),
               ApiKind::chat_completions, "stream_options.include_usage",
               "'stream_options.include_usage' is out of range: 2e999 overflows a 64-bit number");
}

TEST_CASE("parse_api_request: integers out of range are never wrapped or clamped") {
  check_raised(chat(R"("max_tokens": 18446744073709551615)"), ApiKind::chat_completions,
               "max_tokens", "'max_tokens' must be at most 1000000, got 18446744073709551615");
  check_raised(chat(R"("max_tokens": 1000001)"), ApiKind::chat_completions, "max_tokens",
               "'max_tokens' must be at most 1000000, got 1000001");
  check_raised(chat(R"("max_completion_tokens": 100000000000000000000)"), ApiKind::chat_completions,
               "max_completion_tokens",
               "'max_completion_tokens' must be at most 1000000, got 1e+20");
  check_raised(chat(R"("max_tokens": -9223372036854775808)"), ApiKind::chat_completions,
               "max_tokens", "'max_tokens' must be at least 1");
  check_raised(chat(R"("max_tokens": -100000000000000000000)"), ApiKind::chat_completions,
               "max_tokens", "'max_tokens' must be at least 1");
  check_raised(chat(R"("max_tokens": 2.5)"), ApiKind::chat_completions, "max_tokens",
               "'max_tokens' must be an integer");
  check_raised(chat(R"("logprobs": true, "top_logprobs": 18446744073709551615)"),
               ApiKind::chat_completions, "top_logprobs",
               "'top_logprobs' must be between 0 and 20, got 18446744073709551615");
  check_raised(chat(R"("logprobs": true, "top_logprobs": -1)"), ApiKind::chat_completions,
               "top_logprobs", "'top_logprobs' must be between 0 and 20, got -1");
  check_raised(completion(R"("logprobs": 18446744073709551615)"), ApiKind::completions, "logprobs",
               "'logprobs' must be between 0 and 20, got 18446744073709551615");
  check_raised(chat(R"("seed": 18446744073709551615)"), ApiKind::chat_completions, "seed",
               "'seed' must be between -9223372036854775808 and 9223372036854775807, got "
               "18446744073709551615");
  check_raised(chat(R"("seed": -1e30)"), ApiKind::chat_completions, "seed",
               "'seed' must be between -9223372036854775808 and 9223372036854775807, got "
               "-1e+30");
  check_raised(chat(R"("n": 18446744073709551615)"), ApiKind::chat_completions, "n",
               "'n' must be 1");
  check_raised(chat(R"("n": 0)"), ApiKind::chat_completions, "n", "'n' must be 1");
}

TEST_CASE("parse_api_request: the limits themselves are accepted") {
  const ApiRequest most = parse_api_request(
      chat(R"("max_tokens": 1000000, "logprobs": true, "top_logprobs": 20, "n": 1, )"
           R"("seed": 9223372036854775807)"),
      ApiKind::chat_completions);
  CHECK(most.max_tokens == 1000000);
  CHECK(most.top_logprobs == 20);
  CHECK(most.seed == 9223372036854775807LL);
  const ApiRequest least = parse_api_request(
      completion(R"("max_tokens": 1, "logprobs": 0, "seed": -9223372036854775808)"),
      ApiKind::completions);
  CHECK(least.max_tokens == 1);
  CHECK(least.top_logprobs == 0);
  CHECK(least.seed == std::numeric_limits<long long>::min());
}

TEST_CASE("parse_api_request: a temperature from 0 to 2 samples, with the seed") {
  const ApiRequest greedy =
      parse_api_request(chat(R"("temperature": 0)"), ApiKind::chat_completions);
  CHECK(greedy.temperature == 0.0);
  const ApiRequest sampled = parse_api_request(
      completion(R"("temperature": 1.0, "top_p": 1, "seed": 12)"), ApiKind::completions);
  CHECK(sampled.temperature == 1.0);
  REQUIRE(sampled.seed);
  CHECK(*sampled.seed == 12);
  CHECK(parse_api_request(chat(R"("temperature": 2)"), ApiKind::chat_completions).temperature ==
        2.0);
  check_raised(chat(R"("temperature": 2.5)"), ApiKind::chat_completions, "temperature",
               "'temperature' must be between 0 and 2");
  check_raised(completion(R"("temperature": -0.5)"), ApiKind::completions, "temperature",
               "'temperature' must be between 0 and 2");
  check_raised(chat(R"("temperature": 1, "top_p": 0.9)"), ApiKind::chat_completions, "top_p",
               "'top_p' must be 1: this engine samples from the whole distribution");
}
