// cuBLASLt GEMMs for the probe: the vendor heuristic as serving stacks call it, with or without
// split-K allowed, and what algorithm it picked. The cuBLAS types stay in lt_gemm.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/float_format.hpp"
#include "core/result.hpp"

namespace llmrepro::gpu::cuda {

// The algorithm configuration the heuristic returned (gpu_probe.md §3.2).
struct LtAlgoInfo {
  int algo_id = -1;
  unsigned tile_id = 0;
  int split_k = 1;
  unsigned reduction_scheme = 0;
  float waves = 0.0f;
};

// One prepared GEMM: D (m x n, row-major) = X (m x k, row-major) * W^T (W: n x k, row-major),
// inputs and output in the dtype, fp32 accumulation (never TF32). Prepared once, run many times.
class LtGemm {
public:
  // Creates the descriptors and asks the heuristic for its first choice. forbid_split_k sets
  // REDUCTION_SCHEME_MASK = NONE (what PyTorch's allow_bf16_reduced_precision_reduction =
  // (False, False) does). workspace: device memory of workspace_bytes shared by all GEMMs.
  static core::Result<std::unique_ptr<LtGemm>> create(core::Precision precision, int m, int n,
                                                      int k, bool forbid_split_k,
                                                      void* workspace, std::size_t workspace_bytes);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  const LtAlgoInfo& algo() const;

  // Runs on the default stream: x, w, d are device arrays in the dtype.
  core::Result<void> run(const void* x, const void* w, void* d);

  struct State;

private:
  explicit LtGemm(std::unique_ptr<State> state);
  std::unique_ptr<State> m_state;
};

// "major.minor.patch" of the loaded cuBLASLt.
std::string lt_version();

} // namespace llmrepro::gpu::cuda
