// One request's generation, shared between the scheduler thread that produces its tokens and
// the HTTP handler that waits for them (all at once, or one by one when streaming).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "engine/model.hpp"

namespace llmrepro::engine {

struct GenerationRequest {
  std::vector<int> prompt;
  std::size_t max_tokens = 16;
  // 0: greedy. Above 0: each token drawn at this temperature (BatchEngine, "Sampling").
  double temperature = 0.0;
  std::uint64_t seed = 0; // the sampling generator's seed
};

class Generation {
public:
  // What a waiter sees: the tokens from the index it asked for, and whether it is over.
  struct Snapshot {
    std::vector<TokenChoice> tokens;
    bool finished = false;
    // "length" when max_tokens was reached, "abort" when the engine stopped first.
    std::string finish_reason;
    // Prompt positions whose keys and values came from the prefix cache.
    std::size_t cached_tokens = 0;
  };

  explicit Generation(GenerationRequest request) : m_request(std::move(request)) {}

  const GenerationRequest& request() const { return m_request; }

  // Scheduler side.
  void push(const TokenChoice& token);
  void finish(const std::string& reason);
  void set_cached_tokens(std::size_t count);

  // Handler side: asks the scheduler to drop the sequence (a client went away).
  void cancel();
  bool cancelled() const;

  // Whether the generation is over (never blocks).
  bool finished() const;

  // Blocks until more than `seen` tokens exist or the generation has finished, and returns
  // the tokens from index `seen` on.
  Snapshot wait_after(std::size_t seen);

  // Blocks until the generation has finished and returns all of it.
  Snapshot wait_finished();

private:
  GenerationRequest m_request;
  mutable std::mutex m_mutex;
  std::condition_variable m_changed;
  std::vector<TokenChoice> m_tokens;
  bool m_finished = false;
  bool m_cancelled = false;
  std::string m_finish_reason;
  std::size_t m_cached_tokens = 0;
};

} // namespace llmrepro::engine
