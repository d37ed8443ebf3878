// The probe's experiments E0-E7 (docs/gpu-probe.md §7.3) on the CPU: every reduction order emulated
// in fp32 with bf16/fp16 rounding, policies choosing the order from the batch shape the way GPU
// libraries do. The CUDA helper runs E2, E4, E5 and E6 through the same code with its device ops.
#pragma once

#include <cstdint>
#include <vector>

#include "numerics/float_format.hpp"
#include "core/probe_result.hpp"
#include "core/result.hpp"
#include "gpu/detail/experiment_ops.hpp"

namespace llmrepro::gpu {

struct ExperimentConfig {
  numerics::Precision precision = numerics::Precision::bf16;
  bool quick = false;         // smaller sweeps: the CPU run stays within seconds
  std::uint64_t seed = 20260; // every input derives from it
};

// Inputs drawn uniformly from [-scale, scale) and rounded to `precision` (so products of two
// bf16/fp16 inputs are exact in fp32). The same (n, seed) gives the same values everywhere.
std::vector<float> random_values(std::size_t n, std::uint64_t seed, numerics::Precision precision,
                                 float scale = 1.0f);

// E0: rounding test vectors, partial sums vs numerics::dot_split_k, run-to-run digests.
core::ProbeExperiment run_self_test(const ExperimentConfig& config);
// E1: the anchor row's matmul output for batch sizes M vs M = 1, heuristic split-K vs fixed order.
core::ProbeExperiment run_matmul_batch_sweep(const ExperimentConfig& config);
// E2: forced split-K counts and reduction schemes vs the sequential order, computed by `ops`
// (the overload without ops uses the CPU emulation).
core::Result<core::ProbeExperiment> run_forced_split_k(const ExperimentConfig& config,
                                                       ExperimentOps& ops);
core::ProbeExperiment run_forced_split_k(const ExperimentConfig& config);
// E3: atomics (a random arrival order per run) vs serial and two-pass combines, over repeats.
core::ProbeExperiment run_atomics(const ExperimentConfig& config);
// E4: RMSNorm (with the fused residual add) under adaptive, split-row and fixed reductions.
core::Result<core::ProbeExperiment> run_rmsnorm(const ExperimentConfig& config, ExperimentOps& ops);
core::ProbeExperiment run_rmsnorm(const ExperimentConfig& config);
// E5: decode attention with FA2-style, fixed-size and no split-KV policies over batch sizes.
core::Result<core::ProbeExperiment> run_attention(const ExperimentConfig& config,
                                                  ExperimentOps& ops);
core::ProbeExperiment run_attention(const ExperimentConfig& config);

// E6's outcome: the experiment and the recommendation derived from it.
struct FlipOutcome {
  core::ProbeExperiment experiment;
  core::FlipRecommendation recommendation;
};
// E6: argmax flips of synthetic logits with a controlled top-1/top-2 gap.
core::Result<FlipOutcome> run_flip(const ExperimentConfig& config, ExperimentOps& ops);
FlipOutcome run_flip(const ExperimentConfig& config);

// E7 on the CPU: reported as skipped (throughput is only meaningful on the GPU).
core::ProbeExperiment cost_not_measured();

// All experiments on the CPU backend, in order, with the device block filled in.
core::ProbeResult run_cpu_backend(const ExperimentConfig& config);

} // namespace llmrepro::gpu
