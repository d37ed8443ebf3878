// Private to probes: the lexical half of the JSON document parser (json_document.hpp), and what a
// JsonValueReader reads a value with. One scanner reads strings (UTF-8 checked, escapes decoded
// into the document's arena, lone surrogates counted), numbers (NaN and the like noted) and
// literals exactly as the tape does, so that a value read by a reader is accepted or refused
// exactly as the tape would have. Inline: it is the inner loop of every response parse.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "probes/detail/json_document.hpp"

namespace llmrepro::probes::detail {

// A number literal (finite, or NaN, Infinity, -Infinity, or past a double's range).
struct JsonLiteral {
  std::string_view text;
  bool integral = false; // no fraction and no exponent
  JsonNumber kind = JsonNumber::finite;
};

// The value of a finite number literal as strtod reads it, correctly rounded.
double json_number_value(std::string_view literal);

// The value of a literal without an exponent whose digits, read as one integer, are at most 2^53
// and whose fraction has at most 22 digits: that integer and the power of ten are exact doubles,
// so one division rounds to the nearest double, as strtod does (Clinger's fast path). False for
// any other literal, whose value json_number_value() finds the long way.
// digits / 10^fraction, negated when `negative`: digits <= 2^53 and fraction <= 22, so both are
// exact doubles and the one division rounds correctly.
inline double exact_quotient(std::uint64_t digits, int fraction, bool negative) {
  static constexpr double k_powers_of_ten[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                               1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                               1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  double value = static_cast<double>(digits);
  if (fraction > 0) value /= k_powers_of_ten[fraction];
  return negative ? -value : value;
}

inline bool exact_decimal(std::string_view text, double& value) {
  std::size_t i = 0;
  const bool negative = !text.empty() && text[0] == '-';
  if (negative) ++i;
  std::uint64_t digits = 0;
  int count = 0;
  int fraction = -1; // digits after the point; -1 before it
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.') {
      fraction = 0;
      continue;
    }
    if (c < '0' || c > '9' || ++count > 19) return false;
    digits = digits * 10 + static_cast<std::uint64_t>(c - '0');
    if (fraction >= 0) ++fraction;
  }
  if (count == 0 || digits > (std::uint64_t{1} << 53) || fraction > 22) return false;
  value = exact_quotient(digits, fraction, negative);
  return true;
}

// False when the number literal `text` overflows a double.
bool json_finite_number(std::string_view text);

class JsonScanner {
public:
  // Where the scanner stood, with what it had noted: rewind() returns to it.
  struct Mark {
    const char* at = nullptr;
    char* arena_at = nullptr;
    std::size_t nonstandard = 0;
    std::size_t lone_surrogates = 0;
  };

  JsonScanner(JsonDocument& document, std::string_view text)
      : m_document(document), m_p(text.data()), m_end(text.data() + text.size()),
        m_begin(text.data()) {}

  // The scanner's position, for a reader that runs over plain text itself (with the static
  // helpers below) and hands the rest to the scanner: seek() to where it got, read on, position().
  const char* position() const { return m_p; }
  const char* end() const { return m_end; }
  void seek(const char* at) { m_p = at; }

  std::size_t left() const { return static_cast<std::size_t>(m_end - m_p); }
  bool at_end() const { return m_p == m_end; }
  // The next byte; only when !at_end().
  char peek() const { return *m_p; }
  void advance(std::size_t bytes) { m_p += bytes; }

  void skip_whitespace() { m_p = after_whitespace(m_p, m_end); }

