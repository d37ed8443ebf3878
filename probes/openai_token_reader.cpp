#include "probes/detail/openai_token_reader.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <iterator>

#include "core/logprob_floor.hpp"
#include "probes/detail/dialect_adapters.hpp"
#include "probes/detail/json_scanner.hpp"

namespace llmrepro::probes::detail {

namespace {

// The containers below the token list, itself included: a token's object, its candidates' list,
// a candidate's object and that candidate's `bytes`.
constexpr std::size_t k_token_list_depth = 5;

// Skips a string, number or literal; false for a container (a shape the reader does not take)
// or malformed text.
bool skip_scalar(JsonScanner& scanner) {
  switch (scanner.peek()) {
  case '"': {
    std::string_view text;
    return scanner.string(text);
  }
  case 't': return scanner.literal("true");
  case 'f': return scanner.literal("false");
  case 'n': return scanner.literal("null");
  case '{':
  case '[': return false;
  default: {
    JsonLiteral literal;
    return scanner.number(literal);
  }
  }
}

bool same_bytes(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}

// The members of a token's object the reader reads; a candidate's `top_logprobs` is no list of
// its own (read_openai_token() ignores it), so it is an other member there.
enum class Member { token, logprob, bytes, top_logprobs, other };

Member member_of(std::string_view key, bool token) {
  switch (key.size()) {
  case 5: return key == "token" ? Member::token : key == "bytes" ? Member::bytes : Member::other;
  case 7: return key == "logprob" ? Member::logprob : Member::other;
  case 12: return token && key == "top_logprobs" ? Member::top_logprobs : Member::other;
  default: return Member::other;
  }
}

// Each byte value as JSON writes it in a `bytes` list (no sign, no leading zero): what the list
// holds where it spells the token's text, compared in place instead of read as a number.
// Its digits as the first bytes of a little-endian word, `mask` covering them.
struct ByteSpelling {
  std::uint32_t digits = 0;
  std::uint32_t mask = 0;
  std::uint32_t size = 0;
};
constexpr std::array<ByteSpelling, 256> k_byte_spellings = [] {
  std::array<ByteSpelling, 256> table{};
  for (unsigned value = 0; value < 256; ++value) {
    ByteSpelling& spelling = table[value];
    const auto add = [&spelling](unsigned digit) {
      spelling.digits |= ('0' + digit) << (8 * spelling.size);
      spelling.mask |= 0xFFU << (8 * spelling.size);
      ++spelling.size;
    };
    if (value >= 100) add(value / 100);
    if (value >= 10) add(value / 10 % 10);
    add(value % 10);
  }
  return table;
}();

// The first bytes of `text` (at most 8) as one little-endian word, as std::memcpy loads them.
constexpr std::uint64_t word_of(std::string_view text) {
  std::uint64_t word = 0;
  for (std::size_t i = 0; i < text.size() && i < 8; ++i)
    word |= static_cast<std::uint64_t>(static_cast<unsigned char>(text[i])) << (8 * i);
  return word;
}

// A cursor over the text for one token's object: plain text is read here, in registers; the
// rest (escapes, non-ASCII, unusual numbers) by the scanner, which the cursor hands its place to
// and takes it back from.
class Cursor {
public:
  explicit Cursor(JsonScanner& scanner)
      : m_scanner(scanner), m_p(scanner.position()), m_end(scanner.end()) {}

  JsonScanner& scanner() {
    m_scanner.seek(m_p);
    return m_scanner;
  }
  void resume() { m_p = m_scanner.position(); }
  void leave() { m_scanner.seek(m_p); }

  // Skips whitespace, then takes `c` when it is next. Inlined (an optimised build otherwise
  // calls it for every comma and colon); whitespace, rare in a response, is taken out of line.
  [[gnu::always_inline]] bool take(char c) {
    if (m_p < m_end && *m_p == c) {
      ++m_p;
      return true;
    }
    return take_after_whitespace(c);
  }
  [[gnu::noinline]] bool take_after_whitespace(char c) {
    m_p = JsonScanner::after_whitespace(m_p, m_end);
    if (m_p == m_end || *m_p != c) return false;
    ++m_p;
    return true;
  }
  // Skips whitespace; false at the end of the text.
  bool more() {
    m_p = JsonScanner::after_whitespace(m_p, m_end);
    return m_p != m_end;
  }
  char next() const { return *m_p; }

