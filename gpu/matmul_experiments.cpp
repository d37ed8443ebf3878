// E0-E3 on the CPU: the matmul family. Only the anchor row is computed: in the emulation a
// row's result depends on the batch only through the split the policy picks for that batch,
// which is exactly the mechanism under study (and makes the row position-invariant by
// construction; the CUDA backend checks positions on real kernels).
#include <cstdint>
#include <map>
#include <numeric>
#include <string>
#include <utility>

#include "numerics/reduction.hpp"
#include "numerics/float_format.hpp"
#include "numerics/reduction_schemes.hpp"
#include "core/random.hpp"
#include "gpu/detail/cpu_experiments.hpp"
#include "gpu/drift_metrics.hpp"
#include "gpu/split_policy.hpp"

namespace llmrepro::gpu {

std::vector<float> random_values(std::size_t n, std::uint64_t seed, numerics::Precision precision,
                                 float scale) {
  core::SplitMix64 random(seed);
  std::vector<float> values(n);
  for (auto& value : values) {
    const float uniform = static_cast<float>(random.uniform() * 2.0 - 1.0);
    value = numerics::round_to(precision, uniform * scale);
  }
  return values;
}

namespace {

using core::ProbeParam;
using core::ProbeValue;

using core::param;

// One anchor row of x (k values) against n weight rows, each output a split-K dot product;
// returns the fp32 values before rounding.
std::vector<float> anchor_row(const std::vector<float>& x, const std::vector<float>& weights,
                              std::size_t n, std::size_t k, int splits) {
  std::vector<float> out(n);
  for (std::size_t j = 0; j < n; ++j)
    out[j] = numerics::dot_split_k(x.data(), weights.data() + j * k, k, splits);
  return out;
}

struct RneVector {
  float input;
  std::uint16_t expected;
};

} // namespace

core::ProbeExperiment run_self_test(const ExperimentConfig& config) {
  core::ProbeExperiment experiment;
  experiment.id = "E0";
  experiment.title = "Self-test: rounding vectors, partial sums, run-to-run digests";
  experiment.varied = {"check"};

  // docs/gpu-probe.md §6.2 vectors for bf16; fp16 ties, subnormals, overflow and NaN.
  const RneVector bf16_vectors[] = {{numerics::float_from_bits(0x3F808000u), 0x3F80},
                                    {numerics::float_from_bits(0x3F818000u), 0x3F82},
                                    {numerics::float_from_bits(0x3F808001u), 0x3F81},
                                    {numerics::float_from_bits(0x7F800001u), 0x7FC0},
                                    {numerics::float_from_bits(0x7F7FFFFFu), 0x7F80},
                                    {-1.0f, 0xBF80}};
  const RneVector fp16_vectors[] = {{1.0f, 0x3C00},
                                    {65504.0f, 0x7BFF},
                                    {65520.0f, 0x7C00},
                                    {0x1.0p-24f, 0x0001},
                                    {0x1.0p-25f, 0x0000},
                                    {0x1.8p-25f, 0x0001},
                                    {1.0f + 0x1.0p-11f, 0x3C00},
                                    {1.0f + 0x1.8p-10f, 0x3C02},
                                    {-2.0f, 0xC000}};
  std::vector<float> expected;
  std::vector<float> actual;
  for (const auto& vector : bf16_vectors) {
    expected.push_back(static_cast<float>(vector.expected));
    actual.push_back(static_cast<float>(numerics::bf16_bits_from_float(vector.input)));
  }
  experiment.rows.push_back(compare_outputs("bf16_rne_vectors", {param("check", "rounding")},
                                            expected.data(), actual.data(), expected.size(),
                                            numerics::Precision::fp32));
  expected.clear();
  actual.clear();
  for (const auto& vector : fp16_vectors) {
    expected.push_back(static_cast<float>(vector.expected));
    actual.push_back(static_cast<float>(numerics::fp16_bits_from_float(vector.input)));
  }
  experiment.rows.push_back(compare_outputs("fp16_rne_vectors", {param("check", "rounding")},
                                            expected.data(), actual.data(), expected.size(),
                                            numerics::Precision::fp32));

  // The partial-sum path the other experiments use must equal numerics::dot_split_k bit for bit.
  const std::size_t k = 4096;
  const std::size_t outputs = config.quick ? 64 : 256;
  const auto x = random_values(k, config.seed, config.precision);
  const auto weights = random_values(outputs * k, config.seed + 1, config.precision);
  for (const int splits : {1, 3, 8}) {
    std::vector<float> direct(outputs);
    std::vector<float> via_partials(outputs);
    std::vector<float> partials(static_cast<std::size_t>(splits));
    for (std::size_t j = 0; j < outputs; ++j) {
      direct[j] = numerics::dot_split_k(x.data(), weights.data() + j * k, k, splits);
      numerics::dot_chunk_partials(x.data(), weights.data() + j * k, k, splits, partials.data());
      float total = 0.0f;
      for (const float partial : partials) total += partial;
      via_partials[j] = total;
    }
    experiment.rows.push_back(compare_outputs(
        "partials_vs_dot_split_k", {param("check", "partials"), param("split", splits)},
        direct.data(), via_partials.data(), outputs, numerics::Precision::fp32));
  }

  // Run to run: a fixed order gives one digest over 20 repeats.
  std::vector<std::string> digests;
  std::vector<float> first;
  for (int repeat = 0; repeat < 20; ++repeat) {
    const auto out = anchor_row(x, weights, outputs, k, 4);
    if (first.empty()) first = out;
    digests.push_back(output_digest(out.data(), out.size()));
  }
  auto row = compare_outputs("fixed_order_repeats", {param("check", "repeats")}, first.data(),
                             first.data(), outputs, config.precision);
  add_measure(row, "runs", 20);
  add_measure(row, "distinct_digests", static_cast<double>(distinct_count(digests)));
  row.sha256 = digests.front();
  experiment.rows.push_back(row);

  bool passed = true;
  for (const auto& each : experiment.rows) {
    if (each.changed_frac != 0.0) passed = false;
    for (const auto& measure : each.measures)
      if (measure.name == "distinct_digests" && measure.value != 1.0) passed = false;
  }
  experiment.status = passed ? core::ProbeStatus::ok : core::ProbeStatus::failed;
  experiment.notes.push_back(passed ? "All checks bit-exact: rounding and summation orders behave "
                                      "as documented."
                                    : "A self-test check failed: the other experiments' figures "
                                      "cannot be trusted (contraction, FTZ or an order bug).");
  return experiment;
}

core::ProbeExperiment run_matmul_batch_sweep(const ExperimentConfig& config) {
  core::ProbeExperiment experiment;
  experiment.id = "E1";
  experiment.title = "Matmul: the anchor row alone (M = 1) vs inside a batch of M rows";
  experiment.held = {param("anchor_row", 0),
                     param("tile", "128x128x64"),
                     param("emulated_sms", k_emulated_sm_count),
                     {"dtype", ProbeValue{std::string(numerics::to_string(config.precision))}}};
  experiment.varied = {"shape", "M", "variant"};

  struct Shape {
    const char* name;
    std::size_t k;
    std::size_t n;
  };
  std::vector<Shape> shapes = {{"qkv_o", 4096, 4096}};
  if (!config.quick) {
    shapes.push_back({"gate_up", 4096, 14336});
    shapes.push_back({"down", 14336, 4096});
  }
  const std::vector<std::int64_t> batch_sizes =
      config.quick ? std::vector<std::int64_t>{1, 2, 16, 128, 129, 256, 257, 1024}
                   : std::vector<std::int64_t>{1,  2,  3,   4,   8,   16,  17,   32,
                                               33, 64, 128, 256, 257, 512, 1024, 2048};
  std::int64_t differing = 0;
  std::int64_t compared = 0;
  for (std::size_t shape_index = 0; shape_index < shapes.size(); ++shape_index) {
    const Shape& shape = shapes[shape_index];
    const auto x = random_values(shape.k, config.seed + 10 + shape_index, config.precision);
    const auto weights =
        random_values(shape.n * shape.k, config.seed + 20 + shape_index, config.precision);
    std::map<int, std::vector<float>> by_split; // fp32 anchor row per split count
    const auto row_for = [&](int splits) -> const std::vector<float>& {
      auto found = by_split.find(splits);
      if (found == by_split.end())
        found = by_split.emplace(splits, anchor_row(x, weights, shape.n, shape.k, splits)).first;
      return found->second;
    };
    for (const char* variant : {"heuristic_split_k", "fixed_order"}) {
      const bool heuristic = std::string(variant) == "heuristic_split_k";
      const auto split_for = [&](std::int64_t m) {
        return heuristic
                   ? heuristic_split_k(m, static_cast<std::int64_t>(shape.n),
                                       static_cast<std::int64_t>(shape.k), k_emulated_sm_count)
                   : 1;
      };
      const std::vector<float> reference_fp32 = row_for(split_for(1));
      const auto reference = numerics::round_each_to(config.precision, reference_fp32);
      for (const auto m : batch_sizes) {
        const int splits = split_for(m);
        const auto& test_fp32 = row_for(splits);
        const auto test = numerics::round_each_to(config.precision, test_fp32);
        auto row = compare_outputs(
            variant,
            {param("shape", shape.name), param("K", static_cast<std::int64_t>(shape.k)),
             param("N", static_cast<std::int64_t>(shape.n)), param("M", m), param("split", splits)},
            reference.data(), test.data(), shape.n, config.precision, reference_fp32.data(),
            test_fp32.data());
        if (m != 1) {
          ++compared;
          if (row.changed_frac > 0.0 && heuristic) ++differing;
        }
        experiment.rows.push_back(std::move(row));
      }
    }
  }
  experiment.notes.push_back(
      "heuristic_split_k picks split = min(max(SMs / tiles, 1), k_tiles); each change of split "
      "with M changes the anchor row's reduction order. fixed_order never splits: 0 changed for "
      "every M is the batch-invariant contract.");
  experiment.notes.push_back(std::to_string(differing) + " of " + std::to_string(compared / 2) +
                             " (shape, M) cases differ from M = 1 under the heuristic.");
  return experiment;
}

core::Result<core::ProbeExperiment> run_forced_split_k(const ExperimentConfig& config,
                                                       ExperimentOps& ops) {
  core::ProbeExperiment experiment;
  experiment.id = "E2";
  experiment.title = "Forced split-K counts and reduction schemes vs the sequential order";
  const std::size_t outputs = config.quick ? 512 : 2048;
  experiment.held = {param("M", 1),
                     param("outputs", static_cast<std::int64_t>(outputs)),
                     param("computed_on", ops.name().c_str()),
                     {"dtype", ProbeValue{std::string(numerics::to_string(config.precision))}}};
  experiment.varied = {"K", "split", "scheme"};
  const std::vector<std::size_t> depths =
      config.quick ? std::vector<std::size_t>{4096} : std::vector<std::size_t>{4096, 14336};
  for (const std::size_t k : depths) {
    const auto x = random_values(k, config.seed + 30 + k, config.precision);
    const auto weights = random_values(outputs * k, config.seed + 40 + k, config.precision);
    // One split with fp32 partials is the plain sequential order (numerics::dot_split_k(..., 1)).
    auto sequential = ops.split_k(x.data(), weights.data(), outputs, k, 1,
                                  numerics::PartialScheme::compute_type, config.precision);
    if (!sequential) return sequential.error();
    const std::vector<float>& reference_fp32 = sequential->out_fp32;
    const auto reference = numerics::round_each_to(config.precision, reference_fp32);
    for (const int splits : {2, 4, 8, 16, 32}) {
      for (const auto scheme :
           {numerics::PartialScheme::compute_type, numerics::PartialScheme::output_type,
            numerics::PartialScheme::inplace}) {
        auto test =
            ops.split_k(x.data(), weights.data(), outputs, k, splits, scheme, config.precision);
        if (!test) return test.error();
        const bool fp32_known = scheme == numerics::PartialScheme::compute_type;
        experiment.rows.push_back(
            compare_outputs(numerics::to_string(scheme),
                            {param("K", static_cast<std::int64_t>(k)), param("split", splits),
                             param("scheme", numerics::to_string(scheme))},
                            reference.data(), test->out.data(), outputs, config.precision,
                            fp32_known ? reference_fp32.data() : nullptr,
                            fp32_known ? test->out_fp32.data() : nullptr));
      }
    }
  }
  experiment.notes.push_back(
      "compute_type keeps fp32 partials (most fp32 sums change, few stored values); output_type "
      "and inplace round partials to the output dtype, which costs far more accuracy.");
  return experiment;
}

core::ProbeExperiment run_forced_split_k(const ExperimentConfig& config) {
  CpuOps ops;
  return run_forced_split_k(config, ops).value();
}

core::ProbeExperiment run_atomics(const ExperimentConfig& config) {
  core::ProbeExperiment experiment;
  experiment.id = "E3";
  experiment.title = "Atomics: split-K partials combined in arrival order, run to run";
  const std::size_t outputs = 512;
  const std::size_t k = 4096;
  const int splits = 8;
  const int runs = config.quick ? 20 : 50;
  experiment.held = {param("outputs", static_cast<std::int64_t>(outputs)),
                     param("K", static_cast<std::int64_t>(k)),
                     param("split", splits),
                     param("runs", runs),
                     {"dtype", ProbeValue{std::string(numerics::to_string(config.precision))}}};
  experiment.varied = {"variant"};
  const auto x = random_values(k, config.seed + 50, config.precision);
  const auto weights = random_values(outputs * k, config.seed + 51, config.precision);
  const std::size_t s = static_cast<std::size_t>(splits);
  std::vector<float> partials(outputs * s);
  for (std::size_t j = 0; j < outputs; ++j)
    numerics::dot_chunk_partials(x.data(), weights.data() + j * k, k, splits,
                                 partials.data() + j * s);

  std::vector<std::size_t> in_order(s);
  std::iota(in_order.begin(), in_order.end(), 0);
  std::vector<float> serial(outputs);
  std::vector<float> serial_fp32(outputs);
  for (std::size_t j = 0; j < outputs; ++j) {
    serial_fp32[j] = numerics::sum_in_order(partials.data() + j * s, in_order.data(), s, false,
                                            numerics::Precision::fp32);
    serial[j] = numerics::round_to(config.precision, serial_fp32[j]);
  }

  struct Variant {
    const char* name;
    bool permuted;   // arrival order differs per run
    bool round_each; // atomicAdd on an output-dtype buffer
  };
  for (const Variant variant :
       {Variant{"atomic_fp32", true, false}, Variant{"atomic_output_dtype", true, true},
        Variant{"serial_semaphore", false, false}, Variant{"two_pass_workspace", false, false}}) {
    std::vector<std::string> digests;
    std::vector<std::string> digests_fp32;
    core::ProbeRow worst;
    bool have_worst = false;
    for (int run = 0; run < runs; ++run) {
      core::SplitMix64 random(config.seed * std::uint64_t{1000003} +
                              static_cast<std::uint64_t>(run));
      std::vector<float> out(outputs);
      std::vector<float> out_fp32(outputs);
      std::vector<std::size_t> order = in_order;
      for (std::size_t j = 0; j < outputs; ++j) {
        if (variant.permuted)
          for (std::size_t i = s - 1; i > 0; --i) std::swap(order[i], order[random.below(i + 1)]);
        out_fp32[j] = numerics::sum_in_order(partials.data() + j * s, order.data(), s,
                                             variant.round_each, config.precision);
        out[j] = numerics::round_to(config.precision, out_fp32[j]);
      }
      digests.push_back(output_digest(out.data(), outputs));
      digests_fp32.push_back(output_digest(out_fp32.data(), outputs));
      auto row = compare_outputs(variant.name, {}, serial.data(), out.data(), outputs,
                                 config.precision, serial_fp32.data(), out_fp32.data());
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
  experiment.notes.push_back(
      "Each row is the worst run against the serial order; distinct_digests counts different "
      "outputs over the runs. Atomics emulation draws a seeded random arrival order per output "
      "and run; serial and two-pass combine in K order and give one digest.");
  return experiment;
}

} // namespace llmrepro::gpu
