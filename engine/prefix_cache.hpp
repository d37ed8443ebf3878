// Keys and values of prompt prefixes kept after a sequence's prefill, reused by later sequences
// that start with the same tokens. The reused values were computed in a step of another shape,
// so with an adaptive KernelPolicy their bits differ from a cold prefill: the drift that prefix
// caching brings to real engines.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <vector>

#include "engine/model.hpp"

namespace llmrepro::engine {

class PrefixCache {
public:
  // Prefixes are cached in whole blocks of `block_tokens` positions; at most `max_blocks` are
  // kept, the oldest dropped first.
  PrefixCache(std::size_t d_model, std::size_t block_tokens = 16, std::size_t max_blocks = 1024);

  // Copies the keys and values of the longest cached prefix of `tokens` that is at most `limit`
  // positions long into `cache`, and returns its length (a multiple of the block size, or 0).
  std::size_t lookup(const std::vector<int>& tokens, std::size_t limit, KvCache& cache) const;

  // Stores every whole block of tokens[0, length) not cached yet, from `cache`.
  void insert(const std::vector<int>& tokens, std::size_t length, const KvCache& cache);

  std::size_t blocks() const { return m_blocks.size(); }

private:
  struct Block {
    std::vector<std::vector<float>> keys;
    std::vector<std::vector<float>> values;
  };

  std::size_t m_d_model;
  std::size_t m_block_tokens;
  std::size_t m_max_blocks;
  // Keyed by the whole prefix up to the block's end, so a block is only reused after the same
  // tokens.
  std::map<std::vector<int>, Block> m_blocks;
  std::deque<std::vector<int>> m_order;
};

} // namespace llmrepro::engine
