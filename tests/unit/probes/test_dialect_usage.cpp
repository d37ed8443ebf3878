// What each dialect reads of an answer's usage: the prompt's tokens and the reasoning's, whole
// and streamed, from the reference payloads (their sources: tests/data/formats/README.md).
#include <optional>
#include <string>

#include <doctest/doctest.h>

#include "probes/dialect.hpp"
#include "tests/unit/probes/dialect_test_support.hpp"

using namespace llmrepro;
using probes::Dialect;
using probes::test::parse_ok;
using probes::test::read_format;
using probes::test::sse_body;
using Json = nlohmann::ordered_json;

namespace {

core::TokenUsage usage_of(std::optional<long> prompt, std::optional<long> reasoning,
                          std::optional<long> cached_prompt = std::nullopt) {
  return core::TokenUsage{prompt, reasoning, cached_prompt};
}

} // namespace

TEST_CASE("openai chat usage: prompt and reasoning tokens, whole and streamed") {
  SUBCASE("a reasoning model's completion_tokens_details") {
    auto completion = parse_ok(Dialect::openai_chat,
                               read_format("openai_chat_completion_reasoning_no_logprobs.json"));
    CHECK(completion.completion_tokens == 146);
    CHECK(completion.usage == usage_of(13, 128, 0));
  }
  SUBCASE("no details: reasoning unknown") {
    auto completion =
        parse_ok(Dialect::openai_chat, read_format("vllm_chat_completion_logprobs.json"));
    Json body = Json::parse(read_format("vllm_chat_completion_logprobs.json"));
    CHECK(completion.usage == usage_of(body["usage"]["prompt_tokens"].get<long>(), std::nullopt));
  }
  SUBCASE("SGLang's flat usage.reasoning_tokens") {
    auto completion =
        parse_ok(Dialect::openai_chat, read_format("sglang_chat_reasoning_logprobs.json"));
    CHECK(completion.usage == usage_of(14, 7));
  }
  SUBCASE("no usage at all: both unknown") {
    Json body = Json::parse(read_format("openai_chat_completion_reasoning_no_logprobs.json"));
    body.erase("usage");
    CHECK(parse_ok(Dialect::openai_chat, body.dump()).usage == core::TokenUsage{});
  }
  SUBCASE("null details and a null prompt count are unknown, not a failure") {
    Json body = Json::parse(read_format("openai_chat_completion_reasoning_no_logprobs.json"));
    body["usage"]["completion_tokens_details"] = nullptr;
    body["usage"]["prompt_tokens_details"] = nullptr;
    body["usage"]["prompt_tokens"] = nullptr;
    CHECK(parse_ok(Dialect::openai_chat, body.dump()).usage == core::TokenUsage{});
  }
  SUBCASE("OpenAI stream: the final usage chunk") {
    Json chunks = Json::parse(read_format("openai_chat_completion_stream_chunks.json"));
    auto completion = parse_ok(Dialect::openai_chat, sse_body(chunks), true);
    CHECK(completion.usage == usage_of(24, std::nullopt));
    chunks.back()["usage"]["completion_tokens_details"] = Json{{"reasoning_tokens", 3}};
    CHECK(parse_ok(Dialect::openai_chat, sse_body(chunks), true).usage == usage_of(24, 3));
  }
  SUBCASE("Together stream: usage on the last token's chunk") {
    Json chunks = Json::parse(read_format("together_chat_completion_stream_chunks.json"));
    auto completion = parse_ok(Dialect::openai_chat, sse_body(chunks), true);
    CHECK(completion.completion_tokens == 5);
    CHECK(completion.usage == usage_of(14, std::nullopt));
  }
}

TEST_CASE("openai completions usage: prompt_tokens") {
  Json body = Json::parse(read_format("openai_legacy_completion_logprobs.json"));
  auto completion = parse_ok(Dialect::openai_completions, body.dump());
  CHECK(completion.usage == usage_of(body["usage"]["prompt_tokens"].get<long>(), std::nullopt));
}

TEST_CASE("openai responses usage: input_tokens and output_tokens_details") {
  auto whole = parse_ok(Dialect::openai_responses, read_format("openai_responses_logprobs.json"));
  CHECK(whole.usage == usage_of(14, 0, 0));
  auto reasoning =
      parse_ok(Dialect::openai_responses, read_format("vllm_responses_reasoning.json"));
  CHECK(reasoning.usage == usage_of(14, 7, 0));
  auto streamed =
      parse_ok(Dialect::openai_responses, read_format("openai_responses_stream_events.txt"), true);
  CHECK(streamed.usage == usage_of(14, 0, 0));
}

TEST_CASE("gemini usage: promptTokenCount and thoughtsTokenCount") {
  auto whole = parse_ok(Dialect::gemini, read_format("gemini_generate_content_thoughts.json"));
  // candidatesTokenCount 2 plus thoughtsTokenCount 32: the thoughts are generated tokens too.
  CHECK(whole.completion_tokens == 34);
  CHECK(whole.usage == usage_of(7, 32));
  auto plain = parse_ok(Dialect::gemini, read_format("gemini_generate_content_logprobs.json"));
  Json body = Json::parse(read_format("gemini_generate_content_logprobs.json"));
  CHECK(plain.usage ==
        usage_of(body["usageMetadata"]["promptTokenCount"].get<long>(), std::nullopt));
  auto streamed =
      parse_ok(Dialect::gemini, read_format("gemini_stream_generate_content.txt"), true);
  CHECK(streamed.completion_tokens == 3);
  CHECK(streamed.usage == usage_of(7, std::nullopt));
}

