#include <doctest/doctest.h>

#include <string>

#include "core/json_value.hpp"

using namespace llmrepro::core;

TEST_CASE("parse_json") {
  SUBCASE("values and nesting") {
    auto parsed = parse_json(
        R"( {"n": -1.5e2, "i": 7, "s": "a\u00e9\ud83d\ude00", "l": [true, null], "o": {}} )");
    REQUIRE(parsed.has_value());
    const JsonValue& root = *parsed;
    REQUIRE(root.find("n") != nullptr);
    CHECK(root.find("n")->number == -150.0);
    CHECK_FALSE(root.find("n")->integer);
    CHECK(root.find("i")->integer);
    CHECK(root.find("s")->string == "a\xC3\xA9\xF0\x9F\x98\x80");
    CHECK(root.find("l")->array.size() == 2);
    CHECK(root.find("l")->array[0].boolean);
    CHECK(root.find("o")->type == JsonValue::Type::object);
    CHECK(root.find("missing") == nullptr);
  }
  SUBCASE("errors name the offset") {
    auto truncated = parse_json(R"({"a": [1, 2)");
    REQUIRE_FALSE(truncated.has_value());
    CHECK(truncated.error().message.find("offset") != std::string::npos);
    CHECK_FALSE(parse_json("{} extra").has_value());
    CHECK_FALSE(parse_json("{\"a\" 1}").has_value());
    CHECK_FALSE(parse_json("\"unterminated").has_value());
    CHECK_FALSE(parse_json(std::string(100, '[')).has_value()); // depth bound
  }
}

TEST_CASE("json_quote") {
  CHECK(json_quote(std::string("\b\f\r", 3)) == "\"\\b\\f\\r\"");
  CHECK(json_quote(std::string("\x1f", 1)) == "\"\\u001f\"");
  CHECK(json_quote("") == "\"\"");
  CHECK(json_quote("plain") == "\"plain\"");
  CHECK(json_quote("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(json_quote("line\nnext\t") == "\"line\\nnext\\t\"");
  CHECK(json_quote(std::string("\x01", 1)) == "\"\\u0001\"");
  CHECK(json_quote("caf\xC3\xA9") == "\"caf\xC3\xA9\""); // UTF-8 passes through
}
