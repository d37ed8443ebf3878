#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "probes/detail/json_access.hpp"
#include "probes/detail/json_document.hpp"

using namespace llmrepro::probes::detail;

namespace {

// "ok", or what parsing threw: the exact message is the contract.
template <typename Parse> std::string outcome(Parse &&parse) {
  try {
    parse();
    return "ok";
  } catch (const ParseFailure &failure) {
    return std::string("ParseFailure: ") + failure.what();
  } catch (const std::exception &error) {
    return std::string("exception: ") + error.what();
  }
}

// The tape below `index` holds the same values as the DOM `json`, members in the same order.
void check_same(const JsonDocument &document, std::uint32_t index, const Json &json) {
  const JsonNode &node = document.node(index);
  switch (node.type) {
  case JsonType::null: CHECK(json.is_null()); break;
  case JsonType::boolean:
    REQUIRE(json.is_boolean());
    CHECK(node.flag == json.get<bool>());
    break;
  case JsonType::string:
    REQUIRE(json.is_string());
    CHECK(node.text == json.get<std::string>());
    break;
  case JsonType::number:
    REQUIRE(json.is_number());
    // An integer literal past 64 bits was a double in the DOM; the value is the same.
    if (!json.is_number_float()) CHECK(node.flag);
    CHECK(std::strtod(std::string(node.text).c_str(), nullptr) == json.get<double>());
    break;
  case JsonType::array:
    REQUIRE(json.is_array());
    REQUIRE(node.count == json.size());
    for (std::size_t i = 0; i < node.count; ++i)
      check_same(document, document.child(node, i), json[i]);
    break;
  case JsonType::object: {
    REQUIRE(json.is_object());
    REQUIRE(node.count == json.size());
    std::size_t i = 0;
    for (auto it = json.begin(); it != json.end(); ++it, ++i) {
      std::uint32_t child = document.child(node, i);
      CHECK(document.node(child).key == it.key());
      check_same(document, child, it.value());
    }
    break;
  }
  }
}

// parse_document() and parse_json() agree on `text`: both accept it with the same values, or
// both throw the same message.
void check_agrees(const std::string &text) {
  INFO("text: ", text);
  std::string legacy = outcome([&] { (void)parse_json(text, "event 2: "); });
  std::string fast = outcome([&] { (void)parse_document(text, "event 2: "); });
  CHECK(fast == legacy);
  if (legacy != "ok" || fast != "ok") return;
  JsonDocument document = parse_document(text);
  check_same(document, 0, parse_json(text));
}

std::string nested(int depth) {
  return std::string(static_cast<std::size_t>(depth), '[') +
         std::string(static_cast<std::size_t>(depth), ']');
}

} // namespace

TEST_CASE("JsonDocument") {
  SUBCASE("accepts and rejects exactly what the DOM parser does, with its messages") {
    const std::vector<std::string> texts = {
        "{}",
        "[]",
        " \t\r\n{ } ",
        "null",
        "true",
        "false",
        "0",
        "-0",
        "\"\"",
        R"({"a":1,"b":[true,false,null],"c":"x\u00e9\ud83d\ude00\n\"\\\/\b\f\r\t"})",
        R"({"a":1,"b":2,"a":3})",
        R"({"k":{"x":1},"k":[2]})",
        "\xEF\xBB\xBF{\"bom\":1}",
        "[0.5e-3,1E+2,-1.25,1e-400,18446744073709551615]",
        "[18446744073709551616,-9223372036854775808,-9223372036854775809]",
        "\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"",
        std::string("\"a\\u0000b\""),
        "",
        "   ",
        "{",
        "[1,]",
        "{\"a\" 1}",
        "{\"a\":1,}",
        "01",
        "1.",
        "-",
        "1e",
        "1e+",
        "\"\\x\"",
        "\"\x01\"",
        "\"\xC0\xAF\"",
        "\"\xED\xA0\x80\"",
        "\"\xF4\x90\x80\x80\"",
        "\"\xE2\x82\"",
        "\"\\ud800\"",
        "\"\\udc00\"",
        "\"\\ud800\\u0041\"",
        "\"\\u12G4\"",
        "[1e400]",
        "[-1e309]",
        "tru",
        "nul",
        "[1]x",
        "{\"a\":1}}",
        "\xEF\xBB",
        "'a'",
        "[1 2]",
        "{1:2}",
        "\"unterminated",
        "[\"a\"\n",
        nested(64),
        nested(65),
        "[" + nested(64) + "]",
        "\"[[[[\" " + nested(70),
        std::string("[1,\0]", 5),
        std::string(400, '9'),
        "[1" + std::string(320, '0') + "]"};
    for (const auto &text : texts)
      check_agrees(text);
  }
  SUBCASE("agrees with the DOM parser on mutations of a response") {
    const std::string seed =
        R"({"id":"c-1","choices":[{"index":0,"message":{"content":"Hi \u00e9 there"},)"
        R"("logprobs":{"content":[{"token":"Hi","logprob":-0.25,"bytes":[72,105],)"
        R"("top_logprobs":[{"token":"Hi","logprob":-0.25},{"token":"Hey","logprob":-1.5e0}]}]},)"
        R"("finish_reason":"length"}],"usage":{"completion_tokens":1},"x":null,"y":true})";
    const std::string alphabet = "{}[]\",:\\-+.eE0123456789 tfnu\xC3\xA9\xFF";
    std::mt19937 random(7);
    for (int i = 0; i < 3000; ++i) {
      std::string text = seed;
      int edits = 1 + static_cast<int>(random() % 3);
      for (int e = 0; e < edits && !text.empty(); ++e) {
        std::size_t at = random() % text.size();
        char c = alphabet[random() % alphabet.size()];
        switch (random() % 3) {
        case 0: text[at] = c; break;
        case 1: text.erase(at, 1); break;
        default: text.insert(at, 1, c); break;
        }
      }
      check_agrees(text);
    }
  }
  SUBCASE("a duplicate member keeps the first position and the last value") {
    JsonDocument document = parse_document(R"({"a":1,"b":2,"a":3})");
    JsonView root(document);
    REQUIRE(root.member_count() == 2);
    CHECK(root.member_key(0) == "a");
    CHECK(root.member_key(1) == "b");
    CHECK(root.at("a").integer() == 3);
  }
  SUBCASE("escaped strings are decoded, plain ones read in place") {
    const std::string text = R"(["plain","tab\there","\u00e9\ud83d\ude00"])";
    JsonDocument document = parse_document(text);
    JsonView root(document);
    CHECK(root.at(0).string() == "plain");
    CHECK(root.at(1).string() == "tab\there");
    CHECK(root.at(2).string() == "\xC3\xA9\xF0\x9F\x98\x80");
    const JsonNode &plain = document.node(document.child(document.node(0), 0));
    CHECK(plain.text.data() == text.data() + 2);
  }
}

