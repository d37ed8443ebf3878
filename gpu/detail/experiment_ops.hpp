// The arithmetic of experiments E2, E4, E5 and E6 behind one interface, so that the same
// experiment code (inputs, references, metrics, notes) runs with the CPU emulation (CpuOps,
// here) or with the CUDA reference kernels (gpu/cuda/device_ops.hpp). Both implement the orders
// documented in numerics/reduction_schemes.hpp: for the same order, the same bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "numerics/float_format.hpp"
#include "numerics/reduction_schemes.hpp"
#include "core/result.hpp"

namespace llmrepro::gpu {

// E2: one row x (k values) against `outputs` weight rows (outputs x k, row-major).
struct SplitKOutputs {
  std::vector<float> out;      // combine_partials(scheme, precision)
  std::vector<float> out_fp32; // combine_partials(scheme, fp32): the value before the last rounding
};

// E4: RMSNorm of `rows` rows of round(x + residual) (the fused residual add).
struct NormOutputs {
  std::vector<float> out;     // rows x hidden, fp32 (unrounded products)
  std::vector<float> inv_rms; // one per row
};

// E5: decode attention of every query head of one sequence.
struct AttentionInputs {
  const float* q = nullptr;      // query_heads x head_dim
  const float* keys = nullptr;   // kv_heads x length x head_dim
  const float* values = nullptr; // kv_heads x length x head_dim
  std::size_t query_heads = 0;
  std::size_t kv_heads = 0;
  std::size_t length = 0;
  std::size_t head_dim = 0;
  float scale = 1.0f;
};
struct AttentionOutputs {
  std::vector<float> out; // query_heads x head_dim, fp32
  std::vector<float> lse; // one per query head
};

// E6: `steps` synthetic decode steps, two candidate logits each.
struct FlipInputs {
  std::size_t k = 0;
  std::size_t steps = 0;
  std::vector<float> hidden;  // steps x k
  std::vector<float> drifted; // steps x k: hidden with 1-ULP changes
  std::vector<float> weights; // steps x 2 x k
  std::vector<float> targets; // steps x 2: the wanted logits
};
// Per step and candidate c: raw_a = dot(hidden, w_c) in order A (split 1), raw_b = dot(h, w_c)
// in order B (split 4) with h = drifted or hidden, bias = target - raw_a, logit = round(raw +
// bias); argmax over the two candidates with the first-index tie rule.
struct FlipLogits {
  std::vector<float> logit_a;         // steps x 2
  std::vector<float> logit_b;         // steps x 2
  std::vector<std::uint8_t> argmax_a; // steps
  std::vector<std::uint8_t> argmax_b; // steps
};

class ExperimentOps {
public:
  virtual ~ExperimentOps() = default;

  // "cpu" or "cuda": named in the experiments' notes.
  virtual std::string name() const = 0;

  // SMs the split-KV heuristic assumes: the emulated H200's on the CPU, the device's on a GPU.
  virtual int sm_count() const = 0;

  virtual core::Result<SplitKOutputs> split_k(const float* x, const float* weights,
                                              std::size_t outputs, std::size_t k, int splits,
                                              numerics::PartialScheme scheme,
                                              numerics::Precision precision) = 0;

  virtual core::Result<NormOutputs> rmsnorm(const float* x, const float* residual,
                                            const float* weight, std::size_t rows,
                                            std::size_t hidden, numerics::RowReduction order,
                                            float eps, numerics::Precision precision) = 0;

  // bounds as numerics::attention_decode takes them.
  virtual core::Result<AttentionOutputs> attention(const AttentionInputs& inputs,
                                                   const std::vector<std::size_t>& bounds) = 0;

  virtual core::Result<FlipLogits> flip_logits(const FlipInputs& inputs, numerics::Precision logits,
                                               bool drift) = 0;
};

// The CPU emulation: numerics::dot_chunk_partials / combine_partials, numerics::rmsnorm_row,
// numerics::attention_decode and numerics::dot_split_k. Never fails.
class CpuOps final : public ExperimentOps {
public:
  std::string name() const override;
  int sm_count() const override;
  core::Result<SplitKOutputs> split_k(const float* x, const float* weights, std::size_t outputs,
                                      std::size_t k, int splits, numerics::PartialScheme scheme,
                                      numerics::Precision precision) override;
  core::Result<NormOutputs> rmsnorm(const float* x, const float* residual, const float* weight,
                                    std::size_t rows, std::size_t hidden,
                                    numerics::RowReduction order, float eps,
                                    numerics::Precision precision) override;
  core::Result<AttentionOutputs> attention(const AttentionInputs& inputs,
                                           const std::vector<std::size_t>& bounds) override;
  core::Result<FlipLogits> flip_logits(const FlipInputs& inputs, numerics::Precision logits,
                                       bool drift) override;
};

} // namespace llmrepro::gpu
