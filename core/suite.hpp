// A suite of prompts: what `llmrepro audit` sends, parsed and validated before any request.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace llmrepro::core {

struct Message {
  std::string role;
  std::string content;
};

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
