// build_request() and parse_response() for the Gemini API (--api gemini), against the reference
// payloads gemini_*.
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

constexpr Dialect k_gemini = Dialect::gemini;

// The data JSON of each event of the reference stream, in order.
Json stream_chunks() {
  std::string text = read_format("gemini_stream_generate_content.txt");
  Json chunks = Json::array();
  std::size_t at = 0;
  while ((at = text.find("data: ", at)) != std::string::npos) {
    at += 6;
    std::size_t end = text.find('\r', at);
    chunks.push_back(Json::parse(text.substr(at, end - at)));
  }
  return chunks;
}

// An SSE body as Google frames it: CRLF line ends, no [DONE].
std::string gemini_sse(const Json& chunks) {
  std::string body;
  for (const auto& chunk : chunks) body += "data: " + chunk.dump() + "\r\n\r\n";
  return body;
}

// The three tokens of "Paris is nice" in the reference payloads.
void check_gemini_paris_tokens(const core::Completion& completion) {
  CHECK(completion.text == "Paris is nice");
  CHECK(completion.has_logprobs);
  REQUIRE(completion.tokens.size() == 3);
  const auto& first = completion.tokens[0];
  CHECK(first.token == "Paris");
  CHECK(first.logprob == -0.0123);
  REQUIRE(first.top.size() == 2);
  CHECK(first.top[0].token == "Paris");
  CHECK(first.top[1].token == "The");
  CHECK(*first.gap() == -0.0123 - -4.5);
  CHECK(*first.greedy());
  CHECK(*completion.tokens[1].gap() == -0.25 - -1.5);
  // The chosen " nice" is not among the top candidates: merged in, so three candidates, the
  // gap over the union, and the token known not to be the top one.
  const auto& last = completion.tokens[2];
  CHECK(last.token == " nice");
  CHECK(last.logprob == -2.75);
  REQUIRE(last.top.size() == 3);
  CHECK(last.top[0].token == " lovely");
  CHECK(last.top[1].token == " great");
  CHECK(last.top[2].token == " nice");
  CHECK(last.top[2].logprob == -2.75);
  CHECK(*last.gap() == -1.0 - -1.5);
  CHECK_FALSE(*last.greedy());
  CHECK(completion.numbers == numbers(0, 0, 0, 0, 0));
}

} // namespace

