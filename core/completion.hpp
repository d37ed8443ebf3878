// The canonical completion every dialect adapter produces: text, tokens and their candidates.
#pragma once

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/inline_vector.hpp"
#include "core/token_text.hpp"
#include "core/tool_calls.hpp"

namespace llmrepro::core {

// A log probability the endpoint sent that is no number a gap can be read from: NaN, +Infinity
// or null. In memory it is a quiet NaN; SQLite stores it as NULL.
inline constexpr double k_unknown_logprob = std::numeric_limits<double>::quiet_NaN();
inline bool is_known_logprob(double logprob) { return std::isfinite(logprob); }

// One alternative the model considered at a position, with its log probability in nats.
struct TokenCandidate {
  TokenText token;
  double logprob = 0.0; // k_unknown_logprob where the endpoint sent no usable number
};

// A position's candidates: the two an audit asks for kept inline, any more on the heap.
using TokenCandidates = InlineVector<TokenCandidate, 2>;

// One generated token with the candidates the endpoint returned for its position.
struct TokenLogprob {
  TokenText token;
  double logprob = 0.0; // k_unknown_logprob where the endpoint sent no usable number
  // Sorted by logprob, highest first, unknown values last (adapters sort: vLLM lists the
  // sampled token first).
  TokenCandidates top;

  // logprob(top-1) - logprob(top-2) in nats; empty when fewer than two candidates came back or
  // either of the two has an unknown log probability.
  std::optional<double> gap() const {
    if (top.size() < 2) return std::nullopt;
    if (!is_known_logprob(top[0].logprob) || !is_known_logprob(top[1].logprob)) return std::nullopt;
    return top[0].logprob - top[1].logprob;
  }

  // Whether the sampled token is the top candidate. Empty when there are no candidates, or its
  // own log probability is unknown; false when it is absent from the candidates or ranks below
  // one of them (the endpoint did not decode greedily on the logits it reported).
  std::optional<bool> greedy() const;
};

// Log-probability values in a response that were not finite numbers, by kind. None of them
// fails the request: -Infinity and negative overflow become the logprob floor (as vLLM's
// -9999.0); NaN, +Infinity, positive overflow and null become k_unknown_logprob.
struct NumberAnomalies {
  int nan = 0;
  int infinity = 0;          // +Infinity
  int negative_infinity = 0; // -Infinity
  int overflow = 0;          // a literal outside double's range (1e400, -1e400)
  int null = 0;

  int total() const { return nan + infinity + negative_infinity + overflow + null; }
  NumberAnomalies& operator+=(const NumberAnomalies& other) {
    nan += other.nan;
    infinity += other.infinity;
    negative_infinity += other.negative_infinity;
    overflow += other.overflow;
    null += other.null;
    return *this;
  }
  friend bool operator==(const NumberAnomalies&, const NumberAnomalies&) = default;
};

// What the endpoint said a request used beyond the tokens it generated (`usage` and its kin in
// each dialect); empty where it did not say. Budgets and the cost per level read it.
struct TokenUsage {
  // usage.prompt_tokens, input_tokens, promptTokenCount, prompt_eval_count, ...
  std::optional<long> prompt;
  // Hidden reasoning tokens counted within completion_tokens: completion_tokens_details.
  // reasoning_tokens, output_tokens_details.reasoning_tokens, thoughtsTokenCount, ...
  std::optional<long> reasoning;
  // Prompt tokens the server said it served from its prompt cache rather than computed: llama.cpp's
  // timings.cache_n (its tokens_cached counts the whole slot, prompt and generated, and is not
  // read), usage.prompt_tokens_details.cached_tokens (OpenAI, vLLM, llama.cpp's OpenAI routes),
  // usage.input_tokens_details.cached_tokens (Responses), SGLang's meta_info.cached_tokens.
  // More than 0: the request ran warm.
  std::optional<long> cached_prompt;
  friend bool operator==(const TokenUsage&, const TokenUsage&) = default;
};

// How the endpoint's tokens relate to a reasoning model's two parts (core/reasoning.hpp).
enum class ReasoningSplit {
  none,     // no reasoning came back: `tokens` are the answer's
  separate, // `tokens` are the answer's and `reasoning_tokens` the reasoning's (possibly none)
  joined,   // one stream for both that could not be cut where the answer starts: in `tokens`
};
const char* to_string(ReasoningSplit split);
// "none", "separate" or "joined"; anything else reads as none.
ReasoningSplit parse_reasoning_split(const std::string& text);

// What one successful request produced, independent of the API dialect that carried it.
struct Completion {
  std::string text;
  std::vector<TokenLogprob> tokens;
  // False when the endpoint returned text without per-token logprobs: audited on text alone.
  bool has_logprobs = false;
  std::string finish_reason;
  // `system_fingerprint`, or the engine's build string where the dialect has one.
  std::string system_fingerprint;
  std::string model;
  // Tokens the endpoint reported generating (usage.completion_tokens or the token count).
  long completion_tokens = 0;
  TokenUsage usage;
  // Non-finite log probabilities the response carried, mapped as NumberAnomalies says.
  NumberAnomalies numbers;
  // Lone surrogate escapes ("\ud800" without its low half) in the response's JSON strings,
  // each read as U+FFFD: text the endpoint sent broken, not a failed request.
  int lone_surrogates = 0;
  // A reasoning model's hidden reasoning (`reasoning_content`, `reasoning`, Ollama's
  // `thinking`), beside the answer in `text`, and its tokens where the endpoint sent them apart
  // or core::separate_reasoning cut them from the stream.
  std::string reasoning_text;
  std::vector<TokenLogprob> reasoning_tokens;
  ReasoningSplit reasoning_split = ReasoningSplit::none;
  // The tools the model called, in order (OpenAI `message.tool_calls`, a recorded replay's
  // sequence): what --compare-on tool_calls compares.
  std::vector<ToolCall> tool_calls;
};

// Sorts each position's candidates (of the answer's and the reasoning's tokens) by logprob, highest
// first and unknown values last, so that gap() is meaningful.
void sort_candidates(Completion& completion);

// The bytes a token stands for: the token string, or for a byte-fragment token written as
// "bytes:\xe2\x80" (OpenAI's spelling, which adapters use where an endpoint sends `bytes` that
// are not the UTF-8 of its token string) the bytes it names.
std::string token_bytes(std::string_view token);

// Whether the tokens' bytes concatenate to the completion's text.
bool tokens_match_text(const Completion& completion);

} // namespace llmrepro::core
