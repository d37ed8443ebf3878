#include "engine/prefix_cache.hpp"

#include <algorithm>

namespace llmrepro::engine {

PrefixCache::PrefixCache(std::size_t d_model, std::size_t block_tokens, std::size_t max_blocks)
    : m_d_model(d_model), m_block_tokens(block_tokens), m_max_blocks(max_blocks) {}

std::size_t PrefixCache::lookup(const std::vector<int>& tokens, std::size_t limit,
                                KvCache& cache) const {
  std::size_t length = 0;
  const std::size_t span = m_block_tokens * m_d_model;
  while (length + m_block_tokens <= std::min(limit, tokens.size())) {
    const std::vector<int> key(
        tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(length + m_block_tokens));
    const auto it = m_blocks.find(key);
    if (it == m_blocks.end()) break;
    const auto offset = static_cast<std::ptrdiff_t>(length * m_d_model);
    for (std::size_t l = 0; l < cache.keys.size(); ++l) {
      std::copy_n(it->second.keys[l].begin(), span, cache.keys[l].begin() + offset);
      std::copy_n(it->second.values[l].begin(), span, cache.values[l].begin() + offset);
    }
    length += m_block_tokens;
  }
  return length;
}

void PrefixCache::insert(const std::vector<int>& tokens, std::size_t length, const KvCache& cache) {
  const std::size_t span = m_block_tokens * m_d_model;
  for (std::size_t end = m_block_tokens; end <= std::min(length, tokens.size());
       end += m_block_tokens) {
    std::vector<int> key(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(end));
    if (m_blocks.contains(key)) continue;
    Block block;
    const auto offset = static_cast<std::ptrdiff_t>((end - m_block_tokens) * m_d_model);
    for (std::size_t l = 0; l < cache.keys.size(); ++l) {
      block.keys.emplace_back(cache.keys[l].begin() + offset,
                              cache.keys[l].begin() + offset + static_cast<std::ptrdiff_t>(span));
      block.values.emplace_back(cache.values[l].begin() + offset,
                                cache.values[l].begin() + offset +
                                    static_cast<std::ptrdiff_t>(span));
    }
    m_blocks.emplace(key, std::move(block));
    m_order.push_back(std::move(key));
    while (m_order.size() > m_max_blocks) {
      m_blocks.erase(m_order.front());
      m_order.pop_front();
    }
  }
}

} // namespace llmrepro::engine