TEST_CASE("native dialects' usage") {
  SUBCASE("ollama: prompt_eval_count, whole and on a stream's done object") {
    CHECK(parse_ok(Dialect::ollama, read_format("ollama_chat_logprobs.json")).usage ==
          usage_of(15, std::nullopt));
    CHECK(parse_ok(Dialect::ollama, read_format("ollama_generate_logprobs.json")).usage ==
          usage_of(15, std::nullopt));
    std::string stream = Json{{"model", "m"}, {"done", false}, {"response", "Hi"}}.dump() + "\n" +
                         Json{{"model", "m"},
                              {"done", true},
                              {"response", ""},
                              {"eval_count", 1},
                              {"prompt_eval_count", 11}}
                             .dump() +
                         "\n";
    auto streamed = parse_ok(Dialect::ollama, stream, true);
    CHECK(streamed.completion_tokens == 1);
    CHECK(streamed.usage == usage_of(11, std::nullopt));
  }
  SUBCASE("llama.cpp: tokens_evaluated") {
    Json body = Json::parse(read_format("llamacpp_completion_native_n_probs.json"));
    CHECK(parse_ok(Dialect::llamacpp, body.dump()).usage == usage_of(12, std::nullopt, 0));
    // timings.prompt_n counts only what the prompt cache did not serve: not a prompt size.
    body.erase("tokens_evaluated");
    body.erase("timings");
    CHECK(parse_ok(Dialect::llamacpp, body.dump()).usage == core::TokenUsage{});
  }
  SUBCASE("sglang: meta_info.prompt_tokens and reasoning_tokens") {
    Json body = Json::parse(read_format("sglang_generate_logprobs.json"));
    CHECK(parse_ok(Dialect::sglang, body.dump()).usage == usage_of(9, 0, 0));
    Json event{{"text", "Hi"}};
    event["meta_info"] = Json{
        {"finish_reason", Json{{"type", "stop"}}}, {"prompt_tokens", 5}, {"completion_tokens", 1}};
    auto streamed = parse_ok(Dialect::sglang, sse_body(Json::array({event})), true);
    CHECK(streamed.usage == usage_of(5, std::nullopt));
  }
  SUBCASE("tgi: its answer has no prompt count") {
    CHECK(parse_ok(Dialect::tgi, read_format("tgi_generate_details_top_tokens.json")).usage ==
          core::TokenUsage{});
  }
}

TEST_CASE("cached prompt tokens: what each server says its prompt cache served") {
  SUBCASE("llama.cpp /completion: timings.cache_n, never tokens_cached") {
    // tools/server/server-common.cpp server_slot_stats::to_json: cache_n is the prompt tokens
    // reused; server-task.cpp's tokens_cached is the whole slot after the request.
    Json body = Json::parse(read_format("llamacpp_completion_native_n_probs.json"));
    body["tokens_cached"] = 40;
    body.erase("timings");
    CHECK_FALSE(parse_ok(Dialect::llamacpp, body.dump()).usage.cached_prompt);
    body["timings"] = Json{{"cache_n", 0}, {"prompt_n", 12}};
    CHECK(parse_ok(Dialect::llamacpp, body.dump()).usage.cached_prompt == 0);
    body["timings"]["cache_n"] = 9;
    CHECK(parse_ok(Dialect::llamacpp, body.dump()).usage == usage_of(12, std::nullopt, 9));
    // Streamed: the final event carries the timings.
    Json first{{"content", "Hi"}, {"stop", false}};
    Json last = body;
    last["content"] = "";
    last.erase("completion_probabilities");
    const std::string stream = "data: " + first.dump() + "\n\ndata: " + last.dump() + "\n\n";
    CHECK(parse_ok(Dialect::llamacpp, stream, true).usage.cached_prompt == 9);
  }
  SUBCASE("OpenAI-compatible routes: usage.prompt_tokens_details.cached_tokens") {
    Json chat = Json::parse(read_format("llamacpp_chat_completion_logprobs.json"));
    CHECK(parse_ok(Dialect::openai_chat, chat.dump()).usage.cached_prompt == 0);
    chat["usage"]["prompt_tokens_details"]["cached_tokens"] = 21;
    CHECK(parse_ok(Dialect::openai_chat, chat.dump()).usage.cached_prompt == 21);
    // vLLM without --enable-prompt-tokens-details: no details, unknown.
    CHECK_FALSE(parse_ok(Dialect::openai_chat, read_format("vllm_chat_completion_logprobs.json"))
                    .usage.cached_prompt);
    Json completions = Json::parse(read_format("llamacpp_v1_completions_logprobs.json"));
    completions["usage"]["prompt_tokens_details"]["cached_tokens"] = 3;
    CHECK(parse_ok(Dialect::openai_completions, completions.dump()).usage.cached_prompt == 3);
    Json chunks = Json::parse(read_format("openai_chat_completion_stream_chunks.json"));
    chunks.back()["usage"]["prompt_tokens_details"] = Json{{"cached_tokens", 16}};
    CHECK(parse_ok(Dialect::openai_chat, sse_body(chunks), true).usage.cached_prompt == 16);
  }
  SUBCASE("Responses input_tokens_details and SGLang meta_info.cached_tokens") {
    Json responses = Json::parse(read_format("openai_responses_logprobs.json"));
    responses["usage"]["input_tokens_details"]["cached_tokens"] = 8;
    CHECK(parse_ok(Dialect::openai_responses, responses.dump()).usage.cached_prompt == 8);
    Json sglang = Json::parse(read_format("sglang_generate_logprobs.json"));
    sglang["meta_info"]["cached_tokens"] = 6;
    CHECK(parse_ok(Dialect::sglang, sglang.dump()).usage.cached_prompt == 6);
  }
}
