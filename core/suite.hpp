// A suite of prompts: what `llmrepro audit` sends, parsed and validated before any request.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/tool_calls.hpp"

namespace llmrepro::core {

struct Message {
  std::string role; // system, user, assistant; "tool" for a tool's result in an agent chain
  std::string content;
  // An assistant turn of an agent chain: the tool calls the model made, each with its call id.
  std::vector<ToolCall> tool_calls;
  std::string tool_call_id; // a "tool" message: the id of the call it answers
  // A "tool" message: the name of the tool whose result it is (Gemini's functionResponse and
  // Ollama's tool turns name the tool rather than the call).
  std::string tool_name;
};

// One scripted tool result of a suite line's `tool_results`, the stub registry an agent chain
// answers its tool calls from: what tool `name` returns when called with `arguments`
// (canonical JSON, compared as such).
struct ToolResult {
  std::string name;
  std::string arguments = "null";
  std::string result; // the text the tool returns (a JSON value other than a string, as JSON)
};

// The most requests one run of an agent chain may send (`max_steps`), by default.
inline constexpr int k_default_max_steps = 8;

// A checker from the suite's `expect` field: judges an answer rather than comparing strings.
struct Expectation {
  enum class Kind { none, regex, contains, equals, json_path, choice, number };
  Kind kind = Kind::none;
  std::string value;      // pattern, substring, exact text, choice letter, or expected JSON value
  std::string path;       // json_path only: a `$.a.b[0]` path
  double number = 0.0;    // number only: the expected value
  double tolerance = 0.0; // number only: absolute tolerance
};

// How to parse an answer out of a completion for answer agreement (`extract`).
struct Extraction {
  enum class Kind { none, regex, json_path, choice, number, last_line };
  Kind kind = Kind::none;
  std::string pattern; // regex (first capture group, or the whole match) or json path
};

struct Prompt {
  std::string id;
  // Exactly one of `text` (completion-style) and `messages` (chat-style) is set.
  std::optional<std::string> text;
  std::vector<Message> messages;
  std::optional<int> max_tokens;
  std::vector<std::string> tags;
  Expectation expect;
  Extraction extract;
  // `response_format`, kept as the JSON text the suite gave, passed through untouched.
  std::string response_format_json;
  // `tools`: the function tools every request of this prompt offers, in OpenAI's shape
  // ([{"type": "function", "function": {"name", "description", "parameters"}}]), as canonical
  // JSON text; each dialect that takes tools maps them to its own. Empty: none.
  std::string tools_json;
  // `tool_results`: where given, each run is an agent chain. A completion that calls tools is
  // answered from these (a call without a scripted result gets an error result) and the
  // conversation sent again, until the model answers without a tool call or `max_steps`
  // requests were sent; the run's completion is the last answer with every step's calls.
  std::vector<ToolResult> tool_results;
  int max_steps = k_default_max_steps;

  bool is_chain() const { return !tool_results.empty(); }
  int source_line = 0;

  bool is_chat() const { return !text.has_value(); }
};

struct Suite {
  std::string source; // file path, for messages and reports
  std::vector<Prompt> prompts;
};

const char* to_string(Expectation::Kind kind);
const char* to_string(Extraction::Kind kind);

} // namespace llmrepro::core