TEST_CASE("parse_response gemini whole") {
  SUBCASE("reference response") {
    auto completion = parse_ok(k_gemini, read_format("gemini_generate_content_logprobs.json"));
    check_gemini_paris_tokens(completion);
    CHECK(completion.finish_reason == "stop");
    CHECK(completion.model == "gemini-2.5-flash");
    CHECK(completion.completion_tokens == 3);
    CHECK(completion.system_fingerprint.empty());
  }
  SUBCASE("finish reasons: MAX_TOKENS is length, others as given") {
    Json body = Json::parse(read_format("gemini_generate_content_logprobs.json"));
    body["candidates"][0]["finishReason"] = "MAX_TOKENS";
    CHECK(parse_ok(k_gemini, body.dump()).finish_reason == "length");
    body["candidates"][0]["finishReason"] = "SAFETY";
    CHECK(parse_ok(k_gemini, body.dump()).finish_reason == "SAFETY");
  }
  SUBCASE("a chosen token already listed is not added twice, whatever the order") {
    Json body = Json::parse(read_format("gemini_generate_content_logprobs.json"));
    auto& top = body["candidates"][0]["logprobsResult"]["topCandidates"][1]["candidates"];
    std::swap(top[0], top[1]);
    auto completion = parse_ok(k_gemini, body.dump());
    REQUIRE(completion.tokens[1].top.size() == 2);
    CHECK(completion.tokens[1].top[0].token == " is");
  }
  SUBCASE("a position without top candidates stays without") {
    Json body = Json::parse(read_format("gemini_generate_content_logprobs.json"));
    body["candidates"][0]["logprobsResult"]["topCandidates"][0] = Json::object();
    auto completion = parse_ok(k_gemini, body.dump());
    CHECK(completion.tokens[0].top.empty());
    CHECK_FALSE(completion.tokens[0].gap().has_value());
  }
  SUBCASE("no usage: the tokens are counted") {
    Json body = Json::parse(read_format("gemini_generate_content_logprobs.json"));
    body.erase("usageMetadata");
    CHECK(parse_ok(k_gemini, body.dump()).completion_tokens == 3);
  }
  SUBCASE("text without logprobsResult, and an empty answer") {
    Json body = Json::parse(read_format("gemini_generate_content_logprobs.json"));
    body["candidates"][0].erase("logprobsResult");
    auto ignored = parse_ok(k_gemini, body.dump());
    CHECK(ignored.text == "Paris is nice");
    CHECK_FALSE(ignored.has_logprobs);
    CHECK(ignored.tokens.empty());
    body["candidates"][0]["content"]["parts"][0]["text"] = "";
    body["candidates"][0]["logprobsResult"] = Json::object();
    auto empty = parse_ok(k_gemini, body.dump());
    CHECK(empty.has_logprobs);
    CHECK(empty.tokens.empty());
  }
  SUBCASE("thought parts are no part of the answer") {
    Json body = Json::parse(read_format("gemini_generate_content_logprobs.json"));
    auto& parts = body["candidates"][0]["content"]["parts"];
    parts.insert(parts.begin(), Json{{"text", "Let me think."}, {"thought", true}});
    CHECK(parse_ok(k_gemini, body.dump()).text == "Paris is nice");
  }
  SUBCASE("null, NaN and infinite log probabilities are read and counted") {
    Json body = Json::parse(read_format("gemini_generate_content_logprobs.json"));
    auto& result = body["candidates"][0]["logprobsResult"];
    result["chosenCandidates"][0]["logProbability"] = "@NaN@";
    result["topCandidates"][0]["candidates"][1]["logProbability"] = "@-Infinity@";
    result["chosenCandidates"][1]["logProbability"] = nullptr;
    result["topCandidates"][2]["candidates"][1]["logProbability"] = "@1e400@";
    result["topCandidates"][2]["candidates"][0]["logProbability"] = "@Infinity@";
    auto completion = parse_ok(k_gemini, with_literals(body.dump()));
    CHECK(std::isnan(completion.tokens[0].logprob));
    CHECK(completion.tokens[0].top[1].logprob == core::k_logprob_floor);
    CHECK(std::isnan(completion.tokens[1].logprob));
    // " nice" (-2.75) is the only known candidate left at the last position: first.
    CHECK(completion.tokens[2].top[0].token == " nice");
    CHECK_FALSE(completion.tokens[2].gap().has_value());
    CHECK(completion.numbers == numbers(1, 1, 1, 1, 1));
  }
}

TEST_CASE("parse_response gemini stream") {
  SUBCASE("the reference stream reads as the whole response") {
    auto streamed = parse_ok(k_gemini, read_format("gemini_stream_generate_content.txt"), true);
    auto whole = parse_ok(k_gemini, read_format("gemini_generate_content_logprobs.json"));
    check_gemini_paris_tokens(streamed);
    CHECK(same_tokens(streamed, whole));
    CHECK(streamed.finish_reason == "stop");
    CHECK(streamed.completion_tokens == 3);
    CHECK(streamed.model == "gemini-2.5-flash");
  }
  SUBCASE("LF framing and a usage-only last chunk") {
    Json chunks = stream_chunks();
    chunks.push_back(
        Json{{"candidates", Json::array()}, {"usageMetadata", {{"candidatesTokenCount", 4}}}});
    std::string body;
    for (const auto& chunk : chunks) body += "data: " + chunk.dump() + "\n\n";
    auto completion = parse_ok(k_gemini, body, true);
    CHECK(completion.text == "Paris is nice");
    CHECK(completion.completion_tokens == 4);
  }
  SUBCASE("a stream without a finishReason was cut short") {
    Json chunks = stream_chunks();
    chunks.erase(1);
    CHECK(parse_error(k_gemini, gemini_sse(chunks), true) ==
          "gemini: stream ended without a finishReason (truncated)");
  }
  SUBCASE("an error chunk mid-stream") {
    Json chunks = stream_chunks();
    chunks[1] = Json::parse(read_format("gemini_error_400.json"));
    CHECK(parse_error(k_gemini, gemini_sse(chunks), true) ==
          "gemini: endpoint error: API key not valid. Please pass a valid API "
          "key.");
  }
}

