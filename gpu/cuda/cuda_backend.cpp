// The device side of the probe. Inputs are made on the host by the same generator as the CPU
// emulation and copied, so the CPU and GPU see bit-identical data; the probe's own kernels take
// fp32 arrays of dtype-exact values, cuBLASLt takes the dtype itself.
#include "gpu/cuda/cuda_backend.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "numerics/reduction.hpp"
#include "gpu/cuda/lt_experiments.hpp"
#include "gpu/cuda/device_checks.hpp"
#include "gpu/cuda/detail/device_memory.hpp"
#include "gpu/cuda/device_ops.hpp"
#include "gpu/cuda/kernels.hpp"
#include "gpu/cuda/lt_gemm.hpp"
#include "gpu/cuda/typed_data.hpp"
#include "gpu/drift_metrics.hpp"

namespace llmrepro::gpu::cuda {

namespace {

using core::ProbeParam;
using core::ProbeValue;

using core::param;

std::string version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

// The anchor row's outputs at one batch size M for one variant, fp32 (before rounding) where
// the kernel exposes it.
struct AnchorOutputs {
  std::vector<float> first;      // anchor at row 0, rounded to the dtype
  std::vector<float> last;       // anchor at row M-1
  std::vector<float> first_fp32; // empty for cuBLASLt (it rounds inside)
  std::vector<float> last_fp32;
  LtAlgoInfo algo;
};

} // namespace

core::Result<std::string> visible_device_name() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0)
    return core::make_error(core::ErrorCode::environment,
                            status != cudaSuccess
                                ? std::string("no CUDA device: ") + cudaGetErrorString(status)
                                : std::string("no CUDA device is visible"));
  cudaDeviceProp properties{};
  cudaGetDeviceProperties(&properties, 0);
  return std::string(properties.name);
}

