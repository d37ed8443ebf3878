// parse_response() for the OpenAI-compatible dialects, against the reference payloads.
#include <cmath>

#include <doctest/doctest.h>

#include "core/logprob_floor.hpp"
#include "probes/dialect.hpp"
#include "tests/unit/probes/dialect_test_support.hpp"

using namespace llmrepro;
using probes::Dialect;
using probes::parse_response;
using probes::test::numbers;
using probes::test::parse_ok;
using probes::test::read_format;
using probes::test::same_tokens;
using probes::test::sse_body;
using probes::test::with_literals;
using Json = nlohmann::ordered_json;

namespace {

// The seven tokens of "The capital of France is Paris." shared by several payloads.
void check_openai_paris_tokens(const core::Completion& completion) {
  REQUIRE(completion.tokens.size() == 7);
  CHECK(completion.text == "The capital of France is Paris.");
  CHECK(completion.has_logprobs);
  const auto& first = completion.tokens[0];
  CHECK(first.token == "The");
  CHECK(first.logprob == -0.0041);
  REQUIRE(first.top.size() == 2);
  CHECK(first.top[0].token == "The");
  CHECK(first.top[1].token == "Paris");
  CHECK(*first.gap() == -0.0041 - -5.6312);
  CHECK(completion.tokens[5].token == " Paris");
  CHECK(completion.tokens[6].token == ".");
  CHECK(completion.tokens[6].top[1].token == ".\n");
  CHECK(*completion.tokens[6].gap() == -0.0312 - -3.4874);
}

// The bytes of a token string, as an OpenAI `bytes` list.
Json utf8_bytes(const Json& token) {
  Json bytes = Json::array();
  for (char c : token.get<std::string>()) bytes.push_back(static_cast<unsigned char>(c));
  return bytes;
}

// The chat chunks a stream of `response` (a whole chat completion) would carry: a role chunk,
// one chunk per token with its logprobs entry, and a last chunk with the finish reason.
Json chunks_of(const Json& response) {
  Json chunks = Json::array();
  chunks.push_back(Json::parse(
      R"({"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]})"));
  for (const auto& entry : response["choices"][0]["logprobs"]["content"]) {
    Json chunk = Json::parse(R"({"choices":[{"index":0,"finish_reason":null}]})");
    chunk["choices"][0]["delta"]["content"] = entry["token"];
    chunk["choices"][0]["logprobs"]["content"] = Json::array({entry});
    chunks.push_back(chunk);
  }
  chunks.push_back(Json::parse(
      R"({"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"system_fingerprint":"fp_560af6e559"})"));
  return chunks;
}

// The reference chat response with every kind of number endpoints write in the wild for a log
// probability, as "@literal@" strings for with_literals(): Python's json.dumps writes NaN,
// Infinity and -Infinity for non-finite floats (allow_nan is its default), 1e400 is past a
// double's range, and null is what a server sends that has no value.
Json wild_numbers_response() {
  Json body = Json::parse(read_format("openai_chat_completion_logprobs.json"));
  auto& content = body["choices"][0]["logprobs"]["content"];
  content[0]["logprob"] = "@NaN@";
  content[0]["top_logprobs"][0]["logprob"] = "@NaN@";
  content[1]["top_logprobs"][1]["logprob"] = "@-Infinity@";
  content[2]["top_logprobs"][1]["logprob"] = "@Infinity@";
  content[3]["top_logprobs"][1]["logprob"] = "@-1e400@";
  content[4]["top_logprobs"][1]["logprob"] = "@1e400@";
  content[5]["logprob"] = nullptr;
  content[5]["top_logprobs"] = nullptr;
  content[6]["top_logprobs"] = Json::array();
  return body;
}

