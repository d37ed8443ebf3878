// Continuous batching without a thread: admits waiting sequences up to max_num_seqs, runs one
// forward step over every active sequence (prefill chunks and decode rows together), hands out
// the new tokens and retires finished sequences. Driven step by step, it is fully
// deterministic: the same sequence of add() and step() calls gives the same bits.
//
// Sampling: a greedy sequence takes the model's choice; a sequence whose request has a
// temperature T > 0 draws each token from softmax(logits / T) (the step's bf16 logits, weights
// exp((l - max) / T) in double, summed in vocabulary order) with its own SplitMix64 seeded by the
// request's seed: u = uniform() times the total, the first token whose running sum exceeds u.
// The token's reported logprob is its log-softmax at temperature 1, as for greedy tokens (its
// candidate's own where it is one), and its candidates are the model's top ones.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <vector>

#include "core/random.hpp"
#include "engine/generation.hpp"
#include "engine/kernel_policy.hpp"
#include "engine/model.hpp"
#include "engine/prefix_cache.hpp"
#include "engine/thread_pool.hpp"

namespace llmrepro::engine {

struct EngineOptions {
  int max_num_seqs = 16;
  bool batch_invariant = false;
  bool prefix_cache = false;
  // Prompt tokens run per step for one sequence; 0 runs a whole prompt in one step.
  int chunked_prefill = 0;
  int threads = 1;
};

// What one step did.
struct StepStats {
  std::size_t rows = 0;      // tokens run through the model
  std::size_t sequences = 0; // sequences in the batch
  std::size_t admitted = 0;
  std::size_t retired = 0;
};

class BatchEngine {
public:
  // The model must outlive the engine.
  BatchEngine(const Model& model, const EngineOptions& options);

  // Queues a generation; it is admitted at the start of a later step. Its prompt must be
  // non-empty and prompt + max_tokens must fit the model's context (the API checks both).
  void add(std::shared_ptr<Generation> generation);

  // One scheduling round and forward step; returns all zero when there was nothing to run.
  StepStats step();

  std::size_t active() const { return m_active.size(); }
  std::size_t waiting() const { return m_waiting.size(); }

  // Finishes every queued and active generation with `reason` (used at shutdown).
  void abort_all(const std::string& reason);

private:
  struct Sequence {
    std::shared_ptr<Generation> generation;
    std::vector<int> tokens;
    std::size_t prompt_length = 0;
    std::size_t computed = 0;
    std::size_t generated = 0;
    bool cached = false;
    KvCache cache;
    core::SplitMix64 sampler{0}; // draws the tokens of a sampled request (seeded at admission)
  };

  void admit(std::shared_ptr<Generation> generation);

  const Model& m_model;
  EngineOptions m_options;
  KernelPolicy m_policy;
  ThreadPool m_pool;
  PrefixCache m_prefix_cache;
  std::deque<std::shared_ptr<Generation>> m_waiting;
  std::vector<Sequence> m_active;
};

} // namespace llmrepro::engine