core::Result<core::ProbeExperiment> run_device_self_test(const ExperimentConfig& config) {
  core::ProbeExperiment experiment = run_self_test(config);
  experiment.title = "Self-test: rounding, CPU vs GPU reference kernels, batch invariance";
  const int n = 256;
  for (const int k : {4096, 1000}) {
    const int m = 4;
    const auto x =
        random_values(static_cast<std::size_t>(m * k), config.seed + 3, config.precision);
    const auto w =
        random_values(static_cast<std::size_t>(n * k), config.seed + 4, config.precision);
    DeviceBuffer x_device(x.size() * 4);
    DeviceBuffer w_device(w.size() * 4);
    DeviceBuffer out_device(static_cast<std::size_t>(m * n) * 4);
    if (!x_device || !w_device || !out_device)
      return core::make_error(core::ErrorCode::environment, "cudaMalloc failed");
    LLMREPRO_TRY(upload(x_device.get(), x.data(), x.size() * 4));
    LLMREPRO_TRY(upload(w_device.get(), w.data(), w.size() * 4));
    for (const int splits : {1, 2, 3, 8}) {
      const bool fixed = splits == 1;
      const int status = fixed ? launch_fixed_order_gemm(x_device.floats(), w_device.floats(),
                                                         out_device.floats(), m, n, k)
                               : launch_split_k_gemm(x_device.floats(), w_device.floats(),
                                                     out_device.floats(), m, n, k, splits);
      if (status != 0) return cuda_error("reference kernel", status);
      auto gpu_out = download_floats(out_device.floats(), static_cast<std::size_t>(m * n));
      if (!gpu_out) return gpu_out.error();
      std::vector<float> cpu_out(static_cast<std::size_t>(m * n));
      for (int r = 0; r < m; ++r)
        for (int j = 0; j < n; ++j)
          cpu_out[static_cast<std::size_t>(r * n + j)] = numerics::dot_split_k(
              x.data() + r * k, w.data() + j * k, static_cast<std::size_t>(k), splits);
      experiment.rows.push_back(compare_outputs(
          fixed ? "fixed_order_kernel_vs_cpu" : "split_k_kernel_vs_cpu",
          {param("check", "cpu_vs_gpu"), param("K", k), param("split", splits)}, cpu_out.data(),
          gpu_out->data(), cpu_out.size(), numerics::Precision::fp32));
    }
  }
  // The fixed-order kernel: the anchor row's bits may not depend on M.
  const int k = 4096;
  const auto anchor = random_values(static_cast<std::size_t>(k), config.seed + 5, config.precision);
  const auto w = random_values(static_cast<std::size_t>(n * k), config.seed + 6, config.precision);
  DeviceBuffer w_device(w.size() * 4);
  if (!w_device) return core::make_error(core::ErrorCode::environment, "cudaMalloc failed");
  LLMREPRO_TRY(upload(w_device.get(), w.data(), w.size() * 4));
  std::vector<float> reference;
  std::vector<std::string> digests;
  for (const int m : {1, 2, 17, 128, 257}) {
    auto x = random_values(static_cast<std::size_t>(m * k),
                           config.seed + 7 + static_cast<unsigned>(m), config.precision);
    std::copy(anchor.begin(), anchor.end(), x.begin());
    DeviceBuffer x_device(x.size() * 4);
    DeviceBuffer out_device(static_cast<std::size_t>(m * n) * 4);
    if (!x_device || !out_device)
      return core::make_error(core::ErrorCode::environment, "cudaMalloc failed");
    LLMREPRO_TRY(upload(x_device.get(), x.data(), x.size() * 4));
    const int repeats = m == 1 ? 20 : 1;
    std::vector<float> row;
    for (int repeat = 0; repeat < repeats; ++repeat) {
      const int status = launch_fixed_order_gemm(x_device.floats(), w_device.floats(),
                                                 out_device.floats(), m, n, k);
      if (status != 0) return cuda_error("fixed-order kernel", status);
      LLMREPRO_TRY_ASSIGN(row, download_floats(out_device.floats(), static_cast<std::size_t>(n)));
      if (m == 1) digests.push_back(output_digest(row.data(), row.size()));
    }
    if (reference.empty()) reference = row;
    experiment.rows.push_back(compare_outputs(
        "fixed_order_kernel_batch_invariance", {param("check", "batch_invariance"), param("M", m)},
        reference.data(), row.data(), row.size(), numerics::Precision::fp32));
  }
  auto repeat_row =
      compare_outputs("fixed_order_kernel_repeats", {param("check", "repeats")}, reference.data(),
                      reference.data(), reference.size(), numerics::Precision::fp32);
  add_measure(repeat_row, "runs", 20);
  add_measure(repeat_row, "distinct_digests", static_cast<double>(distinct_count(digests)));
  repeat_row.sha256 = digests.front();
  experiment.rows.push_back(repeat_row);

  // The kernels behind E2, E4, E5 and E6 against the CPU orders.
  int sm_count = 0;
  cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, 0);
  DeviceOps device(sm_count);
  auto checks = device_vs_host_rows(config, device);
  if (!checks) return checks.error();
  for (auto& row : *checks) experiment.rows.push_back(std::move(row));

  bool passed = true;
  for (const auto& row : experiment.rows) {
    if (row.changed_frac != 0.0) passed = false;
    for (const auto& measure : row.measures)
      if (measure.name == "distinct_digests" && measure.value != 1.0) passed = false;
  }
  experiment.status = passed ? core::ProbeStatus::ok : core::ProbeStatus::failed;
  experiment.notes.clear();
  experiment.notes.push_back(passed ? "CPU orders and GPU reference kernels agree bit for bit; the "
                                      "fixed-order kernel is batch-invariant and repeatable."
                                    : "A self-test check failed: CPU and GPU disagree for the same "
                                      "order (contraction, FTZ or an order bug).");
  return experiment;
}

