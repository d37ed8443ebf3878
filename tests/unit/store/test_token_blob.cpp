// The token blob (docs/design.md, "Token blobs"): version 2 as written, version 1 as still read.
// Exact round trips of every kind of log probability, in every form and shape; the documented
// bytes of scripted lists; and errors, never undefined behaviour, for every truncation and
// corruption.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "store/detail/token_blob.hpp"

using namespace llmrepro;
using store::detail::decode_token_blob;
using store::detail::encode_token_blob;
using store::detail::TokenTexts;

namespace {

// Ids in order of first use, from 1, as token_texts assigns them.
struct Interned {
  std::map<std::string, std::uint64_t> ids;
  TokenTexts texts;

  std::uint64_t operator()(std::string_view text) {
    auto [it, added] = ids.emplace(text, ids.size() + 1);
    if (added) {
      texts.text.resize(it->second + 1);
      texts.present.resize(it->second + 1, false);
      texts.text[it->second] = text;
      texts.present[it->second] = true;
    }
    return it->second;
  }
};

// Encodes `tokens` with the ids `interned` gives their texts, in the order TextInterner::intern()
// takes them: each token's text, then its candidates'.
std::string encode(const std::vector<core::TokenLogprob>& tokens, Interned& interned) {
  std::vector<std::uint64_t> ids;
  for (const auto& token : tokens) {
    ids.push_back(interned(token.token));
    for (const auto& candidate : token.top) ids.push_back(interned(candidate.token));
  }
  return encode_token_blob(tokens, ids);
}

bool same_bits(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (const int value : values) out.push_back(static_cast<char>(value));
  return out;
}

void check_same_tokens(const std::vector<core::TokenLogprob>& decoded,
                       const std::vector<core::TokenLogprob>& tokens) {
  REQUIRE(decoded.size() == tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    CAPTURE(i);
    CHECK(decoded[i].token == tokens[i].token);
    CHECK(same_bits(decoded[i].logprob, tokens[i].logprob));
    REQUIRE(decoded[i].top.size() == tokens[i].top.size());
    for (std::size_t k = 0; k < tokens[i].top.size(); ++k) {
      CAPTURE(k);
      CHECK(decoded[i].top[k].token == tokens[i].top[k].token);
      CHECK(same_bits(decoded[i].top[k].logprob, tokens[i].top[k].logprob));
    }
  }
}

// Decodes `blob` and checks that it holds exactly `tokens`: texts, values bit for bit (every NaN
// as unknown), candidates in order; and the same into lists that held other tokens before (a
// streaming load decodes into the lists of the prompt before), longer and shorter.
void check_decodes_to(const std::string& blob, const TokenTexts& texts,
                      const std::vector<core::TokenLogprob>& tokens) {
  std::vector<core::TokenLogprob> decoded;
  const auto result = decode_token_blob(blob, texts, decoded);
  REQUIRE_MESSAGE(result, (result ? "" : result.error().message));
  check_same_tokens(decoded, tokens);
  // Lists lent from an earlier decode: candidates of another count, and of the usual two (which
  // the decoder overwrites in place), with texts on the heap.
  const core::TokenLogprob stale{"a stale token's text, longer than the short-string buffer",
                                 -7.0,
                                 {{"x", -1.0}, {"y", -2.0}, {"z", -3.0}, {"w", -4.0}}};
  const core::TokenLogprob stale_two{
      "another stale token's text, on the heap too",
      -7.0,
      {{"a stale candidate's text, on the heap too", -1.0}, {"y", -2.0}}};
  for (const auto& lent : {stale, stale_two})
    for (const std::size_t held : {tokens.size() + 3, tokens.size() / 2}) {
      CAPTURE(held);
      std::vector<core::TokenLogprob> reused(held, lent);
      REQUIRE(decode_token_blob(blob, texts, reused));
      check_same_tokens(reused, tokens);
    }
}

// Every kind of double a log probability can be: signed zeros, denormals (binary64 and binary32),
// NaNs of several bit patterns, infinities, float32 values and doubles that are none, the
// extremes of the decimal exponent byte.
std::vector<double> edge_values() {
  return {-0.0123,
          -0.1234567890123456789,
          -1e-300,
          -4.9406564584124654e-324, // the smallest binary64 denormal
          -2.2250738585072009e-308, // the largest binary64 denormal
          static_cast<double>(-std::numeric_limits<float>::denorm_min()),
          static_cast<double>(-std::numeric_limits<float>::min()),
          -std::numeric_limits<double>::max(),
          static_cast<double>(-std::numeric_limits<float>::max()),
          -0.0,
          0.0,
          -9999.0,
          -0.7000000000000001,
          static_cast<double>(-0.0123f), // a float32 sent as its double
          static_cast<double>(-1.1f),
          -1.5,
          -2.125,
          1e300,
          -1e-128,
          -1e127,
          -1.0000000000000002e-129,
          std::numeric_limits<double>::infinity(),
          -std::numeric_limits<double>::infinity(),
          core::k_unknown_logprob,
          -std::numeric_limits<double>::quiet_NaN(),
          std::numeric_limits<double>::signaling_NaN()};
}

} // namespace