// What wild_numbers_response() reads as: -Infinity and -1e400 are the floor, the others unknown
// (sorted last), a null or empty top_logprobs no candidates, and each literal counted.
void check_wild_numbers(const core::Completion& completion) {
  REQUIRE(completion.tokens.size() == 7);
  CHECK(completion.text == "The capital of France is Paris.");
  CHECK(core::tokens_match_text(completion));
  const auto& tokens = completion.tokens;
  CHECK(std::isnan(tokens[0].logprob));
  REQUIRE(tokens[0].top.size() == 2);
  CHECK(tokens[0].top[0].token == "Paris"); // the unknown "The" sorts last
  CHECK(tokens[0].top[0].logprob == -5.6312);
  CHECK(tokens[0].top[1].token == "The");
  CHECK(std::isnan(tokens[0].top[1].logprob));
  CHECK_FALSE(tokens[0].gap().has_value());
  CHECK_FALSE(tokens[0].greedy().has_value());
  CHECK(tokens[1].top[1].logprob == core::k_logprob_floor);
  CHECK(*tokens[1].gap() == -2.1e-05 - core::k_logprob_floor);
  CHECK(*tokens[1].greedy());
  CHECK(tokens[2].top[1].token == " city");
  CHECK(std::isnan(tokens[2].top[1].logprob));
  CHECK_FALSE(tokens[2].gap().has_value());
  CHECK(*tokens[2].greedy());
  CHECK(tokens[3].top[1].logprob == core::k_logprob_floor);
  CHECK(std::isnan(tokens[4].top[1].logprob));
  CHECK(std::isnan(tokens[5].logprob));
  CHECK(tokens[5].top.empty());
  CHECK(tokens[6].logprob == -0.0312);
  CHECK(tokens[6].top.empty());
  CHECK(completion.numbers == numbers(2, 1, 1, 2, 1));
  CHECK(completion.numbers.total() == 7);
}

// One generated character, "\u20ac" (E2 82 AC), split over two byte-fragment tokens that the
// endpoint sends as U+FFFD with their real bytes beside them, as OpenAI and llama.cpp do.
Json byte_fragment_entries() {
  return Json::parse(R"([
    {"token":"\ufffd","logprob":-0.1,"bytes":[226,130],"top_logprobs":[
      {"token":"\ufffd","logprob":-0.1,"bytes":[226,130]},
      {"token":"\ufffd","logprob":-2.5,"bytes":[226,128]},
      {"token":"\u00e9","logprob":-3.0,"bytes":[195,169]},
      {"token":"\ufffd","logprob":-4.0,"bytes":[239,191,189]},
      {"token":"x","logprob":-5.0}]},
    {"token":"\ufffd","logprob":-0.2,"bytes":[172],"top_logprobs":[
      {"token":"\ufffd","logprob":-0.2,"bytes":[172]},
      {"token":"!","logprob":-1.5,"bytes":null}]}])");
}

// What byte_fragment_entries() read as: OpenAI's "bytes:\xe2\x82" spelling wherever the bytes
// are not the UTF-8 of the token string, the string wherever they are or are absent.
void check_byte_fragments(const core::Completion& completion) {
  REQUIRE(completion.tokens.size() == 2);
  const auto& first = completion.tokens[0];
  CHECK(first.token == "bytes:\\xe2\\x82");
  REQUIRE(first.top.size() == 5);
  CHECK(first.top[0].token == "bytes:\\xe2\\x82");
  CHECK(first.top[1].token == "bytes:\\xe2\\x80");
  CHECK(first.top[2].token == "\u00e9");
  CHECK(first.top[3].token == "\ufffd"); // a real U+FFFD: its bytes are its UTF-8
  CHECK(first.top[4].token == "x");
  CHECK(*first.greedy()); // the sampled token is still found among its candidates
  CHECK(core::token_bytes(first.token) == "\xe2\x82");
  const auto& second = completion.tokens[1];
  CHECK(second.token == "bytes:\\xac");
  CHECK(second.top[0].token == "bytes:\\xac");
  CHECK(second.top[1].token == "!");
  CHECK(*second.greedy());
  CHECK(completion.text == "\u20ac");
  CHECK(core::tokens_match_text(completion));
}

} // namespace

