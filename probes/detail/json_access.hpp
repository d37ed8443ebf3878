// Private to probes: typed, path-aware access to endpoint JSON for the dialect adapters.
// Every getter names the field it wanted ("missing field choices[0].message.content",
// "field choices[0].logprobs.content[3].logprob must be a number"). A failed getter throws
// ParseFailure, which unwinds only as far as parse_response() in dialect.cpp: that one catch
// turns it into a core::Error, so the adapters read like the schemas they map and nothing
// escapes the probes module.
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace llmrepro::probes::detail {

// Insertion-ordered: the legacy completions `top_logprobs` maps keep the endpoint's order.
using Json = nlohmann::ordered_json;

// A field was missing, wrongly typed or inconsistent; the message names it.
class ParseFailure : public std::runtime_error {
public:
  explicit ParseFailure(const std::string &message) : std::runtime_error(message) {}
};

[[noreturn]] void fail(const std::string &message);

// Deeper JSON than this is rejected before parsing: no response shape needs more than ten.
inline constexpr std::size_t k_max_json_depth = 64;

// Parses one JSON document; throws ParseFailure("<what>malformed JSON at byte N") or
// ("<what>JSON nested deeper than 64 levels"), `what` prefixing the message ("stream event 3: ").
Json parse_json(std::string_view text, const std::string &what = "");

// A JSON value with the path that reached it, for error messages. Holds a reference: the
// document must outlive the view.
class JsonView {
public:
  JsonView(const Json &json, std::string path) : m_json(&json), m_path(std::move(path)) {}

  const Json &json() const { return *m_json; }
  const std::string &path() const { return m_path; }
  bool is_null() const { return m_json->is_null(); }
  bool is_object() const { return m_json->is_object(); }
  bool is_array() const { return m_json->is_array(); }

  // Member `key` of this object (may be null); throws when this is not an object or the key
  // is absent.
  JsonView at(const std::string &key) const;
  // Member `key`, or nullopt when absent or null; throws when this is not an object.
  std::optional<JsonView> find(const std::string &key) const;
  // True when this is an object holding `key` (null included).
  bool contains(const std::string &key) const;
  // Element `index` of this array; throws when this is not an array or the index is past it.
  JsonView at(std::size_t index) const;
  // Number of elements; throws when this is not an array.
  std::size_t size() const;

  std::string string() const; // throws unless a string
  double number() const;      // throws unless a number (integers accepted)
  long integer() const;       // throws unless an integer that fits in a long
  bool boolean() const;       // throws unless true or false

  // Member `key` as a string, "" when absent or null; throws when it has another type.
  std::string optional_string(const std::string &key) const;

  // "field <path>" for messages; "body" at the root.
  std::string describe() const;

private:
  const Json *m_json;
  std::string m_path;
};

} // namespace llmrepro::probes::detail