TEST_CASE("token blob: every log probability reads back bit for bit, in every shape") {
  const std::vector<double> values = edge_values();
  // Each value as a regular token (top-2, the first candidate the token itself) in a blob of its
  // own, so that the blob's form is the value's best; then all of them in one blob, whatever
  // form it picks; then in irregular shapes (no candidates, a first candidate that is not the
  // token, five candidates).
  for (const double value : values) {
    CAPTURE(value);
    const std::vector<core::TokenLogprob> alone = {
        {"t", value, {{"t", value}, {"u", value}}},
        {"v", value, {{"v", value}, {"t", value}}},
    };
    Interned interned;
    check_decodes_to(encode(alone, interned), interned.texts, alone);
  }
  std::vector<core::TokenLogprob> tokens;
  for (const double value : values) {
    tokens.push_back({"t", value, {{"t", value}, {"u", -value}}});
    tokens.push_back({"u", value, {}});
    tokens.push_back({"w", value, {{"x", value}, {"w", value}}});
    tokens.push_back({"\xff\xfe",
                      value,
                      {{"\xff\xfe", value},
                       {"a", value / 3},
                       {"b", -value},
                       {"c", value * 2},
                       {std::string(10000, 'z') + std::string(1, '\0'), value}}});
  }
  Interned interned;
  check_decodes_to(encode(tokens, interned), interned.texts, tokens);
}

TEST_CASE("token blob: a regular token's first candidate is the token only bit for bit") {
  // -0.0 and 0.0 compare equal but are different log probabilities: the candidate is written.
  const std::vector<core::TokenLogprob> tokens = {{"t", -0.0, {{"t", 0.0}, {"u", -1.5}}},
                                                  {"t", 0.0, {{"t", -0.0}, {"u", -1.5}}}};
  Interned interned;
  check_decodes_to(encode(tokens, interned), interned.texts, tokens);
}