TEST_CASE("parse_response openai-chat") {
  SUBCASE("OpenAI") {
    auto completion =
        parse_ok(Dialect::openai_chat, read_format("openai_chat_completion_logprobs.json"));
    check_openai_paris_tokens(completion);
    CHECK(completion.finish_reason == "stop");
    CHECK(completion.system_fingerprint == "fp_560af6e559");
    CHECK(completion.model == "gpt-4o-mini-2024-07-18");
    CHECK(completion.completion_tokens == 7);
  }
  SUBCASE("vLLM") {
    auto completion =
        parse_ok(Dialect::openai_chat, read_format("vllm_chat_completion_logprobs.json"));
    check_openai_paris_tokens(completion);
    CHECK(completion.system_fingerprint == "vllm-0.31.0-3f9c2a71");
    CHECK(completion.model == "Qwen/Qwen3-8B");
  }
  SUBCASE("vLLM token ids and -9999.0") {
    auto completion =
        parse_ok(Dialect::openai_chat, read_format("vllm_chat_completion_logprobs_token_ids.json"));
    REQUIRE(completion.tokens.size() == 8);
    CHECK(completion.tokens[0].token == "token_id:785");
    CHECK(completion.tokens[0].top[1].token == "token_id:59604");
    // The rank-2 candidate outside the top 20 keeps vLLM's -9999.0 (our floor too).
    const auto& period = completion.tokens[6];
    REQUIRE(period.top.size() == 2);
    CHECK(period.top[1].logprob == core::k_logprob_floor);
    CHECK(*period.gap() == -0.0312 - core::k_logprob_floor);
    // The sampled token with no entry in the step dict: -9999.0 and no candidates.
    const auto& eos = completion.tokens[7];
    CHECK(eos.token == "token_id:151645");
    CHECK(eos.logprob == -9999.0);
    CHECK(eos.top.empty());
    CHECK_FALSE(eos.gap().has_value());
    CHECK(completion.completion_tokens == 8);
  }
  SUBCASE("llama.cpp") {
    auto completion =
        parse_ok(Dialect::openai_chat, read_format("llamacpp_chat_completion_logprobs.json"));
    check_openai_paris_tokens(completion);
    CHECK(completion.system_fingerprint == "b6123-3e7c9a1f");
    CHECK(completion.completion_tokens == 8); // usage, not the token count
  }
  SUBCASE("Ollama") {
    auto completion =
        parse_ok(Dialect::openai_chat, read_format("ollama_openai_chat_completion_logprobs.json"));
    check_openai_paris_tokens(completion);
    CHECK(completion.system_fingerprint == "fp_ollama");
    CHECK(completion.model == "qwen3:8b");
  }
  SUBCASE("sampled token listed first is sorted below the argmax") {
    Json body = Json::parse(read_format("vllm_chat_completion_logprobs.json"));
    auto& first = body["choices"][0]["logprobs"]["content"][0];
    first["logprob"] = -0.9;
    first["top_logprobs"] =
        Json::parse(R"([{"token":"The","logprob":-0.9},{"token":"A","logprob":-0.6}])");
    auto completion = parse_ok(Dialect::openai_chat, body.dump());
    CHECK(completion.tokens[0].token == "The");
    CHECK(completion.tokens[0].top[0].token == "A");
    CHECK(completion.tokens[0].top[1].token == "The");
    CHECK(*completion.tokens[0].gap() == -0.6 - -0.9);
  }
  SUBCASE("NaN, infinities, overflow and null are mapped and counted, never an error") {
    std::string body = with_literals(wild_numbers_response().dump());
    check_wild_numbers(parse_ok(Dialect::openai_chat, body));
  }
  SUBCASE("byte-fragment tokens are spelled by their bytes") {
    Json body = Json::parse(read_format("openai_chat_completion_logprobs.json"));
    body["choices"][0]["message"]["content"] = "\u20ac";
    body["choices"][0]["logprobs"]["content"] = byte_fragment_entries();
    check_byte_fragments(parse_ok(Dialect::openai_chat, body.dump()));
  }
  SUBCASE("vLLM's bytes, the UTF-8 of its token strings, keep the strings") {
    Json body = Json::parse(read_format("vllm_chat_completion_logprobs.json"));
    for (auto& entry : body["choices"][0]["logprobs"]["content"]) {
      entry["bytes"] = utf8_bytes(entry["token"]);
      for (auto& candidate : entry["top_logprobs"])
        candidate["bytes"] = utf8_bytes(candidate["token"]);
    }
    check_openai_paris_tokens(parse_ok(Dialect::openai_chat, body.dump()));
  }
  SUBCASE("no logprobs: text only") {
    Json body = Json::parse(read_format("openai_chat_completion_logprobs.json"));
    body["choices"][0]["logprobs"] = nullptr;
    body.erase("usage");
    auto completion = parse_ok(Dialect::openai_chat, body.dump());
    CHECK_FALSE(completion.has_logprobs);
    CHECK(completion.tokens.empty());
    CHECK(completion.text == "The capital of France is Paris.");
    CHECK(completion.completion_tokens == 0);
  }
}

