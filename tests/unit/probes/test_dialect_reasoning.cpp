// parse_response() for reasoning models: each dialect's reasoning text, whole and streamed, and
// the one cut core::separate_reasoning makes in the tokens (tests/data/formats/*reasoning*,
// *thinking*, *thoughts*).
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "probes/dialect.hpp"
#include "tests/unit/probes/dialect_test_support.hpp"

using namespace llmrepro;
using probes::Dialect;
using probes::parse_response;
using probes::test::parse_ok;
using probes::test::read_format;
using probes::test::same_tokens;
using probes::test::sse_body;
using Json = nlohmann::ordered_json;

namespace {

std::vector<std::string> token_strings(const std::vector<core::TokenLogprob>& tokens) {
  std::vector<std::string> strings;
  for (const auto& token : tokens) strings.push_back(token.token.str());
  return strings;
}

// The reasoning's tokens in the SGLang and Ollama payloads, markers and separator included.
const std::vector<std::string> k_reasoning_tokens = {"<think>", "Two",      " plus", " two",
                                                     ".",       "</think>", "\n\n"};
const std::vector<std::string> k_answer_tokens = {"Four", "."};

// Two plus two, thought through, answered "Four." with its two tokens apart from the reasoning's.
void check_split(const core::Completion& completion,
                 const std::vector<std::string>& reasoning_tokens = k_reasoning_tokens) {
  CHECK(completion.text == "Four.");
  CHECK(completion.reasoning_text == "Two plus two.");
  CHECK(completion.reasoning_split == core::ReasoningSplit::separate);
  CHECK(token_strings(completion.reasoning_tokens) == reasoning_tokens);
  CHECK(token_strings(completion.tokens) == k_answer_tokens);
  CHECK(completion.has_logprobs);
  REQUIRE(completion.tokens.size() == 2);
  CHECK(*completion.tokens[0].gap() == -0.0124 - -4.4);
  CHECK(*completion.tokens[1].gap() == -0.2513 - -1.5013);
}

// Where each streamed piece of a reasoning payload goes: ("reasoning", text) or
// ("content", text), one per logprobs entry. The parser swallows the markers and the
// separator, so their chunks carry empty text and only their logprobs.
const std::vector<std::pair<std::string, std::string>> k_pieces = {
    {"reasoning", ""},     {"reasoning", "Two"}, {"reasoning", " plus"},
    {"reasoning", " two"}, {"reasoning", "."},   {"reasoning", ""},
    {"content", ""},       {"content", "Four"},  {"content", "."}};

// The chat stream of a reasoning answer: one chunk per logprobs entry (the first
// `skip_pieces` of k_pieces left out), the reasoning under `reasoning_key`; without
// `reasoning_logprobs` the reasoning's chunks carry "logprobs": null (OpenAI's shape).
std::string chat_stream(const Json& response, const std::string& reasoning_key,
                        std::size_t skip_pieces = 0, bool reasoning_logprobs = true) {
  Json chunks = Json::array();
  chunks.push_back(Json::parse(
      R"({"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]})"));
  const Json& entries = response["choices"][0]["logprobs"]["content"];
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& [field, text] = k_pieces[i + skip_pieces];
    const bool reasoning = field != "content";
    Json delta = reasoning ? Json{{reasoning_key, text}} : Json{{"content", text}};
    Json logprobs = Json{{"content", Json::array({entries[i]})}};
    if (reasoning && !reasoning_logprobs) logprobs = nullptr;
    chunks.push_back(Json{{"choices", Json::array({Json{{"index", 0},
                                                        {"delta", delta},
                                                        {"logprobs", logprobs},
                                                        {"finish_reason", nullptr}}})}});
  }
  chunks.push_back(Json::parse(
      R"({"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]})"));
  return sse_body(chunks);
}

// The NDJSON stream of an Ollama thinking answer: one object per logprobs entry, its piece in
// message.thinking or message.content (or in thinking / response for /api/generate).
std::string ollama_stream(const Json& response, bool chat) {
  std::string body;
  const Json& entries = response["logprobs"];
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& [field, text] = k_pieces[i];
    const std::string key = field == "content" ? "content" : "thinking";
    Json line{{"model", "qwen3:8b"}, {"done", false}, {"logprobs", Json::array({entries[i]})}};
    if (chat) {
      line["message"] = Json{{"role", "assistant"}, {"content", ""}};
      line["message"][key] = text;
    } else {
      line["response"] = "";
      line[key == "content" ? "response" : "thinking"] = text;
    }
    body += line.dump() + "\n";
  }
  Json last{{"model", "qwen3:8b"}, {"done", true}, {"done_reason", "stop"}, {"eval_count", 9}};
  if (chat)
    last["message"] = Json{{"role", "assistant"}, {"content", ""}};
  else
    last["response"] = "";
  body += last.dump() + "\n";
  return body;
}