TEST_CASE("token blob: the documented bytes of scripted lists") {
  SUBCASE("short decimals: every value in the decimal form") {
    Interned interned;
    const std::vector<core::TokenLogprob> tokens = {
        {"Hi", -0.0123, {{"Hi", -0.0123}, {"Hey", -4.5}}},
        {"!", -0.25, {{"!", -0.25}, {"?", -1.5}}},
    };
    const std::string blob = encode(tokens, interned);
    // version 2, 2 tokens, usually 2 candidates, form 2 (decimal);
    // "Hi" id 1 << 1, -123e-4, "Hey" id 2, -45e-1;
    // "!" id 3 << 1, -25e-2, "?" id 4, -15e-1.
    CHECK(blob == bytes({0x02, 0x02, 0x02, 0x02,             //
                         0x02, 0x7b, 0xfc, 0x02, 0x2d, 0xff, //
                         0x06, 0x19, 0xfe, 0x04, 0x0f, 0xff}));
    check_decodes_to(blob, interned.texts, tokens);
  }
  SUBCASE("float32 values: four bytes each, no tag") {
    Interned interned;
    const auto a = static_cast<double>(-0.0123f);
    const auto b = static_cast<double>(-1.1f);
    const std::vector<core::TokenLogprob> tokens = {{"a", a, {{"a", a}, {"b", b}}}};
    const std::string blob = encode(tokens, interned);
    // version 2, 1 token, usually 2 candidates, form 1 (binary32); "a" id 1 << 1, -0.0123f,
    // "b" id 2, -1.1f.
    CHECK(blob == bytes({0x02, 0x01, 0x02, 0x01,       //
                         0x02, 0xf0, 0x85, 0x49, 0xbc, //
                         0x02, 0xcd, 0xcc, 0x8c, 0xbf}));
    check_decodes_to(blob, interned.texts, tokens);
  }
  SUBCASE("doubles that are no float32 and no short decimal: binary64") {
    Interned interned;
    const std::vector<core::TokenLogprob> tokens = {
        {"x", -0.1234567890123456789, {{"x", -0.1234567890123456789}, {"y", -0.7000000000000001}}}};
    const std::string blob = encode(tokens, interned);
    CHECK(blob == bytes({0x02, 0x01, 0x02, 0x03,                               //
                         0x02, 0x5f, 0xf6, 0x46, 0x37, 0xdd, 0x9a, 0xbf, 0xbf, //
                         0x02, 0x67, 0x66, 0x66, 0x66, 0x66, 0x66, 0xe6, 0xbf}));
    check_decodes_to(blob, interned.texts, tokens);
  }
  SUBCASE("irregular tokens say their shape and tag their values") {
    Interned interned;
    const std::vector<core::TokenLogprob> tokens = {
        {"Hi", -0.0123, {{"Hi", -0.0123}, {"Hey", -4.5}}},
        // No candidates and an unknown log probability.
        {"!", core::k_unknown_logprob, {}},
    };
    const std::string blob = encode(tokens, interned);
    // Two counts are as common: the smaller (0) is the usual one, and the form is tagged
    // (a NaN has no other). "Hi" is irregular: id 1 << 1 | 1, tagged -123e-4, shape
    // 2 << 1 | 1 (the first candidate is the token), "Hey" id 2, tagged -45e-1;
    // "!" is regular: id 3 << 1, tagged unknown.
    CHECK(blob == bytes({0x02, 0x02, 0x00, 0x00,                               //
                         0x03, 0x05, 0x7b, 0xfc, 0x05, 0x02, 0x05, 0x2d, 0xff, //
                         0x06, 0x00}));
    check_decodes_to(blob, interned.texts, tokens);
  }
  SUBCASE("signed zeros") {
    Interned interned;
    const std::vector<core::TokenLogprob> tokens = {
        {"z", -0.0, {{"z", -0.0}}}, {"p", 0.0, {{"p", 0.0}}}, {"z", -0.0, {{"z", -0.0}}}};
    const std::string blob = encode(tokens, interned);
    // Usually 1 candidate, form 2: -0.0 is the decimal -0e0; +0.0 is not negative, so its token
    // is irregular: id 2 << 1 | 1, tagged +0e0 (tag 6), shape 1 << 1 | 1.
    CHECK(blob == bytes({0x02, 0x03, 0x01, 0x02,       //
                         0x02, 0x00, 0x00,             //
                         0x05, 0x06, 0x00, 0x00, 0x03, //
                         0x02, 0x00, 0x00}));
    check_decodes_to(blob, interned.texts, tokens);
  }
  SUBCASE("an empty list is the version and a zero count") {
    Interned interned;
    CHECK(encode({}, interned) == bytes({0x02, 0x00}));
    check_decodes_to(bytes({0x02, 0x00}), interned.texts, {});
  }
}