TEST_CASE("parse_response openai-completions") {
  SUBCASE("OpenAI legacy maps") {
    auto completion = parse_ok(Dialect::openai_completions,
                               read_format("openai_legacy_completion_logprobs.json"));
    REQUIRE(completion.tokens.size() == 6);
    CHECK(completion.text == "\n\nThis is a test.");
    CHECK(completion.tokens[0].token == "\n\n");
    CHECK(completion.tokens[0].top[1].token == "\n");
    CHECK(completion.tokens[5].top[0].token == ".");
    CHECK(completion.tokens[5].top[1].token == "!");
    CHECK(*completion.tokens[5].gap() == -0.1874 - -1.7655);
    CHECK(completion.finish_reason == "stop");
    CHECK(completion.system_fingerprint.empty());
    CHECK(completion.completion_tokens == 6);
  }
  SUBCASE("vLLM, fragile first position") {
    auto completion =
        parse_ok(Dialect::openai_completions, read_format("vllm_completion_logprobs.json"));
    REQUIRE(completion.tokens.size() == 5);
    CHECK(completion.text == " Queens, New York.");
    CHECK(completion.tokens[0].token == " Queens");
    CHECK(completion.tokens[0].top[0].token == " Queens");
    CHECK(completion.tokens[0].top[1].token == " New");
    CHECK(*completion.tokens[0].gap() == -0.6781 - -0.7082);
    CHECK(completion.tokens[3].token == " York");
    CHECK(completion.finish_reason == "length");
    CHECK(completion.system_fingerprint == "vllm-0.31.0-3f9c2a71");
  }
  SUBCASE("NaN, infinities, overflow and null in the parallel arrays and maps") {
    // OpenAI's legacy API itself sends null for a token without a logprob (the first prompt
    // token under echo) and for its map.
    std::string body = with_literals(R"({"choices":[{"text":"abc","finish_reason":"length",
        "logprobs":{"tokens":["a","b","c"],"token_logprobs":[NaN,null,-0.5],
        "top_logprobs":[{"a":"@Infinity@","z":-Infinity},null,
                        {"c":-0.5,"d":1e400,"e":-1e400}]}}]})");
    auto completion = parse_ok(Dialect::openai_completions, body);
    REQUIRE(completion.tokens.size() == 3);
    CHECK(std::isnan(completion.tokens[0].logprob));
    REQUIRE(completion.tokens[0].top.size() == 2);
    CHECK(completion.tokens[0].top[0].token == "z");
    CHECK(completion.tokens[0].top[0].logprob == core::k_logprob_floor);
    CHECK(std::isnan(completion.tokens[0].top[1].logprob));
    CHECK(std::isnan(completion.tokens[1].logprob));
    CHECK(completion.tokens[1].top.empty());
    REQUIRE(completion.tokens[2].top.size() == 3);
    CHECK(completion.tokens[2].top[0].token == "c");
    CHECK(completion.tokens[2].top[1].token == "e");
    CHECK(completion.tokens[2].top[1].logprob == core::k_logprob_floor);
    CHECK(completion.tokens[2].top[2].token == "d");
    CHECK(std::isnan(completion.tokens[2].top[2].logprob));
    CHECK(completion.numbers == numbers(1, 1, 1, 2, 1));
  }
  SUBCASE("legacy map order is the endpoint's before sorting") {
    // Keys out of logprob order and out of alphabetical order: only a sort gets this right.
    std::string body = R"({"choices":[{"text":"b","finish_reason":"length","logprobs":{
        "tokens":["b"],"token_logprobs":[-0.5],"top_logprobs":[{"z":-2.0,"b":-0.5,"a":-1.0}]}}]})";
    auto completion = parse_ok(Dialect::openai_completions, body);
    REQUIRE(completion.tokens[0].top.size() == 3);
    CHECK(completion.tokens[0].top[0].token == "b");
    CHECK(completion.tokens[0].top[1].token == "a");
    CHECK(completion.tokens[0].top[2].token == "z");
  }
  SUBCASE("llama.cpp answers in the chat content shape") {
    auto completion =
        parse_ok(Dialect::openai_completions, read_format("llamacpp_v1_completions_logprobs.json"));
    REQUIRE(completion.tokens.size() == 3);
    CHECK(completion.text == " Queens, New");
    CHECK(completion.tokens[2].token == " New");
    CHECK(*completion.tokens[0].gap() == -0.6781 - -0.7082);
    CHECK(completion.finish_reason == "length");
    CHECK(completion.system_fingerprint == "b6123-3e7c9a1f");
    CHECK(completion.completion_tokens == 3);
  }
}