namespace {

core::Result<core::ProbeExperiment> run_device_batch_sweep(const ExperimentConfig& config) {
  core::ProbeExperiment experiment;
  experiment.id = "E1";
  experiment.title = "Matmul: the anchor row alone (M = 1) vs inside a batch of M rows";
  experiment.held = {param("workspace_bytes", static_cast<std::int64_t>(k_workspace_bytes)),
                     param("anchor_positions", "first, last"),
                     {"dtype", ProbeValue{std::string(numerics::to_string(config.precision))}}};
  experiment.varied = {"shape", "M", "variant", "position"};
  struct Shape {
    const char* name;
    int k;
    int n;
  };
  std::vector<Shape> shapes = {{"qkv_o", 4096, 4096}};
  if (!config.quick) {
    shapes.push_back({"gate_up", 4096, 14336});
    shapes.push_back({"down", 14336, 4096});
  }
  const std::vector<int> batch_sizes =
      config.quick
          ? std::vector<int>{1, 2, 16, 128, 129, 256, 257, 1024}
          : std::vector<int>{1, 2, 3, 4, 8, 16, 17, 32, 33, 64, 128, 256, 257, 512, 1024, 2048};
  DeviceBuffer workspace(k_workspace_bytes);
  if (!workspace) return core::make_error(core::ErrorCode::environment, "cudaMalloc failed");
  const numerics::Precision precision = config.precision;
  const std::size_t bytes = element_bytes(precision);
  int lt_default_differs = 0;
  int cases = 0;
  std::vector<std::string> pinned_rejected;
  for (std::size_t s = 0; s < shapes.size(); ++s) {
    const Shape& shape = shapes[s];
    const auto nk = static_cast<std::size_t>(shape.n) * static_cast<std::size_t>(shape.k);
    const auto w = random_values(nk, config.seed + 20 + s, precision);
    const auto anchor =
        random_values(static_cast<std::size_t>(shape.k), config.seed + 10 + s, precision);
    DeviceBuffer w_float(nk * 4);
    DeviceBuffer w_typed(nk * bytes);
    if (!w_float || !w_typed)
      return core::make_error(core::ErrorCode::environment, "cudaMalloc failed");
    LLMREPRO_TRY(upload(w_float.get(), w.data(), nk * 4));
    const auto w_encoded = encode(precision, w);
    LLMREPRO_TRY(upload(w_typed.get(), w_encoded.data(), w_encoded.size()));
    const char* variants[] = {"lt_default", "lt_no_split_k", "lt_pinned", "fixed_order_kernel"};
    constexpr int k_lt_variants = 3;
    std::vector<AnchorOutputs> references(4);
    // lt_pinned: the split-K-free algorithm the heuristic picks at the largest M, reused for
    // every M (what a server that freezes its GEMM configuration would do).
    auto pin_source = LtGemm::create(precision, batch_sizes.back(), shape.n, shape.k,
                                     LtRequest{LtPolicy::no_split_k, 1, 0, nullptr},
                                     workspace.get(), k_workspace_bytes);
    if (!pin_source) return pin_source.error();
    const LtAlgoInfo pinned = (*pin_source)->algo();
    for (const int m : batch_sizes) {
      const std::size_t rows = static_cast<std::size_t>(m);
      auto x = random_values(rows * static_cast<std::size_t>(shape.k),
                             config.seed + 1000 + static_cast<std::uint64_t>(m), precision);
      std::copy(anchor.begin(), anchor.end(), x.begin());
      std::copy(anchor.begin(), anchor.end(), x.end() - shape.k);
      // Separate allocations per M, as a server's buffers would be (cudaMalloc aligns to 256 B).
      DeviceBuffer x_float(x.size() * 4);
      DeviceBuffer x_typed(x.size() * bytes);
      DeviceBuffer d_float(rows * static_cast<std::size_t>(shape.n) * 4);
      DeviceBuffer d_typed(rows * static_cast<std::size_t>(shape.n) * bytes);
      if (!x_float || !x_typed || !d_float || !d_typed)
        return core::make_error(core::ErrorCode::environment, "cudaMalloc failed");
      LLMREPRO_TRY(upload(x_float.get(), x.data(), x.size() * 4));
      const auto x_encoded = encode(precision, x);
      LLMREPRO_TRY(upload(x_typed.get(), x_encoded.data(), x_encoded.size()));
      const std::size_t row_bytes = static_cast<std::size_t>(shape.n) * bytes;
      const std::size_t last_offset = (rows - 1) * static_cast<std::size_t>(shape.n);
      for (int v = 0; v < 4; ++v) {
        AnchorOutputs out;
        if (v < k_lt_variants) {
          const LtRequest request{v == 0   ? LtPolicy::heuristic
                                  : v == 1 ? LtPolicy::no_split_k
                                           : LtPolicy::pinned,
                                  1, 0, &pinned};
          auto gemm = LtGemm::create(precision, m, shape.n, shape.k, request, workspace.get(),
                                     k_workspace_bytes);
          if (!gemm && v == 2) {
            // An algorithm chosen for one M may not run at another: that is a finding, not a
            // failure of the probe.
            pinned_rejected.push_back(std::string(shape.name) + " M=" + std::to_string(m));
            continue;
          }
          if (!gemm) return gemm.error();
          LLMREPRO_TRY((*gemm)->run(x_typed.get(), w_typed.get(), d_typed.get()));
          out.algo = (*gemm)->algo();
          const auto* base = static_cast<const unsigned char*>(d_typed.get());
          auto first = download(base, row_bytes);
          auto last = download(base + last_offset * bytes, row_bytes);
          if (!first || !last) return core::make_error(core::ErrorCode::environment, "copy failed");
          out.first = decode(precision, first->data(), static_cast<std::size_t>(shape.n));
          out.last = decode(precision, last->data(), static_cast<std::size_t>(shape.n));
        } else {
          const int status = launch_fixed_order_gemm(x_float.floats(), w_float.floats(),
                                                     d_float.floats(), m, shape.n, shape.k);
          if (status != 0) return cuda_error("fixed-order kernel", status);
          auto first = download_floats(d_float.floats(), static_cast<std::size_t>(shape.n));
          auto last =
              download_floats(d_float.floats() + last_offset, static_cast<std::size_t>(shape.n));
          if (!first || !last) return core::make_error(core::ErrorCode::environment, "copy failed");
          out.first_fp32 = *first;
          out.last_fp32 = *last;
          out.first = numerics::round_each_to(precision, out.first_fp32);
          out.last = numerics::round_each_to(precision, out.last_fp32);
        }
        if (m == 1) references[static_cast<std::size_t>(v)] = out;
        const AnchorOutputs& reference = references[static_cast<std::size_t>(v)];
        if (reference.first.empty()) continue; // no M = 1 run to compare with
        for (const bool last_position : {false, true}) {
          const auto& test = last_position ? out.last : out.first;
          const auto& test_fp32 = last_position ? out.last_fp32 : out.first_fp32;
          const bool fp32 = !test_fp32.empty();
          auto row = compare_outputs(
              variants[v],
              {param("shape", shape.name), param("K", shape.k), param("N", shape.n), param("M", m),
               param("position", last_position ? "last" : "first")},
              reference.first.data(), test.data(), test.size(), precision,
              fp32 ? reference.first_fp32.data() : nullptr, fp32 ? test_fp32.data() : nullptr);
          if (v < k_lt_variants) {
            add_measure(row, "split_k", out.algo.split_k);
            add_measure(row, "algo_id", out.algo.algo_id);
            add_measure(row, "tile_id", out.algo.tile_id);
            add_measure(row, "reduction_scheme", out.algo.reduction_scheme);
            add_measure(row, "waves", static_cast<double>(out.algo.waves));
          }
          if (v == 0 && m != 1 && !last_position) {
            ++cases;
            if (row.changed_frac > 0.0) ++lt_default_differs;
          }
          experiment.rows.push_back(std::move(row));
        }
      }
    }
  }
  experiment.notes.push_back(std::to_string(lt_default_differs) + " of " + std::to_string(cases) +
                             " (shape, M) cases of the default cuBLASLt heuristic differ from "
                             "M = 1 at the first row position.");
  if (!pinned_rejected.empty()) {
    std::string note = "cuBLASLt rejected the pinned algorithm at:";
    for (std::size_t i = 0; i < pinned_rejected.size(); ++i)
      note += (i == 0 ? " " : ", ") + pinned_rejected[i];
    experiment.notes.push_back(note + ".");
  }
  experiment.notes.push_back(
      "lt_no_split_k forbids split-K (REDUCTION_SCHEME_MASK = NONE, and results with "
      "SPLITK_NUM > 1 skipped); any change it still shows comes from tile or instruction choice "
      "moving with M. lt_pinned runs one algorithm (the no-split choice at the largest M) for "
      "every M. fixed_order_kernel is the probe's "
      "own SIMT kernel (sequential K order, --fmad=false): it must show 0 everywhere.");
  return experiment;
}

core::Result<core::ProbeExperiment> run_device_atomics(const ExperimentConfig& config) {
  core::ProbeExperiment experiment;
  experiment.id = "E3";
  experiment.title = "Atomics: split-K partials combined with atomicAdd, run to run";
  const int n = 512;
  const int k = 4096;
  const int splits = 8;
  const int runs = config.quick ? 20 : 100;
  experiment.held = {param("outputs", n),
                     param("K", k),
                     param("split", splits),
                     param("runs", runs),
                     {"dtype", ProbeValue{std::string(numerics::to_string(config.precision))}}};
  experiment.varied = {"variant"};
  const auto x = random_values(static_cast<std::size_t>(k), config.seed + 50, config.precision);
  const auto w = random_values(static_cast<std::size_t>(n * k), config.seed + 51, config.precision);
  DeviceBuffer x_device(x.size() * 4);
  DeviceBuffer w_device(w.size() * 4);
  DeviceBuffer out_device(static_cast<std::size_t>(n) * 4);
  if (!x_device || !w_device || !out_device)
    return core::make_error(core::ErrorCode::environment, "cudaMalloc failed");
  LLMREPRO_TRY(upload(x_device.get(), x.data(), x.size() * 4));
  LLMREPRO_TRY(upload(w_device.get(), w.data(), w.size() * 4));
  std::vector<float> serial_fp32;
  for (const char* variant : {"serial_split_k", "atomic_fp32"}) {
    const bool atomic = std::string(variant) == "atomic_fp32";
    std::vector<std::string> digests;
    std::vector<std::string> digests_fp32;
    core::ProbeRow worst;
    bool have_worst = false;
    for (int run = 0; run < runs; ++run) {
      const int status = atomic ? launch_atomic_split_k(x_device.floats(), w_device.floats(),
                                                        out_device.floats(), n, k, splits)
                                : launch_split_k_gemm(x_device.floats(), w_device.floats(),
                                                      out_device.floats(), 1, n, k, splits);
      if (status != 0) return cuda_error("split-K kernel", status);
      auto out_fp32 = download_floats(out_device.floats(), static_cast<std::size_t>(n));
      if (!out_fp32) return out_fp32.error();
      if (serial_fp32.empty()) serial_fp32 = *out_fp32;
      const auto out = numerics::round_each_to(config.precision, *out_fp32);
      const auto serial = numerics::round_each_to(config.precision, serial_fp32);
      digests.push_back(output_digest(out.data(), out.size()));
      digests_fp32.push_back(output_digest(out_fp32->data(), out_fp32->size()));
      auto row = compare_outputs(variant, {}, serial.data(), out.data(), out.size(),
                                 config.precision, serial_fp32.data(), out_fp32->data());
      if (!have_worst || row.changed_frac > worst.changed_frac ||
          (row.changed_frac == worst.changed_frac && row.max_abs > worst.max_abs)) {
        worst = row;
        have_worst = true;
      }
    }
    add_measure(worst, "runs", runs);
    add_measure(worst, "distinct_digests", static_cast<double>(distinct_count(digests)));
    add_measure(worst, "distinct_digests_fp32", static_cast<double>(distinct_count(digests_fp32)));
    worst.sha256 = digests.front();
    experiment.rows.push_back(std::move(worst));
  }
  experiment.notes.push_back("Each row is the worst run against the first serial run. The "
                             "output-dtype atomics variant is only emulated (CPU backend).");
  return experiment;
}

} // namespace

