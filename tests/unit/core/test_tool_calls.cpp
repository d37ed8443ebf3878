// Tool calls: canonical JSON, where two sequences first differ, and --compare-on tool_calls as a
// completion's identity in the analysis.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/analysis.hpp"
#include "core/reasoning.hpp"
#include "core/tool_calls.hpp"
#include "tests/support/request_records.hpp"

using namespace llmrepro::core;
using llmrepro::testing::failed_record;
using llmrepro::testing::numbered_suite;
using llmrepro::testing::ok_record;

namespace {

std::string canonical(const std::string& text) {
  auto result = canonical_json(text);
  REQUIRE_MESSAGE(result, (result ? "" : result.error().message));
  return *result;
}

Completion calling(std::vector<ToolCall> calls, std::string text = "done") {
  Completion completion;
  completion.text = std::move(text);
  completion.tool_calls = std::move(calls);
  return completion;
}

} // namespace

TEST_CASE("canonical_json") {
  SUBCASE("keys sorted, whitespace gone, numbers as written") {
    CHECK(canonical(R"( { "b" : [1.50, -0, 1e3], "a" : {"z": null, "y": true} } )") ==
          R"({"a":{"y":true,"z":null},"b":[1.50,-0,1e3]})");
    CHECK(canonical("12345678901234567890") == "12345678901234567890");
  }
  SUBCASE("strings escaped minimally") {
    CHECK(canonical(R"("a\/b\u00e9\n\u0001\"")") == "\"a/b\xC3\xA9\\n\\u0001\\\"\"");
  }
  SUBCASE("keys sort bytewise") {
    CHECK(canonical(R"({"b":1,"B":2,"a":3})") == R"({"B":2,"a":3,"b":1})");
  }
  SUBCASE("a key given twice is an error naming it") {
    auto twice = canonical_json(R"({"k":1,"k":2})");
    REQUIRE_FALSE(twice);
    CHECK(twice.error().message == "JSON: the key 'k' is given twice");
  }
  SUBCASE("malformed text names the offset") {
    auto bad = canonical_json(R"({"k":)");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message.find("offset 5") != std::string::npos);
  }
}

TEST_CASE("tool_calls_json and parse_tool_calls_json") {
  const std::vector<ToolCall> calls{{"search", R"({"q":"x"})"}, {"stop", "null"}};
  const std::string text = tool_calls_json(calls);
  CHECK(text == R"([{"arguments":{"q":"x"},"name":"search"},{"arguments":null,"name":"stop"}])");
  auto back = parse_tool_calls_json(text);
  REQUIRE(back);
  CHECK(*back == calls);
  CHECK(tool_calls_json({}) == "[]");
  auto spaced = parse_tool_calls_json(R"([{"name":"f","arguments":{ "b":2, "a":1 }}])");
  REQUIRE(spaced);
  CHECK((*spaced)[0].arguments == R"({"a":1,"b":2})");
  CHECK(parse_tool_calls_json("{}").error().message == "tool calls: expected an array");
  CHECK(parse_tool_calls_json(R"([{"name":3}])").error().message ==
        "tool calls: call 0: `name` must be a string");
}

TEST_CASE("first_tool_call_difference") {
  const std::vector<ToolCall> a{{"filter", R"({"in":"v1","term":"x"})"},
                                {"count", R"({"in":"v2"})"}};
  SUBCASE("equal sequences") { CHECK_FALSE(first_tool_call_difference(a, a)); }
  SUBCASE("a name") {
    auto b = a;
    b[1].name = "sum";
    CHECK(first_tool_call_difference(a, b) == ToolCallDifference{1, "name"});
  }
  SUBCASE("an argument's value, named by its key") {
    auto b = a;
    b[0].arguments = R"({"in":"v1","term":"y"})";
    CHECK(first_tool_call_difference(a, b) == ToolCallDifference{0, "arguments.term"});
  }
  SUBCASE("a key only one call has, in sorted order") {
    auto b = a;
    b[0].arguments = R"({"desc":true,"in":"v1","term":"x"})";
    CHECK(first_tool_call_difference(a, b) == ToolCallDifference{0, "arguments.desc"});
  }
  SUBCASE("arguments that are not both objects") {
    auto b = a;
    b[1].arguments = R"([{"in":"v2"}])";
    CHECK(first_tool_call_difference(a, b) == ToolCallDifference{1, "arguments"});
  }
  SUBCASE("one sequence ends") {
    const std::vector<ToolCall> shorter{a[0]};
    CHECK(first_tool_call_difference(a, shorter) == ToolCallDifference{1, "end"});
    CHECK(first_tool_call_difference({}, a) == ToolCallDifference{0, "end"});
  }
}

