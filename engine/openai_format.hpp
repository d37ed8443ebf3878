// JSON bodies of the OpenAI-compatible responses, in the exact shapes of the OpenAI API
// (tests/data/formats/openai_*.json): chat completions, legacy completions, their SSE chunks,
// embeddings, models and errors. Pure functions from typed values to JSON text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/api_request.hpp"
#include "engine/generation.hpp"
#include "engine/vocabulary.hpp"

namespace llmrepro::engine {

// Fields every response of one request repeats.
struct ResponseContext {
  std::string id;
  std::int64_t created = 0;
  std::string model;
  std::string fingerprint;
  std::size_t prompt_tokens = 0;
  // Characters of prompt text before the completion (legacy `text_offset` counts from it).
  std::size_t prompt_chars = 0;
};

// The whole non-streaming response for a finished generation.
std::string completion_body(const ApiRequest& request, const ResponseContext& context,
                            const Vocabulary& vocabulary, const Generation::Snapshot& snapshot);

// One SSE event ("data: {...}\n\n") per element, for the tokens [first, first + tokens.size())
// of a streamed generation: the opening role chunk (chat, when first == 0 and `opening`), one
// chunk per token, and when `finished` the closing chunk, the usage chunk (if asked) and
// "data: [DONE]".
std::string stream_events(const ApiRequest& request, const ResponseContext& context,
                          const Vocabulary& vocabulary, const std::vector<TokenChoice>& tokens,
                          std::size_t first, std::size_t text_chars_before, bool opening,
                          bool finished, const std::string& finish_reason,
                          std::size_t cached_tokens);

// {"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model", "usage"}.
std::string embeddings_body(const std::vector<std::vector<float>>& embeddings,
                            const std::string& model, std::size_t prompt_tokens);

// {"object": "list", "data": [{"id", "object": "model", "created", "owned_by"}]}.
std::string models_body(const std::string& model, const std::string& fingerprint);

// {"error": {"message", "type", "param", "code"}}; empty param or code become null.
std::string error_body(const ApiError& error);

} // namespace llmrepro::engine