TEST_CASE("token blob: version 1, as schema version 2 wrote it, still reads") {
  Interned interned;
  interned("Hi");
  interned("Hey");
  interned("!");
  // version 1, 2 tokens; "Hi" id 1, tagged -123e-4, header 2 candidates << 1 | 1, "Hey" id 2,
  // tagged -45e-1; "!" id 3, unknown, header 0.
  check_decodes_to(
      bytes({0x01, 0x02,                                           //
             0x01, 0x05, 0x7b, 0xfc, 0x05, 0x02, 0x05, 0x2d, 0xff, //
             0x03, 0x00, 0x00}),
      interned.texts,
      {{"Hi", -0.0123, {{"Hi", -0.0123}, {"Hey", -4.5}}}, {"!", core::k_unknown_logprob, {}}});
  // A float32 that needs more than 4 decimal digits, as its 4 bytes.
  check_decodes_to(bytes({0x01, 0x01, 0x01, 0x04, 0xf0, 0x85, 0x49, 0xbc, 0x00}), interned.texts,
                   {{"Hi", static_cast<double>(-0.0123f), {}}});
  std::vector<core::TokenLogprob> decoded;
  const auto truncated =
      decode_token_blob(bytes({0x01, 0x01, 0x01, 0x04, 0xf0}), interned.texts, decoded);
  REQUIRE_FALSE(truncated);
  CHECK(truncated.error().message == "truncated");
}

TEST_CASE("token blob: every truncation and corruption is an error") {
  Interned interned;
  std::vector<core::TokenLogprob> tokens;
  for (int i = 0; i < 20; ++i)
    tokens.push_back({"t" + std::to_string(i % 7),
                      -0.001 * i,
                      {{"t" + std::to_string(i % 7), -0.001 * i}, {"x", -1.0 / (i + 3)}}});
  tokens.push_back({"y", core::k_unknown_logprob, {{"x", -1.0}}});
  const std::string blob = encode(tokens, interned);
  for (std::size_t size = 0; size < blob.size(); ++size) {
    CAPTURE(size);
    std::vector<core::TokenLogprob> decoded;
    const auto result = decode_token_blob(blob.substr(0, size), interned.texts, decoded);
    CHECK_FALSE(result);
  }
  std::vector<core::TokenLogprob> decoded;
  SUBCASE("another blob version") {
    auto other = blob;
    other[0] = 3;
    const auto result = decode_token_blob(other, interned.texts, decoded);
    REQUIRE_FALSE(result);
    CHECK(result.error().message == "token blob version 3 is neither 1 nor 2");
  }
  SUBCASE("bytes after the last token") {
    const auto result = decode_token_blob(blob + std::string(1, '\0'), interned.texts, decoded);
    REQUIRE_FALSE(result);
    CHECK(result.error().message == "1 bytes after the last token");
  }
  SUBCASE("a text id that is not stored") {
    TokenTexts fewer = interned.texts;
    fewer.present[1] = false;
    const auto result = decode_token_blob(blob, fewer, decoded);
    REQUIRE_FALSE(result);
    CHECK(result.error().message == "unknown token text id 1");
  }
  SUBCASE("a count far beyond the bytes") {
    const auto result = decode_token_blob(bytes({0x02, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x02, 0x02}),
                                          interned.texts, decoded);
    REQUIRE_FALSE(result);
    CHECK(result.error().message == "truncated");
  }
  SUBCASE("a usual candidate count far beyond the bytes") {
    const auto result =
        decode_token_blob(bytes({0x02, 0x01, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x02, 0x02, 0x00, 0x00}),
                          interned.texts, decoded);
    REQUIRE_FALSE(result);
    CHECK(result.error().message == "truncated");
  }
  SUBCASE("an unknown value form") {
    const auto result =
        decode_token_blob(bytes({0x02, 0x01, 0x00, 0x04, 0x02, 0x00}), interned.texts, decoded);
    REQUIRE_FALSE(result);
    CHECK(result.error().message == "unknown log probability form 4");
  }
  SUBCASE("an unknown log probability tag") {
    const auto result = decode_token_blob(bytes({0x02, 0x01, 0x00, 0x00, 0x03, 0x09, 0x00}),
                                          interned.texts, decoded);
    REQUIRE_FALSE(result);
    CHECK(result.error().message == "unknown log probability tag 9");
  }
  SUBCASE("a shape that repeats a candidate it does not have") {
    const auto result = decode_token_blob(bytes({0x02, 0x01, 0x00, 0x00, 0x03, 0x00, 0x01}),
                                          interned.texts, decoded);
    REQUIRE_FALSE(result);
    CHECK(result.error().message == "a token repeats a candidate it does not have");
  }
}

