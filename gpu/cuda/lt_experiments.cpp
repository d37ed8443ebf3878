#include "gpu/cuda/lt_experiments.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "gpu/cuda/detail/device_memory.hpp"
#include "gpu/cuda/kernels.hpp"
#include "gpu/cuda/lt_gemm.hpp"
#include "gpu/cuda/typed_data.hpp"
#include "gpu/drift_metrics.hpp"

namespace llmrepro::gpu::cuda {

namespace {

using core::param;
using core::ProbeValue;

void add_algo_measures(core::ProbeRow& row, const LtAlgoInfo& algo) {
  add_measure(row, "split_k", algo.split_k);
  add_measure(row, "algo_id", algo.algo_id);
  add_measure(row, "tile_id", algo.tile_id);
  add_measure(row, "reduction_scheme", algo.reduction_scheme);
  add_measure(row, "waves", static_cast<double>(algo.waves));
  add_measure(row, "algo_workspace_bytes", static_cast<double>(algo.workspace_bytes));
}

// A GEMM's inputs on the device, in fp32 (for the probe's kernel) and in the dtype (cuBLASLt).
struct GemmBuffers {
  DeviceBuffer x_float, x_typed, w_float, w_typed, d_float, d_typed;
};

core::Result<void> fill(GemmBuffers& b, numerics::Precision precision, const std::vector<float>& x,
                        const std::vector<float>& w, std::size_t mn) {
  const std::size_t bytes = element_bytes(precision);
  b.x_float = DeviceBuffer(x.size() * 4);
  b.x_typed = DeviceBuffer(x.size() * bytes);
  b.w_float = DeviceBuffer(w.size() * 4);
  b.w_typed = DeviceBuffer(w.size() * bytes);
  b.d_float = DeviceBuffer(mn * 4);
  b.d_typed = DeviceBuffer(mn * bytes);
  if (!b.x_float || !b.x_typed || !b.w_float || !b.w_typed || !b.d_float || !b.d_typed)
    return allocation_error();
  LLMREPRO_TRY(upload(b.x_float.get(), x.data(), x.size() * 4));
  LLMREPRO_TRY(upload(b.w_float.get(), w.data(), w.size() * 4));
  const auto x_encoded = encode(precision, x);
  const auto w_encoded = encode(precision, w);
  LLMREPRO_TRY(upload(b.x_typed.get(), x_encoded.data(), x_encoded.size()));
  return upload(b.w_typed.get(), w_encoded.data(), w_encoded.size());
}

} // namespace

core::Result<void> append_lt_forced_split_k(const ExperimentConfig& config,
                                            core::ProbeExperiment& experiment) {
  const int m = 16;
  const int n = 4096;
  const int k = 4096;
  const numerics::Precision precision = config.precision;
  const std::size_t mn = static_cast<std::size_t>(m) * static_cast<std::size_t>(n);
  const auto x = random_values(static_cast<std::size_t>(m) * k, config.seed + 120, precision);
  const auto w = random_values(static_cast<std::size_t>(n) * k, config.seed + 121, precision);
  GemmBuffers buffers;
  LLMREPRO_TRY(fill(buffers, precision, x, w, mn));
  DeviceBuffer workspace(k_workspace_bytes);
  if (!workspace) return allocation_error();
  const auto run = [&](const LtRequest& request,
                       LtAlgoInfo& algo) -> core::Result<std::vector<float>> {
    auto gemm = LtGemm::create(precision, m, n, k, request, workspace.get(), k_workspace_bytes);
    if (!gemm) return gemm.error();
    LLMREPRO_TRY((*gemm)->run(buffers.x_typed.get(), buffers.w_typed.get(), buffers.d_typed.get()));
    algo = (*gemm)->algo();
    auto out = download(buffers.d_typed.get(), mn * element_bytes(precision));
    if (!out) return out.error();
    return decode(precision, out->data(), mn);
  };
  LtAlgoInfo reference_algo;
  auto reference = run(LtRequest{LtPolicy::no_split_k, 1, 0, nullptr}, reference_algo);
  if (!reference) return reference.error();
  std::vector<std::string> rejected;
  for (const int splits : {2, 4, 8})
    for (const unsigned scheme :
         {k_lt_scheme_compute_type, k_lt_scheme_output_type, k_lt_scheme_inplace}) {
      LtAlgoInfo algo;
      auto test = run(LtRequest{LtPolicy::forced_split_k, splits, scheme, nullptr}, algo);
      if (!test) {
        rejected.push_back("split " + std::to_string(splits) + " " + lt_scheme_name(scheme));
        continue;
      }
      auto row = compare_outputs("lt_forced_split_k",
                                 {param("M", m), param("N", n), param("K", k),
                                  param("split", splits), param("scheme", lt_scheme_name(scheme))},
                                 reference->data(), test->data(), mn, precision);
      add_algo_measures(row, algo);
      add_measure(row, "reference_algo_id", reference_algo.algo_id);
      experiment.rows.push_back(std::move(row));
    }
  std::string note =
      "lt_forced_split_k rows: cuBLASLt at M = 16, N = K = 4096 with "
      "CUBLASLT_ALGO_CONFIG_SPLITK_NUM and REDUCTION_SCHEME set on the first "
      "heuristic result that supports them (validated with cublasLtMatmulAlgoCheck), "
      "against the split-K-free algorithm at the same shape (all M x N outputs).";
  if (!rejected.empty()) {
    note += " Rejected by cuBLASLt:";
    for (std::size_t i = 0; i < rejected.size(); ++i) note += (i == 0 ? " " : ", ") + rejected[i];
    note += ".";
  }
  experiment.notes.push_back(note);
  return {};
}

core::Result<core::ProbeExperiment> run_device_cost(const ExperimentConfig& config) {
  core::ProbeExperiment experiment;
  experiment.id = "E7";
  experiment.title = "Cost of batch invariance: GEMM time vs the default cuBLASLt heuristic";
  const int n = 4096;
  const int k = 4096;
  const int samples = config.quick ? 11 : 31;
  int l2_bytes = 0;
  int clock_khz = 0;
  cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, 0);
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  const std::size_t flush_bytes = 2 * static_cast<std::size_t>(std::max(l2_bytes, 1 << 20));
  experiment.held = {param("N", n),
                     param("K", k),
                     param("samples", samples),
                     param("l2_bytes", l2_bytes),
                     param("l2_flush_bytes", static_cast<std::int64_t>(flush_bytes)),
                     param("sm_clock_peak_mhz", clock_khz / 1000),
                     param("timing", "CUDA events around each launch, L2 flushed before each"),
                     {"dtype", ProbeValue{std::string(numerics::to_string(config.precision))}}};
  experiment.varied = {"M", "variant"};
  const numerics::Precision precision = config.precision;
  const std::size_t bytes = element_bytes(precision);
  const auto w = random_values(static_cast<std::size_t>(n) * k, config.seed + 70, precision);
  DeviceBuffer workspace(k_workspace_bytes);
  DeviceBuffer flush(flush_bytes);
  if (!workspace || !flush) return allocation_error();
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  const std::vector<int> batch_sizes = {1, 16, 64, 256, 1024};
  std::optional<LtAlgoInfo> pinned;
  std::string ratio_note = "Throughput of fixed_order_kernel / lt_default by M:";
  std::string pinned_rejected;
  for (const int m : batch_sizes) {
    const std::size_t mn = static_cast<std::size_t>(m) * static_cast<std::size_t>(n);
    const auto x = random_values(static_cast<std::size_t>(m) * k,
                                 config.seed + 71 + static_cast<std::uint64_t>(m), precision);
    GemmBuffers b;
    LLMREPRO_TRY(fill(b, precision, x, w, mn));
    if (!pinned) {
      auto source = LtGemm::create(precision, batch_sizes.back(), n, k,
                                   LtRequest{LtPolicy::no_split_k, 1, 0, nullptr}, workspace.get(),
                                   k_workspace_bytes);
      if (!source) return source.error();
      pinned = (*source)->algo();
    }
    // Variants 0-2 are cuBLASLt GEMMs (a null entry: cuBLASLt rejected the pinned algorithm at
    // this M, reported in a note and left out), 3 the fixed-order kernel.
    std::vector<std::unique_ptr<LtGemm>> gemms;
    for (const LtPolicy policy : {LtPolicy::heuristic, LtPolicy::no_split_k, LtPolicy::pinned}) {
      auto gemm = LtGemm::create(precision, m, n, k, LtRequest{policy, 1, 0, &*pinned},
                                 workspace.get(), k_workspace_bytes);
      if (!gemm && policy == LtPolicy::pinned) {
        pinned_rejected += " " + std::to_string(m);
        gemms.push_back(nullptr);
        continue;
      }
      if (!gemm) return gemm.error();
      gemms.push_back(std::move(*gemm));
    }
    const char* names[] = {"lt_default", "lt_no_split_k", "lt_pinned", "fixed_order_kernel"};
    constexpr int k_variants = 4;
    const auto present = [&](int v) { return v == 3 || gemms[static_cast<std::size_t>(v)]; };
    const auto launch = [&](int v) -> core::Result<void> {
      if (v < 3)
        return gemms[static_cast<std::size_t>(v)]->run(b.x_typed.get(), b.w_typed.get(),
                                                       b.d_typed.get());
      const int status = launch_fixed_order_gemm(b.x_float.floats(), b.w_float.floats(),
                                                 b.d_float.floats(), m, n, k);
      if (status != 0) return cuda_error("fixed-order kernel", status);
      return {};
    };
    const auto output = [&](int v) {
      return v < 3 ? download(b.d_typed.get(), mn * bytes) : download(b.d_float.get(), mn * 4);
    };
    // Numerics run of each variant, then warm-up: the timed output must match the numerics run
    // (a fast wrong kernel loses).
    std::vector<std::vector<unsigned char>> numerics(k_variants);
    for (int v = 0; v < k_variants; ++v) {
      if (!present(v)) continue;
      for (int warm = 0; warm < 10; ++warm) LLMREPRO_TRY(launch(v));
      if (const int status = static_cast<int>(cudaDeviceSynchronize()); status != 0)
        return cuda_error("warm-up", status);
      LLMREPRO_TRY_ASSIGN(numerics[static_cast<std::size_t>(v)], output(v));
    }
    std::vector<std::vector<double>> times(k_variants);
    // Interleaved A B C D A B C D ... so that clock drift spreads over all variants.
    for (int sample = 0; sample < samples; ++sample)
      for (int v = 0; v < k_variants; ++v) {
        if (!present(v)) continue;
        cudaMemsetAsync(flush.get(), sample & 0xFF, flush_bytes);
        cudaEventRecord(start);
        LLMREPRO_TRY(launch(v));
        cudaEventRecord(stop);
        if (const int status = static_cast<int>(cudaEventSynchronize(stop)); status != 0)
          return cuda_error("timed launch", status);
        float ms = 0.0f;
        cudaEventElapsedTime(&ms, start, stop);
        times[static_cast<std::size_t>(v)].push_back(static_cast<double>(ms) * 1000.0);
      }
    double default_us = 0.0;
    for (int v = 0; v < k_variants; ++v) {
      if (!present(v)) continue;
      auto& own = times[static_cast<std::size_t>(v)];
      std::sort(own.begin(), own.end());
      const double median = own[own.size() / 2];
      if (v == 0) default_us = median;
      auto out = output(v);
      if (!out) return out.error();
      const numerics::Precision stored = v < 3 ? precision : numerics::Precision::fp32;
      const auto reference = decode(stored, numerics[static_cast<std::size_t>(v)].data(), mn);
      const auto timed = decode(stored, out->data(), mn);
      auto row =
          compare_outputs(names[v], {param("M", m)}, reference.data(), timed.data(), mn, stored);
      add_measure(row, "time_us", median);
      add_measure(row, "min_us", own.front());
      add_measure(row, "max_us", own.back());
      add_measure(row, "tflops", 2.0 * m * n * k / (median * 1e-6) / 1e12);
      add_measure(row, "slowdown_vs_lt_default", median / default_us);
      add_measure(row, "throughput_vs_lt_default", default_us / median);
      if (v < 3) add_algo_measures(row, gemms[static_cast<std::size_t>(v)]->algo());
      if (v == 3) {
        char text[48];
        std::snprintf(text, sizeof text, " %d: %.3g", m, default_us / median);
        ratio_note += text;
      }
      experiment.rows.push_back(std::move(row));
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  experiment.notes.push_back(ratio_note + ".");
  if (!pinned_rejected.empty())
    experiment.notes.push_back("cuBLASLt rejected the pinned algorithm at M =" + pinned_rejected +
                               ".");
  experiment.notes.push_back(
      "time_us is the median of the samples (min_us and max_us beside it), one launch per sample "
      "between CUDA events, after writing a buffer of twice the L2 size so that weights come "
      "from HBM (the decode case). lt_no_split_k is the practical batch-invariant GEMM (vLLM's "
      "Hopper setting); lt_pinned runs one algorithm for every M; fixed_order_kernel is the "
      "probe's untuned SIMT reference. The drift columns compare each timed output with its own "
      "numerics run (must be 0).");
  experiment.notes.push_back(
      "sm_clock_peak_mhz is the rated peak (cudaDevAttrClockRate): NVML is not linked, so the "
      "clock during the run, power and temperature are not logged; device-check.sh saves "
      "nvidia-smi's view before the run.");
  return experiment;
}

} // namespace llmrepro::gpu::cuda
