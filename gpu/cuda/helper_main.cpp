// llmrepro-gpu-cuda: the CUDA backend as its own executable, so that `llmrepro` itself never
// links the CUDA runtime or cuBLAS. The probe runs it and reads the JSON report from stdout.
//   --check-device       print the device name; exit 77 when none is visible
//   --self-test          run E0 on the device; exit 0 pass, 1 fail, 77 no device (CTest `gpu`)
//   [--dtype D] [--quick] run every experiment and print the report (schema llmrepro.gpu-probe.v1)
#include <cstdio>
#include <cstring>
#include <string>

#include "gpu/cuda/cuda_backend.hpp"
#include "gpu/probe_json.hpp"
#include "gpu/probe_runner.hpp"

int main(int argc, char** argv) {
  using namespace llmrepro;
  gpu::ExperimentConfig config;
  bool check_device = false;
  bool self_test = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--check-device") {
      check_device = true;
    } else if (flag == "--self-test") {
      self_test = true;
    } else if (flag == "--quick") {
      config.quick = true;
    } else if (flag == "--dtype" && i + 1 < argc) {
      auto precision = numerics::parse_precision(argv[++i]);
      if (!precision) {
        std::fprintf(stderr, "llmrepro-gpu-cuda: %s\n", precision.error().message.c_str());
        return 2;
      }
      config.precision = *precision;
    } else {
      std::fprintf(stderr, "usage: llmrepro-gpu-cuda [--check-device | --self-test] "
                           "[--dtype bf16|fp16|fp32] [--quick]\n");
      return 2;
    }
  }
  auto name = gpu::cuda::visible_device_name();
  if (!name) {
    std::fprintf(stderr, "llmrepro-gpu-cuda: %s\n", name.error().message.c_str());
    return gpu::k_exit_no_device;
  }
  if (check_device) {
    std::printf("%s\n", name->c_str());
    return 0;
  }
  if (self_test) {
    auto experiment = gpu::cuda::run_device_self_test(config);
    if (!experiment) {
      std::fprintf(stderr, "llmrepro-gpu-cuda: %s\n", experiment.error().message.c_str());
      return 1;
    }
    for (const auto& row : experiment->rows)
      std::printf("%-40s changed_frac %g\n", row.variant.c_str(), row.changed_frac);
    std::printf("self-test %s on %s\n", core::to_string(experiment->status), name->c_str());
    return experiment->status == core::ProbeStatus::ok ? 0 : 1;
  }
  auto result = gpu::cuda::run_cuda_backend(config);
  if (!result) {
    std::fprintf(stderr, "llmrepro-gpu-cuda: %s\n", result.error().message.c_str());
    return 1;
  }
  std::fputs(gpu::probe_result_to_json(*result).c_str(), stdout);
  return 0;
}