TEST_CASE("token blob: a completion text is its tokens' texts one after another") {
  using store::detail::is_token_concatenation;
  using store::detail::token_concatenation;
  const std::vector<core::TokenLogprob> tokens = {
      {"The", -0.1, {}}, {"", -0.2, {}}, {" caf\xc3", -0.3, {}}, {"\xa9", -0.4, {}}};
  CHECK(token_concatenation(tokens) == "The caf\xc3\xa9");
  CHECK(is_token_concatenation("The caf\xc3\xa9", tokens));
  CHECK_FALSE(is_token_concatenation("The caf\xc3\xa9!", tokens));
  CHECK_FALSE(is_token_concatenation("The caf\xc3", tokens));
  CHECK_FALSE(is_token_concatenation("The cafe", tokens));
  CHECK_FALSE(is_token_concatenation("", tokens));
  CHECK(is_token_concatenation("", {}));
  CHECK_FALSE(is_token_concatenation("x", {}));
  CHECK(token_concatenation({}).empty());
}

TEST_CASE("token blob: short decimals are read back exactly") {
  // Values a response writes with a few digits (the decoder's exact fast path for a decimal:
  // mantissa up to 2^53, exponent within 22) and around that path's edges.
  std::mt19937_64 random(7);
  std::vector<core::TokenLogprob> tokens;
  for (int i = 0; i < 2000; ++i) {
    const int digits = 1 + static_cast<int>(random() % 17);
    const int scale = static_cast<int>(random() % 30);
    std::string text = "-" +
                       std::to_string(random() % 1000000000000000000ULL)
                           .substr(0, static_cast<std::size_t>(digits)) +
                       "e-" + std::to_string(scale);
    tokens.push_back({"t", std::strtod(text.c_str(), nullptr), {}});
  }
  for (const double value :
       {-9007199254740992.0, -9007199254740993.0, -1e22, -1e23, -1e-22, -1e-23})
    tokens.push_back({"t", value, {}});
  Interned interned;
  std::vector<core::TokenLogprob> decoded;
  const auto result = decode_token_blob(encode(tokens, interned), interned.texts, decoded);
  REQUIRE(result);
  REQUIRE(decoded.size() == tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    CAPTURE(tokens[i].logprob);
    CHECK(same_bits(decoded[i].logprob, tokens[i].logprob));
  }
}

namespace {

std::string hex(const std::string& blob) {
  static constexpr char k_digits[] = "0123456789abcdef";
  std::string out;
  for (const char c : blob) {
    const auto byte = static_cast<unsigned char>(c);
    out += k_digits[byte >> 4];
    out += k_digits[byte & 0xf];
  }
  return out;
}

// A token whose first candidate is itself (the usual shape), then `others`.
core::TokenLogprob usual(const std::string& text, double logprob, core::TokenCandidates others) {
  core::TokenLogprob token{text, logprob, {{text, logprob}}};
  for (auto& other : others) token.top.push_back(std::move(other));
  return token;
}

// One log probability of the kinds endpoints send, drawn from `random`: short decimals (what a
// JSON response usually holds), long ones, float32 values as their doubles, arbitrary bits,
// quotients, and the special values. Only raw engine output and strtod/strtof (correctly rounded)
// are used, so that the list is the same on every platform.
double corpus_value(std::mt19937_64& random) {
  const std::uint64_t r = random();
  const auto decimal = [&](int most_digits, int most_scale) {
    const std::string digits = std::to_string(random() % 100000000000000000ULL);
    const auto kept =
        static_cast<std::size_t>(1 + random() % static_cast<std::uint64_t>(most_digits));
    const std::string text = "-" + digits.substr(0, kept) + "e-" +
                             std::to_string(random() % static_cast<std::uint64_t>(most_scale + 1));
    return text;
  };
  switch (r % 9) {
  case 0: return std::strtod(decimal(6, 12).c_str(), nullptr);
  case 1: return std::strtod(decimal(17, 40).c_str(), nullptr);
  case 2: return static_cast<double>(std::strtof(decimal(9, 12).c_str(), nullptr));
  case 3: return static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(r >> 32)));
  case 4: return std::bit_cast<double>(random());
  case 5: return -static_cast<double>(random() % 1000) / static_cast<double>(1 + random() % 997);
  case 6: return -static_cast<double>(random() % 100000) * 0.001;
  case 7: return std::strtod(decimal(15, 22).c_str(), nullptr);
  default: {
    const double specials[] = {core::k_unknown_logprob,
                               -std::numeric_limits<double>::infinity(),
                               std::numeric_limits<double>::infinity(),
                               -9999.0,
                               -0.0,
                               0.0,
                               -4.9406564584124654e-324,
                               -1e-128,
                               -1e-129,
                               -1.1920928955078125e-07,
                               static_cast<double>(-std::numeric_limits<float>::denorm_min())};
    return specials[(r >> 8) % std::size(specials)];
  }
  }
}

