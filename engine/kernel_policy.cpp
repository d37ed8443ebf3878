#include "engine/kernel_policy.hpp"

#include <algorithm>

namespace llmrepro::engine {

namespace {

constexpr std::size_t k_matmul_sms = 32;
// Rows of an output tile, as in the small-M kernels GPU libraries pick for decode: a step of up
// to 16 rows fills one row of tiles, so a decode step of 16 sequences keeps one order, and a
// prefill chunk joining it moves the split count.
constexpr std::size_t k_tile_rows = 16;
constexpr std::size_t k_tile_cols = 64;
constexpr std::size_t k_attention_sms = 132;
constexpr std::size_t k_kv_block = 16;
constexpr std::size_t k_max_splits = 8;

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

} // namespace

int KernelPolicy::matmul_splits(std::size_t rows, std::size_t n, std::size_t k) const {
  if (m_batch_invariant || rows == 0) return 1;
  const std::size_t tiles = ceil_div(rows, k_tile_rows) * ceil_div(n, k_tile_cols);
  std::size_t splits = std::max<std::size_t>(k_matmul_sms / tiles, 1);
  splits = std::min({splits, k_max_splits, std::max<std::size_t>(k / 16, 1)});
  return static_cast<int>(splits);
}

numerics::RmsReduction KernelPolicy::rms_reduction(std::size_t rows) const {
  using Kind = numerics::RmsReduction::Kind;
  if (m_batch_invariant) return {Kind::split_k, 1};
  if (rows <= 2) return {Kind::strided_tree, 64};
  if (rows <= 8) return {Kind::strided_tree, 16};
  if (rows <= 24) return {Kind::strided_tree, 4};
  return {Kind::split_k, 1};
}

int KernelPolicy::attention_splits(std::size_t queries, std::size_t heads,
                                   std::size_t length) const {
  if (m_batch_invariant || queries == 0) return 1;
  const std::size_t work = queries * heads;
  // FlashAttention returns 1 split once the work fills 80% of the SMs.
  if (work * 10 >= k_attention_sms * 8) return 1;
  const std::size_t blocks = std::max<std::size_t>(ceil_div(length, k_kv_block), 1);
  const std::size_t splits =
      std::min({std::max<std::size_t>(k_attention_sms / work, 1), blocks, k_max_splits});
  return static_cast<int>(splits);
}

} // namespace llmrepro::engine
