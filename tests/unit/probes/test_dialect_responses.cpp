// build_request() and parse_response() for OpenAI's Responses API (--api openai-responses),
// against the reference payloads openai_responses_*.
#include <cmath>

#include <doctest/doctest.h>

#include "core/logprob_floor.hpp"
#include "probes/dialect.hpp"
#include "tests/unit/probes/dialect_test_support.hpp"

using namespace llmrepro;
using probes::Dialect;
using probes::parse_response;
using probes::test::numbers;
using probes::test::parse_error;
using probes::test::parse_ok;
using probes::test::read_format;
using probes::test::same_tokens;
using probes::test::with_literals;
using Json = nlohmann::ordered_json;

namespace {

constexpr Dialect k_responses = Dialect::openai_responses;

// The data JSON of each event of the reference stream, in order.
Json stream_events() {
  std::string text = read_format("openai_responses_stream_events.txt");
  Json events = Json::array();
  std::size_t at = 0;
  while ((at = text.find("\ndata: ", at)) != std::string::npos) {
    at += 7;
    std::size_t end = text.find('\n', at);
    events.push_back(Json::parse(text.substr(at, end - at)));
  }
  return events;
}

// A typed SSE body, `event: <type>` before each `data:` as OpenAI writes it.
std::string typed_sse(const Json& events) {
  std::string body;
  for (const auto& event : events)
    body += "event: " + event["type"].get<std::string>() + "\ndata: " + event.dump() + "\n\n";
  return body;
}

// The five tokens of "The capital is Paris." in the reference payloads.
void check_responses_paris_tokens(const core::Completion& completion) {
  CHECK(completion.text == "The capital is Paris.");
  CHECK(completion.has_logprobs);
  REQUIRE(completion.tokens.size() == 5);
  const auto& first = completion.tokens[0];
  CHECK(first.token == "The");
  CHECK(first.logprob == -0.0031);
  REQUIRE(first.top.size() == 2);
  CHECK(first.top[1].token == "Paris");
  CHECK(*first.gap() == -0.0031 - -5.9012);
  CHECK(completion.tokens[3].token == " Paris");
  CHECK(*completion.tokens[3].gap() == -0.0001 - -9.3307);
  // The last position lists its candidates lowest first: sorted here.
  const auto& last = completion.tokens[4];
  CHECK(last.token == ".");
  REQUIRE(last.top.size() == 2);
  CHECK(last.top[0].token == ".");
  CHECK(last.top[1].token == "!");
  CHECK(*last.gap() == -0.4012 - -1.1104);
  CHECK(completion.numbers == numbers(0, 0, 0, 0, 0));
}

} // namespace

