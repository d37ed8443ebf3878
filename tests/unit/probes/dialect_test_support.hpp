// Shared by the dialect tests: the reference payloads and the stream bodies built from them.
#pragma once

#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "core/completion.hpp"
#include "core/result.hpp"
#include "core/suite.hpp"
#include "probes/dialect.hpp"

namespace llmrepro::probes::test {

// The text of tests/data/formats/<name> (the example payloads of each dialect, kept in the
// repository so that a clean clone tests alone); throws when it is missing so the case fails.
inline std::string read_format(const std::string& name) {
  std::string path = std::string(LLMREPRO_FORMATS_DIR) + "/" + name;
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error("missing reference payload " + path);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

// An agent chain's conversation after one step: the user's prompt, the model's call
// search({"q":"Rome"}) with id `call_id`, and the tool's answer "Colosseum" to it.
inline core::Prompt chain_after_one_step(const std::string& call_id, std::string tools_json) {
  core::Prompt prompt;
  prompt.messages.push_back({"user", "Plan.", {}, {}, {}});
  prompt.messages.push_back(
      {"assistant", "", {{"search", R"({"q":"Rome"})", call_id, {}}}, {}, {}});
  prompt.messages.push_back({"tool", "Colosseum", {}, call_id, "search"});
  prompt.tools_json = std::move(tools_json);
  return prompt;
}

// CHECKs a parsed tool call: its name, canonical arguments and id.
inline void check_tool_call(const core::ToolCall& call, const std::string& name,
                            const std::string& arguments, const std::string& id) {
  CHECK(call.name == name);
  CHECK(call.arguments == arguments);
  CHECK(call.id == id);
}

// The completion `dialect` parses from `body`; the test case stops (REQUIRE), showing the
// parser's message, when it does not parse.
inline core::Completion parse_ok(Dialect dialect, const std::string& body, bool stream = false) {
  auto result = parse_response(dialect, body, stream);
  INFO((result ? std::string() : result.error().message));
  REQUIRE(result.has_value());
  return *result;
}

// The message of the error `dialect` gives for `body`, which must be ErrorCode::endpoint; the
// test case stops (REQUIRE) when the body parses.
inline std::string parse_error(Dialect dialect, const std::string& body, bool stream = false) {
  auto result = parse_response(dialect, body, stream);
  REQUIRE_FALSE(result.has_value());
  CHECK(result.error().code == core::ErrorCode::endpoint);
  return result.error().message;
}

// An SSE body with one `data:` event per JSON value, in order, then `data: [DONE]` if `done`.
inline std::string sse_body(const nlohmann::ordered_json& events, bool done = true) {
  std::string body;
  for (const auto& event : events) body += "data: " + event.dump() + "\n\n";
  if (done) body += "data: [DONE]\n\n";
  return body;
}

// `text` with every JSON string "@<literal>@" written as the bare <literal>: the values
// nlohmann_json will not write (NaN, Infinity, -Infinity, 1e400), put in a payload as strings.
inline std::string with_literals(std::string text) {
  std::size_t at = 0;
  while ((at = text.find("\"@", at)) != std::string::npos) {
    std::size_t end = text.find("@\"", at + 2);
    if (end == std::string::npos) break;
    text = text.substr(0, at) + text.substr(at + 2, end - at - 2) + text.substr(end + 2);
  }
  return text;
}

// Equal log probabilities, an unknown one (NaN) equal to another unknown one.
inline bool same_logprob(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// True when both completions carry the same text, tokens, logprobs and candidates.
inline bool same_tokens(const core::Completion& a, const core::Completion& b) {
  if (a.text != b.text || a.tokens.size() != b.tokens.size()) return false;
  for (std::size_t i = 0; i < a.tokens.size(); ++i) {
    const auto& x = a.tokens[i];
    const auto& y = b.tokens[i];
    if (x.token != y.token || !same_logprob(x.logprob, y.logprob) || x.top.size() != y.top.size())
      return false;
    for (std::size_t j = 0; j < x.top.size(); ++j)
      if (x.top[j].token != y.top[j].token || !same_logprob(x.top[j].logprob, y.top[j].logprob))
        return false;
  }
  return true;
}

// NumberAnomalies{nan, infinity, negative_infinity, overflow, null}.
inline core::NumberAnomalies numbers(int nan, int infinity, int negative_infinity, int overflow,
                                     int null) {
  core::NumberAnomalies counts;
  counts.nan = nan;
  counts.infinity = infinity;
  counts.negative_infinity = negative_infinity;
  counts.overflow = overflow;
  counts.null = null;
  return counts;
}

} // namespace llmrepro::probes::test
