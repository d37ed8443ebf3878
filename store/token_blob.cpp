// The token blob's encoder and decoder (the format: docs/design.md, "Token blobs"). Log
// probabilities are the bulk of a blob, so each is stored in the shortest of three exact forms:
// the shortest decimal that reads back as the same double (what a JSON response usually held,
// e.g. -0.0123 in 3 to 6 bytes), a float32 when the double is one (what engines computing in
// float32 send), or the 8 bytes of the double. The encoder proves each choice by decoding it.
#include "store/detail/token_blob.hpp"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

namespace llmrepro::store::detail {
namespace {

using core::ErrorCode;
using core::Result;

// The tag byte before each log probability.
enum Tag : std::uint8_t {
  k_unknown = 0,           // NaN: core::k_unknown_logprob; no payload
  k_positive_infinity = 1, // no payload
  k_negative_infinity = 2, // no payload
  k_float64 = 3,           // 8 bytes, IEEE 754 binary64, little-endian
  k_float32 = 4,           // 4 bytes, IEEE 754 binary32, little-endian; exact as a double
  k_negative_decimal = 5,  // varint mantissa, then one signed exponent byte: -(m x 10^e)
  k_positive_decimal = 6,  // the same, positive
};

void put_varint(std::string& out, std::uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

template <typename Word> void put_little_endian(std::string& out, Word word) {
  for (std::size_t i = 0; i < sizeof(Word); ++i)
    out.push_back(static_cast<char>((word >> (8 * i)) & 0xff));
}

// Reads the blob front to back; every read checks the bytes left.
class Cursor {
public:
  explicit Cursor(std::string_view bytes) : m_bytes(bytes) {}

  std::size_t left() const { return m_bytes.size() - m_at; }

  Result<std::uint8_t> byte() {
    if (m_at == m_bytes.size()) return truncated();
    return static_cast<std::uint8_t>(m_bytes[m_at++]);
  }

  Result<std::uint64_t> varint() {
    std::uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      std::uint8_t next = 0;
      LLMREPRO_TRY_ASSIGN(next, byte());
      if (shift == 63 && next > 1)
        return core::make_error(ErrorCode::input, "a varint overflows 64 bits");
      value |= static_cast<std::uint64_t>(next & 0x7f) << shift;
      if ((next & 0x80) == 0) return value;
    }
    return core::make_error(ErrorCode::input, "a varint overflows 64 bits");
  }

  template <typename Word> Result<Word> little_endian() {
    if (left() < sizeof(Word)) return truncated();
    Word word = 0;
    for (std::size_t i = 0; i < sizeof(Word); ++i)
      word |= static_cast<Word>(static_cast<std::uint8_t>(m_bytes[m_at + i])) << (8 * i);
    m_at += sizeof(Word);
    return word;
  }

private:
  static core::Error truncated() { return core::make_error(ErrorCode::input, "truncated"); }
  std::string_view m_bytes;
  std::size_t m_at = 0;
};

// The value of a decimal entry: `mantissa` x 10^`exponent`, negated when `negative`, read as
// the nearest double (std::from_chars, round to nearest).
Result<double> decimal_value(bool negative, std::uint64_t mantissa, int exponent) {
  // A mantissa up to 2^53 and a power of ten up to 10^22 are exact doubles, so one product or
  // quotient is the nearest double, as from_chars reads it (Clinger's fast path): most log
  // probabilities a response held (-0.0123 is 123 x 10^-4) take no text at all.
  static constexpr double k_powers_of_ten[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                               1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                               1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  if (mantissa <= (std::uint64_t{1} << 53) && exponent >= -22 && exponent <= 22) {
    const auto exact = static_cast<double>(mantissa);
    const double value =
        exponent < 0 ? exact / k_powers_of_ten[-exponent] : exact * k_powers_of_ten[exponent];
    return negative ? -value : value;
  }
  // At most "-" + 20 digits + "e" + "-128": to_chars cannot run out of room.
  char text[64] = {};
  char* const limit = text + sizeof(text);
  char* end = text;
  if (negative) *end++ = '-';
  end = std::to_chars(end, limit - 8, mantissa).ptr;
  *end++ = 'e';
  end = std::to_chars(end, limit, exponent).ptr;
  double value = 0.0;
  const auto parsed = std::from_chars(text, end, value);
  if (parsed.ec != std::errc() || parsed.ptr != end)
    return core::make_error(ErrorCode::input, "a decimal log probability is out of range");
  return value;
}

Result<double> read_value(Cursor& cursor) {
  std::uint8_t tag = 0;
  LLMREPRO_TRY_ASSIGN(tag, cursor.byte());
  switch (tag) {
  case k_unknown: return core::k_unknown_logprob;
  case k_positive_infinity: return std::numeric_limits<double>::infinity();
  case k_negative_infinity: return -std::numeric_limits<double>::infinity();
  case k_float64: {
    std::uint64_t bits = 0;
    LLMREPRO_TRY_ASSIGN(bits, cursor.little_endian<std::uint64_t>());
    return std::bit_cast<double>(bits);
  }
  case k_float32: {
    std::uint32_t bits = 0;
    LLMREPRO_TRY_ASSIGN(bits, cursor.little_endian<std::uint32_t>());
    return static_cast<double>(std::bit_cast<float>(bits));
  }
  case k_negative_decimal:
  case k_positive_decimal: {
    std::uint64_t mantissa = 0;
    LLMREPRO_TRY_ASSIGN(mantissa, cursor.varint());
    std::uint8_t exponent = 0;
    LLMREPRO_TRY_ASSIGN(exponent, cursor.byte());
    return decimal_value(tag == k_negative_decimal, mantissa,
                         static_cast<int>(static_cast<std::int8_t>(exponent)));
  }
  default:
    return core::make_error(ErrorCode::input, "unknown log probability tag " + std::to_string(tag));
  }
}

// The decimal form of `value` (tag, mantissa, exponent byte), when its shortest round-trip
// decimal has a mantissa and an exponent that fit; empty otherwise.
std::string decimal_form(double value) {
  char text[64];
  const auto written =
      std::to_chars(text, text + sizeof(text), value, std::chars_format::scientific);
  if (written.ec != std::errc()) return {};
  const std::string_view shortest(text, static_cast<std::size_t>(written.ptr - text));
  const std::size_t e = shortest.find('e');
  if (e == std::string_view::npos) return {};
  const bool negative = shortest.front() == '-';
  std::uint64_t mantissa = 0;
  int digits_after_point = 0;
  bool after_point = false;
  for (std::size_t i = negative ? 1 : 0; i < e; ++i) {
    const char c = shortest[i];
    if (c == '.') {
      after_point = true;
      continue;
    }
    if (mantissa > std::numeric_limits<std::uint64_t>::max() / 10) return {};
    mantissa = mantissa * 10 + static_cast<std::uint64_t>(c - '0');
    if (after_point) ++digits_after_point;
  }
  int exponent = 0;
  const auto parsed = std::from_chars(shortest.data() + e + 1 + (shortest[e + 1] == '+' ? 1 : 0),
                                      shortest.data() + shortest.size(), exponent);
  if (parsed.ec != std::errc()) return {};
  exponent -= digits_after_point;
  if (exponent < -128 || exponent > 127) return {};
  std::string form(1, static_cast<char>(negative ? k_negative_decimal : k_positive_decimal));
  put_varint(form, mantissa);
  form.push_back(static_cast<char>(static_cast<std::int8_t>(exponent)));
  return form;
}

// Whether `form` reads back as exactly `value` (bit for bit).
bool reads_back(const std::string& form, double value) {
  Cursor cursor(form);
  auto read = read_value(cursor);
  return read && cursor.left() == 0 &&
         std::bit_cast<std::uint64_t>(*read) == std::bit_cast<std::uint64_t>(value);
}

void put_value(std::string& out, double value) {
  if (std::isnan(value)) {
    out.push_back(static_cast<char>(k_unknown));
    return;
  }
  if (std::isinf(value)) {
    out.push_back(static_cast<char>(value > 0 ? k_positive_infinity : k_negative_infinity));
    return;
  }
  std::string best(1, static_cast<char>(k_float64));
  put_little_endian(best, std::bit_cast<std::uint64_t>(value));
  const auto narrow = static_cast<float>(value);
  if (static_cast<double>(narrow) == value && !(value == 0.0 && std::signbit(value))) {
    std::string single(1, static_cast<char>(k_float32));
    put_little_endian(single, std::bit_cast<std::uint32_t>(narrow));
    best = std::move(single);
  }
  if (std::string decimal = decimal_form(value);
      !decimal.empty() && decimal.size() < best.size() && reads_back(decimal, value))
    best = std::move(decimal);
  out += best;
}

// Whether two log probabilities are stored the same: bit for bit, or both unknown.
bool same_stored(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

} // namespace

std::string encode_token_blob(const std::vector<core::TokenLogprob>& tokens,
                              const std::function<std::uint64_t(const std::string&)>& text_id) {
  std::string out;
  out.reserve(8 + tokens.size() * 16);
  out.push_back(static_cast<char>(k_token_blob_version));
  put_varint(out, tokens.size());
  for (const auto& token : tokens) {
    const std::uint64_t id = text_id(token.token);
    put_varint(out, id);
    put_value(out, token.logprob);
    // The first candidate is most often the sampled token itself: then it is not written again.
    const bool first_is_token = !token.top.empty() && token.top[0].token == token.token &&
                                same_stored(token.top[0].logprob, token.logprob);
    put_varint(out, (static_cast<std::uint64_t>(token.top.size()) << 1) | (first_is_token ? 1 : 0));
    for (std::size_t k = first_is_token ? 1 : 0; k < token.top.size(); ++k) {
      put_varint(out, text_id(token.top[k].token));
      put_value(out, token.top[k].logprob);
    }
  }
  return out;
}

Result<void> decode_token_blob(std::string_view blob, const TokenTexts& texts,
                               std::vector<core::TokenLogprob>& tokens) {
  Cursor cursor(blob);
  std::uint8_t version = 0;
  LLMREPRO_TRY_ASSIGN(version, cursor.byte());
  if (version != k_token_blob_version)
    return core::make_error(ErrorCode::input, "token blob version " + std::to_string(version) +
                                                  " is not " +
                                                  std::to_string(k_token_blob_version));
  std::uint64_t count = 0;
  LLMREPRO_TRY_ASSIGN(count, cursor.varint());
  // Every token takes at least 3 bytes (id, tag, candidate count): a count beyond that is a
  // corrupt blob, not a reason to allocate.
  if (count > cursor.left() / 3) return core::make_error(ErrorCode::input, "truncated");
  const auto text_of = [&](std::uint64_t id) -> Result<const std::string*> {
    if (!texts.has(id))
      return core::make_error(ErrorCode::input, "unknown token text id " + std::to_string(id));
    return &texts.text[id];
  };
  tokens.reserve(tokens.size() + count);
  for (std::uint64_t i = 0; i < count; ++i) {
    core::TokenLogprob token;
    std::uint64_t id = 0;
    LLMREPRO_TRY_ASSIGN(id, cursor.varint());
    const std::string* text = nullptr;
    LLMREPRO_TRY_ASSIGN(text, text_of(id));
    token.token = *text;
    LLMREPRO_TRY_ASSIGN(token.logprob, read_value(cursor));
    std::uint64_t header = 0;
    LLMREPRO_TRY_ASSIGN(header, cursor.varint());
    const std::uint64_t candidates = header >> 1;
    const bool first_is_token = (header & 1) != 0;
    if (first_is_token && candidates == 0)
      return core::make_error(ErrorCode::input, "a token repeats a candidate it does not have");
    const std::uint64_t written = candidates - (first_is_token ? 1 : 0);
    if (written > cursor.left() / 2) return core::make_error(ErrorCode::input, "truncated");
    token.top.reserve(candidates);
    if (first_is_token) token.top.push_back({token.token, token.logprob});
    for (std::uint64_t k = 0; k < written; ++k) {
      core::TokenCandidate candidate;
      LLMREPRO_TRY_ASSIGN(id, cursor.varint());
      LLMREPRO_TRY_ASSIGN(text, text_of(id));
      candidate.token = *text;
      LLMREPRO_TRY_ASSIGN(candidate.logprob, read_value(cursor));
      token.top.push_back(std::move(candidate));
    }
    tokens.push_back(std::move(token));
  }
  if (cursor.left() != 0)
    return core::make_error(ErrorCode::input,
                            std::to_string(cursor.left()) + " bytes after the last token");
  return {};
}

} // namespace llmrepro::store::detail
