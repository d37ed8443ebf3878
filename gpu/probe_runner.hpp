// Entry point of the probe: picks the backend (the CUDA helper executable when it exists and
// sees a device, else the CPU emulation), runs it and returns the result. The CUDA runtime and
// cuBLAS live only in the helper, so callers of this header never link them.
#pragma once

#include <string>

#include "numerics/float_format.hpp"
#include "core/probe_result.hpp"
#include "core/result.hpp"

namespace llmrepro::gpu {

enum class Backend { automatic, cuda, cpu };

// "auto", "cuda" or "cpu"; anything else is a usage error.
core::Result<Backend> parse_backend(const std::string& text);

// File name of the CUDA helper, installed beside the executable that runs the probe.
inline constexpr const char* k_cuda_helper_name = "llmrepro-gpu-cuda";

// Exit status of the helper (and of GPU tests) when no CUDA device is visible.
inline constexpr int k_exit_no_device = 77;

struct ProbeOptions {
  Backend backend = Backend::automatic;
  numerics::Precision precision = numerics::Precision::bf16;
  bool quick = false;
  std::string cuda_helper; // path of the helper; empty when this build has none
};

// Path of the helper beside the running executable (via /proc/self/exe), or "" when no such
// file is executable.
std::string find_cuda_helper();

// Runs the probe. `backend_reason` in the result says why the backend was chosen. Errors:
// environment (cuda requested but no helper or no device), internal (the helper crashed or
// wrote an unreadable report).
core::Result<core::ProbeResult> run_probe(const ProbeOptions& options);

} // namespace llmrepro::gpu