  // The member name at its opening quote, past its closing one. The four names the reader reads,
  // written plainly, are matched as words; any other spelling is read as a string and named.
  bool member(Member& which, bool token) {
    constexpr std::uint64_t six = 0xFFFFFFFFFFFFULL;
    static constexpr std::uint64_t k_token = word_of("token\"");
    static constexpr std::uint64_t k_logprob = word_of("logprob\"");
    static constexpr std::uint64_t k_bytes = word_of("bytes\"");
    if (m_end - m_p >= 16) {
      std::uint64_t word = 0;
      std::memcpy(&word, m_p + 1, sizeof word);
      if ((word & six) == k_token) {
        which = Member::token;
        m_p += 7;
        return true;
      }
      if (word == k_logprob) {
        which = Member::logprob;
        m_p += 9;
        return true;
      }
      if ((word & six) == k_bytes) {
        which = Member::bytes;
        m_p += 7;
        return true;
      }
    }
    std::string_view key;
    if (!string(key)) return false;
    which = member_of(key, token);
    return true;
  }

  // A string at its opening quote.
  bool string(std::string_view& out) {
    if (const char* close = JsonScanner::plain_string_end(m_p + 1, m_end)) {
      out = std::string_view(m_p + 1, static_cast<std::size_t>(close - m_p - 1));
      m_p = close + 1;
      return true;
    }
    const bool read = scanner().string(out);
    resume();
    return read;
  }

  bool null() {
    if (m_end - m_p < 4 || std::string_view(m_p, 4) != "null") return false;
    m_p += 4;
    return true;
  }

  bool plain_decimal(double& value) { return JsonScanner::plain_decimal(m_p, m_end, value); }

