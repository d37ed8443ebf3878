// load_suite() / parse_suite(): good suites, text files, and each kind of bad line.
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <doctest/doctest.h>

#include "probes/suite_loader.hpp"
#include "tests/support/temp_dir.hpp"

using namespace llmrepro;
using probes::load_suite;
using probes::parse_suite;

namespace {

using testing::TempDir;

core::Suite parse_ok(const std::string& text) {
  auto suite = parse_suite(text, "suite.jsonl");
  INFO((suite ? std::string() : suite.error().message));
  REQUIRE(suite.has_value());
  return *suite;
}

std::string parse_error(const std::string& text) {
  auto suite = parse_suite(text, "suite.jsonl");
  REQUIRE_FALSE(suite.has_value());
  CHECK(suite.error().code == core::ErrorCode::input);
  return suite.error().message;
}

// A good first line, so the error under test sits on line 2.
std::string second_line(const std::string& line) {
  return "{\"id\":\"ok\",\"prompt\":\"hi\"}\n" + line + "\n";
}

} // namespace

TEST_CASE("parse_suite JSON Lines") {
  auto suite = parse_ok(
      "# a comment\n"
      "{\"id\":\"q1\",\"prompt\":\"2+2=\",\"max_tokens\":8,\"tags\":[\"math\",\"tiny\"],"
      "\"expect\":{\"type\":\"number\",\"value\":4,\"tolerance\":0.5},\"extract\":{\"type\":"
      "\"number\"}}\n"
      "\r\n"
      "{\"id\":\"q2\",\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},"
      "{\"role\":\"user\",\"content\":\"Capital?\"}],\"response_format\":{\"type\": "
      "\"json_object\"},"
      "\"expect\":{\"type\":\"json_path\",\"path\":\"$.city\",\"value\":{\"name\":\"Paris\"}},"
      "\"extract\":{\"type\":\"regex\",\"pattern\":\"(\\\\w+)\"}}\r\n"
      "{\"id\":\"q3\",\"prompt\":\"Pick\",\"expect\":{\"type\":\"choice\",\"value\":\"B\"},"
      "\"extract\":{\"type\":\"last_line\"}}");
  CHECK(suite.source == "suite.jsonl");
  REQUIRE(suite.prompts.size() == 3);
  const auto& q1 = suite.prompts[0];
  CHECK(q1.id == "q1");
  CHECK(q1.text == std::optional<std::string>("2+2="));
  CHECK_FALSE(q1.is_chat());
  CHECK(q1.max_tokens == std::optional<int>(8));
  CHECK(q1.tags == std::vector<std::string>{"math", "tiny"});
  CHECK(q1.expect.kind == core::Expectation::Kind::number);
  CHECK(q1.expect.number == 4.0);
  CHECK(q1.expect.tolerance == 0.5);
  CHECK(q1.extract.kind == core::Extraction::Kind::number);
  CHECK(q1.source_line == 2);
  const auto& q2 = suite.prompts[1];
  CHECK(q2.is_chat());
  REQUIRE(q2.messages.size() == 2);
  CHECK(q2.messages[1].role == "user");
  CHECK(q2.messages[1].content == "Capital?");
  CHECK(q2.response_format_json == "{\"type\":\"json_object\"}");
  CHECK(q2.expect.kind == core::Expectation::Kind::json_path);
  CHECK(q2.expect.path == "$.city");
  CHECK(q2.expect.value == "{\"name\":\"Paris\"}");
  CHECK(q2.extract.kind == core::Extraction::Kind::regex);
  CHECK(q2.extract.pattern == "(\\w+)");
  CHECK_FALSE(q2.max_tokens.has_value());
  CHECK(q2.source_line == 4);
  CHECK(suite.prompts[2].expect.kind == core::Expectation::Kind::choice);
  CHECK(suite.prompts[2].expect.value == "B");
  CHECK(suite.prompts[2].extract.kind == core::Extraction::Kind::last_line);
}

TEST_CASE("parse_suite plain text") {
  auto suite = parse_suite("\nWhat is 2+2?\r\n# skipped\n  \nName a colour.", "prompts.txt");
  REQUIRE(suite.has_value());
  REQUIRE(suite->prompts.size() == 2);
  CHECK(suite->prompts[0].id == "line-2");
  CHECK(suite->prompts[0].text == std::optional<std::string>("What is 2+2?"));
  CHECK(suite->prompts[0].source_line == 2);
  CHECK(suite->prompts[1].id == "line-5");
  CHECK(suite->prompts[1].text == std::optional<std::string>("Name a colour."));
}