// A typed SSE body, `event: <type>` before each `data:`.
std::string typed_sse(const Json& events) {
  std::string body;
  for (const auto& event : events)
    body += "event: " + event["type"].get<std::string>() + "\ndata: " + event.dump() + "\n\n";
  return body;
}

} // namespace

TEST_CASE("parse_response openai-chat: SGLang's reasoning_content with logprobs over both") {
  const std::string body = read_format("sglang_chat_reasoning_logprobs.json");
  SUBCASE("whole: the reasoning's tokens, markers included, cut from the answer's") {
    auto completion = parse_ok(Dialect::openai_chat, body);
    check_split(completion);
    REQUIRE(completion.reasoning_tokens.size() == 7);
    CHECK(*completion.reasoning_tokens[2].gap() == -0.2204 - -1.6204);
  }
  SUBCASE("streamed: reasoning_content deltas with their logprobs, then content deltas") {
    Json response = Json::parse(body);
    auto streamed =
        parse_ok(Dialect::openai_chat, chat_stream(response, "reasoning_content"), true);
    check_split(streamed);
    auto whole = parse_ok(Dialect::openai_chat, body);
    CHECK(same_tokens(whole, streamed));
    CHECK(streamed.finish_reason == "stop");
    CHECK(streamed.completion_tokens == 9);
  }
  SUBCASE("a token holding the end marker and the answer's start: joined, kept whole") {
    Json response = Json::parse(body);
    Json& content = response["choices"][0]["logprobs"]["content"];
    const std::string merged = "</think>\n\nFour";
    content[5]["token"] = merged;
    content[5]["bytes"] = Json(std::vector<unsigned char>(merged.begin(), merged.end()));
    content.erase(6);
    content.erase(6);
    auto completion = parse_ok(Dialect::openai_chat, response.dump());
    CHECK(completion.reasoning_split == core::ReasoningSplit::joined);
    CHECK(completion.reasoning_text == "Two plus two.");
    CHECK(completion.reasoning_tokens.empty());
    CHECK(token_strings(completion.tokens) == std::vector<std::string>{"<think>", "Two", " plus",
                                                                       " two", ".",
                                                                       "</think>\n\nFour", "."});
  }
  SUBCASE("OpenAI's shape: reasoning_content beside logprobs of the answer alone") {
    Json response = Json::parse(body);
    auto streamed =
        parse_ok(Dialect::openai_chat, chat_stream(response, "reasoning_content", 0, false), true);
    check_split(streamed, {});
    Json& content = response["choices"][0]["logprobs"]["content"];
    content.erase(content.begin(), content.begin() + 7);
    check_split(parse_ok(Dialect::openai_chat, response.dump()), {});
  }
  SUBCASE("a null reasoning_content is no reasoning") {
    Json response = Json::parse(body);
    response["choices"][0]["message"]["reasoning_content"] = nullptr;
    response["choices"][0]["message"]["content"] = "Two plus two.Four.";
    auto completion = parse_ok(Dialect::openai_chat, response.dump());
    CHECK(completion.reasoning_split == core::ReasoningSplit::none);
    CHECK(completion.tokens.size() == 9);
  }
}

TEST_CASE("parse_response openai-chat: vLLM's message.reasoning") {
  const std::string body = read_format("vllm_chat_reasoning.json");
  // The template opened <think> in the prompt: the stream starts inside the reasoning.
  const std::vector<std::string> reasoning_tokens = {"Two", " plus",    " two",
                                                     ".",   "</think>", "\n\n"};
  SUBCASE("whole") { check_split(parse_ok(Dialect::openai_chat, body), reasoning_tokens); }
  SUBCASE("streamed: delta.reasoning") {
    Json response = Json::parse(body);
    auto streamed = parse_ok(Dialect::openai_chat, chat_stream(response, "reasoning", 1), true);
    check_split(streamed, reasoning_tokens);
  }
  SUBCASE("without reasoning (reasoning null): nothing changes") {
    auto completion =
        parse_ok(Dialect::openai_chat, read_format("vllm_chat_completion_logprobs.json"));
    CHECK(completion.reasoning_split == core::ReasoningSplit::none);
    CHECK(completion.reasoning_text.empty());
    CHECK(completion.reasoning_tokens.empty());
    CHECK(completion.tokens.size() == 7);
    CHECK(completion.text == "The capital of France is Paris.");
  }
}