TEST_CASE("parse_response openai-responses whole") {
  SUBCASE("reference response: the reasoning item is skipped") {
    auto completion = parse_ok(k_responses, read_format("openai_responses_logprobs.json"));
    check_responses_paris_tokens(completion);
    CHECK(completion.finish_reason == "stop");
    CHECK(completion.model == "gpt-4.1-2025-04-14");
    CHECK(completion.completion_tokens == 5);
    CHECK(completion.system_fingerprint.empty());
  }
  SUBCASE("incomplete at the token limit reads as length") {
    Json body = Json::parse(read_format("openai_responses_logprobs.json"));
    body["status"] = "incomplete";
    body["incomplete_details"] = Json{{"reason", "max_output_tokens"}};
    CHECK(parse_ok(k_responses, body.dump()).finish_reason == "length");
    body["incomplete_details"]["reason"] = "content_filter";
    CHECK(parse_ok(k_responses, body.dump()).finish_reason == "content_filter");
  }
  SUBCASE("no usage: the tokens are counted") {
    Json body = Json::parse(read_format("openai_responses_logprobs.json"));
    body["usage"] = nullptr;
    CHECK(parse_ok(k_responses, body.dump()).completion_tokens == 5);
  }
  SUBCASE("text without logprobs, and an empty answer with an empty list") {
    Json body = Json::parse(read_format("openai_responses_logprobs.json"));
    auto& part = body["output"][1]["content"][0];
    part["logprobs"] = Json::array();
    auto ignored = parse_ok(k_responses, body.dump());
    CHECK(ignored.text == "The capital is Paris.");
    CHECK_FALSE(ignored.has_logprobs);
    part.erase("logprobs");
    CHECK_FALSE(parse_ok(k_responses, body.dump()).has_logprobs);
    part["text"] = "";
    part["logprobs"] = Json::array();
    auto empty = parse_ok(k_responses, body.dump());
    CHECK(empty.has_logprobs);
    CHECK(empty.tokens.empty());
  }
  SUBCASE("null, NaN and infinite log probabilities are read and counted") {
    Json body = Json::parse(read_format("openai_responses_logprobs.json"));
    auto& logprobs = body["output"][1]["content"][0]["logprobs"];
    logprobs[0]["logprob"] = "@NaN@";
    logprobs[1]["top_logprobs"][1]["logprob"] = "@-Infinity@";
    logprobs[2]["logprob"] = nullptr;
    logprobs[3]["top_logprobs"][1]["logprob"] = "@1e400@";
    logprobs[4]["top_logprobs"][0]["logprob"] = "@Infinity@";
    auto completion = parse_ok(k_responses, with_literals(body.dump()));
    CHECK(std::isnan(completion.tokens[0].logprob));
    CHECK(completion.tokens[1].top[1].logprob == core::k_logprob_floor);
    CHECK(std::isnan(completion.tokens[2].logprob));
    CHECK(std::isnan(completion.tokens[3].top[1].logprob));
    CHECK(completion.numbers == numbers(1, 1, 1, 1, 1));
  }
}

TEST_CASE("parse_response openai-responses stream") {
  Json events = stream_events();
  REQUIRE(events.size() == 13);
  SUBCASE("the reference stream reads as the whole response") {
    auto streamed = parse_ok(k_responses, read_format("openai_responses_stream_events.txt"), true);
    auto whole = parse_ok(k_responses, read_format("openai_responses_logprobs.json"));
    check_responses_paris_tokens(streamed);
    CHECK(same_tokens(streamed, whole));
    CHECK(streamed.finish_reason == "stop");
    CHECK(streamed.model == "gpt-4.1-2025-04-14");
    CHECK(streamed.completion_tokens == 5);
  }
  SUBCASE("response.incomplete ends it at the token limit") {
    Json& last = events.back();
    last["type"] = "response.incomplete";
    last["response"]["status"] = "incomplete";
    last["response"]["incomplete_details"] = Json{{"reason", "max_output_tokens"}};
    CHECK(parse_ok(k_responses, typed_sse(events), true).finish_reason == "length");
  }
  SUBCASE("deltas with null and NaN log probabilities") {
    events[4]["logprobs"][0]["logprob"] = nullptr;
    events[5]["logprobs"][0]["top_logprobs"][1]["logprob"] = "@NaN@";
    auto completion = parse_ok(k_responses, with_literals(typed_sse(events)), true);
    CHECK(std::isnan(completion.tokens[0].logprob));
    CHECK(std::isnan(completion.tokens[1].top[1].logprob));
    CHECK(completion.numbers == numbers(1, 0, 0, 0, 1));
  }
  SUBCASE("deltas with empty logprobs carry text only") {
    for (auto& event : events)
      if (event["type"] == "response.output_text.delta") event["logprobs"] = Json::array();
    auto completion = parse_ok(k_responses, typed_sse(events), true);
    CHECK(completion.text == "The capital is Paris.");
    CHECK_FALSE(completion.has_logprobs);
  }
}