// A completion's tokens drawn from `random`: mostly the usual shape with `top` candidates, some
// tokens of other shapes, texts from a small vocabulary (so that they repeat) with a few odd ones.
std::vector<core::TokenLogprob> corpus_tokens(std::mt19937_64& random, std::size_t count,
                                              std::size_t top) {
  const auto text = [&] {
    const std::uint64_t r = random() % 64;
    if (r == 0) return std::string();
    if (r == 1) return std::string("\xff\x00\xfe", 3);
    return " w" + std::to_string(r % 40);
  };
  std::vector<core::TokenLogprob> tokens;
  for (std::size_t i = 0; i < count; ++i) {
    core::TokenLogprob token{text(), corpus_value(random), {}};
    const std::uint64_t shape = random() % 16;
    const std::size_t candidates = shape == 0 ? 0 : shape == 1 ? 1 + random() % 25 : top;
    for (std::size_t k = 0; k < candidates; ++k) {
      if (k == 0 && shape != 2)
        token.top.push_back({token.token, token.logprob});
      else
        token.top.push_back({text(), corpus_value(random)});
    }
    tokens.push_back(std::move(token));
  }
  return tokens;
}

// FNV-1a, 64 bits: a digest of many blobs that any changed byte changes.
std::uint64_t digest(std::uint64_t hash, const std::string& bytes) {
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

} // namespace

