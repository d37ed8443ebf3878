// The token blob's encoder and decoder (the format: docs/design.md, "Token blobs"). Log
// probabilities are the bulk of a blob, so each is stored exactly in the shortest of three forms:
// the shortest decimal that reads back as the same double (what a JSON response usually held,
// e.g. -0.0123), a float32 when the double is one (what engines computing in float32 send), or
// the 8 bytes of the double. Version 2, written now, names one form and one candidate count for
// the whole blob: a token of that shape (the common one) is its text id with a flag bit and its
// values in that form, with no tag or header byte; any other token says its shape and tags each
// value, as every token of version 1 (schema version 2) did, which is still read. The encoder
// proves each value's decimal by decoding it (store/decimal.cpp), and picks the blob's form that
// writes fewest bytes.
#include "store/detail/token_blob.hpp"

#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <span>

#include "store/detail/decimal.hpp"

namespace llmrepro::store::detail {
namespace {

using core::ErrorCode;
using core::Result;

// The blob format of schema version 2, read but no longer written.
constexpr std::uint8_t k_token_blob_version_1 = 1;

// The tag byte before a tagged log probability.
enum Tag : std::uint8_t {
  k_unknown = 0,           // NaN: core::k_unknown_logprob; no payload
  k_positive_infinity = 1, // no payload
  k_negative_infinity = 2, // no payload
  k_float64 = 3,           // 8 bytes, IEEE 754 binary64, little-endian
  k_float32 = 4,           // 4 bytes, IEEE 754 binary32, little-endian; exact as a double
  k_negative_decimal = 5,  // varint mantissa, then one signed exponent byte: -(m x 10^e)
  k_positive_decimal = 6,  // the same, positive
};

// How every log probability of a regular token is written (version 2): the blob's form byte.
enum Form : std::uint8_t {
  k_form_tagged = 0,  // a tag, then its payload, as above
  k_form_float32 = 1, // the payload of k_float32 alone
  k_form_decimal = 2, // the payload of k_negative_decimal alone (a negative value, or -0.0)
  k_form_float64 = 3, // the payload of k_float64 alone
};
constexpr std::size_t k_form_count = 4;

char* put_varint(char* out, std::uint64_t value) {
  while (value >= 0x80) {
    *out++ = static_cast<char>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  *out++ = static_cast<char>(value);
  return out;
}

template <typename Word> char* put_little_endian(char* out, Word word) {
  for (std::size_t i = 0; i < sizeof(Word); ++i)
    *out++ = static_cast<char>((word >> (8 * i)) & 0xff);
  return out;
}

// Whether the double `value` is exactly a float32 (what engines computing in float32 send).
bool is_float32(double value) {
  return std::bit_cast<std::uint64_t>(static_cast<double>(static_cast<float>(value))) ==
         std::bit_cast<std::uint64_t>(value);
}

// Reads the blob front to back; every read checks the bytes left. A read past the end or of a
// malformed value fails the cursor: it keeps the first failure's message, reads nothing more, and
// returns zeros, so that the decoder asks failed() once a token instead of carrying an error value
// out of every byte it reads (a Result a byte cost more than the reading).
class Cursor {
public:
  explicit Cursor(std::string_view bytes) : m_bytes(bytes) {}

  std::size_t left() const { return m_bytes.size() - m_at; }
  bool failed() const { return m_failed; }
  core::Error error() const { return core::make_error(ErrorCode::input, m_failure); }
  // Fails with `what` unless a failure came first.
  void fail(std::string what) {
    if (!m_failed) m_failure = std::move(what);
    m_failed = true;
    m_at = m_bytes.size();
  }

  std::uint8_t byte() {
    if (m_at == m_bytes.size()) {
      fail(k_truncated);
      return 0;
    }
    return static_cast<std::uint8_t>(m_bytes[m_at++]);
  }

  // Nearly every varint of a blob is one or two bytes (a text id below 64 or 8,192 with its
  // flag bit, a mantissa below 128 or 16,384, as the 2125 of -2.125): read inline, the rest out
  // of line.
  std::uint64_t varint() {
    if (left() >= 2) {
      const auto first = static_cast<std::uint8_t>(m_bytes[m_at]);
      if ((first & 0x80) == 0) {
        ++m_at;
        return first;
      }
      const auto second = static_cast<std::uint8_t>(m_bytes[m_at + 1]);
      if ((second & 0x80) == 0) {
        m_at += 2;
        return (first & 0x7fu) | (std::uint64_t{second} << 7);
      }
    } else if (left() == 1 && (static_cast<std::uint8_t>(m_bytes[m_at]) & 0x80) == 0) {
      return static_cast<std::uint8_t>(m_bytes[m_at++]);
    }
    return long_varint();
  }

  // A stored decimal's mantissa (a varint) and exponent (a signed byte). Nearly every one is a
  // mantissa of one or two bytes with bytes to spare, read in one bounds check. False once the
  // cursor has failed.
  bool decimal(std::uint64_t& mantissa, int& exponent) {
    if (left() >= 3) {
      const auto first = static_cast<std::uint8_t>(m_bytes[m_at]);
      const auto second = static_cast<std::uint8_t>(m_bytes[m_at + 1]);
      if ((first & 0x80) == 0) {
        mantissa = first;
        exponent = static_cast<std::int8_t>(second);
        m_at += 2;
        return true;
      }
      if ((second & 0x80) == 0) {
        mantissa = (first & 0x7fu) | (std::uint64_t{second} << 7);
        exponent = static_cast<std::int8_t>(m_bytes[m_at + 2]);
        m_at += 3;
        return true;
      }
    }
    mantissa = varint();
    exponent = static_cast<std::int8_t>(byte());
    return !failed();
  }

  template <typename Word> Word little_endian() {
    if (left() < sizeof(Word)) {
      fail(k_truncated);
      return 0;
    }
    Word word = 0;
    for (std::size_t i = 0; i < sizeof(Word); ++i)
      word |= static_cast<Word>(static_cast<std::uint8_t>(m_bytes[m_at + i])) << (8 * i);
    m_at += sizeof(Word);
    return word;
  }

  static constexpr const char* k_truncated = "truncated";
  static core::Error truncated() { return core::make_error(ErrorCode::input, k_truncated); }

private:
  [[gnu::noinline]] std::uint64_t long_varint() {
    std::uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const std::uint8_t next = byte();
      if (failed()) return 0;
      if (shift == 63 && next > 1) break;
      value |= static_cast<std::uint64_t>(next & 0x7f) << shift;
      if ((next & 0x80) == 0) return value;
    }
    fail("a varint overflows 64 bits");
    return 0;
  }

  std::string_view m_bytes;
  std::size_t m_at = 0;
  bool m_failed = false;
  std::string m_failure; // the first failure's message
};

// Every NaN reads back as the unknown value, whatever its bits.
double known_or_unknown(double value) {
  return std::isnan(value) ? core::k_unknown_logprob : value;
}

double read_float32(Cursor& cursor) {
  return known_or_unknown(
      static_cast<double>(std::bit_cast<float>(cursor.little_endian<std::uint32_t>())));
}

double read_float64(Cursor& cursor) {
  return known_or_unknown(std::bit_cast<double>(cursor.little_endian<std::uint64_t>()));
}

// A decimal without an exact double's fast path: read as text is.
[[gnu::noinline]] double inexact_decimal(Cursor& cursor, bool negative, std::uint64_t mantissa,
                                         int exponent) {
  const auto value = decimal_value(negative, mantissa, exponent);
  if (!value) cursor.fail("a decimal log probability is out of range");
  return value.value_or(0.0);
}

[[gnu::always_inline]] inline double read_decimal(Cursor& cursor, bool negative) {
  std::uint64_t mantissa = 0;
  int exponent = 0;
  if (!cursor.decimal(mantissa, exponent)) return 0.0;
  // The fast path returns its double in a register: an std::optional<double> built from two
  // paths goes through the stack, whose 16-byte reload of two smaller stores stalled every
  // decimal of every blob.
  if (has_exact_value(mantissa, exponent)) return exact_value(negative, mantissa, exponent);
  return inexact_decimal(cursor, negative, mantissa, exponent);
}

double read_tagged(Cursor& cursor) {
  const std::uint8_t tag = cursor.byte();
  if (cursor.failed()) return 0.0;
  switch (tag) {
  case k_unknown: return core::k_unknown_logprob;
  case k_positive_infinity: return std::numeric_limits<double>::infinity();
  case k_negative_infinity: return -std::numeric_limits<double>::infinity();
  case k_float64: return read_float64(cursor);
  case k_float32: return read_float32(cursor);
  case k_negative_decimal:
  case k_positive_decimal: return read_decimal(cursor, tag == k_negative_decimal);
  default: cursor.fail("unknown log probability tag " + std::to_string(tag)); return 0.0;
  }
}

// A value in the blob's form, which the decoder's loop over the tokens is compiled for.
template <Form F> [[gnu::always_inline]] inline double read_form(Cursor& cursor) {
  if constexpr (F == k_form_float32)
    return read_float32(cursor);
  else if constexpr (F == k_form_decimal)
    return read_decimal(cursor, true);
  else if constexpr (F == k_form_float64)
    return read_float64(cursor);
  else
    return read_tagged(cursor);
}

// One log probability as the encoder may write it: the bytes it takes in each form (0 where the
// form cannot hold it), with what writing it needs.
struct Value {
  double value = 0.0;
  Tag tag = k_unknown; // of its shortest tagged form
  Decimal decimal;     // where its decimal form or tag is written
  std::array<std::uint8_t, k_form_count> sizes{};
};

// Describes `value` in `out`, a fresh Value (filled in place: there is one for every value).
void describe(Value& out, double value) {
  out.value = value;
  out.sizes[k_form_tagged] = 1;
  if (std::isnan(value)) return;
  if (std::isinf(value)) {
    out.tag = value > 0 ? k_positive_infinity : k_negative_infinity;
    return;
  }
  const bool float32 = is_float32(value);
  const std::size_t binary = float32 ? 4 : 8;
  out.tag = float32 ? k_float32 : k_float64;
  out.sizes[k_form_tagged] = static_cast<std::uint8_t>(1 + binary);
  out.sizes[k_form_float64] = 8;
  if (float32) out.sizes[k_form_float32] = 4;
  if (written_decimal(value, binary, out.decimal)) {
    const auto digits = static_cast<std::uint8_t>(varint_size(out.decimal.mantissa) + 1);
    if (out.decimal.negative) out.sizes[k_form_decimal] = digits;
    if (1 + digits < out.sizes[k_form_tagged]) {
      out.tag = out.decimal.negative ? k_negative_decimal : k_positive_decimal;
      out.sizes[k_form_tagged] = static_cast<std::uint8_t>(1 + digits);
    }
  }
}

char* put_decimal(char* out, const Decimal& decimal) {
  out = put_varint(out, decimal.mantissa);
  *out++ = static_cast<char>(static_cast<std::int8_t>(decimal.exponent));
  return out;
}

char* put_float32(char* out, double value) {
  return put_little_endian(out, std::bit_cast<std::uint32_t>(static_cast<float>(value)));
}

char* put_float64(char* out, double value) {
  return put_little_endian(out, std::bit_cast<std::uint64_t>(value));
}

// Writes `value` in `form`, one that holds it, at `out`; returns the end.
char* put_value(char* out, const Value& value, std::size_t form) {
  switch (form) {
  case k_form_float32: return put_float32(out, value.value);
  case k_form_decimal: return put_decimal(out, value.decimal);
  case k_form_float64: return put_float64(out, value.value);
  default: break;
  }
  *out++ = static_cast<char>(value.tag);
  switch (value.tag) {
  case k_float32: return put_float32(out, value.value);
  case k_float64: return put_float64(out, value.value);
  case k_negative_decimal:
  case k_positive_decimal: return put_decimal(out, value.decimal);
  default: return out; // unknown and infinite: no payload
  }
}

// Whether two log probabilities are stored the same: bit for bit, or both unknown.
bool same_stored(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

// Whether the first candidate of `token` is the token itself; `ids` are the token's text id and
// its candidates', which name texts one to one, so equal ids are equal texts.
bool first_is_token(const core::TokenLogprob& token, std::span<const std::uint64_t> ids) {
  return !token.top.empty() && ids[1] == ids[0] && same_stored(token.top[0].logprob, token.logprob);
}

// The candidate count of most tokens (the smallest of the most common).
std::uint64_t usual_candidate_count(const std::vector<core::TokenLogprob>& tokens) {
  std::array<std::size_t, 64> counts{};
  std::uint64_t best = 0;
  for (const auto& token : tokens) {
    const std::size_t size = token.top.size();
    if (size >= counts.size()) continue;
    ++counts[size];
    if (counts[size] > counts[best] || (counts[size] == counts[best] && size < best)) best = size;
  }
  return best;
}

// A token's header as version 1 wrote it: its candidate count shifted left once, the low bit set
// when the first candidate is the token itself (not written again).
std::uint64_t shape_of(const core::TokenLogprob& token, bool first_same) {
  return (static_cast<std::uint64_t>(token.top.size()) << 1) | (first_same ? 1 : 0);
}

// Whether a token is written regular: it can be (`regular` bytes, not 0) and that is no longer.
bool written_regular(std::size_t regular, std::size_t irregular) {
  return regular != 0 && regular <= irregular;
}

// Reads the rest of a token with an explicit shape (every version 1 token, an irregular version 2
// one) after its text and log probability: the candidates its shape counts, tagged.
template <typename TextOf>
void read_shaped_candidates(Cursor& cursor, std::uint64_t shape, const TextOf& text_of,
                            core::TokenLogprob& token) {
  const std::uint64_t candidates = shape >> 1;
  const bool first_same = (shape & 1) != 0;
  if (first_same && candidates == 0)
    return cursor.fail("a token repeats a candidate it does not have");
  const std::uint64_t written = candidates - (first_same ? 1 : 0);
  if (written > cursor.left() / 2) return cursor.fail(Cursor::k_truncated);
  token.top.reserve(candidates);
  if (first_same) token.top.push_back({token.token, token.logprob});
  for (std::uint64_t k = 0; k < written && !cursor.failed(); ++k) {
    core::TokenCandidate& candidate = token.top.emplace_back();
    candidate.token = text_of(cursor.varint());
    candidate.logprob = read_tagged(cursor);
  }
}

// What the blob's head says of its tokens.
struct Blob {
  std::uint64_t count = 0;
  std::uint64_t usual = 0; // the candidates of a regular token (version 2)
  bool version_1 = false;
};

const core::TokenText k_no_text;

[[gnu::noinline, gnu::cold]] const core::TokenText& unknown_text(Cursor& cursor, std::uint64_t id) {
  cursor.fail("unknown token text id " + std::to_string(id)); // kept unless a failure came first
  return k_no_text;
}

// The text `id` names; an unknown id fails the cursor.
inline const core::TokenText& text_of(Cursor& cursor, const TokenTexts& texts, std::uint64_t id) {
  if (texts.has(id)) [[likely]]
    return texts.text[id];
  return unknown_text(cursor, id);
}

// Reads the blob's tokens after its head into `tokens`, each regular one's values in form F;
// stops at the first failure, which the cursor keeps.
template <Form F>
void decode_tokens(Cursor& cursor, const Blob& blob, const TokenTexts& texts,
                   std::vector<core::TokenLogprob>& tokens) {
  const auto text = [&](std::uint64_t id) -> const core::TokenText& {
    return text_of(cursor, texts, id);
  };
  tokens.reserve(blob.count);
  for (std::uint64_t i = 0; i < blob.count; ++i) {
    core::TokenLogprob& token = i < tokens.size() ? tokens[i] : tokens.emplace_back();
    // Version 1: the text id; version 2: the text id and, in the low bit, whether the token is
    // irregular (says its shape and tags its values).
    const std::uint64_t head = cursor.varint();
    const bool regular = !blob.version_1 && (head & 1) == 0;
    token.token = text(blob.version_1 ? head : head >> 1);
    if (regular) {
      token.logprob = read_form<F>(cursor);
      if (blob.usual > 0 && blob.usual - 1 > cursor.left() / 2) cursor.fail(Cursor::k_truncated);
      if (cursor.failed()) return; // before a resize a corrupt count asks for
      // A list lent from an earlier decode nearly always has the usual count already: its
      // candidates are overwritten in place, not destroyed and built again.
      if (token.top.size() != blob.usual) {
        token.top.clear();
        token.top.resize(blob.usual);
      }
      core::TokenCandidate* const top = token.top.data();
      if (blob.usual > 0) {
        top[0].token = token.token;
        top[0].logprob = token.logprob;
      }
      for (std::uint64_t k = 1; k < blob.usual && !cursor.failed(); ++k) {
        top[k].token = text(cursor.varint());
        top[k].logprob = read_form<F>(cursor);
      }
    } else {
      token.top.clear();
      token.logprob = read_tagged(cursor);
      read_shaped_candidates(cursor, cursor.varint(), text, token);
    }
    if (cursor.failed()) return;
  }
}

} // namespace

std::string encode_token_blob(const std::vector<core::TokenLogprob>& tokens,
                              std::span<const std::uint64_t> text_ids) {
  // Each token's written values (its log probability, then its candidates but a first that is
  // the token itself) with their text ids, in writing order.
  std::size_t value_count = 0; // a bound: a first candidate that is the token is not written
  for (const auto& token : tokens) value_count += 1 + token.top.size();
  std::vector<Value> values(value_count);
  std::vector<std::uint64_t> ids(value_count);
  std::vector<std::uint8_t> first_same(tokens.size());
  std::size_t text = 0; // text_ids[text]: the token's, then its candidates'
  std::size_t written = 0;
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    const auto& token = tokens[t];
    first_same[t] = first_is_token(token, text_ids.subspan(text, 1 + token.top.size())) ? 1 : 0;
    ids[written] = text_ids[text];
    describe(values[written++], token.logprob);
    for (std::size_t k = first_same[t]; k < token.top.size(); ++k) {
      ids[written] = text_ids[text + 1 + k];
      describe(values[written++], token.top[k].logprob);
    }
    text += 1 + token.top.size();
  }
  // The blob's shape: the usual candidate count, the first being the token itself; and its form,
  // whichever writes fewest bytes, each token written regular where that is shorter.
  const std::uint64_t usual = usual_candidate_count(tokens);
  // The bytes of each token written irregular, and regular in each form (0 where it cannot be).
  struct Sizes {
    std::size_t irregular = 0;
    std::array<std::size_t, k_form_count> regular{};
  };
  std::vector<Sizes> sizes(tokens.size());
  std::vector<std::size_t> starts(tokens.size() + 1); // token t's values: [starts[t], starts[t+1])
  std::array<std::size_t, k_form_count> cost{};
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    const std::size_t at = starts[t];
    const std::size_t end = at + 1 + tokens[t].top.size() - first_same[t];
    starts[t + 1] = end;
    std::size_t id_bytes = 0;
    std::size_t tagged_bytes = 0;
    std::array<std::size_t, k_form_count> form_bytes{};
    std::array<bool, k_form_count> fits{};
    fits.fill(tokens[t].top.size() == usual && (usual == 0 || first_same[t] != 0));
    for (std::size_t v = at; v < end; ++v) {
      id_bytes += v == at ? 0 : varint_size(ids[v]);
      tagged_bytes += values[v].sizes[k_form_tagged];
      for (std::size_t f = 0; f < k_form_count; ++f) {
        form_bytes[f] += values[v].sizes[f];
        fits[f] = fits[f] && values[v].sizes[f] != 0;
      }
    }
    Sizes& bytes = sizes[t];
    bytes.irregular = varint_size((ids[at] << 1) | 1) +
                      varint_size(shape_of(tokens[t], first_same[t] != 0)) + id_bytes +
                      tagged_bytes;
    for (std::size_t f = 0; f < k_form_count; ++f) {
      if (fits[f]) bytes.regular[f] = varint_size(ids[at] << 1) + id_bytes + form_bytes[f];
      cost[f] +=
          written_regular(bytes.regular[f], bytes.irregular) ? bytes.regular[f] : bytes.irregular;
    }
  }
  std::size_t form = k_form_tagged;
  for (std::size_t f = 1; f < k_form_count; ++f)
    if (cost[f] < cost[form]) form = f;