TEST_CASE("JsonView") {
  const std::string text =
      R"({"choices":[{"n":-7,"u":18446744073709551615,"f":1.0,"big":99999999999999999999,)"
      R"("neg":-9223372036854775809,"s":"x","b":false,"z":null,"p":2.5e-1,"tiny":1e-400,)"
      R"("map":{"tok":"bad"}}]})";
  JsonDocument document = parse_document(text);
  JsonView root(document);
  JsonView choice = root.at("choices").at(0);

  SUBCASE("paths are built on demand from the document") {
    CHECK(root.path().empty());
    CHECK(root.describe() == "body");
    CHECK(choice.at("n").path() == "choices[0].n");
    CHECK(outcome([&] { (void)choice.at("missing"); }) ==
          "ParseFailure: missing field choices[0].missing");
    CHECK(outcome([&] { (void)root.at("choices").at(3); }) ==
          "ParseFailure: missing field choices[3]");
    CHECK(outcome([&] { (void)root.at("missing"); }) == "ParseFailure: missing field missing");
    CHECK(outcome([&] { (void)choice.at("s").number(); }) ==
          "ParseFailure: field choices[0].s must be a number");
    CHECK(outcome([&] { (void)root.at(0); }) == "ParseFailure: body must be an array");
    CHECK(outcome([&] { (void)choice.at("n").at("k"); }) ==
          "ParseFailure: field choices[0].n must be an object");
    JsonView map = choice.at("map");
    REQUIRE(map.member_count() == 1);
    CHECK(map.member_key(0) == "tok");
    CHECK(outcome([&] { (void)map.member(0).number(); }) ==
          "ParseFailure: field choices[0].map[\"tok\"] must be a number");
  }
  SUBCASE("typed getters") {
    CHECK(choice.at("n").integer() == -7);
    CHECK(choice.at("n").number() == -7.0);
    CHECK(choice.at("p").number() == 0.25);
    CHECK(choice.at("tiny").number() == 0.0);
    CHECK(choice.at("u").number() == 18446744073709551615.0);
    CHECK(choice.at("s").string() == "x");
    CHECK_FALSE(choice.at("b").boolean());
    CHECK(choice.at("z").is_null());
    CHECK_FALSE(choice.find("z").has_value());
    CHECK(choice.contains("z"));
    CHECK_FALSE(choice.contains("nothing"));
    CHECK(choice.optional_string("z").empty());
    CHECK(choice.optional_string("s") == "x");
    CHECK(outcome([&] { (void)choice.at("u").integer(); }) ==
          "ParseFailure: field choices[0].u is out of range");
    CHECK(outcome([&] { (void)choice.at("f").integer(); }) ==
          "ParseFailure: field choices[0].f must be an integer");
    CHECK(outcome([&] { (void)choice.at("big").integer(); }) ==
          "ParseFailure: field choices[0].big must be an integer");
    CHECK(outcome([&] { (void)choice.at("neg").integer(); }) ==
          "ParseFailure: field choices[0].neg must be an integer");
    CHECK(outcome([&] { (void)choice.at("s").boolean(); }) ==
          "ParseFailure: field choices[0].s must be true or false");
    CHECK(outcome([&] { (void)choice.optional_string("n"); }) ==
          "ParseFailure: field choices[0].n must be a string");
  }
}