TEST_CASE("token blob: the encoder writes the same bytes as ever") {
  // The format is fixed (schema version 3, blob version 2) and the blob's choices (its form, each
  // value's shortest exact encoding, each token regular or not) are part of it: the same tokens
  // must give these bytes, as the builds that stored existing audits wrote them.
  const double nan = core::k_unknown_logprob;
  const double infinity = std::numeric_limits<double>::infinity();
  const auto f = [](float value) { return static_cast<double>(value); };
  const auto check = [](const std::vector<core::TokenLogprob>& tokens, const char* expected) {
    Interned interned;
    const std::string blob = encode(tokens, interned);
    CHECK(hex(blob) == expected);
    check_decodes_to(blob, interned.texts, tokens);
  };
  SUBCASE("float32 values") {
    check(
        {usual("a", f(-0.0123f), {{"b", f(-1.1f)}}), usual("c", f(-3.5f), {{"a", f(-2.125f)}}),
         usual("d", -1.1920928955078125e-07, {{"e", f(-17.0001f)}}),
         usual("a", -9999.0, {{"f", f(-0.3f)}})},
        "0204020102f08549bc02cdcc8cbf06000060c001000008c008000000b405340088c102003c1cc6069a9999be");
  }
  SUBCASE("short decimals") {
    check({usual("a", -0.0123, {{"b", -4.5}}), usual("c", -0.25, {{"d", -1e-5}}),
           usual("e", -12.75, {{"a", -0.1}}), usual("b", -0.016, {{"c", -123456.789}}),
           usual("a", -9999.0, {{"c", -0.000001234567}})},
          "02050202027bfc022dff0619fe0401fb0afb09fe0101ff0410fd03959aef3afd028f4e000387ad4bf4");
  }
  SUBCASE("values that need 17 digits") {
    check({usual("a", -0.1234567890123456789, {{"b", -0.7000000000000001}}),
           usual("c", -1.0 / 3, {{"d", -2.0 / 3 * 1e-10}}),
           usual("a", -0.30000000000000004, {{"e", -9007199254740993.0}})},
          "02030203025ff64637dd9abfbf02676666666666e6bf06555555555555d5bf04d2d38fe63f53d2bd03033433"
          "33333333d3bf050504000000da");
  }
  SUBCASE("unknown and infinite values, and the -9999 floor") {
    check({usual("a", nan, {{"b", -9999.0}}), usual("c", -infinity, {{"d", nan}}),
           usual("e", -9999.0, {{"a", infinity}}), usual("b", -0.5, {{"c", -9999.0}})},
          "02040200020002058f4e00060204000a058f4e000101040505ff03058f4e00");
  }
  SUBCASE("many candidates") {
    core::TokenCandidates others;
    for (int k = 1; k < 20; ++k)
      others.push_back({"c" + std::to_string(k), -0.01 * k - (k % 3 == 0 ? 1e-17 : 0.0)});
    check({usual("a", -0.001, others), usual("b", f(-0.002f), others),
           usual("a", -1.0 / 7, {{"c1", -2.5}})},
          "02031400020501fd020501fe030502fe0403bb1e85eb51b89ebf050504fe060505fe0703b91e85eb51b8aebf"
          "080507fe090508fe0a030bd7a3703d0ab7bf0b0501ff0c050bfe0d03b91e85eb51b8bebf0e050dfe0f050efe"
          "10050ffe110510fe120511fe130512fe140513fe2a046f1203bb020501fe030502fe0403bb1e85eb51b89ebf"
          "050504fe060505fe0703b91e85eb51b8aebf080507fe090508fe0a030bd7a3703d0ab7bf0b0501ff0c050bfe"
          "0d03b91e85eb51b8bebf0e050dfe0f050efe10050ffe110510fe120511fe130512fe140513fe030392244992"
          "2449c2bf05020519ff");
  }
  SUBCASE("no candidates") {
    check({{"a", -0.0123, {}}, {"b", f(-1.1f), {}}, {"", -1.0 / 3, {}}, {"a", nan, {}}},
          "0204000002057bfc0404cdcc8cbf0603555555555555d5bf0200");
  }
  SUBCASE("every shape and sign together") {
    check({usual("a", -0.0, {{"b", 0.0}}),
           {"c", -1e-128, {{"d", -1e-129}, {"c", -1e-128}}},
           {"e", 1e300, {{"e", 1e300}}},
           usual("f", -4.9406564584124654e-324, {{"g", -2.2250738585072009e-308}, {"h", -1.5}}),
           {"\xff\xfe", -0.5, {{"\xff\xfe", -0.25}, {"a", -0.75}}},
           usual("a", -0.0123, {{"b", -4.5}})},
          "0206020203050000050206000007050180040403b0dfd6726d2e26a5030501800b039c7500883ce4377e030d"
          "030100000000000080070703ffffffffffff0f8008050fff130505ff04090519fe01054bfe027bfc022dff");
  }
}

TEST_CASE("token blob: the encoder writes the same bytes as ever, over many completions") {
  // Many completions of every kind of value and shape, as one digest: the choice of each value's
  // form is pinned far beyond the cases above.
  std::mt19937_64 random(20240611);
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  std::size_t size = 0;
  for (int completion = 0; completion < 300; ++completion) {
    const auto tokens = corpus_tokens(random, 1 + random() % 300, random() % 6);
    Interned interned;
    const std::string blob = encode(tokens, interned);
    hash = digest(hash, blob);
    size += blob.size();
    if (completion % 50 == 0) check_decodes_to(blob, interned.texts, tokens);
  }
  CHECK(size == 1145161);
  CHECK(hash == 2359249246051441483ULL);
}
