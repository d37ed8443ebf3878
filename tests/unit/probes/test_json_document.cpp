#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "probes/detail/json_access.hpp"
#include "probes/detail/json_document.hpp"

using namespace llmrepro::probes::detail;

namespace {

// "ok", or what parsing threw: the exact message is the contract.
template <typename Parse> std::string outcome(Parse&& parse) {
  try {
    parse();
    return "ok";
  } catch (const ParseFailure& failure) {
    return std::string("ParseFailure: ") + failure.what();
  } catch (const std::exception& error) {
    return std::string("exception: ") + error.what();
  }
}

// The tape below `index` holds the same values as the DOM `json`, members in the same order.
void check_same(const JsonDocument& document, std::uint32_t index, const Json& json) {
  const JsonNode& node = document.node(index);
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
    // NaN and the like were read as 0 by the DOM parser (see stand_ins()).
    if (node.number != JsonNumber::finite) {
      CHECK(json.get<double>() == 0.0);
      break;
    }
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

// `text` with the literals outside strict JSON that the tape parser accepts (NaN, Infinity,
// -Infinity, numbers past a double's range) overwritten by "0" and spaces, the same length.
std::string stand_ins(const std::string& text) {
  JsonDocument document;
  (void)document.parse(text, k_max_json_depth);
  std::string strict = text;
  for (const JsonSpan& span : document.nonstandard_numbers()) {
    strict.replace(span.offset, span.length, span.length, ' ');
    strict[span.offset] = '0';
  }
  return strict;
}

// parse_document() on `text` and parse_json() on stand_ins(text) agree: both accept it with
// the same values (0 for the stand-ins), or both throw the same message. Without such literals
// the two parse the same text.
void check_agrees(const std::string& text) {
  INFO("text: ", text);
  const std::string strict = stand_ins(text);
  std::string legacy = outcome([&] { (void)parse_json(strict, "event 2: "); });
  std::string fast = outcome([&] { (void)parse_document(text, "event 2: "); });
  CHECK(fast == legacy);
  if (legacy != "ok" || fast != "ok") return;
  JsonDocument document = parse_document(text);
  check_same(document, 0, parse_json(strict));
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
    for (const auto& text : texts) check_agrees(text);
  }
  SUBCASE("a lone surrogate escape is U+FFFD, counted, where the DOM parser rejects the text") {
    const std::vector<std::tuple<std::string, std::string, std::size_t>> cases = {
        {"\"\\ud800\"", "\xEF\xBF\xBD", 1},
        {"\"\\udc00\"", "\xEF\xBF\xBD", 1},
        {"\"a\\ud800\\u0041\"",
         "a\xEF\xBF\xBD"
         "A",
         1},
        {"\"\\ud800\\ud800\\udc00\"", "\xEF\xBF\xBD\xF0\x90\x80\x80", 1},
        {"\"\\udfff\\ud83d\\ude00x\\ud83d\"", "\xEF\xBF\xBD\xF0\x9F\x98\x80x\xEF\xBF\xBD", 2},
        {"\"\\ud83d\\ude00\"", "\xF0\x9F\x98\x80", 0},
    };
    for (const auto& [text, decoded, count] : cases) {
      CAPTURE(text);
      JsonDocument document = parse_document(text);
      CHECK(document.node(0).text == decoded);
      CHECK(document.lone_surrogates() == count);
    }
    // A high surrogate before a broken escape is still a broken escape.
    CHECK(outcome([] { (void)parse_document("\"\\ud800\\u12G4\""); }) != "ok");
  }
  SUBCASE("accepts the numbers endpoints write beyond strict JSON, which the DOM parser rejects") {
    // Python's json.dumps writes NaN, Infinity and -Infinity for non-finite floats (allow_nan
    // is its default); a server that prints a double's range past its own writes 1e400.
    const std::vector<std::pair<std::string, JsonNumber>> values = {
        {"NaN", JsonNumber::nan},
        {"Infinity", JsonNumber::infinity},
        {"-Infinity", JsonNumber::negative_infinity},
        {"1e400", JsonNumber::overflow},
        {"-1e309", JsonNumber::negative_overflow},
        {"1.5E+999", JsonNumber::overflow},
        {std::string(400, '9'), JsonNumber::overflow},
        {"-1" + std::string(320, '0'), JsonNumber::negative_overflow}};
    for (const auto& [literal, kind] : values) {
      const std::string text = R"({"logprob":)" + literal + R"(,"next":[)" + literal + "]}";
      INFO("text: ", text);
      CHECK(outcome([&] { (void)parse_json(text); }) != "ok");
      JsonDocument document = parse_document(text);
      JsonView root(document);
      CHECK(root.at("logprob").number_kind() == kind);
      CHECK(root.at("next").at(0).number_kind() == kind);
      CHECK(outcome([&] { (void)root.at("logprob").number(); }) ==
            "ParseFailure: field logprob must be a finite number");
      CHECK(outcome([&] { (void)root.at("logprob").integer(); }) ==
            "ParseFailure: field logprob must be an integer");
      REQUIRE(document.nonstandard_numbers().size() == 2);
      CHECK(document.nonstandard_numbers()[0].offset == 11);
      CHECK(document.nonstandard_numbers()[0].length == literal.size());
    }
    CHECK(parse_document("1e308").nonstandard_numbers().empty());
    CHECK(JsonView(parse_document("1e-400")).number_kind() == JsonNumber::finite);
    CHECK(JsonView(parse_document(" NaN ")).number_kind() == JsonNumber::nan);
    CHECK(outcome([&] { (void)JsonView(parse_document("\"NaN\"")).number_kind(); }) ==
          "ParseFailure: body must be a number");
  }
  SUBCASE("rejects them elsewhere with the DOM parser's message, and names the real fault") {
    // Only the exact spellings, and only as values: everything else is rejected as before.
    for (const std::string text :
         {"[nan]", "[NAN]", "[-NaN]", "[+Infinity]", "[Inf]", "[-Inf]", "[Infinit]", "[infinity]",
          "{NaN:1}", "[NaNa]", "[-Infinityx]", "NaN NaN", "[1e400e1]", "[NaN1]", "[Infinity.5]",
          "[NaNe5]", "[1e400.5]"})
      check_agrees(text);
    // A response broken after such a value is reported at its fault (the "]" after "1e400,",
    // byte 39 as the DOM parser counts from 1), not at the value.
    const std::string broken = R"({"logprob":NaN,"top":[-Infinity,1e400,],"x":1})";
    CHECK(outcome([&] { (void)parse_document(broken, "event 2: "); }) ==
          "ParseFailure: event 2: malformed JSON at byte 39");
    check_agrees(broken);
    check_agrees(R"({"a":[NaN,Infinity,-Infinity,1e400,-1e400,0.5],"b":"NaN"})");
  }
  SUBCASE("agrees with the DOM parser on mutations of a response") {
    // Up to three random edits of `seed` with characters of `alphabet`, `count` times.
    const auto mutations = [](const std::string& seed, const std::string& alphabet, int count) {
      std::mt19937 random(7);
      for (int i = 0; i < count; ++i) {
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
    };
    mutations(
        R"({"id":"c-1","choices":[{"index":0,"message":{"content":"Hi \u00e9 there"},)"
        R"("logprobs":{"content":[{"token":"Hi","logprob":-0.25,"bytes":[72,105],)"
        R"("top_logprobs":[{"token":"Hi","logprob":-0.25},{"token":"Hey","logprob":-1.5e0}]}]},)"
        R"("finish_reason":"length"}],"usage":{"completion_tokens":1},"x":null,"y":true})",
        "{}[]\",:\\-+.eE0123456789 tfnu\xC3\xA9\xFF", 3000);
    // The same around the literals beyond strict JSON.
    mutations(R"({"logprob":NaN,"top_logprobs":[{"token":"a","logprob":-Infinity},)"
              R"({"token":"b","logprob":Infinity},{"token":"c","logprob":-1e400}],"n":null})",
              "{}[]\",:-+.eE0149 NaIfinty", 3000);
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
    const JsonNode& plain = document.node(document.child(document.node(0), 0));
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
