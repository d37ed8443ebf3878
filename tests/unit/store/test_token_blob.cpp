// The token blob of schema version 2 (docs/design.md, "Token blobs"): exact round trips of every
// kind of log probability, the documented bytes of a small list, and errors, never undefined
// behaviour, for every truncation and corruption.
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

  std::uint64_t operator()(const std::string& text) {
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

std::string encode(const std::vector<core::TokenLogprob>& tokens, Interned& interned) {
  return encode_token_blob(tokens, [&](const std::string& text) { return interned(text); });
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

} // namespace

TEST_CASE("token blob: every log probability reads back bit for bit") {
  const double values[] = {-0.0123,
                           -0.1234567890123456789,
                           -1e-300,
                           -4.9406564584124654e-324, // the smallest denormal
                           -std::numeric_limits<double>::max(),
                           -0.0,
                           0.0,
                           -9999.0,
                           -0.7000000000000001,
                           static_cast<double>(-0.0123f), // a float32 sent as its double
                           -1.5,
                           1e300,
                           std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(),
                           core::k_unknown_logprob};
  std::vector<core::TokenLogprob> tokens;
  for (const double value : values)
    tokens.push_back({"t", value, {{"t", value}, {"u", -value}, {"\xff\xfe", value / 3}}});
  Interned interned;
  const std::string blob = encode(tokens, interned);
  std::vector<core::TokenLogprob> decoded;
  const auto result = decode_token_blob(blob, interned.texts, decoded);
  REQUIRE_MESSAGE(result, (result ? "" : result.error().message));
  REQUIRE(decoded.size() == tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    CAPTURE(i);
    CHECK(decoded[i].token == tokens[i].token);
    CHECK(same_bits(decoded[i].logprob, tokens[i].logprob));
    REQUIRE(decoded[i].top.size() == 3);
    for (std::size_t k = 0; k < 3; ++k) {
      CHECK(decoded[i].top[k].token == tokens[i].top[k].token);
      CHECK(same_bits(decoded[i].top[k].logprob, tokens[i].top[k].logprob));
    }
  }
}

TEST_CASE("token blob: short decimals are stored as decimals and read back exactly") {
  // Values a response writes with a few digits (the decimal form's exact fast path, mantissa up
  // to 2^53 and exponent within 22) and around its edges.
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
  // -2.125 as a decimal: tag, varint mantissa 2125, exponent byte -3.
  CHECK(encode({{"t", -2.125, {}}}, interned) ==
        bytes({0x01, 0x01, 0x01, 0x05, 0xcd, 0x10, 0xfd, 0x00}));
}

TEST_CASE("token blob: the documented bytes of two tokens") {
  Interned interned;
  const std::vector<core::TokenLogprob> tokens = {
      // The first candidate is the token itself: flagged, not written again.
      {"Hi", -0.0123, {{"Hi", -0.0123}, {"Hey", -4.5}}},
      // No candidates, an unknown log probability.
      {"!", core::k_unknown_logprob, {}},
  };
  const std::string blob = encode(tokens, interned);
  // version 1, 2 tokens;
  // "Hi" id 1, decimal -123e-4, header 2 candidates << 1 | 1, "Hey" id 2, decimal -45e-1;
  // "!" id 3, unknown, header 0.
  CHECK(blob == bytes({0x01, 0x02,                                           //
                       0x01, 0x05, 0x7b, 0xfc, 0x05, 0x02, 0x05, 0x2d, 0xff, //
                       0x03, 0x00, 0x00}));
  // A float32 that needs more than 4 decimal digits is stored as the 4 bytes of the float.
  const std::string single = encode({{"Hi", static_cast<double>(-0.0123f), {}}}, interned);
  CHECK(single == bytes({0x01, 0x01, 0x01, 0x04, 0xf0, 0x85, 0x49, 0xbc, 0x00}));
}

TEST_CASE("token blob: an empty list is the version and a zero count") {
  Interned interned;
  CHECK(encode({}, interned) == bytes({0x01, 0x00}));
}

TEST_CASE("token blob: every truncation and corruption is an error") {
  Interned interned;
  std::vector<core::TokenLogprob> tokens;
  for (int i = 0; i < 20; ++i)
    tokens.push_back({"t" + std::to_string(i % 7),
                      -0.001 * i,
                      {{"t" + std::to_string(i % 7), -0.001 * i}, {"x", -1.0 / (i + 3)}}});
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
    other[0] = 2;
    const auto result = decode_token_blob(other, interned.texts, decoded);
    REQUIRE_FALSE(result);
    CHECK(result.error().message == "token blob version 2 is not 1");
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
    const auto result = decode_token_blob(bytes({0x01, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01}),
                                          interned.texts, decoded);
    REQUIRE_FALSE(result);
    CHECK(result.error().message == "truncated");
  }
  SUBCASE("an unknown log probability tag") {
    const auto result =
        decode_token_blob(bytes({0x01, 0x01, 0x01, 0x09, 0x00}), interned.texts, decoded);
    REQUIRE_FALSE(result);
    CHECK(result.error().message == "unknown log probability tag 9");
  }
}
