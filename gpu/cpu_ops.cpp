#include "numerics/reduction.hpp"
#include "gpu/detail/experiment_ops.hpp"
#include "gpu/split_policy.hpp"

namespace llmrepro::gpu {

std::string CpuOps::name() const { return "cpu"; }

int CpuOps::sm_count() const { return k_emulated_sm_count; }

core::Result<SplitKOutputs> CpuOps::split_k(const float* x, const float* weights,
                                            std::size_t outputs, std::size_t k, int splits,
                                            numerics::PartialScheme scheme,
                                            numerics::Precision precision) {
  const std::size_t s = splits < 1 ? 1 : static_cast<std::size_t>(splits);
  SplitKOutputs result{std::vector<float>(outputs), std::vector<float>(outputs)};
  std::vector<float> partials(s);
  for (std::size_t j = 0; j < outputs; ++j) {
    numerics::dot_chunk_partials(x, weights + j * k, k, static_cast<int>(s), partials.data());
    result.out[j] = numerics::combine_partials(partials.data(), s, scheme, precision);
    result.out_fp32[j] =
        numerics::combine_partials(partials.data(), s, scheme, numerics::Precision::fp32);
  }
  return result;
}

core::Result<NormOutputs> CpuOps::rmsnorm(const float* x, const float* residual,
                                          const float* weight, std::size_t rows, std::size_t hidden,
                                          numerics::RowReduction order, float eps,
                                          numerics::Precision precision) {
  NormOutputs result{std::vector<float>(rows * hidden), std::vector<float>(rows)};
  std::vector<float> summed(hidden);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t i = 0; i < hidden; ++i)
      summed[i] = numerics::round_to(precision, x[r * hidden + i] + residual[r * hidden + i]);
    result.inv_rms[r] =
        numerics::rmsnorm_row(summed.data(), weight, hidden, order, eps, numerics::Precision::fp32,
                              result.out.data() + r * hidden);
  }
  return result;
}

core::Result<AttentionOutputs> CpuOps::attention(const AttentionInputs& in,
                                                 const std::vector<std::size_t>& bounds) {
  AttentionOutputs result{std::vector<float>(in.query_heads * in.head_dim),
                          std::vector<float>(in.query_heads)};
  const std::size_t group = in.query_heads / in.kv_heads;
  for (std::size_t h = 0; h < in.query_heads; ++h) {
    const std::size_t kv = h / group;
    result.lse[h] = numerics::attention_decode(
        in.q + h * in.head_dim, in.keys + kv * in.length * in.head_dim,
        in.values + kv * in.length * in.head_dim, in.length, in.head_dim, bounds, in.scale,
        numerics::Precision::fp32, result.out.data() + h * in.head_dim);
  }
  return result;
}

core::Result<FlipLogits> CpuOps::flip_logits(const FlipInputs& in, numerics::Precision logits,
                                             bool drift) {
  FlipLogits result{std::vector<float>(2 * in.steps), std::vector<float>(2 * in.steps),
                    std::vector<std::uint8_t>(in.steps), std::vector<std::uint8_t>(in.steps)};
  for (std::size_t step = 0; step < in.steps; ++step) {
    const float* hidden = in.hidden.data() + step * in.k;
    const float* perturbed = drift ? in.drifted.data() + step * in.k : hidden;
    for (std::size_t c = 0; c < 2; ++c) {
      const float* w = in.weights.data() + (2 * step + c) * in.k;
      const float raw_a = numerics::dot_split_k(hidden, w, in.k, 1);
      const float raw_b = numerics::dot_split_k(perturbed, w, in.k, 4);
      const float bias = in.targets[2 * step + c] - raw_a;
      result.logit_a[2 * step + c] = numerics::round_to(logits, raw_a + bias);
      result.logit_b[2 * step + c] = numerics::round_to(logits, raw_b + bias);
    }
    result.argmax_a[step] = result.logit_a[2 * step + 1] > result.logit_a[2 * step] ? 1 : 0;
    result.argmax_b[step] = result.logit_b[2 * step + 1] > result.logit_b[2 * step] ? 1 : 0;
  }
  return result;
}

} // namespace llmrepro::gpu
