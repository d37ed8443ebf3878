#include "core/redaction.hpp"

#include "core/text_utf8.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <utility>

namespace llmrepro::core {
namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r'))
    text.remove_suffix(1);
  return text;
}

// The string as a JSON string literal's contents: what a server that echoes a header inside a
// JSON error body writes. `escape_slash`: some encoders also write "/" as "\/".
std::string json_escaped(std::string_view value, bool escape_slash) {
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string out;
  for (const char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    case '/': out += escape_slash ? "\\/" : "/"; break;
    default:
      if (byte < 0x20) {
        out += "\\u00";
        out += k_hex[byte >> 4];
        out += k_hex[byte & 0xf];
      } else {
        out += c;
      }
    }
  }
  return out;
}

// RFC 3986 percent-encoding of everything but the unreserved characters, as a server that puts a
// value into a URL or a form echoes it.
std::string percent_encoded(std::string_view value, bool upper) {
  const char* hex = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  std::string out;
  for (const char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += hex[byte >> 4];
      out += hex[byte & 0xf];
    }
  }
  return out;
}

// Standard base64 with padding: the form user:password takes in an "Authorization: Basic" header
// that curl builds from a URL's userinfo.
std::string base64(std::string_view value) {
  static constexpr char k_alphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < value.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, value.size() - i);
    std::uint32_t bits = 0;
    for (std::size_t j = 0; j < 3; ++j)
      bits = (bits << 8) | (j < n ? static_cast<unsigned char>(value[i + j]) : 0u);
    for (std::size_t j = 0; j < 4; ++j)
      out += j <= n ? k_alphabet[(bits >> (18 - 6 * j)) & 0x3f] : '=';
  }
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A query value as the URL carries it and as it means it (percent-decoded, "+" a space).
std::string percent_decoded(std::string_view value) {
  std::string out;
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (value[i] == '%' && i + 2 < value.size()) {
      const int high = hex_value(value[i + 1]);
      const int low = hex_value(value[i + 2]);
      if (high >= 0 && low >= 0) {
        out += static_cast<char>(high * 16 + low);
        i += 2;
        continue;
      }
    }
    out += value[i] == '+' ? ' ' : value[i];
  }
  return out;
}

// Which bytes of `text` some form covers.
std::vector<bool> covered_bytes(std::string_view text, const std::vector<std::string>& forms) {
  std::vector<bool> covered(text.size(), false);
  for (const std::string& form : forms)
    for (std::size_t at = text.find(form); at != std::string_view::npos;
         at = text.find(form, at + 1))
      std::fill(covered.begin() + static_cast<std::ptrdiff_t>(at),
                covered.begin() + static_cast<std::ptrdiff_t>(at + form.size()), true);
  return covered;
}

// Redacts a text that is kept in pieces (a completion's tokens) so that a secret split across
// pieces goes too: the pieces' concatenation comes out as redact() of the whole, the k_redacted
// of each covered run in the piece where the run starts, the rest of the run dropped from the
// pieces after it.
void redact_pieces(const std::vector<TokenText*>& pieces, const std::vector<std::string>& forms) {
  std::string joined;
  for (const TokenText* piece : pieces) joined += *piece;
  const std::vector<bool> covered = covered_bytes(joined, forms);
  if (std::find(covered.begin(), covered.end(), true) == covered.end()) return;
  std::size_t offset = 0;
  for (TokenText* piece : pieces) {
    std::string out;
    for (std::size_t i = 0; i < piece->size(); ++i) {
      const std::size_t at = offset + i;
      if (!covered[at]) {
        out += (*piece)[i];
      } else if (at == 0 || !covered[at - 1]) {
        out += k_redacted;
      }
    }
    offset += piece->size();
    piece->assign(out);
  }
}

} // namespace

bool is_secret_parameter_name(std::string_view name) {
  const std::string lowered = ascii_lowercase(name);
  static constexpr std::array<std::string_view, 11> k_exact{
      "key",       "token",    "api_key", "api-key", "apikey", "access_token",
      "signature", "password", "secret",  "auth",    "sig"};
  static constexpr std::array<std::string_view, 6> k_contains{"key",      "token",     "secret",
                                                              "password", "signature", "auth"};
  for (std::string_view exact : k_exact)
    if (lowered == exact) return true;
  for (std::string_view part : k_contains)
    if (lowered.find(part) != std::string::npos) return true;
  return false;
}

