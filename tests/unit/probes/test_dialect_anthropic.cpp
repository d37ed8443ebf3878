// build_request() and parse_response() for Anthropic's Messages API (--api anthropic), against
// the reference payloads anthropic_*.
#include <doctest/doctest.h>

#include "probes/dialect.hpp"
#include "tests/unit/probes/dialect_test_support.hpp"

using namespace llmrepro;
using probes::Dialect;
using probes::test::parse_error;
using probes::test::parse_ok;
using probes::test::read_format;
using Json = nlohmann::ordered_json;

namespace {

constexpr Dialect k_anthropic = Dialect::anthropic;

// An SSE body of typed events, each `event:` line beside its `data:`.
std::string anthropic_sse(const Json& events) {
  std::string body;
  for (const auto& event : events)
    body += "event: " + event["type"].get<std::string>() + "\ndata: " + event.dump() + "\n\n";
  return body;
}

// The data JSON of each event of the reference stream, in order.
Json stream_events() {
  std::string text = read_format("anthropic_stream_events.txt");
  Json events = Json::array();
  std::size_t at = 0;
  while ((at = text.find("data: ", at)) != std::string::npos) {
    at += 6;
    std::size_t end = text.find('\n', at);
    events.push_back(Json::parse(text.substr(at, end - at)));
  }
  return events;
}

} // namespace

TEST_CASE("parse_response anthropic whole") {
  SUBCASE("a text block, end_turn, the cache's input counted into the prompt") {
    auto completion = parse_ok(k_anthropic, read_format("anthropic_message.json"));
    CHECK(completion.text == "Paris is the capital of France.");
    CHECK_FALSE(completion.has_logprobs);
    CHECK(completion.tokens.empty());
    CHECK(completion.finish_reason == "stop");
    CHECK(completion.model == "claude-sonnet-4-5-20250929");
    CHECK(completion.completion_tokens == 9);
    CHECK(completion.usage.prompt == 18);
    CHECK_FALSE(completion.usage.reasoning);
    CHECK(completion.system_fingerprint.empty());
  }
  SUBCASE("thinking is the reasoning, redacted thinking nothing, max_tokens is length") {
    auto completion = parse_ok(k_anthropic, read_format("anthropic_message_thinking.json"));
    CHECK(completion.text == "42");
    CHECK(completion.reasoning_text == "The user asks for 6 times 7. That is 42.");
    CHECK(completion.finish_reason == "length");
    CHECK(completion.usage.prompt == 21);
    CHECK(completion.completion_tokens == 64);
  }
  SUBCASE("stop reasons: stop_sequence is stop, the others kept as given") {
    Json body = Json::parse(read_format("anthropic_message.json"));
    body["stop_reason"] = "stop_sequence";
    CHECK(parse_ok(k_anthropic, body.dump()).finish_reason == "stop");
    body["stop_reason"] = "refusal";
    CHECK(parse_ok(k_anthropic, body.dump()).finish_reason == "refusal");
    body["stop_reason"] = nullptr;
    CHECK(parse_ok(k_anthropic, body.dump()).finish_reason.empty());
  }
  SUBCASE("tool_use blocks carry no answer text") {
    Json body = Json::parse(read_format("anthropic_message.json"));
    body["content"].push_back(
        Json::parse(R"({"type":"tool_use","id":"toolu_1","name":"f","input":{"a":1}})"));
    CHECK(parse_ok(k_anthropic, body.dump()).text == "Paris is the capital of France.");
  }
}

TEST_CASE("parse_response anthropic stream") {
  SUBCASE("the reference stream reads as the whole message") {
    auto streamed = parse_ok(k_anthropic, read_format("anthropic_stream_events.txt"), true);
    auto whole = parse_ok(k_anthropic, read_format("anthropic_message.json"));
    CHECK(streamed.text == whole.text);
    CHECK(streamed.finish_reason == "stop");
    CHECK(streamed.model == whole.model);
    CHECK(streamed.completion_tokens == 9);
    CHECK(streamed.usage.prompt == 18);
    CHECK_FALSE(streamed.has_logprobs);
  }
  SUBCASE("thinking deltas are the reasoning; signature deltas are skipped") {
    Json events = stream_events();
    Json thinking = Json::parse(
        R"([{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}},)"
        R"({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"6 by 7"}},)"
        R"({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"Eq"}},)"
        R"({"type":"content_block_stop","index":0}])");
    events.insert(events.begin() + 1, thinking.begin(), thinking.end());
    auto completion = parse_ok(k_anthropic, anthropic_sse(events), true);
    CHECK(completion.reasoning_text == "6 by 7");
    CHECK(completion.text == "Paris is the capital of France.");
  }
  SUBCASE("a stream without message_stop was cut short") {
    Json events = stream_events();
    events.erase(events.size() - 1);
    CHECK(parse_error(k_anthropic, anthropic_sse(events), true) ==
          "anthropic: stream ended without message_stop (truncated)");
  }
  SUBCASE("an error event mid-stream is an endpoint error") {
    Json events = stream_events();
    events[3] = Json::parse(read_format("anthropic_error_529_overloaded.json"));
    CHECK(parse_error(k_anthropic, anthropic_sse(events), true) ==
          "anthropic: endpoint error: Overloaded");
  }
}

