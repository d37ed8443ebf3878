#include "numerics/rms_norm.hpp"

#include <cmath>
#include <vector>

#include "numerics/float_format.hpp"
#include "numerics/reduction.hpp"

namespace llmrepro::numerics {

float rms_norm_row(const float* x, const float* weight, std::size_t n, float eps,
                   RmsReduction reduction, float* out) {
  // Squares go through `out` as scratch; each is exact in fp32 for a bf16 input.
  for (std::size_t i = 0; i < n; ++i) out[i] = x[i] * x[i];
  const float sum = reduction.kind == RmsReduction::Kind::strided_tree
                        ? sum_strided_tree(out, n, reduction.parameter)
                        : sum_split_k(out, n, reduction.parameter);
  const float mean = sum / static_cast<float>(n);
  const float inv_rms = 1.0f / std::sqrt(mean + eps);
  for (std::size_t i = 0; i < n; ++i)
    out[i] = round_to(Precision::bf16, round_to(Precision::bf16, x[i] * inv_rms) * weight[i]);
  return inv_rms;
}

} // namespace llmrepro::numerics