void Redactor::add_form(std::string form) {
  if (form.size() < k_min_secret_size) return;
  if (std::find(m_forms.begin(), m_forms.end(), form) != m_forms.end()) return;
  m_forms.push_back(std::move(form));
  std::stable_sort(m_forms.begin(), m_forms.end(),
                   [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
}

void Redactor::add_secret(std::string_view value) {
  if (value.size() < k_min_secret_size) return;
  const std::lock_guard lock(m_mutex);
  add_form(std::string(value));
  add_form(json_escaped(value, false));
  add_form(json_escaped(value, true));
  add_form(percent_encoded(value, true));
  add_form(percent_encoded(value, false));
}

void Redactor::add_header(std::string_view line) {
  const std::size_t colon = line.find(':');
  if (colon == std::string_view::npos) return;
  const std::string_view value = trim(line.substr(colon + 1));
  add_secret(value);
  // "Bearer T", "Basic dXNlcjpwdw==": a server may echo the credentials without their scheme.
  if (const std::size_t space = value.find(' '); space != std::string_view::npos)
    add_secret(trim(value.substr(space + 1)));
}

void Redactor::add_url(std::string_view url) {
  const std::size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return;
  const std::size_t authority_begin = scheme_end + 3;
  std::size_t authority_end = url.find_first_of("/?#", authority_begin);
  if (authority_end == std::string_view::npos) authority_end = url.size();
  const std::string_view authority = url.substr(authority_begin, authority_end - authority_begin);
  if (const std::size_t at = authority.rfind('@'); at != std::string_view::npos) {
    const std::string_view userinfo = authority.substr(0, at);
    add_secret(userinfo);
    add_secret(percent_decoded(userinfo));
    add_secret(base64(percent_decoded(userinfo)));
    if (const std::size_t colon = userinfo.find(':'); colon != std::string_view::npos) {
      add_secret(userinfo.substr(colon + 1));
      add_secret(percent_decoded(userinfo.substr(colon + 1)));
    }
  }
  const std::size_t query = url.find('?', authority_end);
  if (query == std::string_view::npos) return;
  std::string_view rest = url.substr(query + 1);
  rest = rest.substr(0, rest.find('#'));
  while (!rest.empty()) {
    const std::size_t end = std::min(rest.find('&'), rest.size());
    const std::string_view parameter = rest.substr(0, end);
    if (const std::size_t equals = parameter.find('='); equals != std::string_view::npos) {
      if (is_secret_parameter_name(percent_decoded(parameter.substr(0, equals)))) {
        add_secret(parameter.substr(equals + 1));
        add_secret(percent_decoded(parameter.substr(equals + 1)));
      }
    }
    rest.remove_prefix(std::min(end + 1, rest.size()));
  }
}

void Redactor::add_command(std::string_view command) {
  add_secret(command);
  const auto unquoted = [](std::string_view word) {
    if (word.size() >= 2 && (word.front() == '\'' || word.front() == '"') &&
        word.back() == word.front())
      word = word.substr(1, word.size() - 2);
    return word;
  };
  bool value_next = false; // the word before was an option whose name says secret
  std::size_t at = 0;
  while (at < command.size()) {
    const std::size_t begin = command.find_first_not_of(" \t\n", at);
    if (begin == std::string_view::npos) break;
    const std::size_t end = std::min(command.find_first_of(" \t\n", begin), command.size());
    const std::string_view word = command.substr(begin, end - begin);
    at = end;
    if (value_next) add_secret(unquoted(word));
    value_next = false;
    if (word.find("://") != std::string_view::npos) add_url(unquoted(word));
    const std::size_t equals = word.find('=');
    const std::string_view name = equals == std::string_view::npos ? word : word.substr(0, equals);
    const std::string_view bare = name.substr(std::min(name.find_first_not_of('-'), name.size()));
    if (bare.empty() || !is_secret_parameter_name(bare)) continue;
    if (equals != std::string_view::npos)
      add_secret(unquoted(word.substr(equals + 1)));
    else if (name.size() > bare.size())
      value_next = true;
  }
}

std::string Redactor::redact(std::string_view text) const {
  const std::lock_guard lock(m_mutex);
  if (m_forms.empty()) return std::string(text);
  const std::vector<bool> covered = covered_bytes(text, m_forms);
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (!covered[i])
      out += text[i];
    else if (i == 0 || !covered[i - 1])
      out += k_redacted;
  }
  return out;
}

void Redactor::redact_record(RequestRecord& record) const {
  {
    // A run with no secrets (the embedded engine, no --header) copies nothing.
    const std::lock_guard lock(m_mutex);
    if (m_forms.empty()) return;
  }
  RequestOutcome& outcome = record.outcome;
  outcome.error = redact(outcome.error);
  Completion& completion = outcome.completion;
  completion.text = redact(completion.text);
  completion.reasoning_text = redact(completion.reasoning_text);
  completion.finish_reason = redact(completion.finish_reason);
  completion.system_fingerprint = redact(completion.system_fingerprint);
  completion.model = redact(completion.model);
  const std::lock_guard lock(m_mutex);
  for (auto* tokens : {&completion.tokens, &completion.reasoning_tokens}) {
    std::vector<TokenText*> pieces;
    for (TokenLogprob& token : *tokens) pieces.push_back(&token.token);
    redact_pieces(pieces, m_forms);
    for (TokenLogprob& token : *tokens)
      for (TokenCandidate& candidate : token.top) redact_pieces({&candidate.token}, m_forms);
  }
}

void Redactor::clear() {
  const std::lock_guard lock(m_mutex);
  m_forms.clear();
}

Redactor& run_secrets() {
  static Redactor secrets;
  return secrets;
}

std::string redact(std::string_view text) { return run_secrets().redact(text); }

} // namespace llmrepro::core
