// RMSNorm of one row with an explicit strategy for its sum of squares: the engine picks the
// strategy from the batch size (as GPU kernels pick a block size); the gpu-probe's CPU backend
// runs strategies of the same kind (rmsnorm_row in reduction_schemes.hpp). The output is rounded
// to bf16, as a bf16 kernel stores it.
#pragma once

#include <cstddef>

namespace llmrepro::numerics {

// How the sum of squares of a row is reduced (see numerics/reduction.hpp for the exact
// orders).
struct RmsReduction {
  enum class Kind { split_k, strided_tree };
  Kind kind = Kind::split_k;
  // split_k: number of contiguous chunks (1 = sequential); strided_tree: lanes (a power of two).
  int parameter = 1;
};

// out[i] = bf16(bf16(x[i] * inv_rms) * weight[i]) with inv_rms = 1 / sqrt(sum(x^2) / n + eps),
// the sum taken in the given order. Returns inv_rms (unrounded), which the gpu-probe reports, as
// a change in its bits is the root cause of RMSNorm drift. x and out may not alias.
float rms_norm_row(const float* x, const float* weight, std::size_t n, float eps,
                   RmsReduction reduction, float* out);

} // namespace llmrepro::numerics