  static const char* after_whitespace(const char* p, const char* end) {
    // Every whitespace byte is at most a space: one comparison for the rest.
    while (p < end && static_cast<unsigned char>(*p) <= ' ' &&
           (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
      ++p;
    return p;
  }

  // The closing quote of the string whose first byte is at `p` when it is plain (printable
  // ASCII, no escape), which string() would read as it stands; null otherwise (string() then
  // reads it, or refuses it).
  static const char* plain_string_end(const char* p, const char* end) {
    for (;;) {
      if (end - p >= 8) {
        // Eight bytes at a time up to the first that is not plain ASCII text.
        std::uint64_t word = 0;
        std::memcpy(&word, p, sizeof word);
        const std::uint64_t special = special_bytes(word);
        if (special == 0) {
          p += 8;
          continue;
        }
        p += std::countr_zero(special) / 8;
      } else if (p == end) {
        return nullptr;
      }
      const auto c = static_cast<unsigned char>(*p);
      if (c == '"') return p;
      if (c == '\\' || c < 0x20 || c >= 0x80) return nullptr;
      ++p;
    }
  }

  // Skips whitespace, then takes `c` when it is next.
  bool consume(char c) {
    skip_whitespace();
    if (m_p == m_end || *m_p != c) return false;
    ++m_p;
    return true;
  }

  bool literal(std::string_view word) {
    if (static_cast<std::size_t>(m_end - m_p) < word.size() ||
        std::string_view(m_p, word.size()) != word)
      return false;
    m_p += word.size();
    return true;
  }

  Mark mark() const {
    return {m_p, m_arena_at, m_document.m_nonstandard.size(), m_document.m_lone_surrogates};
  }
  void rewind(const Mark& mark) {
    m_p = mark.at;
    m_arena_at = mark.arena_at;
    m_document.m_nonstandard.resize(mark.nonstandard);
    m_document.m_lone_surrogates = mark.lone_surrogates;
  }

  // A string at its opening quote; leaves the scanner past the closing one. `out` views the
  // text, or the arena where the string held escapes.
  bool string(std::string_view& out) {
    const char* start = ++m_p;
    if (const char* close = plain_string_end(start, m_end)) {
      out = std::string_view(start, static_cast<std::size_t>(close - start));
      m_p = close + 1;
      return true;
    }
    return string_rest(start, out);
  }

  // A byte value at `p`, 0 to 255 as JSON writes it (no sign, fraction, exponent or leading
  // zero), and `p` past it; false for any other text, `p` then anywhere in it.
  [[gnu::always_inline]] static bool byte_value(const char*& p, const char* end, unsigned& value) {
    if (p == end || *p < '0' || *p > '9') return false;
    value = static_cast<unsigned>(*p++ - '0');
    if (value == 0) return p == end || !is_digit(*p);
    for (int i = 0; i < 2 && p < end && is_digit(*p); ++i)
      value = value * 10 + static_cast<unsigned>(*p++ - '0');
    return value <= 255 && (p == end || !is_digit(*p));
  }

  // A number literal at `p` without an exponent (-?int(.frac)?) of at most 19 digits whose
  // value exact_decimal() finds, read in one pass: its value, and `p` past it. False, `p`
  // unmoved, for any other text, which number() then reads.
  [[gnu::always_inline]] static bool plain_decimal(const char*& p, const char* end, double& value) {
    const char* at = p;
    const bool negative = at < end && *at == '-';
    if (negative) ++at;
    if (at == end || !is_digit(*at)) return false;
    const char* first = at;
    std::uint64_t digits = 0;
    if (*at == '0')
      ++at;
    else
      for (; at < end && is_digit(*at); ++at)
        digits = digits * 10 + static_cast<std::uint64_t>(*at - '0');
    std::ptrdiff_t fraction = 0;
    if (at < end && *at == '.') {
      const char* point = at++;
      if (at == end || !is_digit(*at)) return false;
      for (; at < end && is_digit(*at); ++at)
        digits = digits * 10 + static_cast<std::uint64_t>(*at - '0');
      fraction = at - point - 1;
    }
    // Past 19 digits the sum may have wrapped: it is not read.
    const std::ptrdiff_t count = at - first - (fraction > 0 ? 1 : 0);
    if ((at < end && (*at == 'e' || *at == 'E')) || count > 19 ||
        digits > (std::uint64_t{1} << 53) || fraction > 22)
      return false;
    value = exact_quotient(digits, static_cast<int>(fraction), negative);
    p = at;
    return true;
  }

  // A number literal, or NaN, Infinity or -Infinity (Python's json.dumps spelling), at the
  // scanner; a literal outside strict JSON is noted (JsonDocument::nonstandard_numbers()).
  bool number(JsonLiteral& out) {
    const char* start = m_p;
    if (m_p < m_end && *m_p == 'N') return named(out, "NaN", JsonNumber::nan);
    if (m_p < m_end && *m_p == 'I') return named(out, "Infinity", JsonNumber::infinity);
    if (m_p < m_end && *m_p == '-') {
      if (m_end - m_p > 1 && m_p[1] == 'I')
        return named(out, "-Infinity", JsonNumber::negative_infinity);
      ++m_p;
    }
    if (m_p == m_end) return false;
    if (*m_p == '0') {
      ++m_p;
    } else if (*m_p >= '1' && *m_p <= '9') {
      while (m_p < m_end && is_digit(*m_p)) ++m_p;
    } else {
      return false;
    }
    bool integral = true;
    bool exponent = false;
    if (m_p < m_end && *m_p == '.') {
      ++m_p;
      if (m_p == m_end || !is_digit(*m_p)) return false;
      while (m_p < m_end && is_digit(*m_p)) ++m_p;
      integral = false;
    }
    if (m_p < m_end && (*m_p == 'e' || *m_p == 'E')) {
      ++m_p;
      if (m_p < m_end && (*m_p == '+' || *m_p == '-')) ++m_p;
      if (m_p == m_end || !is_digit(*m_p)) return false;
      while (m_p < m_end && is_digit(*m_p)) ++m_p;
      integral = false;
      exponent = true;
    }
    out.text = std::string_view(start, static_cast<std::size_t>(m_p - start));
    out.integral = integral;
    out.kind = JsonNumber::finite;
    if ((exponent || out.text.size() > 300) && !json_finite_number(out.text)) {
      out.kind = *start == '-' ? JsonNumber::negative_overflow : JsonNumber::overflow;
      note_nonstandard(start);
    }
    return true;
  }

private:
  static bool is_digit(char c) { return c >= '0' && c <= '9'; }

  // A flag in the top bit of each byte of `word` that is a quote, a backslash, a control
  // character or not ASCII; the lowest flag is exact (later ones may be spurious), which is all
  // string() reads of it. Bytes in memory order: little-endian.
  static std::uint64_t special_bytes(std::uint64_t word) {
    static_assert(std::endian::native == std::endian::little, "special_bytes reads bytes in order");
    constexpr std::uint64_t ones = 0x0101010101010101ULL;
    constexpr std::uint64_t tops = 0x8080808080808080ULL;
    const auto zero_byte = [&](std::uint64_t v) { return (v - ones) & ~v & tops; };
    const std::uint64_t below_space = (word - ones * 0x20) & ~word & tops;
    return zero_byte(word ^ (ones * '"')) | zero_byte(word ^ (ones * '\\')) | below_space |
           (word & tops);
  }

  // The slow halves, in json_document.cpp: a string from its first escape or non-ASCII byte,
  // the escapes decoded into the arena, and the number literals spelled as words.
  bool string_rest(const char* start, std::string_view& out);
  bool decode(const char* start, std::string_view& out);
  bool hex4(std::uint32_t& code);
  bool named(JsonLiteral& out, std::string_view word, JsonNumber kind);
  void note_nonstandard(const char* start);

  JsonDocument& m_document;
  const char* m_p;
  const char* m_end;
  const char* m_begin;
  char* m_arena_at = nullptr;
};

} // namespace llmrepro::probes::detail
