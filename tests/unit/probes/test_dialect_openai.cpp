// parse_response() for the OpenAI-compatible dialects, against the reference payloads.
#include <doctest/doctest.h>

#include "core/logprob_floor.hpp"
#include "probes/dialect.hpp"
#include "tests/unit/probes/dialect_test_support.hpp"

using namespace llmrepro;
using probes::Dialect;
using probes::parse_response;
using probes::test::read_format;
using probes::test::sse_body;
using Json = nlohmann::ordered_json;

namespace {

core::Completion parse_ok(Dialect dialect, const std::string &body, bool stream = false) {
  auto result = parse_response(dialect, body, stream);
  INFO((result ? std::string() : result.error().message));
  REQUIRE(result.has_value());
  return *result;
}

// The seven tokens of "The capital of France is Paris." shared by several payloads.
void check_paris_tokens(const core::Completion &completion) {
  REQUIRE(completion.tokens.size() == 7);
  CHECK(completion.text == "The capital of France is Paris.");
  CHECK(completion.has_logprobs);
  const auto &first = completion.tokens[0];
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

} // namespace

TEST_CASE("parse_response openai-chat") {
  SUBCASE("OpenAI") {
    auto completion =
        parse_ok(Dialect::openai_chat, read_format("openai_chat_completion_logprobs.json"));
    check_paris_tokens(completion);
    CHECK(completion.finish_reason == "stop");
    CHECK(completion.system_fingerprint == "fp_560af6e559");
    CHECK(completion.model == "gpt-4o-mini-2024-07-18");
    CHECK(completion.completion_tokens == 7);
  }
  SUBCASE("vLLM") {
    auto completion =
        parse_ok(Dialect::openai_chat, read_format("vllm_chat_completion_logprobs.json"));
    check_paris_tokens(completion);
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
    const auto &period = completion.tokens[6];
    REQUIRE(period.top.size() == 2);
    CHECK(period.top[1].logprob == core::k_logprob_floor);
    CHECK(*period.gap() == -0.0312 - core::k_logprob_floor);
    // The sampled token with no entry in the step dict: -9999.0 and no candidates.
    const auto &eos = completion.tokens[7];
    CHECK(eos.token == "token_id:151645");
    CHECK(eos.logprob == -9999.0);
    CHECK(eos.top.empty());
    CHECK_FALSE(eos.gap().has_value());
    CHECK(completion.completion_tokens == 8);
  }
  SUBCASE("llama.cpp") {
    auto completion =
        parse_ok(Dialect::openai_chat, read_format("llamacpp_chat_completion_logprobs.json"));
    check_paris_tokens(completion);
    CHECK(completion.system_fingerprint == "b6123-3e7c9a1f");
    CHECK(completion.completion_tokens == 8); // usage, not the token count
  }
  SUBCASE("Ollama") {
    auto completion =
        parse_ok(Dialect::openai_chat, read_format("ollama_openai_chat_completion_logprobs.json"));
    check_paris_tokens(completion);
    CHECK(completion.system_fingerprint == "fp_ollama");
    CHECK(completion.model == "qwen3:8b");
  }
  SUBCASE("sampled token listed first is sorted below the argmax") {
    Json body = Json::parse(read_format("vllm_chat_completion_logprobs.json"));
    auto &first = body["choices"][0]["logprobs"]["content"][0];
    first["logprob"] = -0.9;
    first["top_logprobs"] =
        Json::parse(R"([{"token":"The","logprob":-0.9},{"token":"A","logprob":-0.6}])");
    auto completion = parse_ok(Dialect::openai_chat, body.dump());
    CHECK(completion.tokens[0].token == "The");
    CHECK(completion.tokens[0].top[0].token == "A");
    CHECK(completion.tokens[0].top[1].token == "The");
    CHECK(*completion.tokens[0].gap() == -0.6 - -0.9);
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
    Json chunks = Json::array();
    chunks.push_back(Json::parse(
        R"({"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]})"));
    for (const auto &entry : response["choices"][0]["logprobs"]["content"]) {
      Json chunk = Json::parse(R"({"choices":[{"index":0,"finish_reason":null}]})");
      chunk["choices"][0]["delta"]["content"] = entry["token"];
      chunk["choices"][0]["logprobs"]["content"] = Json::array({entry});
      chunks.push_back(chunk);
    }
    chunks.push_back(Json::parse(
        R"({"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"system_fingerprint":"fp_560af6e559"})"));
    auto streamed = parse_ok(Dialect::openai_chat, sse_body(chunks), true);
    CHECK(probes::test::same_tokens(whole, streamed));
    CHECK(streamed.finish_reason == "stop");
    CHECK(streamed.completion_tokens == 7);
  }
  SUBCASE("legacy completions stream") {
    auto whole =
        parse_ok(Dialect::openai_completions, read_format("vllm_completion_logprobs.json"));
    Json response = Json::parse(read_format("vllm_completion_logprobs.json"));
    const Json &logprobs = response["choices"][0]["logprobs"];
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