TEST_CASE("parse_response gemini errors") {
  CHECK(parse_error(k_gemini, read_format("gemini_error_400.json")) ==
        "gemini: endpoint error: API key not valid. Please pass a valid API key.");
  CHECK(probes::describe_error_body(read_format("gemini_error_400.json")) ==
        "API key not valid. Please pass a valid API key.");
  CHECK(parse_error(k_gemini, R"({"promptFeedback":{"blockReason":"SAFETY"}})") ==
        "gemini: endpoint error: prompt blocked (SAFETY)");
  CHECK(parse_error(k_gemini, R"({"usageMetadata":{}})") == "gemini: missing field candidates");
  Json body = Json::parse(read_format("gemini_generate_content_logprobs.json"));
  body["candidates"][0]["logprobsResult"]["topCandidates"].erase(2);
  CHECK(parse_error(k_gemini, body.dump()) ==
        "gemini: field candidates[0].logprobsResult.topCandidates has 2 positions, field "
        "candidates[0].logprobsResult.chosenCandidates has 3");
}

TEST_CASE("build_request gemini") {
  probes::GenerationParams params;
  params.model = "gemini-2.5-flash";
  params.max_tokens = 64;
  params.top_logprobs = 3;
  params.seed = 42;
  SUBCASE("chat prompt: system text apart, assistant turns as model") {
    core::Prompt prompt;
    prompt.id = "c";
    prompt.messages = {{"system", "Be brief."},
                       {"user", "Capital of France?"},
                       {"assistant", "Paris."},
                       {"user", "And of Italy?"}};
    auto request = probes::build_request(k_gemini, prompt, params);
    CHECK(request.path == "/v1beta/models/gemini-2.5-flash:generateContent");
    Json body = Json::parse(request.body);
    CHECK(body["systemInstruction"] == Json::parse(R"({"parts":[{"text":"Be brief."}]})"));
    CHECK(body["contents"] ==
          Json::parse(R"([{"role":"user","parts":[{"text":"Capital of France?"}]},)"
                      R"({"role":"model","parts":[{"text":"Paris."}]},)"
                      R"({"role":"user","parts":[{"text":"And of Italy?"}]}])"));
    CHECK(body["generationConfig"] ==
          Json::parse(R"({"temperature":0.0,"maxOutputTokens":64,"responseLogprobs":true,)"
                      R"("logprobs":3,"seed":42})"));
    CHECK_FALSE(body.contains("model"));
    CHECK_FALSE(body.contains("stream"));
  }
  SUBCASE("text prompt, streamed, a models/ prefix, the prompt's max_tokens and a schema") {
    core::Prompt prompt;
    prompt.id = "t";
    prompt.text = "Capital of France?";
    prompt.max_tokens = 8;
    prompt.response_format_json =
        R"({"type":"json_schema","json_schema":{"name":"city","schema":{"type":"object"}}})";
    params.stream = true;
    params.model = "models/gemini-2.5-pro";
    auto request = probes::build_request(k_gemini, prompt, params);
    CHECK(request.path == "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse");
    Json body = Json::parse(request.body);
    CHECK(body["contents"] ==
          Json::parse(R"([{"role":"user","parts":[{"text":"Capital of France?"}]}])"));
    CHECK_FALSE(body.contains("systemInstruction"));
    CHECK(body["generationConfig"]["maxOutputTokens"] == 8);
    CHECK(body["generationConfig"]["responseMimeType"] == "application/json");
    CHECK(body["generationConfig"]["responseJsonSchema"] == Json{{"type", "object"}});
  }
  SUBCASE("the key header is Gemini's only") {
    CHECK(probes::api_key_header(k_gemini) == "x-goog-api-key");
    CHECK(probes::api_key_header(Dialect::openai_chat).empty());
    CHECK(probes::api_key_header(Dialect::openai_responses).empty());
  }
}

