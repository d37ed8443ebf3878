// Single-query attention over a KV cache with an explicit split-KV count (flash-decoding):
// the engine derives the count from the number of queries in a step, as FlashAttention's
// heuristic does from the batch (docs/gpu-probe.md §4); the gpu-probe runs its own variant with
// arbitrary split bounds and portable exp/log (attention_decode in reduction_schemes.hpp).
// One split is the plain order; a fixed count makes the result batch-invariant.
#pragma once

#include <cstddef>

namespace llmrepro::numerics {

// One head's attention output for query q (head_dim values) over `length` cached positions:
// key i is keys[i*stride .. +head_dim), value i is values[i*stride .. +head_dim).
// The positions are cut into `splits` contiguous chunks; each chunk computes its own running
// maximum m_c, its sum l_c of exp(score - m_c) and its weighted value sum, left to right; the
// chunks are then combined left to right with the log-sum-exp rescaling
// (out = sum_c exp(m_c - M) acc_c / sum_c exp(m_c - M) l_c, M the largest m_c).
// Scores are dot(q, key) * scale summed sequentially over head_dim. The output is fp32,
// unrounded. splits is clamped to [1, length].
void attention_split_kv(const float* q, const float* keys, const float* values, std::size_t length,
                        std::size_t head_dim, std::size_t stride, float scale, int splits,
                        float* out);

} // namespace llmrepro::numerics
