// cuBLASLt GEMMs for the probe: the vendor heuristic as serving stacks call it, split-K
// forbidden, a forced split-K count and reduction scheme, or one algorithm pinned for every M;
// and what algorithm each one runs. The cuBLAS types stay in lt_gemm.cpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "numerics/float_format.hpp"
#include "core/result.hpp"

namespace llmrepro::gpu::cuda {

// The algorithm configuration a GEMM runs (docs/gpu-probe.md §3.2). `opaque` is the
// cublasLtMatmulAlgo_t itself, so that one algorithm can be pinned for other shapes.
struct LtAlgoInfo {
  int algo_id = -1;
  unsigned tile_id = 0;
  int split_k = 1;
  unsigned reduction_scheme = 0;
  float waves = 0.0f;
  std::size_t workspace_bytes = 0; // what the algorithm needs
  std::array<std::uint64_t, 8> opaque{};
};

// How the algorithm is chosen.
enum class LtPolicy {
  heuristic,      // the heuristic's first choice, every reduction scheme allowed
  no_split_k,     // REDUCTION_SCHEME_MASK = NONE, and the first result with SPLITK_NUM = 1
  forced_split_k, // the first heuristic result that accepts SPLITK_NUM = split_k with the scheme
  pinned,         // the given algorithm, validated for this shape with cublasLtMatmulAlgoCheck
};

// Reduction schemes as cublasLtReductionScheme_t numbers them.
inline constexpr unsigned k_lt_scheme_inplace = 1;
inline constexpr unsigned k_lt_scheme_compute_type = 2;
inline constexpr unsigned k_lt_scheme_output_type = 4;

// "inplace", "compute_type", "output_type" or "none".
const char* lt_scheme_name(unsigned scheme);

struct LtRequest {
  LtPolicy policy = LtPolicy::heuristic;
  int split_k = 1;                    // forced_split_k only
  unsigned scheme = 0;                // forced_split_k only: one of the k_lt_scheme_* values
  const LtAlgoInfo* pinned = nullptr; // pinned only
};

// One prepared GEMM: D (m x n, row-major) = X (m x k, row-major) * W^T (W: n x k, row-major),
// inputs and output in the dtype, fp32 accumulation (never TF32). Prepared once, run many times.
class LtGemm {
public:
  // Creates the descriptors and picks the algorithm as `request` says. workspace: device memory
  // of workspace_bytes shared by all GEMMs (also the heuristic's limit). An algorithm that
  // cuBLASLt rejects for the shape is an environment error naming the policy.
  static core::Result<std::unique_ptr<LtGemm>> create(numerics::Precision precision, int m, int n,
                                                      int k, const LtRequest& request,
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
