#include "gpu/split_policy.hpp"

#include <algorithm>
#include <cmath>

namespace llmrepro::gpu {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

constexpr std::int64_t k_tile_mn = 128;
constexpr std::int64_t k_tile_k = 64;
constexpr std::size_t k_kv_block = 128;

} // namespace

int heuristic_split_k(std::int64_t m, std::int64_t n, std::int64_t k, int sm_count) {
  const std::int64_t tiles = ceil_div(m, k_tile_mn) * ceil_div(n, k_tile_mn);
  const std::int64_t k_tiles = ceil_div(k, k_tile_k);
  const std::int64_t split = std::max<std::int64_t>(sm_count / tiles, 1);
  return static_cast<int>(std::min(split, k_tiles));
}

int fa2_num_splits(std::int64_t work_items, int sm_slots, int n_blocks, int max_splits) {
  if (static_cast<double>(work_items) >= 0.8 * sm_slots) return 1;
  const int limit = std::min({max_splits, sm_slots, n_blocks});
  const auto eligible = [n_blocks](int splits) {
    return splits == 1 || ceil_div(n_blocks, splits) != ceil_div(n_blocks, splits - 1);
  };
  std::vector<double> efficiency(static_cast<std::size_t>(std::max(limit, 0)), 0.0);
  double best = 0.0;
  for (int splits = 1; splits <= limit; ++splits) {
    if (!eligible(splits)) continue;
    const double waves = static_cast<double>(work_items * splits) / sm_slots;
    const double value = waves / std::ceil(waves);
    efficiency[static_cast<std::size_t>(splits - 1)] = value;
    best = std::max(best, value);
  }
  for (int splits = 1; splits <= limit; ++splits)
    if (eligible(splits) && efficiency[static_cast<std::size_t>(splits - 1)] >= 0.85 * best)
      return splits;
  return 1;
}

int fa2_decode_splits(std::int64_t batch, std::int64_t kv_heads, std::size_t length, int sm_count) {
  const int n_blocks = static_cast<int>((length + k_kv_block - 1) / k_kv_block);
  return fa2_num_splits(batch * kv_heads, 2 * sm_count, n_blocks, 128);
}

std::vector<std::size_t> block_split_bounds(std::size_t length, int splits) {
  const std::size_t n_blocks = (length + k_kv_block - 1) / k_kv_block;
  const std::size_t count = splits < 1 ? 1 : static_cast<std::size_t>(splits);
  const std::size_t per_split = (n_blocks + count - 1) / count;
  std::vector<std::size_t> bounds{0};
  for (std::size_t s = 1; s <= count; ++s) {
    const std::size_t end = std::min(s * per_split * k_kv_block, length);
    if (end > bounds.back()) bounds.push_back(end);
  }
  return bounds;
}

std::vector<std::size_t> fixed_size_bounds(std::size_t length, std::size_t split_size) {
  std::vector<std::size_t> bounds{0};
  for (std::size_t end = split_size; end < length; end += split_size) bounds.push_back(end);
  bounds.push_back(length);
  return bounds;
}

} // namespace llmrepro::gpu
