// The cuBLASLt parts of the CUDA backend that need more than one algorithm per shape: forced
// split-K counts appended to E2, and E7's timing of cuBLASLt against the batch-invariant kernel.
#pragma once

#include "core/probe_result.hpp"
#include "core/result.hpp"
#include "gpu/detail/cpu_experiments.hpp"

namespace llmrepro::gpu::cuda {

// Appends to E2 one row per (split 2, 4, 8) x (compute_type, output_type, inplace) forced
// through CUBLASLT_ALGO_CONFIG_SPLITK_NUM / REDUCTION_SCHEME at M = 16, N = K = 4096, each
// compared with the split-K-free algorithm at the same shape; combinations cuBLASLt rejects are
// listed in a note.
core::Result<void> append_lt_forced_split_k(const ExperimentConfig& config,
                                            core::ProbeExperiment& experiment);

// E7: per-launch GEMM time of the default heuristic, split-K forbidden, one pinned algorithm and
// the fixed-order kernel over M, with L2 flushed before every timed launch.
core::Result<core::ProbeExperiment> run_device_cost(const ExperimentConfig& config);

} // namespace llmrepro::gpu::cuda