TEST_CASE("parse_response openai streams") {
  SUBCASE("OpenAI chunks with a usage chunk") {
    Json chunks = Json::parse(read_format("openai_chat_completion_stream_chunks.json"));
    auto completion = parse_ok(Dialect::openai_chat, sse_body(chunks), true);
    REQUIRE(completion.tokens.size() == 2);
    CHECK(completion.text == "The capital");
    CHECK(completion.tokens[1].token == " capital");
    CHECK(*completion.tokens[0].gap() == -0.0041 - -5.6312);
    CHECK(completion.finish_reason == "stop");
    CHECK(completion.system_fingerprint == "fp_560af6e559");
    CHECK(completion.completion_tokens == 7);
  }
  SUBCASE("vLLM chunks: several tokens in one, fingerprint on the last only") {
    Json chunks = Json::parse(read_format("vllm_chat_completion_stream_chunks.json"));
    auto completion = parse_ok(Dialect::openai_chat, sse_body(chunks), true);
    REQUIRE(completion.tokens.size() == 4);
    CHECK(completion.text == "The capital of.");
    CHECK(completion.tokens[2].token == " of");
    CHECK(completion.tokens[3].token == ".");
    CHECK(completion.finish_reason == "stop");
    CHECK(completion.system_fingerprint == "vllm-0.31.0-3f9c2a71");
    CHECK(completion.model == "Qwen/Qwen3-8B");
    CHECK(completion.completion_tokens == 4);
  }
  SUBCASE("a stream built from a whole response parses to the same tokens") {
    auto whole =
        parse_ok(Dialect::openai_chat, read_format("openai_chat_completion_logprobs.json"));
    Json response = Json::parse(read_format("openai_chat_completion_logprobs.json"));
    auto streamed = parse_ok(Dialect::openai_chat, sse_body(chunks_of(response)), true);
    CHECK(same_tokens(whole, streamed));
    CHECK(streamed.finish_reason == "stop");
    CHECK(streamed.completion_tokens == 7);
  }
  SUBCASE("NaN, infinities, overflow and null in a stream, counted over its chunks") {
    auto streamed = parse_ok(Dialect::openai_chat,
                             with_literals(sse_body(chunks_of(wild_numbers_response()))), true);
    check_wild_numbers(streamed);
  }
  SUBCASE("byte-fragment tokens in a stream") {
    Json response = Json::parse(read_format("openai_chat_completion_logprobs.json"));
    response["choices"][0]["logprobs"]["content"] = byte_fragment_entries();
    Json chunks = chunks_of(response);
    // The text deltas are the endpoint's text: the two fragments make one character, sent once.
    chunks[1]["choices"][0]["delta"]["content"] = "\u20ac";
    chunks[2]["choices"][0]["delta"]["content"] = "";
    check_byte_fragments(parse_ok(Dialect::openai_chat, sse_body(chunks), true));
  }
  SUBCASE("a chunk with text and logprobs null keeps its text; the tokens lack it") {
    Json response = Json::parse(read_format("openai_chat_completion_logprobs.json"));
    Json chunks = chunks_of(response);
    chunks[3]["choices"][0]["logprobs"] = nullptr; // " of"
    auto streamed = parse_ok(Dialect::openai_chat, sse_body(chunks), true);
    CHECK(streamed.text == "The capital of France is Paris.");
    CHECK(streamed.has_logprobs);
    REQUIRE(streamed.tokens.size() == 6);
    CHECK(streamed.tokens[2].token == " France");
    CHECK_FALSE(core::tokens_match_text(streamed));
    CHECK(streamed.numbers.total() == 0);
  }
  SUBCASE("legacy completions stream") {
    auto whole =
        parse_ok(Dialect::openai_completions, read_format("vllm_completion_logprobs.json"));
    Json response = Json::parse(read_format("vllm_completion_logprobs.json"));
    const Json& logprobs = response["choices"][0]["logprobs"];
    Json chunks = Json::array();
    for (std::size_t i = 0; i < logprobs["tokens"].size(); ++i) {
      Json chunk;
      chunk["choices"][0]["text"] = logprobs["tokens"][i];
      chunk["choices"][0]["logprobs"]["tokens"] = Json::array({logprobs["tokens"][i]});
      chunk["choices"][0]["logprobs"]["token_logprobs"] =
          Json::array({logprobs["token_logprobs"][i]});
      chunk["choices"][0]["logprobs"]["top_logprobs"] = Json::array({logprobs["top_logprobs"][i]});
      chunk["choices"][0]["finish_reason"] =
          i + 1 == logprobs["tokens"].size() ? Json("length") : Json();
      chunks.push_back(chunk);
    }
    auto streamed = parse_ok(Dialect::openai_completions, sse_body(chunks), true);
    CHECK(probes::test::same_tokens(whole, streamed));
    CHECK(streamed.finish_reason == "length");
  }
}

