// Device == host checks for the reference kernels behind E2, E4, E5 and E6: the same inputs
// and order through DeviceOps and CpuOps must give the same bits. Used by E0 on the device and
// by the GPU tests.
#pragma once

#include <vector>

#include "core/probe_result.hpp"
#include "core/result.hpp"
#include "gpu/detail/cpu_experiments.hpp"
#include "gpu/detail/experiment_ops.hpp"

namespace llmrepro::gpu::cuda {

// One row per (op, order): variant "<op>_device_vs_cpu", params check = "cpu_vs_gpu" and the
// order; changed_frac compares the fp32 bits (0 when device and host agree). Covers split-K
// with 1, 3 and 8 splits under every scheme, RMSNorm with 1024 and 256 lanes and 1 and 4 row
// splits, attention with no split, block splits and a fixed split size, and E6's logits and
// argmax with and without hidden drift.
core::Result<std::vector<core::ProbeRow>> device_vs_host_rows(const ExperimentConfig& config,
                                                              ExperimentOps& device);

} // namespace llmrepro::gpu::cuda
