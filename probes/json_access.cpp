#include "probes/detail/json_access.hpp"

#include "core/json_value.hpp"
#include "probes/detail/json_scanner.hpp"

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <limits>

namespace llmrepro::probes::detail {

namespace {

// Nesting depth of `text` counted over brackets outside strings, stopping once past `limit`.
// Linear, and run before the parser so hostile input cannot make it recurse deeply.
bool deeper_than(std::string_view text, std::size_t limit) {
  std::size_t depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"')
      in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if ((c == ']' || c == '}') && depth > 0)
      --depth;
  }
  return false;
}

// The path of `index` in `document`, appended to `out`: ".key" steps (no dot first) and "[i]".
void append_path(const JsonDocument& document, std::uint32_t index, std::string& out) {
  const JsonNode& node = document.node(index);
  if (node.parent == JsonNode::k_no_parent) return;
  append_path(document, node.parent, out);
  if (document.node(node.parent).type == JsonType::array) {
    out += '[';
    out += std::to_string(node.index);
    out += ']';
  } else {
    if (!out.empty()) out += '.';
    out += node.key;
  }
}

} // namespace

void fail(const std::string& message) { throw ParseFailure(message); }

Json parse_json(std::string_view text, const std::string& what) {
  if (deeper_than(text, k_max_json_depth))
    fail(what + "JSON nested deeper than " + std::to_string(k_max_json_depth) + " levels");
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& error) {
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) fail(what + "empty body");
    fail(what + "malformed JSON at byte " + std::to_string(error.byte));
  }
}

std::size_t& lone_surrogates_on_thread() {
  thread_local std::size_t count = 0;
  return count;
}

JsonDocument parse_document(std::string_view text, const std::string& what) {
  return parse_document(text, nullptr, what);
}

JsonDocument parse_document(std::string_view text, JsonValueReader* reader,
                            const std::string& what) {
  JsonDocument document;
  if (document.parse(text, k_max_json_depth, reader)) {
    lone_surrogates_on_thread() += document.lone_surrogates();
    return document;
  }
  // Rejected (malformed, too deep): parse_json() gives the verdict and the message, exactly as
  // when it parsed every response. It rejects NaN, Infinity and overflowing numbers too, so those
  // the document accepted before its fault are first overwritten with "0" and spaces, the same
  // length and not extended by whatever follows: the message then names the real fault, at its
  // byte.
  const std::vector<JsonSpan>& nonstandard = document.nonstandard_numbers();
  std::string strict;
  if (!nonstandard.empty()) {
    strict.assign(text);
    for (const JsonSpan& span : nonstandard) {
      strict.replace(span.offset, span.length, span.length, ' ');
      strict[span.offset] = '0';
    }
    text = strict;
  }
  Json fallback = parse_json(text, what);
  // It accepted what the fast parser did not: read its canonical serialisation instead (not
  // where values were overwritten above, whose serialisation would carry the stand-ins).
  if (!nonstandard.empty() || !document.parse_owned(fallback.dump(), k_max_json_depth))
    fail(what + "malformed JSON at byte 0");
  return document;
}

std::string JsonView::path() const {
  std::string out;
  const JsonNode& self = node();
  if (!m_bracketed || self.parent == JsonNode::k_no_parent) {
    append_path(*m_document, m_node, out);
    return out;
  }
  append_path(*m_document, self.parent, out);
  out += "[\"";
  out += self.key;
  out += "\"]";
  return out;
}

std::string JsonView::describe() const {
  std::string where = path();
  return where.empty() ? "body" : "field " + where;
}

std::uint32_t JsonView::member_node(std::string_view key) const {
  const JsonNode& self = node();
  for (std::uint32_t i = 0; i < self.count; ++i) {
    std::uint32_t child = m_document->child(self, i);
    if (m_document->node(child).key == key) return child;
  }
  return JsonNode::k_no_parent;
}

JsonView JsonView::at(std::string_view key) const {
  if (!is_object()) fail(describe() + " must be an object");
  std::uint32_t child = member_node(key);
  if (child == JsonNode::k_no_parent) {
    std::string where = path();
    fail("missing field " + (where.empty() ? std::string(key) : where + "." + std::string(key)));
  }
  return JsonView(m_document, child, false);
}