TEST_CASE("parse_response openai-chat: Together's integer-logprobs shapes") {
  // The five tokens of "Paris is the capital." in both Together payloads.
  const auto check_together = [](const core::Completion& completion) {
    REQUIRE(completion.tokens.size() == 5);
    CHECK(completion.text == "Paris is the capital.");
    CHECK(completion.has_logprobs);
    CHECK(completion.tokens[0].token == "Paris");
    CHECK(completion.tokens[0].logprob == -0.0123);
    REQUIRE(completion.tokens[0].top.size() == 2);
    CHECK(completion.tokens[0].top[1].token == "The");
    CHECK(*completion.tokens[0].gap() == -0.0123 - -4.5);
    CHECK(completion.tokens[1].token == " is");
    CHECK(*completion.tokens[1].gap() == -0.25 - -1.625);
    CHECK(completion.tokens[4].token == ".");
    CHECK(*completion.tokens[4].gap() == -0.6 - -0.8);
    CHECK(completion.finish_reason == "eos");
    CHECK(completion.model == "meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo");
    CHECK(completion.completion_tokens == 5);
  };
  SUBCASE("whole: parallel arrays with {token: logprob} maps") {
    check_together(
        parse_ok(Dialect::openai_chat, read_format("together_chat_completion_logprobs.json")));
  }
  SUBCASE("stream: a number in choices[].logprobs, candidates in a choice-level map") {
    Json chunks = Json::parse(read_format("together_chat_completion_stream_chunks.json"));
    check_together(parse_ok(Dialect::openai_chat, sse_body(chunks), true));
  }
  SUBCASE("stream: a chunk without top_logprobs has a token without candidates") {
    Json chunks = Json::parse(read_format("together_chat_completion_stream_chunks.json"));
    chunks[1]["choices"][0].erase("top_logprobs");
    chunks[2]["choices"][0]["top_logprobs"] = nullptr;
    auto completion = parse_ok(Dialect::openai_chat, sse_body(chunks), true);
    REQUIRE(completion.tokens.size() == 5);
    CHECK(completion.tokens[1].top.empty());
    CHECK(completion.tokens[2].top.empty());
    CHECK(completion.tokens[1].logprob == -0.25);
  }
  SUBCASE("stream: a NaN logprob is read and counted, a list in place of the map fails") {
    Json chunks = Json::parse(read_format("together_chat_completion_stream_chunks.json"));
    std::string body = sse_body(chunks);
    body.replace(body.find("\"logprobs\":-0.25"), 16, "\"logprobs\":NaN");
    auto completion = parse_ok(Dialect::openai_chat, body, true);
    CHECK(std::isnan(completion.tokens[1].logprob));
    CHECK(completion.numbers == numbers(1, 0, 0, 0, 0));
    chunks[3]["choices"][0]["top_logprobs"] = Json::array({-0.001});
    auto failed = parse_response(Dialect::openai_chat, sse_body(chunks), true);
    REQUIRE_FALSE(failed.has_value());
    CHECK(failed.error().message.find("stream event 4: ") != std::string::npos); // 1-based
    CHECK(failed.error().message.find("choices[0].top_logprobs") != std::string::npos);
    CHECK(failed.error().message.find("must be an object") != std::string::npos);
  }
}