  // The version, the token count and (for a non-empty list) the usual count and the form byte,
  // then exactly cost[form] bytes of tokens.
  std::string out(1 + 2 * 10 + 1 + cost[form], '\0');
  char* end = out.data();
  *end++ = static_cast<char>(k_token_blob_version);
  end = put_varint(end, tokens.size());
  if (!tokens.empty()) {
    end = put_varint(end, usual);
    *end++ = static_cast<char>(form);
  }
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    const std::size_t at = starts[t];
    const bool regular = written_regular(sizes[t].regular[form], sizes[t].irregular);
    const std::size_t written_form = regular ? form : std::size_t{k_form_tagged};
    // As version 1 wrote every token: the text, the log probability, the shape, the candidates.
    end = put_varint(end, (ids[at] << 1) | (regular ? 0 : 1));
    end = put_value(end, values[at], written_form);
    if (!regular) end = put_varint(end, shape_of(tokens[t], first_same[t] != 0));
    for (std::size_t v = at + 1; v < starts[t + 1]; ++v) {
      end = put_varint(end, ids[v]);
      end = put_value(end, values[v], written_form);
    }
  }
  out.resize(static_cast<std::size_t>(end - out.data()));
  return out;
}

Result<void> decode_token_blob(std::string_view blob, const TokenTexts& texts,
                               std::vector<core::TokenLogprob>& tokens) {
  Cursor cursor(blob);
  const std::uint8_t version = cursor.byte();
  if (cursor.failed()) return cursor.error();
  if (version != k_token_blob_version && version != k_token_blob_version_1)
    return core::make_error(ErrorCode::input, "token blob version " + std::to_string(version) +
                                                  " is neither 1 nor " +
                                                  std::to_string(k_token_blob_version));
  const std::uint64_t count = cursor.varint();
  // Every token takes at least 2 bytes (version 1: 3), and version 2 writes the blob's shape
  // first: a count beyond that is a corrupt blob, not a reason to allocate.
  const bool version_1 = version == k_token_blob_version_1;
  std::uint64_t usual = 0;
  auto form = k_form_tagged;
  if (!version_1 && count > 0) {
    usual = cursor.varint();
    const std::uint8_t form_byte = cursor.byte();
    if (!cursor.failed() && form_byte >= k_form_count)
      return core::make_error(ErrorCode::input,
                              "unknown log probability form " + std::to_string(form_byte));
    form = static_cast<Form>(form_byte);
  }
  if (cursor.failed()) return cursor.error();
  if (count > cursor.left() / (version_1 ? 3 : 2)) return Cursor::truncated();
  const Blob shape{count, usual, version_1};
  switch (form) {
  case k_form_float32: decode_tokens<k_form_float32>(cursor, shape, texts, tokens); break;
  case k_form_decimal: decode_tokens<k_form_decimal>(cursor, shape, texts, tokens); break;
  case k_form_float64: decode_tokens<k_form_float64>(cursor, shape, texts, tokens); break;
  default: decode_tokens<k_form_tagged>(cursor, shape, texts, tokens); break;
  }
  if (cursor.failed()) return cursor.error();
  tokens.resize(count);
  if (cursor.left() != 0)
    return core::make_error(ErrorCode::input,
                            std::to_string(cursor.left()) + " bytes after the last token");
  return {};
}

bool is_token_concatenation(std::string_view text, const std::vector<core::TokenLogprob>& tokens) {
  std::size_t at = 0;
  for (const auto& token : tokens) {
    if (text.substr(at, token.token.size()) != token.token) return false;
    at += token.token.size();
  }
  return at == text.size();
}

std::string token_concatenation(const std::vector<core::TokenLogprob>& tokens) {
  std::size_t size = 0;
  for (const auto& token : tokens) size += token.token.size();
  std::string text;
  text.reserve(size);
  for (const auto& token : tokens) text += token.token;
  return text;
}

} // namespace llmrepro::store::detail
