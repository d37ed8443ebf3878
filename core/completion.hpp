// The canonical completion every dialect adapter produces: text, tokens and their candidates.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace llmrepro::core {

// One alternative the model considered at a position, with its log probability in nats.
struct TokenCandidate {
  std::string token;
  double logprob = 0.0;
};

// One generated token with the candidates the endpoint returned for its position.
struct TokenLogprob {
  std::string token;
  double logprob = 0.0;
  // Sorted by logprob, highest first (adapters sort: vLLM lists the sampled token first).
  std::vector<TokenCandidate> top;

  // logprob(top-1) - logprob(top-2) in nats; empty when fewer than two candidates came back.
  std::optional<double> gap() const {
    if (top.size() < 2) return std::nullopt;
    return top[0].logprob - top[1].logprob;
  }
};

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
};

// Sorts each position's candidates by logprob, highest first, so that gap() is meaningful.
void sort_candidates(Completion& completion);

} // namespace llmrepro::core
