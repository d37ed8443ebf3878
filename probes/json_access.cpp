#include "probes/detail/json_access.hpp"

#include <cstdint>
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

std::string child_path(const std::string &parent, const std::string &key) {
  return parent.empty() ? key : parent + "." + key;
}

} // namespace

void fail(const std::string &message) {
  throw ParseFailure(message);
}

Json parse_json(std::string_view text, const std::string &what) {
  if (deeper_than(text, k_max_json_depth))
    fail(what + "JSON nested deeper than " + std::to_string(k_max_json_depth) + " levels");
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error &error) {
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) fail(what + "empty body");
    fail(what + "malformed JSON at byte " + std::to_string(error.byte));
  }
}

std::string JsonView::describe() const {
  return m_path.empty() ? "body" : "field " + m_path;
}

JsonView JsonView::at(const std::string &key) const {
  if (!m_json->is_object()) fail(describe() + " must be an object");
  auto it = m_json->find(key);
  if (it == m_json->end()) fail("missing field " + child_path(m_path, key));
  return JsonView(*it, child_path(m_path, key));
}

std::optional<JsonView> JsonView::find(const std::string &key) const {
  if (!m_json->is_object()) fail(describe() + " must be an object");
  auto it = m_json->find(key);
  if (it == m_json->end() || it->is_null()) return std::nullopt;
  return JsonView(*it, child_path(m_path, key));
}

bool JsonView::contains(const std::string &key) const {
  return m_json->is_object() && m_json->find(key) != m_json->end();
}

JsonView JsonView::at(std::size_t index) const {
  if (!m_json->is_array()) fail(describe() + " must be an array");
  std::string path = m_path + "[" + std::to_string(index) + "]";
  if (index >= m_json->size()) fail("missing field " + path);
  return JsonView((*m_json)[index], std::move(path));
}

std::size_t JsonView::size() const {
  if (!m_json->is_array()) fail(describe() + " must be an array");
  return m_json->size();
}

std::string JsonView::string() const {
  if (!m_json->is_string()) fail(describe() + " must be a string");
  return m_json->get_ref<const Json::string_t &>();
}

double JsonView::number() const {
  if (!m_json->is_number()) fail(describe() + " must be a number");
  return m_json->get<double>();
}

long JsonView::integer() const {
  if (m_json->is_number_unsigned()) {
    auto value = m_json->get<std::uint64_t>();
    if (value > static_cast<std::uint64_t>(std::numeric_limits<long>::max()))
      fail(describe() + " is out of range");
    return static_cast<long>(value);
  }
  if (!m_json->is_number_integer()) fail(describe() + " must be an integer");
  return static_cast<long>(m_json->get<std::int64_t>());
}

bool JsonView::boolean() const {
  if (!m_json->is_boolean()) fail(describe() + " must be true or false");
  return m_json->get<bool>();
}

std::string JsonView::optional_string(const std::string &key) const {
  auto member = find(key);
  return member ? member->string() : std::string();
}

} // namespace llmrepro::probes::detail
