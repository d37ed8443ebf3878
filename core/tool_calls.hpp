// An agent's tool calls as the canonical completion carries them: each call's name and arguments
// in canonical JSON, the sequence's one text form, and where two sequences first differ.
// docs/design.md "Tool calls".
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json_value.hpp"
#include "core/result.hpp"

namespace llmrepro::core {

struct RequestRecord;

// One call the model asked for: the tool's name and its arguments as canonical JSON
// (canonical_json; "null" where the call carried none).
struct ToolCall {
  std::string name;
  std::string arguments = "null";
  // The id the endpoint gave the call (OpenAI's `tool_calls[].id`, Anthropic's `tool_use.id`),
  // which an agent chain's tool result names; never compared, never stored.
  std::string id;
  // What the endpoint attached to the call for the chain to send back with it unchanged
  // (Gemini's `thoughtSignature` beside a `functionCall` part); likewise never compared, never
  // stored.
  std::string signature;
  friend bool operator==(const ToolCall& a, const ToolCall& b) {
    return a.name == b.name && a.arguments == b.arguments;
  }
};

// `value` written canonically: object members sorted by key (bytewise), no whitespace outside
// strings, strings with only `"`, `\` and control characters escaped (\b \f \n \r \t, else
// \u00XX), numbers exactly as written in the parsed text. An object with a key given twice is an
// input error naming the key, since which value counts is ambiguous.
Result<std::string> canonical_json(const JsonValue& value);
// The same for JSON text; a malformed document is an input error naming its offset.
Result<std::string> canonical_json(std::string_view text);

// The sequence as one canonical JSON array, [{"arguments":A,"name":N},...] ("[]" when empty):
// what the database stores and what --compare-on tool_calls compares.
std::string tool_calls_json(const std::vector<ToolCall>& calls);
// Reads tool_calls_json's form back: an array of objects, each with a string `name` and any
// `arguments` (canonicalised again). An input error naming what is wrong otherwise.
Result<std::vector<ToolCall>> parse_tool_calls_json(std::string_view text);

// Where two tool-call sequences first part: `step` is the 0-based index of the first call that
// differs, `field` what differs there: "name"; "arguments.KEY" for the first key (in sorted order
// over both calls' keys) whose value differs or that only one call has, where both arguments
// are objects; "arguments" where they are not both objects; "end" where one sequence stops
// and the other goes on.
struct ToolCallDifference {
  int step = 0;
  std::string field;
  friend bool operator==(const ToolCallDifference&, const ToolCallDifference&) = default;
};

// Empty when the sequences are equal.
std::optional<ToolCallDifference> first_tool_call_difference(const std::vector<ToolCall>& a,
                                                             const std::vector<ToolCall>& b);

// The earliest difference from the reference sequence (the one whose tool_calls_json is
// `reference_json`) over the successful records' sequences: the smallest step, and at equal
// steps the first such record in the given order. Empty when no successful record differs or
// none holds the reference.
std::optional<ToolCallDifference>
first_tool_call_divergence(const std::string& reference_json,
                           const std::vector<const RequestRecord*>& records);

} // namespace llmrepro::core
