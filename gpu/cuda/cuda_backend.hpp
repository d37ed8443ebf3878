// The CUDA backend of the probe: every experiment runs on the device. E0, E1, E3 and E7 here and
// in lt_experiments.cpp; E2, E4, E5 and E6 through the shared experiment code with DeviceOps
// (device_ops.hpp), whose kernels add in the CPU emulation's orders.
#pragma once

#include "core/probe_result.hpp"
#include "core/result.hpp"
#include "gpu/detail/cpu_experiments.hpp"

namespace llmrepro::gpu::cuda {

// Name of the first visible device, or an environment error when none is visible.
core::Result<std::string> visible_device_name();

// E0 on the device: every reference kernel against its CPU order (device_checks.hpp) and the
// fixed-order kernel's batch invariance and repeatability. Status failed on any mismatch.
core::Result<core::ProbeExperiment> run_device_self_test(const ExperimentConfig& config);

// Every experiment, device ones on the GPU.
core::Result<core::ProbeResult> run_cuda_backend(const ExperimentConfig& config);

} // namespace llmrepro::gpu::cuda
