// parse_response() on streams is linear in the tokens: the bytes a parse allocates grow in
// proportion to the stream's chunks. Measured by counting the bytes operator new hands out
// while a parse runs (a count, never a time): a parser that reallocates the token list every
// chunk allocates O(n^2) bytes, so doubling the chunks would quadruple them.
#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "probes/dialect.hpp"

namespace {

std::atomic<bool> g_counting{false};
std::atomic<std::size_t> g_allocated{0};

void* allocate(std::size_t size) {
  if (g_counting.load(std::memory_order_relaxed))
    g_allocated.fetch_add(size, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}

} // namespace

void* operator new(std::size_t size) { return allocate(size); }
void* operator new[](std::size_t size) { return allocate(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace llmrepro::probes {

namespace {

using Json = nlohmann::ordered_json;

Json openai_token(int i) {
  const std::string text = " w" + std::to_string(i);
  return Json{{"token", text},
              {"logprob", -0.01},
              {"bytes", nullptr},
              {"top_logprobs", Json::array({Json{{"token", text}, {"logprob", -0.01}},
                                            Json{{"token", " v"}, {"logprob", -4.0}}})}};
}

std::string sse(const std::string& data) { return "data: " + data + "\n\n"; }

// A stream of `n` one-token chunks in `dialect`'s shape.
std::string stream_of(Dialect dialect, int n) {
  std::string body;
  for (int i = 0; i < n; ++i) {
    const std::string text = " w" + std::to_string(i);
    const bool last = i == n - 1;
    switch (dialect) {
    case Dialect::openai_chat:
      body += sse(Json{
          {"choices", Json::array({Json{{"index", 0},
                                        {"delta", {{"content", text}}},
                                        {"logprobs", {{"content", Json::array({openai_token(i)})}}},
                                        {"finish_reason", last ? Json("length") : Json()}}})}}
                      .dump());
      break;
    case Dialect::openai_completions:
      body += sse(Json{
          {"choices",
           Json::array({Json{{"index", 0},
                             {"text", text},
                             {"logprobs",
                              {{"tokens", Json::array({text})},
                               {"token_logprobs", Json::array({-0.01})},
                               {"top_logprobs", Json::array({Json{{text, -0.01}, {" v", -4.0}}})}}},
                             {"finish_reason", nullptr}}})}}
                      .dump());
      break;
    case Dialect::tgi: {
      Json event{{"token", {{"id", i}, {"text", text}, {"logprob", -0.01}, {"special", false}}},
                 {"top_tokens", Json::array({Json{{"id", i}, {"text", text}, {"logprob", -0.01}},
                                             Json{{"id", 1}, {"text", " v"}, {"logprob", -4.0}}})}};
      if (last) event["generated_text"] = "";
      body += sse(event.dump());
      break;
    }
    case Dialect::llamacpp:
      body += sse(Json{{"content", text},
                       {"stop", last},
                       {"completion_probabilities", Json::array({openai_token(i)})}}
                      .dump());
      break;
    case Dialect::ollama:
      body += Json{{"model", "m"},
                   {"response", text},
                   {"logprobs", Json::array({openai_token(i)})},
                   {"done", last}}
                  .dump() +
              "\n";
      break;
    case Dialect::openai_responses:
      body += sse(Json{{"type", "response.output_text.delta"},
                       {"delta", text},
                       {"logprobs", Json::array({openai_token(i)})}}
                      .dump());
      break;
    case Dialect::gemini: {
      Json candidate{
          {"content", {{"role", "model"}, {"parts", Json::array({Json{{"text", text}}})}}},
          {"logprobsResult",
           {{"chosenCandidates", Json::array({Json{{"token", text}, {"logProbability", -0.01}}})},
            {"topCandidates",
             Json::array(
                 {Json{{"candidates",
                        Json::array({Json{{"token", text}, {"logProbability", -0.01}},
                                     Json{{"token", " v"}, {"logProbability", -4.0}}})}}})}}}};
      if (last) candidate["finishReason"] = "MAX_TOKENS";
      body += sse(Json{{"candidates", Json::array({candidate})}}.dump());
      break;
    }
    case Dialect::sglang: break;    // its default stream repeats the whole answer in every event
    case Dialect::anthropic: break; // no tokens to count: its streams carry text alone
    }
  }
  if (dialect == Dialect::openai_chat || dialect == Dialect::openai_completions)
    body += sse("[DONE]");
  if (dialect == Dialect::openai_responses)
    body += sse(Json{{"type", "response.completed"},
                     {"response", {{"status", "completed"}, {"model", "m"}}}}
                    .dump());
  return body;
}

// Bytes allocated while parsing a stream of `n` chunks, and the tokens it gave.
std::size_t allocated_by_parse(Dialect dialect, int n, std::size_t& tokens) {
  const std::string body = stream_of(dialect, n);
  g_allocated = 0;
  g_counting = true;
  auto parsed = parse_response(dialect, body, true);
  g_counting = false;
  INFO((parsed ? std::string() : parsed.error().message));
  REQUIRE(parsed.has_value());
  tokens = parsed->tokens.size();
  return g_allocated;
}

} // namespace

TEST_CASE("parse_response: a stream allocates in proportion to its chunks, in every dialect") {
  for (Dialect dialect :
       {Dialect::openai_chat, Dialect::openai_completions, Dialect::tgi, Dialect::llamacpp,
        Dialect::ollama, Dialect::openai_responses, Dialect::gemini}) {
    const std::string name = to_string(dialect);
    CAPTURE(name);
    std::size_t small_tokens = 0;
    std::size_t large_tokens = 0;
    const std::size_t small = allocated_by_parse(dialect, 2000, small_tokens);
    const std::size_t large = allocated_by_parse(dialect, 8000, large_tokens);
    CHECK(small_tokens == 2000);
    CHECK(large_tokens == 8000);
    // Four times the chunks: linear gives about 4x the bytes (geometric growth of the lists
    // adds at most 2x of slack); quadratic would give about 16x.
    CAPTURE(small);
    CAPTURE(large);
    CHECK(large < 8 * small);
  }
}

} // namespace llmrepro::probes