TEST_CASE("parse_response ollama: thinking beside the answer, logprobs over both") {
  const std::string body = read_format("ollama_chat_thinking_logprobs.json");
  SUBCASE("/api/chat whole") {
    auto completion = parse_ok(Dialect::ollama, body);
    check_split(completion);
    CHECK(completion.completion_tokens == 9);
  }
  SUBCASE("/api/chat streamed: message.thinking chunk by chunk") {
    auto streamed = parse_ok(Dialect::ollama, ollama_stream(Json::parse(body), true), true);
    check_split(streamed);
    CHECK(same_tokens(parse_ok(Dialect::ollama, body), streamed));
  }
  SUBCASE("/api/generate whole and streamed: thinking beside response") {
    Json response = Json::parse(body);
    response["response"] = response["message"]["content"];
    response["thinking"] = response["message"]["thinking"];
    response.erase("message");
    check_split(parse_ok(Dialect::ollama, response.dump()));
    check_split(parse_ok(Dialect::ollama, ollama_stream(response, false), true));
  }
  SUBCASE("without thinking: nothing changes") {
    auto completion = parse_ok(Dialect::ollama, read_format("ollama_chat_logprobs.json"));
    CHECK(completion.reasoning_split == core::ReasoningSplit::none);
    CHECK(completion.tokens.size() == 7);
  }
}

TEST_CASE("parse_response openai-responses: a reasoning item's reasoning_text") {
  const std::string body = read_format("vllm_responses_reasoning.json");
  SUBCASE("whole: logprobs only on output_text stay the answer's") {
    check_split(parse_ok(Dialect::openai_responses, body), {});
  }
  SUBCASE("streamed: response.reasoning_text.delta events") {
    Json response = Json::parse(body);
    Json events = Json::array();
    events.push_back(Json{{"type", "response.created"}, {"response", {{"status", "in_progress"}}}});
    for (const char* piece : {"Two", " plus", " two", "."})
      events.push_back(Json{{"type", "response.reasoning_text.delta"},
                            {"item_id", "rs_2b4d6f8a0c1e3a5c"},
                            {"output_index", 0},
                            {"content_index", 0},
                            {"delta", piece}});
    const Json& logprobs = response["output"][1]["content"][0]["logprobs"];
    for (const auto& entry : logprobs) {
      Json streamed_entry = entry;
      streamed_entry.erase("bytes");
      events.push_back(Json{{"type", "response.output_text.delta"},
                            {"delta", entry["token"]},
                            {"logprobs", Json::array({streamed_entry})}});
    }
    events.push_back(Json{{"type", "response.completed"}, {"response", response}});
    check_split(parse_ok(Dialect::openai_responses, typed_sse(events), true), {});
  }
  SUBCASE("OpenAI's summary is no reasoning") {
    Json response = Json::parse(body);
    Json& item = response["output"][0];
    item.erase("content");
    item["summary"] = Json::array({Json{{"type", "summary_text"}, {"text", "Adds them."}}});
    auto completion = parse_ok(Dialect::openai_responses, response.dump());
    CHECK(completion.reasoning_text.empty());
    CHECK(completion.reasoning_split == core::ReasoningSplit::none);
    CHECK(token_strings(completion.tokens) == k_answer_tokens);
  }
}

TEST_CASE("parse_response gemini: thought parts are the reasoning") {
  const std::string body = read_format("gemini_generate_content_thoughts.json");
  const std::string thoughts = "**Adding the numbers**\n\nTwo plus two.";
  SUBCASE("whole") {
    auto completion = parse_ok(Dialect::gemini, body);
    CHECK(completion.text == "Four.");
    CHECK(completion.reasoning_text == thoughts);
    CHECK(completion.reasoning_split == core::ReasoningSplit::separate);
    CHECK(completion.reasoning_tokens.empty());
    CHECK(token_strings(completion.tokens) == k_answer_tokens);
    CHECK(*completion.tokens[0].gap() == -0.0124 - -4.4);
  }
  SUBCASE("streamed: a thought chunk, then the answer's") {
    Json response = Json::parse(body);
    Json thought = response;
    Json& thought_candidate = thought["candidates"][0];
    thought_candidate["content"]["parts"].erase(1);
    thought_candidate.erase("logprobsResult");
    thought_candidate.erase("finishReason");
    response["candidates"][0]["content"]["parts"].erase(0);
    std::string sse = "data: " + thought.dump() + "\r\n\r\ndata: " + response.dump() + "\r\n\r\n";
    auto streamed = parse_ok(Dialect::gemini, sse, true);
    CHECK(streamed.text == "Four.");
    CHECK(streamed.reasoning_text == thoughts);
    CHECK(token_strings(streamed.tokens) == k_answer_tokens);
  }
}
