// How the engine's kernels pick their reduction order from the shape of a step, the way GPU
// libraries do (docs/gpu-probe.md §3-4): a split-K count for each matmul from the row count, an
// RMSNorm strategy from the batch size, a split-KV count for attention from the number of
// queries. Batch-invariant mode fixes every order, whatever the shape.
#pragma once

#include <cstddef>

#include "numerics/rms_norm.hpp"

namespace llmrepro::engine {

class KernelPolicy {
public:
  explicit KernelPolicy(bool batch_invariant) : m_batch_invariant(batch_invariant) {}

  bool batch_invariant() const { return m_batch_invariant; }

  // Split-K count for a [rows x k] by [k x n] matmul. Adaptive mode mimics wave quantisation:
  // output tiles of 16 rows x 64 columns over 32 "SMs", split K until the machine is full
  // (at most 8 splits, at least 16 K values a split), so the count steps down at 17, 33, 49...
  // rows. The engine rounds split partials to bf16 (numerics::SplitPartials::bf16), so each step
  // changes most outputs' bits. Invariant mode: always 1.
  int matmul_splits(std::size_t rows, std::size_t n, std::size_t k) const;

  // RMSNorm reduction for a step of `rows` rows. Adaptive mode: small batches spread a row over
  // many lanes (a strided tree), large ones reduce each row sequentially. Invariant: sequential.
  numerics::RmsReduction rms_reduction(std::size_t rows) const;

  // Split-KV count for decode attention when `queries` query rows (times heads) share the step,
  // over `length` cached positions: the FlashAttention occupancy rule with 132 SMs and blocks of
  // 16 positions, at most 8 splits. Invariant mode: always 1.
  int attention_splits(std::size_t queries, std::size_t heads, std::size_t length) const;

private:
  bool m_batch_invariant;
};

} // namespace llmrepro::engine