  // `bytes`' list, at its '['. Where `text` is known (`known`) and the list spells exactly its
  // bytes (the usual case), `same` and nothing copied; otherwise its bytes into `raw`. `usable`
  // false where it is empty.
  bool byte_list(std::string_view text, bool known, std::string& raw, bool& usable, bool& same) {
    ++m_p;
    usable = false;
    same = false;
    if (take(']')) return true; // no bytes: the string is all there is
    raw.clear();
    std::size_t matched = 0;
    bool matching = known;
    for (;;) {
      // The text's next byte spelled as it is, followed by no further digit: the usual case,
      // without reading a number (byte_value() below would read the same value).
      if (matching && matched < text.size()) {
        const ByteSpelling& spelling = k_byte_spellings[static_cast<unsigned char>(text[matched])];
        std::uint32_t word = 0;
        if (m_end - m_p >= 4) std::memcpy(&word, m_p, sizeof word);
        const char after = static_cast<char>(word >> (8 * spelling.size)); // size < 4
        if ((word & spelling.mask) == spelling.digits && (after < '0' || after > '9')) {
          m_p += spelling.size;
          ++matched;
          if (!take(',')) break;
          continue;
        }
      }
      // A value other than 0 to 255 as JSON writes it (a fraction, a sign, another type) is left
      // to the tape.
      m_p = JsonScanner::after_whitespace(m_p, m_end);
      unsigned value = 0;
      if (!JsonScanner::byte_value(m_p, m_end, value)) return false;
      const char byte = static_cast<char>(static_cast<unsigned char>(value));
      if (matching && matched < text.size() && text[matched] == byte) {
        ++matched;
      } else {
        if (matching) raw.assign(text.substr(0, matched));
        matching = false;
        raw.push_back(byte);
      }
      if (!take(',')) break;
    }
    if (!take(']')) return false;
    usable = true;
    same = matching && matched == text.size();
    if (matching && !same) raw.assign(text.substr(0, matched));
    return true;
  }

private:
  JsonScanner& m_scanner;
  const char* m_p;
  const char* m_end;
};

} // namespace

bool& openai_token_reader_on_thread() {
  thread_local bool enabled = true;
  return enabled;
}

bool OpenAiTokenReader::wants(const JsonDocument& document, std::uint32_t object,
                              std::string_view key) {
  if (m_used || key != "content") return false;
  const JsonNode& logprobs = document.node(object);
  if (logprobs.key != "logprobs" || logprobs.parent == JsonNode::k_no_parent) return false;
  const JsonNode& choice = document.node(logprobs.parent);
  if (choice.type != JsonType::object || choice.index != 0 ||
      choice.parent == JsonNode::k_no_parent)
    return false;
  const JsonNode& choices = document.node(choice.parent);
  return choices.type == JsonType::array && choices.key == "choices" && choices.parent == 0;
}

bool OpenAiTokenReader::read(JsonScanner& scanner, std::size_t depth_left) {
  if (depth_left < k_token_list_depth || !scanner.consume('[')) return false;
  m_tokens.clear();
  m_numbers = {};
  if (!scanner.consume(']')) {
    const std::size_t before = scanner.left();
    do {
      core::TokenLogprob& token = m_tokens.emplace_back();
      if (!entry(scanner, token.token, token.logprob, &token.top)) return false;
      // The list's length, guessed from its first token's: one allocation, not a dozen.
      if (m_tokens.size() == 1 && before > scanner.left())
        m_tokens.reserve(1 + scanner.left() / (before - scanner.left()));
    } while (scanner.consume(','));
    if (!scanner.consume(']')) return false;
  }
  m_used = true;
  return true;
}

void OpenAiTokenReader::append_to(core::Completion& completion) {
  // push_back's geometric growth: a stream appends one chunk's tokens at a time.
  if (completion.tokens.empty())
    completion.tokens.swap(m_tokens);
  else
    for (core::TokenLogprob& token : m_tokens) completion.tokens.push_back(std::move(token));
  m_tokens.clear();
  completion.numbers += m_numbers;
}

bool OpenAiTokenReader::entry(JsonScanner& scanner, core::TokenText& token, double& logprob,
                              core::TokenCandidates* top) {
  Cursor cursor(scanner);
  if (!cursor.take('{')) return false;
  std::string& raw = m_raw[top == nullptr ? 1 : 0];
  std::string_view text;
  bool has_text = false;
  bool has_logprob = false;
  bool has_bytes = false;
  bool usable_bytes = false;
  bool same_as_text = false; // the bytes are the text's, found as they were read
  bool has_top = false;
  do {
    Member which = Member::other;
    if (!cursor.more() || cursor.next() != '"' || !cursor.member(which, top != nullptr) ||
        !cursor.take(':') || !cursor.more())
      return false;
    // A member given twice (the last one counts on the tape) is left to the tape.
    switch (which) {
    case Member::token:
      if (has_text || cursor.next() != '"' || !cursor.string(text)) return false;
      has_text = true;
      break;
    case Member::logprob:
      if (has_logprob) return false;
      if (cursor.plain_decimal(logprob)) {
        logprob = core::clamp_logprob(logprob);
      } else {
        const bool read = this->logprob(cursor.scanner(), logprob);
        cursor.resume();
        if (!read) return false;
      }
      has_logprob = true;
      break;
    case Member::bytes:
      if (has_bytes) return false;
      if (cursor.next() == '[') {
        if (!cursor.byte_list(text, has_text, raw, usable_bytes, same_as_text)) return false;
      } else if (!cursor.null()) {
        return false; // not a list: left to the tape
      }
      has_bytes = true;
      break;
    case Member::top_logprobs: {
      if (has_top) return false;
      const bool read = candidates(cursor.scanner(), *top);
      cursor.resume();
      if (!read) return false;
      has_top = true;
      break;
    }
    case Member::other: {
      const bool read = skip_scalar(cursor.scanner());
      cursor.resume();
      if (!read) return false;
      break;
    }
    }
  } while (cursor.take(','));
  if (!cursor.take('}') || !has_text || !has_logprob) return false;
  cursor.leave();
  // read_token_text(): the string, unless `bytes` spell other bytes than its UTF-8.
  if (usable_bytes && !same_as_text && !same_bytes(raw, text))
    token = spelled_token_bytes(raw);
  else
    token.assign(text);
  return true;
}

bool OpenAiTokenReader::logprob(JsonScanner& scanner, double& value) {
  if (scanner.peek() == 'n') {
    if (!scanner.literal("null")) return false;
    ++m_numbers.null;
    value = core::k_unknown_logprob;
    return true;
  }
  JsonLiteral literal;
  if (!scanner.number(literal)) return false;
  if (literal.kind != JsonNumber::finite) {
    value = *non_finite_logprob(literal.kind, m_numbers);
    return true;
  }
  if (!exact_decimal(literal.text, value)) value = json_number_value(literal.text);
  value = core::clamp_logprob(value);
  return true;
}

bool OpenAiTokenReader::candidates(JsonScanner& scanner, core::TokenCandidates& top) {
  if (scanner.peek() == 'n') return scanner.literal("null");
  if (!scanner.consume('[')) return false;
  if (scanner.consume(']')) return true;
  // As many as the last token had: one allocation, as a list sized by its count would take.
  top.reserve(m_candidate_count);
  do {
    core::TokenCandidate& candidate = top.emplace_back();
    if (!entry(scanner, candidate.token, candidate.logprob, nullptr)) return false;
  } while (scanner.consume(','));
  m_candidate_count = std::max<std::size_t>(top.size(), 1);
  return scanner.consume(']');
}

} // namespace llmrepro::probes::detail
