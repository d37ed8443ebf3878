#include "core/json_value.hpp"

#include <cstdlib>

namespace llmrepro::core {

JsonValue::JsonValue() = default;

const JsonValue* JsonValue::find(std::string_view name) const {
  for (const auto& [member, value] : object)
    if (member == name) return &value;
  return nullptr;
}

namespace {

// Recursive descent over the text; depth is bounded so hostile input cannot exhaust the stack.
class Parser {
public:
  explicit Parser(std::string_view text) : m_text(text) {}

  Result<JsonValue> document() {
    JsonValue value;
    if (!parse_value(value, 0)) return failure();
    skip_space();
    if (m_pos != m_text.size()) {
      m_error = "trailing characters";
      return failure();
    }
    return value;
  }

private:
  static constexpr int k_max_depth = 64;

  Error failure() const {
    return make_error(ErrorCode::input, "JSON: " + m_error + " at offset " + std::to_string(m_pos));
  }

  void skip_space() {
    while (m_pos < m_text.size() && (m_text[m_pos] == ' ' || m_text[m_pos] == '\n' ||
                                     m_text[m_pos] == '\r' || m_text[m_pos] == '\t'))
      ++m_pos;
  }

  bool literal(std::string_view word) {
    if (m_text.substr(m_pos, word.size()) != word) {
      m_error = "unexpected token";
      return false;
    }
    m_pos += word.size();
    return true;
  }

  bool parse_value(JsonValue& out, int depth) {
    if (depth > k_max_depth) {
      m_error = "nesting too deep";
      return false;
    }
    skip_space();
    if (m_pos >= m_text.size()) {
      m_error = "unexpected end";
      return false;
    }
    const char c = m_text[m_pos];
    if (c == '{') return parse_object(out, depth);
    if (c == '[') return parse_array(out, depth);
    if (c == '"') {
      out.type = JsonValue::Type::string;
      return parse_string(out.string);
    }
    if (c == 't' || c == 'f') {
      out.type = JsonValue::Type::boolean;
      out.boolean = c == 't';
      return literal(c == 't' ? "true" : "false");
    }
    if (c == 'n') {
      out.type = JsonValue::Type::null;
      return literal("null");
    }
    return parse_number(out);
  }

  bool parse_number(JsonValue& out) {
    const std::size_t start = m_pos;
    if (m_pos < m_text.size() && m_text[m_pos] == '-') ++m_pos;
    bool integer = true;
    bool digits = false;
    while (m_pos < m_text.size()) {
      const char c = m_text[m_pos];
      if (c >= '0' && c <= '9') {
        digits = true;
      } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
        integer = false;
      } else {
        break;
      }
      ++m_pos;
    }
    if (!digits) {
      m_pos = start;
      m_error = "unexpected character";
      return false;
    }
    const std::string token(m_text.substr(start, m_pos - start));
    char* end = nullptr;
    out.number = std::strtod(token.c_str(), &end);
    if (end != token.c_str() + token.size()) {
      m_error = "malformed number";
      return false;
    }
    out.type = JsonValue::Type::number;
    out.integer = integer;
    out.literal = token;
    return true;
  }

  static void append_utf8(std::string& out, unsigned code) {
    if (code < 0x80) {
      out.push_back(static_cast<char>(code));
    } else if (code < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (code >> 6)));
      out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else if (code < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (code >> 12)));
      out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (code >> 18)));
      out.push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    }
  }

  bool hex4(unsigned& code) {
    if (m_pos + 4 > m_text.size()) {
      m_error = "short \\u escape";
      return false;
    }
    code = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = m_text[m_pos++];
      code <<= 4;
      if (c >= '0' && c <= '9')
        code |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f')
        code |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        code |= static_cast<unsigned>(c - 'A' + 10);
      else {
        m_error = "bad \\u escape";
        return false;
      }
    }
    return true;
  }

  bool parse_string(std::string& out) {
    ++m_pos; // opening quote
    while (m_pos < m_text.size()) {
      const char c = m_text[m_pos++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) {
        m_error = "control character in string";
        return false;
      }
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (m_pos >= m_text.size()) break;
      const char escape = m_text[m_pos++];
      switch (escape) {
      case '"': out.push_back('"'); break;
      case '\\': out.push_back('\\'); break;
      case '/': out.push_back('/'); break;
      case 'b': out.push_back('\b'); break;
      case 'f': out.push_back('\f'); break;
      case 'n': out.push_back('\n'); break;
      case 'r': out.push_back('\r'); break;
      case 't': out.push_back('\t'); break;
      case 'u': {
        unsigned code = 0;
        if (!hex4(code)) return false;
        if (code >= 0xD800 && code < 0xDC00 && m_text.substr(m_pos, 2) == "\\u") {
          m_pos += 2;
          unsigned low = 0;
          if (!hex4(low)) return false;
          code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        }
        append_utf8(out, code);
        break;
      }
      default: m_error = "bad escape"; return false;
      }
    }
    m_error = "unterminated string";
    return false;
  }

  bool parse_array(JsonValue& out, int depth) {
    out.type = JsonValue::Type::array;
    ++m_pos;
    skip_space();
    if (m_pos < m_text.size() && m_text[m_pos] == ']') {
      ++m_pos;
      return true;
    }
    while (true) {
      JsonValue element;
      if (!parse_value(element, depth + 1)) return false;
      out.array.push_back(std::move(element));
      skip_space();
      if (m_pos < m_text.size() && m_text[m_pos] == ',') {
        ++m_pos;
        continue;
      }
      if (m_pos < m_text.size() && m_text[m_pos] == ']') {
        ++m_pos;
        return true;
      }
      m_error = "expected ',' or ']'";
      return false;
    }
  }

  bool parse_object(JsonValue& out, int depth) {
    out.type = JsonValue::Type::object;
    ++m_pos;
    skip_space();
    if (m_pos < m_text.size() && m_text[m_pos] == '}') {
      ++m_pos;
      return true;
    }
    while (true) {
      skip_space();
      if (m_pos >= m_text.size() || m_text[m_pos] != '"') {
        m_error = "expected a member name";
        return false;
      }
      std::string name;
      if (!parse_string(name)) return false;
      skip_space();
      if (m_pos >= m_text.size() || m_text[m_pos] != ':') {
        m_error = "expected ':'";
        return false;
      }
      ++m_pos;
      JsonValue member;
      if (!parse_value(member, depth + 1)) return false;
      out.object.emplace_back(std::move(name), std::move(member));
      skip_space();
      if (m_pos < m_text.size() && m_text[m_pos] == ',') {
        ++m_pos;
        continue;
      }
      if (m_pos < m_text.size() && m_text[m_pos] == '}') {
        ++m_pos;
        return true;
      }
      m_error = "expected ',' or '}'";
      return false;
    }
  }

  std::string_view m_text;
  std::size_t m_pos = 0;
  std::string m_error;
};

} // namespace

Result<JsonValue> parse_json(std::string_view text) { return Parser(text).document(); }

} // namespace llmrepro::core
