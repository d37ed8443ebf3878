// Row-batched matmul with an explicit split-K order: the kernel behind the reference engine's
// linear layers (the gpu-probe's CPU experiments add in the same order through dot_split_k in
// reduction.hpp). The split count is a parameter, so whoever calls it decides the policy (a
// batch-shape heuristic, or a fixed order).
#pragma once

#include <cstddef>

namespace llmrepro::numerics {

// out[r*n + j] = sum over i of x[r*k + i] * w[i*n + j], in fp32, for rows r in [0, rows) and
// columns j in [col_begin, col_end). The weight is stored k-major (w[i*n + j]) so that
// neighbouring columns are computed together; each output is still summed in exactly the order
// of numerics::dot_split_k: `splits` contiguous chunks of K, each summed left to right from 0, then
// the chunk partials summed left to right from 0. The sums are left unrounded (the caller adds any
// epilogue and rounds). splits <= 1 is the plain sequential order.
void matmul_split_k(const float* x, std::size_t rows, std::size_t k, const float* w, std::size_t n,
                    int splits, float* out, std::size_t col_begin, std::size_t col_end);

// How split-K partials are combined. fp32: kept in fp32 (cuBLAS with reduced-precision reduction
// disallowed). bf16: each split's fp32 partial is rounded to bf16 before the partials are added,
// as cuBLAS(Lt) may do for a bf16 output when reduced-precision reduction is allowed (PyTorch's
// default, docs/gpu-probe.md §3.2): the scheme that makes a split-count change visible in most
// outputs.
enum class SplitPartials { fp32, bf16 };

// As above, with the partials combined as `partials` says. With one split there is nothing to
// combine and the result is the plain fp32 sum whatever `partials` says.
void matmul_split_k(const float* x, std::size_t rows, std::size_t k, const float* w, std::size_t n,
                    int splits, SplitPartials partials, float* out, std::size_t col_begin,
                    std::size_t col_end);

// Rounds every value of v[0, count) to bf16 in place (round to nearest even).
void round_bf16_inplace(float* v, std::size_t count);

} // namespace llmrepro::numerics