core::Result<core::ProbeResult> run_cuda_backend(const ExperimentConfig& config) {
  core::ProbeResult result;
  LLMREPRO_TRY_ASSIGN(result.device.name, visible_device_name());
  result.backend = "cuda";
  result.dtype = numerics::to_string(config.precision);
  result.quick = config.quick;
  cudaDeviceProp properties{};
  cudaGetDeviceProperties(&properties, 0);
  int driver = 0;
  int runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  result.device.sm_count = properties.multiProcessorCount;
  result.device.driver = "CUDA driver API " + version_text(driver);
  result.device.cuda = version_text(runtime);
  result.device.cublas = lt_version();

  const auto progress = [](const char* id) { std::fprintf(stderr, "gpu-probe: %s\n", id); };
  progress("E0 self-test");
  auto self_test = run_device_self_test(config);
  if (!self_test) return self_test.error();
  result.experiments.push_back(std::move(*self_test));
  progress("E1 batch sweep");
  auto sweep = run_device_batch_sweep(config);
  if (!sweep) return sweep.error();
  result.experiments.push_back(std::move(*sweep));
  DeviceOps device(properties.multiProcessorCount);
  progress("E2 forced split-K");
  auto forced = run_forced_split_k(config, device);
  if (!forced) return forced.error();
  LLMREPRO_TRY(append_lt_forced_split_k(config, *forced));
  result.experiments.push_back(std::move(*forced));
  progress("E3 atomics");
  auto atomics = run_device_atomics(config);
  if (!atomics) return atomics.error();
  result.experiments.push_back(std::move(*atomics));
  progress("E4 RMSNorm");
  auto norm = run_rmsnorm(config, device);
  if (!norm) return norm.error();
  result.experiments.push_back(std::move(*norm));
  progress("E5 attention");
  auto attention = run_attention(config, device);
  if (!attention) return attention.error();
  result.experiments.push_back(std::move(*attention));
  progress("E6 flips");
  auto flip = run_flip(config, device);
  if (!flip) return flip.error();
  result.experiments.push_back(std::move(flip->experiment));
  result.recommendation = std::move(flip->recommendation);
  progress("E7 cost");
  auto cost = run_device_cost(config);
  if (!cost) return cost.error();
  result.experiments.push_back(std::move(*cost));
  return result;
}

} // namespace llmrepro::gpu::cuda
