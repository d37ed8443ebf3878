// The split decisions that make GPU reductions depend on the batch: a wave-quantisation split-K
// rule for matmul and FlashAttention-2's split-KV heuristic (docs/gpu-probe.md §3.3, §4.1),
// re-implemented from their published descriptions, and the batch-invariant alternatives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace llmrepro::gpu {

// H100/H200 SM count: the CPU emulation's policies assume it.
inline constexpr int k_emulated_sm_count = 132;

// Split-K count a wave-filling heuristic picks for an M x N x K GEMM with 128 x 128 output
// tiles and 64-deep K tiles: min(max(sms / tiles, 1), k_tiles). With N = 4096 on 132 SMs this
// is 4 for M <= 128, 2 for M <= 256 and 1 beyond.
int heuristic_split_k(std::int64_t m, std::int64_t n, std::int64_t k, int sm_count);

// FlashAttention-2's num_splits_heuristic: 1 when the work already fills 80 % of `sm_slots`,
// else the smallest split count whose wave efficiency reaches 85 % of the best, counting only
// split counts that change the blocks per split.
int fa2_num_splits(std::int64_t work_items, int sm_slots, int n_blocks, int max_splits);

// Split count FA2 uses for GQA decode: 128-key blocks, work = batch x kv_heads, 2 x SMs slots.
int fa2_decode_splits(std::int64_t batch, std::int64_t kv_heads, std::size_t length, int sm_count);

// Key boundaries for `splits` splits of whole 128-key blocks (FA2: ceil(blocks / splits) blocks
// per split; empty splits dropped). front() == 0, back() == length.
std::vector<std::size_t> block_split_bounds(std::size_t length, int splits);

// Key boundaries at absolute multiples of `split_size` (the batch-invariant fixed split size).
std::vector<std::size_t> fixed_size_bounds(std::size_t length, std::size_t split_size);

} // namespace llmrepro::gpu
