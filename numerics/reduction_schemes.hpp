// Reduction schemes beyond numerics/reduction.hpp, as the gpu-probe runs them: split-K
// partials and the three ways GPU libraries combine them, permuted (atomic) sums, RMSNorm with a
// block-reduction order, and split-KV decode attention with a log-sum-exp combine.
//
// Every function adds in exactly the order it documents; the CUDA reference kernels mirror
// these orders so that CPU and GPU agree bit for bit (experiment E0). fp32 addition is not
// associative: two orders of the same sum usually differ in the last bits, and rounding the
// result to bf16 turns a small fraction of those differences into 1-ULP changes.
#pragma once

#include <cstddef>
#include <vector>

#include "numerics/float_format.hpp"

namespace llmrepro::numerics {

// The chunk sums of dot_split_k (numerics/reduction.hpp): partials[c] is chunk c of `splits`
// contiguous chunks of n (bounds n*c/splits), summed left to right from 0.0f. Summing the
// partials left to right from 0.0f gives dot_split_k's result bit for bit.
void dot_chunk_partials(const float* a, const float* b, std::size_t n, int splits, float* partials);

// How split-K partials are combined (the cuBLASLt reduction schemes, docs/gpu-probe.md §3.2).
enum class PartialScheme {
  compute_type, // fp32 partials summed left to right in fp32, then one rounding
  output_type,  // partials rounded to the output dtype first, then summed in fp32
  inplace,      // accumulated in the output dtype: rounded after every add
};

const char* to_string(PartialScheme scheme);

// Combines partials[0..count) with the scheme and rounds the result to `precision`.
float combine_partials(const float* partials, std::size_t count, PartialScheme scheme,
                       Precision precision);

// Sum of values[order[i]] for i = 0..n-1, from 0.0f, in fp32: the order in which atomic adds
// happened to land. With round_each, the running total is rounded to `precision` after each
// add (an atomicAdd on a bf16 or fp16 output).
float sum_in_order(const float* values, const std::size_t* order, std::size_t n, bool round_each,
                   Precision precision);

// How a row reduction is organised: `row_splits` contiguous chunks (CTAs sharing a row), each
// reduced by `lanes` strided partials and a halving tree (numerics::sum_strided_tree), the chunk
// results summed left to right.
struct RowReduction {
  int lanes = 256;
  int row_splits = 1;
};

// RMSNorm of one row: out[i] = round(x[i] * inv_rms * weight[i]) with
// inv_rms = 1 / sqrt(sum(x^2) / n + eps), the sum taken in the RowReduction's order and every
// product rounded in fp32 (x * inv_rms first). Returns inv_rms.
float rmsnorm_row(const float* x, const float* weight, std::size_t n, RowReduction order, float eps,
                  Precision precision, float* out);

// Decode attention for one query head: scores s_j = (q . k_j) * scale (dot summed left to
// right), keys split at `bounds` (bounds.front() == 0, bounds.back() == length, increasing).
// Each split keeps its max m, sum l = sum exp(s - m) and o = sum exp(s - m) v in key order;
// splits are combined left to right relative to the global max. out (head_dim values) is
// rounded to `precision`; returns the log-sum-exp of the scores. exp and log are
// numerics::portable_exp / portable_log (numerics/portable_math.hpp), which the CUDA kernel
// shares, so the same bounds give the same bits on CPU and GPU.
float attention_decode(const float* q, const float* keys, const float* values, std::size_t length,
                       std::size_t head_dim, const std::vector<std::size_t>& bounds, float scale,
                       Precision precision, float* out);

} // namespace llmrepro::numerics
