// ExperimentOps on the GPU: E2, E4, E5 and E6 computed by the reference kernels of
// probe_kernels.cu, in the same orders as CpuOps, so that the shared experiment code runs on
// the device and a test can demand device == host bit for bit.
#pragma once

#include "gpu/detail/experiment_ops.hpp"

namespace llmrepro::gpu::cuda {

class DeviceOps final : public ExperimentOps {
public:
  // sm_count: the device's, used by the split-KV heuristic.
  explicit DeviceOps(int sm_count);
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

private:
  int m_sm_count;
};

} // namespace llmrepro::gpu::cuda