TEST_CASE("parse_suite bad lines") {
  CHECK(parse_error(second_line("{\"id\":\"a\",\"prompt\":3}")) ==
        "suite.jsonl:2: field 'prompt' must be a string");
  CHECK(parse_error(second_line("{\"id\":\"a\",\"prompt\":\"x\"")) ==
        "suite.jsonl:2: invalid JSON at column 23");
  CHECK(parse_error(second_line("[1]")) == "suite.jsonl:2: expected a JSON object");
  CHECK(parse_error(second_line("{\"prompt\":\"x\"}")) == "suite.jsonl:2: missing field 'id'");
  CHECK(parse_error(second_line("{\"id\":7,\"prompt\":\"x\"}")) ==
        "suite.jsonl:2: field 'id' must be a string");
  CHECK(parse_error(second_line("{\"id\":\"\",\"prompt\":\"x\"}")) ==
        "suite.jsonl:2: field 'id' must not be empty");
  CHECK(parse_error(second_line("{\"id\":\"a\",\"promt\":\"x\"}")) ==
        "suite.jsonl:2: unknown field 'promt'");
  CHECK(parse_error(second_line("{\"id\":\"a\"}")) ==
        "suite.jsonl:2: missing field 'prompt' or 'messages'");
  CHECK(parse_error(second_line("{\"id\":\"a\",\"prompt\":\"x\",\"messages\":[]}")) ==
        "suite.jsonl:2: give either field 'prompt' or 'messages', not both");
  CHECK(parse_error(second_line("{\"id\":\"a\",\"messages\":[]}")) ==
        "suite.jsonl:2: field 'messages' must not be empty");
  CHECK(parse_error(second_line("{\"id\":\"a\",\"messages\":[{\"role\":\"user\"}]}")) ==
        "suite.jsonl:2: missing field 'messages[0].content'");
  CHECK(
      parse_error(second_line(
          "{\"id\":\"a\",\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"name\":\"n\"}]}")) ==
      "suite.jsonl:2: unknown field 'messages[0].name'");
  for (const char* bad : {"0", "-3", "2.5", "\"8\"", "3000000000"})
    CHECK(parse_error(second_line(std::string("{\"id\":\"a\",\"prompt\":\"x\",\"max_tokens\":") +
                                  bad + "}")) ==
          "suite.jsonl:2: field 'max_tokens' must be a positive integer");
  CHECK(parse_error(second_line("{\"id\":\"a\",\"prompt\":\"x\",\"tags\":[\"t\",1]}")) ==
        "suite.jsonl:2: field 'tags' must be an array of strings");
  CHECK(parse_error(second_line("{\"id\":\"a\",\"prompt\":\"x\",\"response_format\":\"json\"}")) ==
        "suite.jsonl:2: field 'response_format' must be an object");
  CHECK(parse_error(second_line("{\"id\":\"ok\",\"prompt\":\"again\"}")) ==
        "suite.jsonl:2: duplicate id 'ok' (first on line 1)");
}

TEST_CASE("parse_suite bad expect and extract") {
  auto line = [](const std::string& field) {
    return second_line("{\"id\":\"a\",\"prompt\":\"x\"," + field + "}");
  };
  CHECK(parse_error(line("\"expect\":\"4\"")) == "suite.jsonl:2: field 'expect' must be an object");
  CHECK(parse_error(line("\"expect\":{\"value\":\"4\"}")) ==
        "suite.jsonl:2: missing field 'expect.type'");
  CHECK(parse_error(line("\"expect\":{\"type\":\"fuzzy\",\"value\":\"4\"}")) ==
        "suite.jsonl:2: field 'expect.type' must be one of regex, contains, equals, json_path, "
        "choice, number (got 'fuzzy')");
  CHECK(parse_error(line("\"expect\":{\"type\":\"contains\"}")) ==
        "suite.jsonl:2: missing field 'expect.value'");
  CHECK(parse_error(line("\"expect\":{\"type\":\"regex\",\"value\":\"(\"}"))
            .rfind("suite.jsonl:2: field 'expect.value' is not a valid regular expression: ", 0) ==
        0);
  CHECK(parse_error(line("\"expect\":{\"type\":\"equals\",\"value\":\"4\",\"tolerance\":1}")) ==
        "suite.jsonl:2: unknown field 'expect.tolerance'");
  CHECK(parse_error(line("\"expect\":{\"type\":\"number\",\"value\":\"4\"}")) ==
        "suite.jsonl:2: field 'expect.value' must be a number");
  CHECK(parse_error(line("\"expect\":{\"type\":\"number\",\"value\":4,\"tolerance\":-1}")) ==
        "suite.jsonl:2: field 'expect.tolerance' must be a non-negative number");
  CHECK(parse_error(line("\"expect\":{\"type\":\"json_path\",\"path\":\"city\",\"value\":1}")) ==
        "suite.jsonl:2: field 'expect.path' must be a JSON path starting with '$'");
  CHECK(parse_error(line("\"extract\":{\"type\":\"regex\"}")) ==
        "suite.jsonl:2: missing field 'extract.pattern'");
  CHECK(parse_error(line("\"extract\":{\"type\":\"choice\",\"pattern\":\"x\"}")) ==
        "suite.jsonl:2: unknown field 'extract.pattern'");
  CHECK(parse_error(line("\"extract\":{\"type\":\"words\"}")) ==
        "suite.jsonl:2: field 'extract.type' must be one of regex, json_path, choice, number, "
        "last_line (got 'words')");
}