TEST_CASE("parse_response anthropic errors") {
  CHECK(parse_error(k_anthropic, read_format("anthropic_error_400.json")) ==
        "anthropic: endpoint error: max_tokens: Field required");
  CHECK(
      probes::describe_error_body(read_format("anthropic_error_400_temperature_deprecated.json")) ==
      "`temperature` is deprecated for this model.");
  CHECK(parse_error(k_anthropic, R"({"type":"message","role":"assistant"})") ==
        "anthropic: missing field content");
}

TEST_CASE("build_request anthropic") {
  probes::GenerationParams params;
  params.model = "claude-sonnet-4-5-20250929";
  params.max_tokens = 64;
  params.top_logprobs = 3;
  params.seed = 42;
  SUBCASE("chat prompt: system text apart, no seed, no logprobs") {
    core::Prompt prompt;
    prompt.id = "c";
    prompt.messages = {{"system", "Be brief."},
                       {"user", "Capital of France?"},
                       {"assistant", "Paris."},
                       {"user", "And of Italy?"}};
    auto request = probes::build_request(k_anthropic, prompt, params);
    CHECK(request.path == "/v1/messages");
    CHECK(Json::parse(request.body) ==
          Json::parse(R"({"model":"claude-sonnet-4-5-20250929","system":"Be brief.",)"
                      R"("messages":[{"role":"user","content":"Capital of France?"},)"
                      R"({"role":"assistant","content":"Paris."},)"
                      R"({"role":"user","content":"And of Italy?"}],)"
                      R"("max_tokens":64,"temperature":0.0})"));
  }
  SUBCASE("text prompt, streamed, the prompt's max_tokens") {
    core::Prompt prompt;
    prompt.id = "t";
    prompt.text = "Capital of France?";
    prompt.max_tokens = 8;
    params.stream = true;
    Json body = Json::parse(probes::build_request(k_anthropic, prompt, params).body);
    CHECK(body["messages"] == Json::parse(R"([{"role":"user","content":"Capital of France?"}])"));
    CHECK(body["max_tokens"] == 8);
    CHECK(body["stream"] == true);
    CHECK_FALSE(body.contains("system"));
  }
  SUBCASE("key header and version header; a --header naming the version replaces it") {
    CHECK(probes::api_key_header(k_anthropic) == "x-api-key");
    CHECK(probes::dialect_headers(k_anthropic) ==
          std::vector<std::string>{"anthropic-version: 2023-06-01"});
    CHECK(probes::dialect_headers(Dialect::openai_chat).empty());
    CHECK(probes::with_dialect_headers(k_anthropic, {"X-Trace: 1"}) ==
          std::vector<std::string>{"X-Trace: 1", "anthropic-version: 2023-06-01"});
    CHECK(probes::with_dialect_headers(k_anthropic, {" Anthropic-Version : 2024-01-01"}) ==
          std::vector<std::string>{" Anthropic-Version : 2024-01-01"});
    CHECK(probes::parse_dialect("anthropic").value() == k_anthropic);
  }
}

TEST_CASE("anthropic tool calls: tool_use blocks, whole and streamed; tools and turns sent") {
  // Shapes: anthropic-sdk-python types/tool_use_block.py, raw_content_block_delta
  // (input_json_delta.partial_json), tool_result_block_param.py; tests/data/formats/README.md.
  const std::string whole = R"({"id":"msg_1","type":"message","role":"assistant",
    "model":"m","content":[{"type":"text","text":"Looking."},
    {"type":"tool_use","id":"toolu_1","name":"search","input":{"q":"Rome","n":2}}],
    "stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":7}})";
  const auto completion = parse_ok(Dialect::anthropic, whole);
  CHECK(completion.text == "Looking.");
  CHECK(completion.finish_reason == "tool_use");
  REQUIRE(completion.tool_calls.size() == 1);
  CHECK(completion.tool_calls[0].name == "search");
  CHECK(completion.tool_calls[0].arguments == R"({"n":2,"q":"Rome"})");
  CHECK(completion.tool_calls[0].id == "toolu_1");

  const std::string stream =
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\","
      "\"content\":[],\"usage\":{\"input_tokens\":5}}}\n\n"
      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
      "\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_2\",\"name\":\"search\","
      "\"input\":{}}}\n\n"
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
      "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"q\\\": \"}}\n\n"
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
      "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"Rome\\\"}\"}}\n\n"
      "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
      "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
  const auto streamed = parse_ok(Dialect::anthropic, stream, true);
  REQUIRE(streamed.tool_calls.size() == 1);
  CHECK(streamed.tool_calls[0].arguments == R"({"q":"Rome"})");
  CHECK(streamed.tool_calls[0].id == "toolu_2");

  const core::Prompt prompt = probes::test::chain_after_one_step(
      "toolu_1", R"([{"function":{"description":"Web.","name":"search",)"
                 R"("parameters":{"type":"object"}},"type":"function"}])");
  probes::GenerationParams params;
  params.model = "m";
  const Json body = Json::parse(probes::build_request(Dialect::anthropic, prompt, params).body);
  CHECK(
      body["tools"] ==
      Json::parse(R"([{"name":"search","input_schema":{"type":"object"},"description":"Web."}])"));
  CHECK(body["messages"][1] == Json::parse(R"({"role":"assistant","content":[{"type":"tool_use",
    "id":"toolu_1","name":"search","input":{"q":"Rome"}}]})"));
  CHECK(body["messages"][2] == Json::parse(R"({"role":"user","content":[{"type":"tool_result",
    "tool_use_id":"toolu_1","content":"Colosseum"}]})"));
}
