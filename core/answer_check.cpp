#include "core/answer_check.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <vector>

#include "core/json_value.hpp"

namespace llmrepro::core {

namespace {

// The C locale's white space (space, \t \n \v \f \r) whatever the process's locale, without
// a call a byte.
bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// Into a string sized once: every run's answer goes through here.
std::string collapse_whitespace(std::string_view text) {
  std::string out(text.size(), '\0');
  char* to = out.data();
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t spaces = at;
    while (at < text.size() && is_space(text[at])) ++at;
    if (at == text.size()) break; // trailing white space is dropped
    if (at > spaces && to != out.data()) *to++ = ' ';
    while (at < text.size() && !is_space(text[at])) *to++ = text[at++]; // words are short
  }
  out.resize(static_cast<std::size_t>(to - out.data()));
  return out;
}

// The groups of the first match (group 0 the whole match; unmatched groups empty), copied out so
// that they outlive the subject. Regexes come from the suite; an invalid one is reported by the
// suite loader, so here it simply never matches.
using Groups = std::vector<std::optional<std::string>>;
std::optional<Groups> search(const std::string& pattern, const std::string& text) {
  try {
    const std::regex expression(pattern, std::regex::ECMAScript);
    std::smatch match;
    if (!std::regex_search(text, match, expression)) return std::nullopt;
    Groups groups;
    for (const auto& group : match)
      groups.push_back(group.matched ? std::optional<std::string>(group.str()) : std::nullopt);
    return groups;
  } catch (const std::regex_error&) {
  }
  return std::nullopt;
}

std::optional<double> last_number(std::string_view text) {
  std::optional<double> found;
  std::size_t i = 0;
  while (i < text.size()) {
    const bool sign = (text[i] == '-' || text[i] == '+') && i + 1 < text.size() &&
                      std::isdigit(static_cast<unsigned char>(text[i + 1]));
    if (!sign && !std::isdigit(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    std::string digits;
    if (sign) digits += text[i++];
    bool seen_point = false;
    while (i < text.size()) {
      const char c = text[i];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        digits += c;
      } else if (c == ',' && i + 1 < text.size() &&
                 std::isdigit(static_cast<unsigned char>(text[i + 1])) && !seen_point) {
        // Thousands separator: skipped.
      } else if (c == '.' && !seen_point && i + 1 < text.size() &&
                 std::isdigit(static_cast<unsigned char>(text[i + 1]))) {
        seen_point = true;
        digits += c;
      } else {
        break;
      }
      ++i;
    }
    found = std::strtod(digits.c_str(), nullptr);
  }
  return found;
}

std::string format_number(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.15g", value);
  return buffer;
}

std::optional<std::string> choice_letter(std::string_view text) {
  const std::string trimmed = collapse_whitespace(text);
  // "Answer: B", "answer is (C)", a lone letter, "B)" or "(B)" at the start.
  if (auto match = search(R"((?:answer|Answer|ANSWER)\s*(?:is|:)?\s*\(?([A-J])\b)", trimmed))
    return (*match)[1];
  if (auto match = search(R"(^\(?([A-J])(?:[).:]|\s|$))", trimmed)) return (*match)[1];
  return std::nullopt;
}

// The JSON a completion holds: the whole text, else the first {...} or [...] span inside it
// (models wrap JSON in prose or code fences).
std::optional<JsonValue> json_in(std::string_view text) {
  if (auto whole = parse_json(text)) return std::move(*whole);
  const auto open = text.find_first_of("{[");
  const auto close = text.find_last_of("}]");
  if (open == std::string_view::npos || close == std::string_view::npos || close < open)
    return std::nullopt;
  if (auto inner = parse_json(text.substr(open, close - open + 1))) return std::move(*inner);
  return std::nullopt;
}

// `$.a.b[0]` or `a.b[0]`.
const JsonValue* at_path(const JsonValue& root, std::string_view path) {
  const JsonValue* node = &root;
  std::size_t i = 0;
  if (i < path.size() && path[i] == '$') ++i;
  while (i < path.size() && node) {
    if (path[i] == '.') {
      ++i;
      const auto end = path.find_first_of(".[", i);
      const auto name = path.substr(i, end == std::string_view::npos ? path.size() - i : end - i);
      node = node->type == JsonValue::Type::object ? node->find(name) : nullptr;
      i = end == std::string_view::npos ? path.size() : end;
    } else if (path[i] == '[') {
      const auto end = path.find(']', i);
      if (end == std::string_view::npos) return nullptr;
      const std::string index(path.substr(i + 1, end - i - 1));
      char* stop = nullptr;
      const long n = std::strtol(index.c_str(), &stop, 10);
      if (stop == index.c_str() || *stop != '\0' || n < 0 || node->type != JsonValue::Type::array ||
          static_cast<std::size_t>(n) >= node->array.size())
        return nullptr;
      node = &node->array[static_cast<std::size_t>(n)];
      i = end + 1;
    } else {
      // A leading name without a dot: `a.b`.
      const auto end = path.find_first_of(".[", i);
      const auto name = path.substr(i, end == std::string_view::npos ? path.size() - i : end - i);
      node = node->type == JsonValue::Type::object ? node->find(name) : nullptr;
      i = end == std::string_view::npos ? path.size() : end;
    }
  }
  return node;
}

void write_compact(const JsonValue& value, std::string& out) {
  switch (value.type) {
  case JsonValue::Type::null: out += "null"; return;
  case JsonValue::Type::boolean: out += value.boolean ? "true" : "false"; return;
  case JsonValue::Type::number: out += format_number(value.number); return;
  case JsonValue::Type::string:
    out += '"';
    for (char c : value.string) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
    return;
  case JsonValue::Type::array:
    out += '[';
    for (std::size_t i = 0; i < value.array.size(); ++i) {
      if (i) out += ',';
      write_compact(value.array[i], out);
    }
    out += ']';
    return;
  case JsonValue::Type::object:
    out += '{';
    for (std::size_t i = 0; i < value.object.size(); ++i) {
      if (i) out += ',';
      JsonValue key;
      key.type = JsonValue::Type::string;
      key.string = value.object[i].first;
      write_compact(key, out);
      out += ':';
      write_compact(value.object[i].second, out);
    }
    out += '}';
    return;
  }
}

// A JSON value as an answer: strings bare (so "Tokyo" equals the suite's Tokyo), others compact.
std::string answer_text(const JsonValue& value) {
  if (value.type == JsonValue::Type::string) return value.string;
  std::string out;
  write_compact(value, out);
  return out;
}

} // namespace

std::optional<std::string> extract_answer(const Extraction& extraction, std::string_view text) {
  switch (extraction.kind) {
  case Extraction::Kind::none: {
    std::string answer = collapse_whitespace(text);
    if (answer.empty()) return std::nullopt;
    return answer;
  }
  case Extraction::Kind::regex: {
    const auto match = search(extraction.pattern, std::string(text));
    if (!match) return std::nullopt;
    return match->size() > 1 && (*match)[1] ? (*match)[1] : (*match)[0];
  }
  case Extraction::Kind::number: {
    const auto number = last_number(text);
    if (!number) return std::nullopt;
    return format_number(*number);
  }
  case Extraction::Kind::choice: return choice_letter(text);
  case Extraction::Kind::json_path: {
    const auto json = json_in(text);
    if (!json) return std::nullopt;
    const JsonValue* node = at_path(*json, extraction.pattern);
    if (!node) return std::nullopt;
    return answer_text(*node);
  }
  case Extraction::Kind::last_line: {
    std::string_view rest = text;
    std::optional<std::string> last;
    while (!rest.empty()) {
      const auto end = rest.find('\n');
      const std::string line = collapse_whitespace(rest.substr(0, end));
      if (!line.empty()) last = line;
      if (end == std::string_view::npos) break;
      rest.remove_prefix(end + 1);
    }
    return last;
  }
  }
  return std::nullopt;
}

std::optional<bool> check_answer(const Expectation& expectation, std::string_view text) {
  switch (expectation.kind) {
  case Expectation::Kind::none: return std::nullopt;
  case Expectation::Kind::regex: return search(expectation.value, std::string(text)).has_value();
  case Expectation::Kind::contains: return text.find(expectation.value) != std::string_view::npos;
  case Expectation::Kind::equals:
    return collapse_whitespace(text) == collapse_whitespace(expectation.value);
  case Expectation::Kind::choice: {
    const auto letter = choice_letter(text);
    return letter && *letter == collapse_whitespace(expectation.value);
  }
  case Expectation::Kind::number: {
    const auto number = last_number(text);
    return number && std::fabs(*number - expectation.number) <= expectation.tolerance;
  }
  case Expectation::Kind::json_path: {
    const auto json = json_in(text);
    if (!json) return false;
    const JsonValue* node = at_path(*json, expectation.path);
    if (!node) return false;
    // The suite gives the expected value as JSON text ("\"Tokyo\"", "3"); a bare word is taken
    // as the string it spells.
    const auto expected = parse_json(expectation.value);
    return answer_text(*node) == (expected ? answer_text(*expected) : expectation.value);
  }
  }
  return std::nullopt;
}

const std::optional<std::string>& TextAnswers::answer(std::string_view text) {
  const auto found = m_answers.find(text);
  if (found != m_answers.end()) return found->second;
  return m_answers.emplace(text, extract_answer(*m_extraction, text)).first->second;
}

bool TextAnswers::passes(std::string_view text) {
  const auto found = m_passes.find(text);
  if (found != m_passes.end()) return found->second;
  return m_passes.emplace(text, check_answer(*m_expectation, text).value_or(false)).first->second;
}

} // namespace llmrepro::core