TEST_CASE("gemini tool calls: functionCall parts, whole and streamed, and the turns sent") {
  // Shapes: googleapis/python-genai types.py (Part.function_call, Part.thought_signature,
  // FunctionCall {name, args, id}, FunctionResponse {name, response, id}); README of
  // tests/data/formats.
  const Json whole = Json::parse(R"({"candidates":[{"content":{"role":"model","parts":[
    {"text":"Looking."},
    {"functionCall":{"name":"search","args":{"q":"Rome","n":2}},"thoughtSignature":"c2ln"},
    {"functionCall":{"name":"clock","id":"fc_2"}}]},"finishReason":"STOP","index":0}],
    "usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":7},
    "modelVersion":"gemini-3-flash"})");
  const auto completion = parse_ok(k_gemini, whole.dump());
  CHECK(completion.text == "Looking.");
  CHECK(completion.finish_reason == "stop");
  REQUIRE(completion.tool_calls.size() == 2);
  probes::test::check_tool_call(completion.tool_calls[0], "search", R"({"n":2,"q":"Rome"})", "");
  CHECK(completion.tool_calls[0].signature == "c2ln");
  // A call without args.
  probes::test::check_tool_call(completion.tool_calls[1], "clock", "null", "fc_2");
  CHECK(completion.tool_calls[1].signature.empty());

  // Streamed: the text, then the calls whole in the chunk that finishes.
  Json text_chunk = whole;
  text_chunk["candidates"][0]["content"]["parts"] = Json::array({Json{{"text", "Looking."}}});
  text_chunk["candidates"][0].erase("finishReason");
  Json call_chunk = whole;
  call_chunk["candidates"][0]["content"]["parts"].erase(0);
  const auto streamed = parse_ok(k_gemini, gemini_sse(Json::array({text_chunk, call_chunk})), true);
  CHECK(streamed.text == "Looking.");
  REQUIRE(streamed.tool_calls.size() == 2);
  CHECK(streamed.tool_calls[0].arguments == R"({"n":2,"q":"Rome"})");
  CHECK(streamed.tool_calls[0].signature == "c2ln");
  CHECK(streamed.tool_calls[1].id == "fc_2");

  // The next step: the model turn with its calls as given (args, id, signature), then the two
  // results as one user turn; a result that is no JSON object is wrapped as {"output": ...}.
  core::Prompt prompt = probes::test::chain_after_one_step(
      "fc_1", R"([{"function":{"description":"Web.","name":"search",)"
              R"("parameters":{"type":"object"}},"type":"function"}])");
  prompt.messages[1].tool_calls[0].signature = "c2ln";
  prompt.messages[1].tool_calls.push_back({"clock", "null", "", ""});
  prompt.messages.push_back({"tool", "12", {}, "", "clock"});
  probes::GenerationParams params;
  params.model = "gemini-3-flash";
  const Json body = Json::parse(probes::build_request(k_gemini, prompt, params).body);
  CHECK(body["tools"] == Json::parse(R"([{"functionDeclarations":[{"description":"Web.",
    "name":"search","parameters":{"type":"object"}}]}])"));
  REQUIRE(body["contents"].size() == 3);
  CHECK(body["contents"][0] == Json::parse(R"({"role":"user","parts":[{"text":"Plan."}]})"));
  CHECK(body["contents"][1] == Json::parse(R"({"role":"model","parts":[
    {"functionCall":{"name":"search","args":{"q":"Rome"},"id":"fc_1"},"thoughtSignature":"c2ln"},
    {"functionCall":{"name":"clock"}}]})"));
  CHECK(body["contents"][2] == Json::parse(R"({"role":"user","parts":[
    {"functionResponse":{"name":"search","response":{"output":"Colosseum"},"id":"fc_1"}},
    {"functionResponse":{"name":"clock","response":{"output":12}}}]})"));
  // A result that is a JSON object goes as it is (the registry's error result among them).
  prompt.messages[2].content = R"({"error":"no scripted result"})";
  const Json error_body = Json::parse(probes::build_request(k_gemini, prompt, params).body);
  CHECK(error_body["contents"][2]["parts"][0]["functionResponse"]["response"] ==
        Json::parse(R"({"error":"no scripted result"})"));
}