TEST_CASE("parse_response openai-responses errors") {
  SUBCASE("an error body") {
    CHECK(parse_error(k_responses, read_format("openai_responses_error_400.json")) ==
          "openai-responses: endpoint error: Invalid 'top_logprobs': integer above maximum "
          "value. Expected a value <= 20, but got 21 instead.");
  }
  SUBCASE("a failed response") {
    Json body = Json::parse(read_format("openai_responses_logprobs.json"));
    body["status"] = "failed";
    CHECK(parse_error(k_responses, body.dump()) ==
          "openai-responses: endpoint error: response failed");
    body["status"] = "queued";
    CHECK(parse_error(k_responses, body.dump()) ==
          "openai-responses: field status is 'queued' (expected "
          "completed, incomplete or failed)");
    body.erase("output");
    CHECK(parse_error(k_responses, body.dump()) == "openai-responses: missing field output");
  }
  Json events = stream_events();
  SUBCASE("a stream without its terminal event") {
    events.erase(events.end() - 1);
    CHECK(parse_error(k_responses, typed_sse(events), true) ==
          "openai-responses: stream ended without response.completed (truncated)");
  }
  SUBCASE("an error event") {
    events[6] = Json::parse(R"({"type":"error","code":"server_error","message":"The server had )"
                            R"(an error processing your request.","param":null,)"
                            R"("sequence_number":6})");
    CHECK(parse_error(k_responses, typed_sse(events), true) ==
          "openai-responses: endpoint error: The server had an error processing "
          "your request.");
  }
  SUBCASE("response.failed") {
    Json& last = events.back();
    last["type"] = "response.failed";
    last["response"]["status"] = "failed";
    last["response"]["error"] = Json{{"code", "server_error"}, {"message", "overloaded"}};
    CHECK(parse_error(k_responses, typed_sse(events), true) ==
          "openai-responses: endpoint error: overloaded");
  }
  SUBCASE("a wrongly typed delta names its event") {
    events[5]["logprobs"][0]["token"] = 7;
    CHECK(parse_error(k_responses, typed_sse(events), true) ==
          "openai-responses: stream event 6: field logprobs[0].token must be a string");
  }
}

TEST_CASE("build_request openai-responses") {
  probes::GenerationParams params;
  params.model = "m";
  params.max_tokens = 64;
  params.top_logprobs = 3;
  params.seed = 42;
  SUBCASE("chat prompt") {
    core::Prompt prompt;
    prompt.id = "c";
    prompt.messages = {{"system", "Be brief."}, {"user", "Capital of France?"}};
    auto request = probes::build_request(k_responses, prompt, params);
    CHECK(request.path == "/v1/responses");
    Json body = Json::parse(request.body);
    CHECK(body["model"] == "m");
    REQUIRE(body["input"].size() == 2);
    CHECK(body["input"][0] == Json{{"role", "system"}, {"content", "Be brief."}});
    CHECK(body["input"][1] == Json{{"role", "user"}, {"content", "Capital of France?"}});
    CHECK(body["temperature"] == 0.0);
    CHECK(body["max_output_tokens"] == 64);
    CHECK(body["top_logprobs"] == 3);
    CHECK(body["include"] == Json::array({"message.output_text.logprobs"}));
    CHECK(body["stream"] == false);
    CHECK(body["store"] == false);
    // The spec has no seed on this route; OpenAI rejects unknown parameters.
    CHECK_FALSE(body.contains("seed"));
    CHECK_FALSE(body.contains("max_tokens"));
    CHECK_FALSE(body.contains("text"));
  }
  SUBCASE("text prompt, streamed, the prompt's max_tokens and a JSON schema") {
    core::Prompt prompt;
    prompt.id = "t";
    prompt.text = "Capital of France?";
    prompt.max_tokens = 8;
    prompt.response_format_json =
        R"({"type":"json_schema","json_schema":{"name":"city","schema":{"type":"object"},"strict":true}})";
    params.stream = true;
    params.model.clear();
    Json body = Json::parse(probes::build_request(k_responses, prompt, params).body);
    CHECK(body["input"] == "Capital of France?");
    CHECK(body["max_output_tokens"] == 8);
    CHECK(body["stream"] == true);
    CHECK_FALSE(body.contains("model"));
    CHECK_FALSE(body.contains("stream_options"));
    CHECK(body["text"]["format"] == Json::parse(R"({"name":"city","schema":{"type":"object"},)"
                                                R"("strict":true,"type":"json_schema"})"));
  }
  SUBCASE("json_object passes as it is") {
    core::Prompt prompt;
    prompt.id = "t";
    prompt.text = "x";
    prompt.response_format_json = R"({"type":"json_object"})";
    Json body = Json::parse(probes::build_request(k_responses, prompt, params).body);
    CHECK(body["text"]["format"] == Json{{"type", "json_object"}});
  }
}

