// The CPU backend: every experiment in the emulation, assembled into one result.
#include "gpu/detail/cpu_experiments.hpp"
#include "gpu/split_policy.hpp"

namespace llmrepro::gpu {

core::ProbeExperiment cost_not_measured() {
  core::ProbeExperiment experiment;
  experiment.id = "E7";
  experiment.title = "Cost of batch invariance (throughput vs cuBLAS)";
  experiment.status = core::ProbeStatus::skipped;
  experiment.notes.push_back("n/a on the CPU backend: throughput ratios are only meaningful on "
                             "the GPU (run with --backend cuda).");
  return experiment;
}

core::ProbeResult run_cpu_backend(const ExperimentConfig& config) {
  core::ProbeResult result;
  result.backend = "cpu";
  result.dtype = numerics::to_string(config.precision);
  result.quick = config.quick;
  result.device.name = "CPU emulation (fp32 accumulation, round-to-nearest-even)";
  result.device.sm_count = k_emulated_sm_count;
  result.experiments.push_back(run_self_test(config));
  result.experiments.push_back(run_matmul_batch_sweep(config));
  result.experiments.push_back(run_forced_split_k(config));
  result.experiments.push_back(run_atomics(config));
  result.experiments.push_back(run_rmsnorm(config));
  result.experiments.push_back(run_attention(config));
  FlipOutcome flip = run_flip(config);
  result.experiments.push_back(std::move(flip.experiment));
  result.recommendation = std::move(flip.recommendation);
  result.experiments.push_back(cost_not_measured());
  return result;
}

} // namespace llmrepro::gpu
