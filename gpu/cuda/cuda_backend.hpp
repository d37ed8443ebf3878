// The CUDA backend of the probe: the experiments that have GPU kernels run on the device
// (E0, E1, E3, E7); the others come from the CPU emulation and say so in their notes.
#pragma once

#include "core/probe_result.hpp"
#include "core/result.hpp"
#include "gpu/cpu_experiments.hpp"

namespace llmrepro::gpu::cuda {

// Name of the first visible device, or an environment error when none is visible.
core::Result<std::string> visible_device_name();

// E0 on the device: the reference kernels against the CPU orders and the fixed-order kernel's
// batch invariance. Status failed on any mismatch.
core::Result<core::ProbeExperiment> run_device_self_test(const ExperimentConfig& config);

// Every experiment, device ones on the GPU.
core::Result<core::ProbeResult> run_cuda_backend(const ExperimentConfig& config);

} // namespace llmrepro::gpu::cuda
