// The JSON report's token arrays, written as text (report/detail/json_tokens.hpp).
#include "report/detail/json_tokens.hpp"

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "core/text_utf8.hpp"

namespace llmrepro::report::detail {
namespace {

// Whether `text` can be written between quotes as it is: well-formed UTF-8 (no overlong form, no
// surrogate, nothing above U+10FFFF: what nlohmann's decoder accepts) without a byte that JSON
// escapes. Anything else goes through nlohmann's own escaping.
bool writes_verbatim(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x80) {
      if (byte < 0x20 || byte == '"' || byte == '\\') return false;
      ++i;
      continue;
    }
    const std::size_t length = core::utf8_sequence_length(text, i);
    if (length == 0) return false;
    i += length;
  }
  return true;
}

void append_string(std::string& out, std::string_view text) {
  if (writes_verbatim(text)) {
    out += '"';
    out += text;
    out += '"';
    return;
  }
  out += nlohmann::ordered_json(text).dump(-1, ' ', false,
                                           nlohmann::ordered_json::error_handler_t::replace);
}

// A log probability as the report writes every number: the digits nlohmann's serializer writes
// for a double (its own shortest-form conversion), null where it is not finite.
void append_number(std::string& out, double value) {
  if (!std::isfinite(value)) {
    out += "null";
    return;
  }
  std::array<char, 64> digits{};
  const char* end = nlohmann::detail::to_chars(digits.data(), digits.data() + digits.size(), value);
  out.append(digits.data(), static_cast<std::size_t>(end - digits.data()));
}

void append_spaces(std::string& out, int count) {
  out.append(static_cast<std::size_t>(count), ' ');
}

// {"token": ..., "logprob": ...[, "top": [...]]} at `indent` (the line of its opening brace).
template <typename Token>
void append_token_object(std::string& out, const Token& token, int indent, bool with_top) {
  out += "{\n";
  append_spaces(out, indent + 2);
  out += "\"token\": ";
  append_string(out, token.token);
  out += ",\n";
  append_spaces(out, indent + 2);
  out += "\"logprob\": ";
  append_number(out, token.logprob);
  if constexpr (requires { token.top; }) {
    if (with_top) {
      out += ",\n";
      append_spaces(out, indent + 2);
      out += "\"top\": ";
      if (token.top.empty()) {
        out += "[]";
      } else {
        out += '[';
        for (std::size_t i = 0; i < token.top.size(); ++i) {
          out += i == 0 ? "\n" : ",\n";
          append_spaces(out, indent + 4);
          append_token_object(out, token.top[i], indent + 4, false);
        }
        out += '\n';
        append_spaces(out, indent + 2);
        out += ']';
      }
    }
  }
  out += '\n';
  append_spaces(out, indent);
  out += '}';
}

} // namespace

void append_tokens_json(std::string& out, const std::vector<core::TokenLogprob>& tokens,
                        int indent) {
  if (tokens.empty()) {
    out += "[]";
    return;
  }
  out += '[';
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    out += i == 0 ? "\n" : ",\n";
    append_spaces(out, indent + 2);
    append_token_object(out, tokens[i], indent + 2, true);
  }
  out += '\n';
  append_spaces(out, indent);
  out += ']';
}

void append_indented(std::string& out, std::string_view dumped, int indent) {
  std::size_t from = 0;
  for (std::size_t newline = dumped.find('\n'); newline != std::string_view::npos;
       newline = dumped.find('\n', from)) {
    out.append(dumped.substr(from, newline + 1 - from));
    append_spaces(out, indent);
    from = newline + 1;
  }
  out.append(dumped.substr(from));
}

void append_open_object(std::string& out, std::string_view dumped, int indent) {
  constexpr std::string_view close = "\n}";
  append_indented(out, dumped.substr(0, dumped.size() - close.size()), indent);
}

void close_object(std::string& out, int indent) {
  out += '\n';
  append_spaces(out, indent);
  out += '}';
}

} // namespace llmrepro::report::detail