TEST_CASE("openai-responses tool calls: function_call items, streamed events, input items") {
  // Shapes: openai-python types/responses response_function_tool_call.py, the
  // response_function_call_arguments_{delta,done}_event.py and response_output_item_*_event.py
  // events, function_tool_param.py and response_input_item_param.py (FunctionCallOutput).
  const Json call = Json::parse(R"({"id":"fc_1","type":"function_call","status":"completed",
    "call_id":"call_1","name":"search","arguments":"{\"q\": \"Rome\", \"n\": 2}"})");
  Json whole = Json::parse(R"({"id":"resp_1","object":"response","status":"completed",
    "model":"gpt-5","output":[{"id":"msg_1","type":"message","status":"completed",
    "role":"assistant","content":[{"type":"output_text","text":"Looking.","annotations":[]}]}],
    "usage":{"input_tokens":5,"output_tokens":7}})");
  whole["output"].push_back(call);
  const auto completion = parse_ok(k_responses, whole.dump());
  CHECK(completion.text == "Looking.");
  CHECK(completion.finish_reason == "stop");
  REQUIRE(completion.tool_calls.size() == 1);
  probes::test::check_tool_call(completion.tool_calls[0], "search", R"({"n":2,"q":"Rome"})",
                                "call_1");

  // Streamed: the item added with empty arguments, the deltas, .done and the item done; the
  // calls in response.completed's output are not read twice.
  Json added = call;
  added["status"] = "in_progress";
  added["arguments"] = "";
  const Json where{{"item_id", "fc_1"}, {"output_index", 1}};
  Json events = Json::array();
  events.push_back({{"type", "response.output_item.added"}, {"output_index", 1}, {"item", added}});
  for (const char* piece : {"{\"q\": ", "\"Rome\", ", "\"n\": 2}"}) {
    Json delta = where;
    delta["type"] = "response.function_call_arguments.delta";
    delta["delta"] = piece;
    events.push_back(std::move(delta));
  }
  const Json tail =
      Json::array({Json{{"type", "response.function_call_arguments.done"},
                        {"item_id", "fc_1"},
                        {"output_index", 1},
                        {"arguments", call["arguments"]}},
                   Json{{"type", "response.output_item.done"}, {"output_index", 1}, {"item", call}},
                   Json{{"type", "response.completed"}, {"response", whole}}});
  Json full = events;
  for (const Json& event : tail) full.push_back(event);
  const auto streamed = parse_ok(k_responses, probes::test::sse_body(full, false), true);
  REQUIRE(streamed.tool_calls.size() == 1);
  probes::test::check_tool_call(streamed.tool_calls[0], "search", R"({"n":2,"q":"Rome"})",
                                "call_1");
  // The deltas alone make the arguments too.
  events.push_back(tail.back());
  const auto deltas = parse_ok(k_responses, probes::test::sse_body(events, false), true);
  REQUIRE(deltas.tool_calls.size() == 1);
  CHECK(deltas.tool_calls[0].arguments == R"({"n":2,"q":"Rome"})");
  // A delta for an item that was never added.
  const Json stray = Json::array({events[1], tail.back()});
  CHECK(parse_error(k_responses, probes::test::sse_body(stray, false), true) ==
        "openai-responses: stream event 1: body: response.function_call_arguments.delta for no "
        "function_call item");

  // The next step: flat function tools, the call and its output as input items.
  const core::Prompt prompt = probes::test::chain_after_one_step(
      "call_1", R"([{"function":{"description":"Web.","name":"search",)"
                R"("parameters":{"type":"object"}},"type":"function"}])");
  const Json body =
      Json::parse(probes::build_request(k_responses, prompt, probes::GenerationParams{}).body);
  CHECK(body["tools"] == Json::parse(R"([{"type":"function","description":"Web.",
    "name":"search","parameters":{"type":"object"}}])"));
  CHECK(body["input"] == Json::parse(R"([{"role":"user","content":"Plan."},
    {"type":"function_call","call_id":"call_1","name":"search","arguments":"{\"q\":\"Rome\"}"},
    {"type":"function_call_output","call_id":"call_1","output":"Colosseum"}])"));
}
