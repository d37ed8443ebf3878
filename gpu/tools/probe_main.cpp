// llmrepro-gpu-probe: the probe-only driver. Builds from the repository with CMake and a C++
// compiler alone (no CLI or JSON library), so a GPU machine without our packages can run the
// probe. `llmrepro gpu-probe` is the full command; this driver takes the same core flags.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "gpu/probe_json.hpp"
#include "gpu/probe_runner.hpp"
#include "gpu/probe_summary.hpp"

namespace {

int usage() {
  std::fprintf(stderr, "usage: llmrepro-gpu-probe [--backend auto|cuda|cpu] "
                       "[--dtype bf16|fp16|fp32] [--quick] [--json FILE]\n");
  return 2;
}

} // namespace

int main(int argc, char** argv) {
  using namespace llmrepro;
  gpu::ProbeOptions options;
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const bool has_value = i + 1 < argc;
    if (flag == "--quick") {
      options.quick = true;
    } else if (flag == "--backend" && has_value) {
      auto backend = gpu::parse_backend(argv[++i]);
      if (!backend) return std::fprintf(stderr, "%s\n", backend.error().message.c_str()), 2;
      options.backend = *backend;
    } else if (flag == "--dtype" && has_value) {
      auto precision = numerics::parse_precision(argv[++i]);
      if (!precision) return std::fprintf(stderr, "%s\n", precision.error().message.c_str()), 2;
      options.precision = *precision;
    } else if (flag == "--json" && has_value) {
      json_path = argv[++i];
    } else {
      return usage();
    }
  }
  options.cuda_helper = gpu::find_cuda_helper();
  auto result = gpu::run_probe(options);
  if (!result) {
    std::fprintf(stderr, "llmrepro-gpu-probe: error: %s\n", result.error().message.c_str());
    return result.error().code == core::ErrorCode::internal ? 70 : 3;
  }
  if (!json_path.empty()) {
    std::ofstream file(json_path, std::ios::binary);
    file << gpu::probe_result_to_json(*result);
    if (!file) {
      std::fprintf(stderr, "llmrepro-gpu-probe: error: cannot write %s\n", json_path.c_str());
      return 3;
    }
  }
  std::fputs(gpu::probe_summary_text(*result).c_str(), stdout);
  return gpu::self_test_passed(*result) ? 0 : 1;
}