std::optional<JsonView> JsonView::find(std::string_view key) const {
  if (!is_object()) fail(describe() + " must be an object");
  std::uint32_t child = member_node(key);
  if (child == JsonNode::k_no_parent || m_document->node(child).type == JsonType::null)
    return std::nullopt;
  return JsonView(m_document, child, false);
}

bool JsonView::contains(std::string_view key) const {
  return is_object() && member_node(key) != JsonNode::k_no_parent;
}

JsonView JsonView::at(std::size_t index) const {
  if (!is_array()) fail(describe() + " must be an array");
  const JsonNode& self = node();
  if (index >= self.count) fail("missing field " + path() + "[" + std::to_string(index) + "]");
  return JsonView(m_document, m_document->child(self, index), false);
}

std::size_t JsonView::size() const {
  if (!is_array()) fail(describe() + " must be an array");
  return node().count;
}

std::string JsonView::string() const {
  if (!is_string()) fail(describe() + " must be a string");
  return std::string(node().text);
}

std::string JsonView::json_text() const {
  const JsonNode& self = node();
  std::string out;
  switch (self.type) {
  case JsonType::null: return "null";
  case JsonType::boolean: return self.flag ? "true" : "false";
  case JsonType::number: return std::string(self.text);
  case JsonType::string: core::append_json_string(out, self.text); return out;
  case JsonType::array:
    out = "[";
    for (std::size_t i = 0; i < size(); ++i) out += (i ? "," : "") + at(i).json_text();
    return out + "]";
  case JsonType::object:
    out = "{";
    for (std::size_t i = 0; i < member_count(); ++i) {
      if (i) out += ",";
      core::append_json_string(out, member_key(i));
      out += ":" + member(i).json_text();
    }
    return out + "}";
  }
  return "null";
}

double JsonView::number() const {
  const JsonNode& self = node();
  if (self.type != JsonType::number) fail(describe() + " must be a number");
  if (self.number != JsonNumber::finite) fail(describe() + " must be a finite number");
  return json_number_value(self.text);
}

JsonNumber JsonView::number_kind() const {
  const JsonNode& self = node();
  if (self.type != JsonType::number) fail(describe() + " must be a number");
  return self.number;
}

long JsonView::integer() const {
  const JsonNode& self = node();
  // The DOM parser kept a literal without fraction or exponent as an integer when it fit in
  // 64 bits (unsigned when not negative) and as a double otherwise.
  bool integral = self.type == JsonType::number && self.flag;
  const char* begin = self.text.data();
  const char* end = begin + self.text.size();
  if (integral && !self.text.empty() && self.text.front() != '-') {
    std::uint64_t value = 0;
    auto [stop, error] = std::from_chars(begin, end, value);
    if (error == std::errc() && stop == end) {
      if (value > static_cast<std::uint64_t>(std::numeric_limits<long>::max()))
        fail(describe() + " is out of range");
      return static_cast<long>(value);
    }
    integral = false;
  }
  std::int64_t value = 0;
  if (integral) {
    auto [stop, error] = std::from_chars(begin, end, value);
    integral = error == std::errc() && stop == end;
  }
  if (!integral) fail(describe() + " must be an integer");
  return static_cast<long>(value);
}

bool JsonView::boolean() const {
  const JsonNode& self = node();
  if (self.type != JsonType::boolean) fail(describe() + " must be true or false");
  return self.flag;
}

std::string JsonView::optional_string(std::string_view key) const {
  auto member = find(key);
  return member ? member->string() : std::string();
}

std::size_t JsonView::member_count() const {
  if (!is_object()) fail(describe() + " must be an object");
  return node().count;
}

std::string_view JsonView::member_key(std::size_t index) const {
  return m_document->node(m_document->child(node(), index)).key;
}

JsonView JsonView::member(std::size_t index) const {
  return JsonView(m_document, m_document->child(node(), index), true);
}

} // namespace llmrepro::probes::detail