TEST_CASE("compared_part: tool_calls") {
  Completion completion = calling({{"f", R"({"a":1})"}}, "the answer");
  completion.has_logprobs = true;
  completion.tokens.push_back({"the answer", -0.1, {}});
  completion.reasoning_text = "thinking";
  const Completion part = compared_part(completion, CompareOn::tool_calls);
  CHECK(part.text == R"([{"arguments":{"a":1},"name":"f"}])");
  CHECK(part.tokens.empty());
  CHECK_FALSE(part.has_logprobs);
  CHECK(part.reasoning_text.empty());
  CHECK(parse_compare_on("tool_calls").value() == CompareOn::tool_calls);
  CHECK(std::string(to_string(CompareOn::tool_calls)) == "tool_calls");
}

TEST_CASE("analyse: --compare-on tool_calls makes the sequence the identity") {
  // p0: the same calls every run, different final texts: one sequence, stable.
  // p1: run 2 changes the argument `term` of call 0, run 3 stops after call 0.
  // p2: one success and one failure: inconclusive, never agreement.
  const std::vector<ToolCall> calls{{"filter", R"({"term":"x"})"}, {"final", R"({"a":1})"}};
  auto other_term = calls;
  other_term[0].arguments = R"({"term":"y"})";
  const std::vector<ToolCall> stopped{calls[0]};
  const std::vector<RequestRecord> records{
      ok_record(0, 1, 0, calling(calls, "one")), ok_record(0, 1, 1, calling(calls, "two")),
      ok_record(1, 1, 0, calling(calls)),        ok_record(1, 1, 1, calling(calls)),
      ok_record(1, 1, 2, calling(other_term)),   ok_record(1, 1, 3, calling(stopped)),
      ok_record(2, 1, 0, calling(calls)),        failed_record(2, 1, 1, "refusal_no_tool")};
  AnalysisConfig config;
  config.compare_on = CompareOn::tool_calls;
  const AuditAnalysis analysis = analyse(numbered_suite(3), records, config);
  REQUIRE(analysis.prompts.size() == 3);
  const PromptAnalysis& p0 = analysis.prompts[0];
  CHECK(p0.status == PromptStatus::stable);
  CHECK(p0.unique_completions == 1);
  CHECK_FALSE(p0.tool_call_divergence);
  const PromptAnalysis& p1 = analysis.prompts[1];
  CHECK(p1.status == PromptStatus::unstable);
  CHECK(p1.unique_completions == 3);
  CHECK(p1.completions[0].text == tool_calls_json(calls));
  CHECK(p1.completions[0].count == 2);
  CHECK(p1.tool_call_divergence == ToolCallDifference{0, "arguments.term"});
  CHECK(analysis.prompts[2].status == PromptStatus::inconclusive);
  CHECK(analysis.summary.stable_prompts == 1);
  CHECK(analysis.summary.unstable_prompts == 1);
  CHECK(analysis.summary.inconclusive_prompts == 1);

  SUBCASE("compared on the answer, p0's texts differ and p1's agree") {
    config.compare_on = CompareOn::answer;
    const AuditAnalysis answers = analyse(numbered_suite(3), records, config);
    CHECK(answers.prompts[0].status == PromptStatus::unstable);
    CHECK(answers.prompts[1].status == PromptStatus::stable);
    CHECK_FALSE(answers.prompts[1].tool_call_divergence);
  }
}
