// report/detail/json_tokens.hpp writes a completion's tokens as text; the report's bytes must be
// what nlohmann's dump(2) writes for the same tree, which is what these tests compare against.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/random.hpp"
#include "report/detail/json_tokens.hpp"

using namespace llmrepro;
using OrderedJson = nlohmann::ordered_json;

namespace {

OrderedJson number_json(double value) {
  return std::isfinite(value) ? OrderedJson(value) : OrderedJson(nullptr);
}

// The tree the report built for a token list before it wrote them as text.
OrderedJson tokens_tree(const std::vector<core::TokenLogprob>& tokens) {
  OrderedJson array = OrderedJson::array();
  for (const auto& token : tokens) {
    OrderedJson top = OrderedJson::array();
    for (const auto& candidate : token.top)
      top.push_back({{"token", candidate.token}, {"logprob", number_json(candidate.logprob)}});
    array.push_back(
        {{"token", token.token}, {"logprob", number_json(token.logprob)}, {"top", top}});
  }
  return array;
}

// What dump(2) writes for the tree as the value of a member at `indent`.
std::string expected_text(const std::vector<core::TokenLogprob>& tokens, int indent) {
  OrderedJson holder = {{"tokens", tokens_tree(tokens)}};
  std::string whole = holder.dump(2, ' ', false, OrderedJson::error_handler_t::replace);
  // {\n  "tokens": VALUE\n}: the value, indented at 2; re-indent the same tree at `indent`.
  std::string value = whole.substr(std::strlen("{\n  \"tokens\": "));
  value.resize(value.size() - std::strlen("\n}"));
  std::string out;
  std::size_t from = 0;
  for (std::size_t at = value.find('\n'); at != std::string::npos; at = value.find('\n', from)) {
    out += value.substr(from, at + 1 - from);
    from = at + 1;
    // Lines below the first are indented by at least 2 (the holder's member indentation).
    from += 2;
    out.append(static_cast<std::size_t>(indent), ' ');
  }
  out += value.substr(from);
  return out;
}

std::string written(const std::vector<core::TokenLogprob>& tokens, int indent) {
  std::string out;
  report::detail::append_tokens_json(out, tokens, indent);
  return out;
}

core::TokenLogprob token_of(std::string text, double logprob, core::TokenCandidates top) {
  core::TokenLogprob token;
  token.token = std::move(text);
  token.logprob = logprob;
  token.top = std::move(top);
  return token;
}

} // namespace

TEST_CASE("json tokens: hostile texts and every kind of number, as dump(2) writes them") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<std::string> texts = {"",
                                          "The",
                                          " sky",
                                          "\"quoted\"",
                                          "back\\slash",
                                          "tab\there",
                                          "new\nline",
                                          "\r\x01\x1f",
                                          "\x7f",
                                          "caf\xc3\xa9",
                                          "\xe2\x82\xac",
                                          "\xf0\x9f\x98\x80", // é, €, an emoji
                                          "\xc3",
                                          "\xe2\x82",
                                          "\xff\xfe",
                                          "\xc0\xaf", // cut, invalid, overlong
                                          "\xed\xa0\x80",
                                          "\xf4\x90\x80\x80",
                                          "\xe0\x80\xaf",
                                          "ok\xc3", // surrogate, > U+10FFFF
                                          std::string("nul\0byte", 8),
                                          "</script><b>&amp;"};
  const std::vector<double> numbers = {0.0,    -0.0, -0.012, -2.125, -1e-05, -1.5e-300, -9999,
                                       -1e300, 1e21, nan,    inf,    -inf,   -0.1,      -1.0 / 3.0};
  std::vector<core::TokenLogprob> tokens;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    core::TokenCandidates top;
    for (std::size_t k = 0; k < i % 4; ++k)
      top.push_back({texts[(i + k) % texts.size()], numbers[(i + k) % numbers.size()]});
    tokens.push_back(token_of(texts[i], numbers[i % numbers.size()], top));
  }
  for (int indent : {0, 6, 10}) CHECK(written(tokens, indent) == expected_text(tokens, indent));
  CHECK(written({}, 6) == "[]");
  CHECK(written({token_of("a", -0.5, {})}, 0) == "[\n  {\n    \"token\": \"a\",\n    \"logprob\": "
                                                 "-0.5,\n    \"top\": []\n  }\n]");
}

TEST_CASE("json tokens: 20,000 random doubles and byte strings, as dump(2) writes them") {
  core::SplitMix64 random(7);
  std::vector<core::TokenLogprob> tokens;
  for (int i = 0; i < 20000; ++i) {
    std::uint64_t bits = random.next();
    double value = 0;
    std::memcpy(&value, &bits, sizeof value);
    if (i % 2 == 0) value = -static_cast<double>(random.below(1 << 20)) / (1 << random.below(24));
    std::string text;
    for (std::uint64_t n = random.below(6); n > 0; --n)
      text += static_cast<char>(random.below(4) == 0 ? random.below(256) : 'a' + random.below(26));
    tokens.push_back(token_of(text, value, {{text, value}, {"x", -value}}));
  }
  CHECK(written(tokens, 6) == expected_text(tokens, 6));
}
