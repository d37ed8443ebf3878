// Private to probes: typed, path-aware access to endpoint JSON for the dialect adapters.
// Every getter names the field it wanted ("missing field choices[0].message.content",
// "field choices[0].logprobs.content[3].logprob must be a number"). A failed getter throws
// ParseFailure, which unwinds only as far as parse_response() in dialect.cpp: that one catch
// turns it into a core::Error, so the adapters read like the schemas they map and nothing
// escapes the probes module. Responses are read from a JsonDocument (json_document.hpp); a
// view's path is derived from the document only when a message needs it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "probes/detail/json_document.hpp"

namespace llmrepro::probes::detail {

// Insertion-ordered, for the request bodies the adapters build and the cold error paths.
using Json = nlohmann::ordered_json;

// A field was missing, wrongly typed or inconsistent; the message names it.
class ParseFailure : public std::runtime_error {
public:
  explicit ParseFailure(const std::string& message) : std::runtime_error(message) {}
};

[[noreturn]] void fail(const std::string& message);

// The endpoint sent an error in place of a completion (an error envelope in a 2xx body, a
// `data: {"error": ...}` event mid-stream). Not a ParseFailure, so that with_prefix() passes it
// through unprefixed: one cause reads the same whichever event carried it. The message is the
// endpoint's own reason (describe_error_body).
class EndpointErrorEvent : public std::runtime_error {
public:
  explicit EndpointErrorEvent(const std::string& reason) : std::runtime_error(reason) {}
};

// Deeper JSON than this is rejected: no response shape needs more than ten.
inline constexpr std::size_t k_max_json_depth = 64;

// Parses one JSON document into a DOM; throws ParseFailure("<what>malformed JSON at byte N")
// or ("<what>JSON nested deeper than 64 levels"), `what` prefixing the message ("stream event
// 3: "). For cold paths (error bodies); responses go through parse_document().
Json parse_json(std::string_view text, const std::string& what = "");

// Parses one response into a JsonDocument, accepting and rejecting exactly what parse_json()
// does, with the same messages (input it rejects is handed to parse_json() for the verdict),
// except that it also accepts the number values endpoints write beyond strict JSON (NaN,
// Infinity, -Infinity, literals past a double's range; see JsonNumber), which parse_json()
// rejects: in rejected input they are read as 0 for the verdict, so the message names the fault
// they did not cause. `text` must outlive the document.
JsonDocument parse_document(std::string_view text, const std::string& what = "");
// The same, with `reader` taking the member values it wants off the tape (JsonValueReader). In
// text the tape refuses, nothing the reader took counts: the document parse_document() then
// returns, if any, has no value taken.
JsonDocument parse_document(std::string_view text, JsonValueReader* reader,
                            const std::string& what = "");

// The lone surrogate escapes the documents parse_document() returned on this thread decoded as
// U+FFFD (JsonDocument::lone_surrogates()), summed; parse_response() zeroes it before a
// response and reads it after.
std::size_t& lone_surrogates_on_thread();

// A JSON value of a document. Holds a pointer: the document must outlive the view.
class JsonView {
public:
  // The root of `document`, at path "" ("body" in messages).
  explicit JsonView(const JsonDocument& document) : m_document(&document) {}

  // The path that reached this value ("choices[0].logprobs"), built on each call.
  std::string path() const;
  bool is_null() const { return node().type == JsonType::null; }
  bool is_object() const { return node().type == JsonType::object; }
  bool is_array() const { return node().type == JsonType::array; }
  bool is_string() const { return node().type == JsonType::string; }
  bool is_number() const { return node().type == JsonType::number; } // NaN and the like too
  // Read by the parse's JsonValueReader instead of the tape: what it holds is the reader's.
  bool taken() const { return node().taken; }

  // Member `key` of this object (may be null); throws when this is not an object or the key
  // is absent.
  JsonView at(std::string_view key) const;
  // Member `key`, or nullopt when absent or null; throws when this is not an object.
  std::optional<JsonView> find(std::string_view key) const;
  // True when this is an object holding `key` (null included).
  bool contains(std::string_view key) const;
  // Element `index` of this array; throws when this is not an array or the index is past it.
  JsonView at(std::size_t index) const;
  // Number of elements; throws when this is not an array.
  std::size_t size() const;

  std::string string() const; // throws unless a string
  double number() const;      // throws unless a finite number (integers accepted)
  // What a number's literal stands for; throws unless a number (NaN and the like included).
  JsonNumber number_kind() const;
  long integer() const; // throws unless an integer that fits in a long
  bool boolean() const; // throws unless true or false

  // Member `key` as a string, "" when absent or null; throws when it has another type.
  std::string optional_string(std::string_view key) const;

  // Number of members, in document order; throws when this is not an object.
  std::size_t member_count() const;
  // Name of member `index` (< member_count()).
  std::string_view member_key(std::size_t index) const;
  // Value of member `index` (< member_count()), named `<path>["<key>"]` in messages: the
  // spelling for maps keyed by token text.
  JsonView member(std::size_t index) const;

  // "field <path>" for messages; "body" at the root.
  std::string describe() const;

  // This value written back as compact JSON text: numbers as their literals, strings escaped
  // (core::append_json_string), members in document order. What core::canonical_json reads.
  std::string json_text() const;

private:
  JsonView(const JsonDocument* document, std::uint32_t node, bool bracketed)
      : m_document(document), m_node(node), m_bracketed(bracketed) {}

  const JsonNode& node() const { return m_document->node(m_node); }
  // Index of member `key`, or JsonNode::k_no_parent when absent; this must be an object.
  std::uint32_t member_node(std::string_view key) const;

  const JsonDocument* m_document;
  std::uint32_t m_node = 0;
  bool m_bracketed = false; // the last path step is ["key"] rather than .key
};

} // namespace llmrepro::probes::detail