TEST_CASE("load_suite files") {
  TempDir dir;
  SUBCASE("a JSON Lines file") {
    std::string path = dir.write(
        "suite.jsonl", "{\"id\":\"a\",\"prompt\":\"x\"}\n{\"id\":\"b\",\"prompt\":\"y\"}\n");
    auto suite = load_suite(path);
    REQUIRE(suite.has_value());
    CHECK(suite->source == path);
    CHECK(suite->prompts.size() == 2);
  }
  SUBCASE("errors name the file as given") {
    std::string path =
        dir.write("bad.jsonl", "{\"id\":\"a\",\"prompt\":\"x\"}\n{\"id\":\"a\",\"prompt\":[]}\n");
    auto suite = load_suite(path);
    REQUIRE_FALSE(suite.has_value());
    CHECK(suite.error().message == path + ":2: field 'prompt' must be a string");
  }
  SUBCASE("missing file") {
    auto suite = load_suite(dir.file("x"));
    REQUIRE_FALSE(suite.has_value());
    CHECK(suite.error().code == core::ErrorCode::input);
    CHECK(suite.error().message ==
          "cannot open suite '" + dir.file("x") + "': No such file or directory");
  }
  SUBCASE("a directory") {
    auto suite = load_suite(dir.file(""));
    REQUIRE_FALSE(suite.has_value());
    CHECK(suite.error().message == "cannot read suite '" + dir.file("") + "': Is a directory");
  }
  SUBCASE("empty suites") {
    auto suite = load_suite(dir.write("empty.jsonl", "\n# nothing\n\n"));
    REQUIRE_FALSE(suite.has_value());
    CHECK(suite.error().message == "suite '" + dir.file("empty.jsonl") + "' has no prompts");
  }
}

TEST_CASE("parse_suite tools and tool_results: an agent chain's stub registry") {
  const std::string tools =
      R"("tools":[{"type":"function","function":{"name":"search","parameters":{"type":"object"}}}])";
  const core::Suite suite = parse_ok(
      R"({"id":"a","messages":[{"role":"user","content":"Go"}],)" + tools +
      R"(,"tool_results":[{"name":"search","arguments":{"q":"x","n":1},"result":{"hits":[]}},)"
      R"({"name":"search","arguments":{"q":"y"},"result":"none"}],"max_steps":3})"
      "\n");
  REQUIRE(suite.prompts.size() == 1);
  const core::Prompt& prompt = suite.prompts[0];
  CHECK(prompt.tools_json ==
        R"([{"function":{"name":"search","parameters":{"type":"object"}},"type":"function"}])");
  REQUIRE(prompt.tool_results.size() == 2);
  CHECK(prompt.tool_results[0].arguments == R"({"n":1,"q":"x"})"); // canonical: keys sorted
  CHECK(prompt.tool_results[0].result == R"({"hits":[]})");
  CHECK(prompt.tool_results[1].result == "none");
  CHECK(prompt.max_steps == 3);
  CHECK(prompt.is_chain());
  // Tools alone: one request a run, the calls compared as they come.
  const core::Prompt alone =
      parse_ok(R"({"id":"b","messages":[{"role":"user","content":"Go"}],)" + tools + "}\n")
          .prompts[0];
  CHECK_FALSE(alone.is_chain());
  CHECK(alone.max_steps == core::k_default_max_steps);

  const std::string chat = R"({"id":"a","messages":[{"role":"user","content":"Go"}],)";
  CHECK(parse_error(second_line(chat + R"("tools":[]})")) ==
        "suite.jsonl:2: field 'tools' must be a non-empty array of function tools");
  CHECK(parse_error(second_line(chat + R"("tools":[{"type":"retrieval"}]})")) ==
        "suite.jsonl:2: field 'tools[0].type' must be \"function\"");
  CHECK(parse_error(second_line(chat + R"("tools":[{"type":"function","function":{}}]})")) ==
        "suite.jsonl:2: field 'tools[0].function.name' must be a non-empty string");
  CHECK(parse_error(second_line(chat + R"("tool_results":[{"name":"s","result":1}]})")) ==
        "suite.jsonl:2: field 'tool_results' needs 'tools'");
  CHECK(parse_error(
            second_line(chat + tools + R"(,"tool_results":[{"name":"fetch","result":1}]})")) ==
        "suite.jsonl:2: field 'tool_results[0].name': 'fetch' is not one of the 'tools'");
  CHECK(parse_error(
            second_line(chat + tools +
                        R"(,"tool_results":[{"name":"search","arguments":{"q":1},"result":1},)"
                        R"({"name":"search","arguments":{"q":1},"result":2}]})")) ==
        "suite.jsonl:2: field 'tool_results[1]': the call search({\"q\":1}) is scripted twice");
  CHECK(parse_error(second_line(chat + tools + R"(,"max_steps":2})")) ==
        "suite.jsonl:2: field 'max_steps' needs 'tool_results'");
  CHECK(parse_error(second_line(R"({"id":"t","prompt":"Go",)" + tools +
                                R"(,"tool_results":[{"name":"search","result":1}]})")) ==
        "suite.jsonl:2: field 'tool_results' needs 'messages': a chain is a chat");
}
