// The reference engine's model: a small decoder-only transformer on the CPU (RMSNorm, multi-head
// attention with a KV cache, a ReLU MLP) over the corpus vocabulary, with weights drawn from a
// seed and a bigram prior added to the output logits. Every activation and output is rounded to
// bf16 and every product accumulated in fp32, in the reduction order the KernelPolicy picks from
// the step's shape: the same mechanism that makes GPU inference batch-dependent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/bigram_prior.hpp"
#include "engine/kernel_policy.hpp"
#include "engine/thread_pool.hpp"
#include "engine/vocabulary.hpp"

namespace llmrepro::engine {

struct ModelConfig {
  std::size_t d_model = 192;
  std::size_t n_layers = 3;
  std::size_t n_heads = 4;
  std::size_t d_ffn = 512;
  std::size_t max_context = 1024;
  std::uint64_t seed = 0;
  // Scale of every weight inside the layers relative to 1/sqrt(fan_in): above 1 the layers
  // amplify small differences, as deep real models do over many more layers.
  float layer_gain = 2.0f;
  // Multiplies the attention scores' 1/sqrt(head_dim): sharper attention, more sensitivity.
  float attention_sharpness = 3.0f;
  // Standard deviation of the transformer's part of a logit.
  float output_scale = 1.0f;
  // Weight of log(1 + pair count) in a logit.
  float prior_scale = 1.5f;
  // The logit of a token never seen after the previous one starts this far below zero.
  float unseen_penalty = 3.0f;
  // Subtracted from the logit of a word already among the last `repeat_window` tokens.
  float repeat_penalty = 1.5f;
  std::size_t repeat_window = 8;
};

// Keys and values of one sequence, per layer: [position][d_model], heads side by side.
struct KvCache {
  std::vector<std::vector<float>> keys;
  std::vector<std::vector<float>> values;
};

// One candidate token and its logprob.
struct Candidate {
  int token = 0;
  float logprob = 0.0f;
};

// What greedy decoding chose at one position, with the candidates ranked by logit (ties by
// lower id, the same rule as the argmax).
struct TokenChoice {
  int token = 0;
  float logprob = 0.0f;
  std::vector<Candidate> top;
};

// One sequence's share of a step: positions [start, start + count) of `tokens` are run, their
// keys and values written to `cache` (which must already hold positions [0, start)).
struct StepItem {
  const std::vector<int>* tokens = nullptr;
  KvCache* cache = nullptr;
  std::size_t start = 0;
  std::size_t count = 0;
  // Whether the last position's next-token distribution is wanted.
  bool wants_logits = false;
};

class Model {
public:
  // How many ranked candidates each TokenChoice carries (the API allows top_logprobs <= 20).
  static constexpr std::size_t k_top_candidates = 20;

  explicit Model(const ModelConfig& config);

  // Runs one forward step over every item together (all their rows in one batch) and returns,
  // for each item that wants logits, in item order, the greedy choice. When `logits` is given,
  // the bf16 logits of those rows are stored in it, in the same order.
  std::vector<TokenChoice> step(const std::vector<StepItem>& items, const KernelPolicy& policy,
                                ThreadPool& pool,
                                std::vector<std::vector<float>>* logits = nullptr) const;

  // An embedding of the text's tokens: the mean of the final (normalised) hidden states over
  // all positions, L2-normalised, computed alone in batch-invariant mode.
  std::vector<float> embed(const std::vector<int>& tokens) const;

  // An empty cache with room for `capacity` positions.
  KvCache make_cache(std::size_t capacity) const;

  const Vocabulary& vocabulary() const { return m_vocabulary; }
  const ModelConfig& config() const { return m_config; }

private:
  struct Layer {
    std::vector<float> attn_norm, wqkv, wo, ffn_norm, w_up, w_down;
  };

  // Runs the layers over the step's rows; leaves the final normalised hidden states in `hidden`.
  void forward(const std::vector<StepItem>& items, const KernelPolicy& policy, ThreadPool& pool,
               std::vector<float>& hidden) const;
  void linear(const std::vector<float>& x, std::size_t rows, const std::vector<float>& w,
              std::size_t k, std::size_t n, const KernelPolicy& policy, ThreadPool& pool,
              std::vector<float>& out) const;
  void output_bias(const std::vector<int>& tokens, std::size_t length, float* bias) const;

  ModelConfig m_config;
  Vocabulary m_vocabulary;
  BigramPrior m_prior;
  std::vector<float> m_embedding; // [vocab][d_model]
  std::vector<float> m_positions; // [max_context][d_model]
  std::vector<Layer> m_layers;
  std::vector<float> m_final_norm;
  std::vector<float> m_unembedding; // [d_model][vocab]
};

} // namespace llmrepro::engine
