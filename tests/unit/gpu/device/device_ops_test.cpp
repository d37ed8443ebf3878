// GPU tests for the device experiments (CTest label gpu): without doctest, because the GPU
// machine has none. Exit 0 when every check passes, 1 on a failure, 77 (skipped) when no CUDA
// device is visible.
//  1. device == host bit for bit for fixed orders: split-K partials and every combine scheme,
//     RMSNorm block reductions, split-KV attention, E6's logits and argmax (bf16 and fp16);
//  2. E2, E4, E5 and E6 run through DeviceOps give exactly the CPU emulation's rows.
#include <cstdio>
#include <string>

#include "gpu/detail/cpu_experiments.hpp"
#include "gpu/cuda/cuda_backend.hpp"
#include "gpu/cuda/device_checks.hpp"
#include "gpu/cuda/device_ops.hpp"
#include "gpu/probe_runner.hpp"
#include "gpu/split_policy.hpp"

namespace {

using namespace llmrepro;

int g_failures = 0;

void check(bool passed, const std::string& what) {
  std::printf("%s %s\n", passed ? "ok  " : "FAIL", what.c_str());
  if (!passed) ++g_failures;
}

bool same_row(const core::ProbeRow& a, const core::ProbeRow& b) {
  if (a.variant != b.variant || a.elements != b.elements || a.changed_frac != b.changed_frac ||
      a.max_abs != b.max_abs || a.max_ulp != b.max_ulp || a.ulp_histogram != b.ulp_histogram ||
      a.fp32_changed_frac != b.fp32_changed_frac || a.measures.size() != b.measures.size())
    return false;
  for (std::size_t i = 0; i < a.measures.size(); ++i)
    if (a.measures[i].name != b.measures[i].name || a.measures[i].value != b.measures[i].value)
      return false;
  return true;
}

void same_experiment(const core::Result<core::ProbeExperiment>& device,
                     const core::ProbeExperiment& host) {
  if (!device) {
    check(false, host.id + " on the device: " + device.error().message);
    return;
  }
  bool rows_match = device->rows.size() == host.rows.size();
  std::size_t first_difference = 0;
  for (std::size_t i = 0; rows_match && i < host.rows.size(); ++i)
    if (!same_row(device->rows[i], host.rows[i])) {
      rows_match = false;
      first_difference = i;
    }
  check(rows_match,
        host.id + ": device rows equal the CPU emulation's (" + std::to_string(host.rows.size()) +
            " rows" +
            (rows_match ? "" : ", first difference at row " + std::to_string(first_difference)) +
            ")");
}

} // namespace

int main() {
  auto name = gpu::cuda::visible_device_name();
  if (!name) {
    std::printf("skipped: %s\n", name.error().message.c_str());
    return gpu::k_exit_no_device;
  }
  std::printf("device: %s\n", name->c_str());
  // The CPU emulation's SM count, so that E5's heuristic picks the same splits on both sides.
  gpu::cuda::DeviceOps device(gpu::k_emulated_sm_count);

  for (const numerics::Precision precision :
       {numerics::Precision::bf16, numerics::Precision::fp16}) {
    gpu::ExperimentConfig config;
    config.precision = precision;
    config.quick = true;
    auto rows = gpu::cuda::device_vs_host_rows(config, device);
    if (!rows) {
      check(false, std::string("device_vs_host_rows: ") + rows.error().message);
      continue;
    }
    for (const auto& row : *rows) {
      std::string what = row.variant + " [" + numerics::to_string(precision) + "]";
      for (const auto& p : row.params)
        if (const auto* text = std::get_if<std::string>(&p.value))
          what += " " + p.name + "=" + *text;
        else if (const auto* number = std::get_if<std::int64_t>(&p.value))
          what += " " + p.name + "=" + std::to_string(*number);
      check(row.elements > 0 && row.changed_frac == 0.0, what);
    }
  }

  gpu::ExperimentConfig config;
  config.quick = true;
  gpu::CpuOps host;
  same_experiment(gpu::run_forced_split_k(config, device), gpu::run_forced_split_k(config));
  same_experiment(gpu::run_rmsnorm(config, device), gpu::run_rmsnorm(config));
  same_experiment(gpu::run_attention(config, device), gpu::run_attention(config));
  auto device_flip = gpu::run_flip(config, device);
  const auto host_flip = gpu::run_flip(config);
  if (device_flip) {
    same_experiment(device_flip->experiment, host_flip.experiment);
    check(device_flip->recommendation.text == host_flip.recommendation.text,
          "E6: same recommendation (" + host_flip.recommendation.text + ")");
  } else {
    check(false, "E6 on the device: " + device_flip.error().message);
  }

  std::printf("%d failure(s)\n", g_failures);
  return g_failures == 0 ? 0 : 1;
}