TEST_CASE("parse_response openai-chat: a reasoning model's answer without logprobs") {
  auto completion = parse_ok(Dialect::openai_chat,
                             read_format("openai_chat_completion_reasoning_no_logprobs.json"));
  CHECK(completion.text == "Paris.");
  CHECK_FALSE(completion.has_logprobs);
  CHECK(completion.tokens.empty());
  CHECK(completion.model == "o3-mini-2025-01-31");
  // Reasoning tokens count in completion_tokens though the text is one word.
  CHECK(completion.completion_tokens == 146);
}

TEST_CASE("openai-chat tool calls: message.tool_calls, streamed pieces, and the turns sent") {
  // Spec: ChatCompletionMessageToolCall {id, type: function, function: {name, arguments}} and
  // ChatCompletionMessageToolCallChunk {index, id?, function: {name?, arguments?}}
  // (openai-openapi).
  const std::string whole = R"({"id":"c","object":"chat.completion","model":"m","choices":[
    {"index":0,"message":{"role":"assistant","content":null,"tool_calls":[
      {"id":"call_1","type":"function","function":{"name":"search","arguments":"{\"q\": \"Rome\"}"}},
      {"id":"call_2","type":"function","function":{"name":"search","arguments":"not json"}}]},
     "finish_reason":"tool_calls"}]})";
  const auto completion = parse_ok(Dialect::openai_chat, whole);
  CHECK(completion.text.empty());
  REQUIRE(completion.tool_calls.size() == 2);
  CHECK(completion.tool_calls[0].arguments == R"({"q":"Rome"})");
  CHECK(completion.tool_calls[0].id == "call_1");
  // What a model wrote that is no JSON still compares: as one JSON string.
  CHECK(completion.tool_calls[1].arguments == R"("not json")");

  const std::string stream =
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{"
      "\"index\":0,\"id\":\"call_9\",\"type\":\"function\",\"function\":{\"name\":\"search\","
      "\"arguments\":\"\"}}]}}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{"
      "\"arguments\":\"{\\\"q\\\":\"}}]}}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{"
      "\"arguments\":\"\\\"Rome\\\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n"
      "data: [DONE]\n\n";
  const auto streamed = parse_ok(Dialect::openai_chat, stream, true);
  REQUIRE(streamed.tool_calls.size() == 1);
  CHECK(streamed.tool_calls[0].name == "search");
  CHECK(streamed.tool_calls[0].arguments == R"({"q":"Rome"})");
  CHECK(streamed.tool_calls[0].id == "call_9");

  const core::Prompt prompt = probes::test::chain_after_one_step(
      "call_1", R"([{"function":{"name":"search"},"type":"function"}])");
  const auto body = nlohmann::json::parse(
      probes::build_request(Dialect::openai_chat, prompt, probes::GenerationParams{}).body);
  CHECK(body["tools"] == nlohmann::json::parse(prompt.tools_json));
  CHECK(
      body["messages"][1]["tool_calls"] ==
      nlohmann::json::parse(
          R"([{"id":"call_1","type":"function","function":{"name":"search","arguments":"{\"q\":\"Rome\"}"}}])"));
  CHECK(body["messages"][2] ==
        nlohmann::json::parse(R"({"role":"tool","content":"Colosseum","tool_call_id":"call_1"})"));
}
