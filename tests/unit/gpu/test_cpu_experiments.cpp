// The CPU backend's experiments in their quick configuration with the default seed. Exact
// counts are asserted: a change in any reduction order or rounding shows up here.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "gpu/detail/cpu_experiments.hpp"

using namespace llmrepro;

namespace {

gpu::ExperimentConfig quick_bf16() {
  gpu::ExperimentConfig config;
  config.quick = true;
  return config;
}

std::int64_t changed_count(const core::ProbeRow& row) {
  return std::llround(row.changed_frac * static_cast<double>(row.elements));
}

const core::ProbeValue* param(const core::ProbeRow& row, const std::string& name) {
  for (const auto& each : row.params)
    if (each.name == name) return &each.value;
  return nullptr;
}

std::int64_t int_param(const core::ProbeRow& row, const std::string& name) {
  const core::ProbeValue* value = param(row, name);
  REQUIRE_MESSAGE(value != nullptr, "row has no parameter " << name);
  return std::get<std::int64_t>(*value);
}

double measure(const core::ProbeRow& row, const std::string& name) {
  for (const auto& each : row.measures)
    if (each.name == name) return each.value;
  FAIL("row has no measure " << name);
  return 0.0;
}

} // namespace

TEST_CASE("run_self_test") {
  const auto experiment = gpu::run_self_test(quick_bf16());
  CHECK(experiment.status == core::ProbeStatus::ok);
  CHECK(experiment.rows.size() == 6);
  for (const auto& row : experiment.rows) {
    CAPTURE(row.variant);
    CHECK(row.changed_frac == 0.0);
  }
  CHECK(measure(experiment.rows.back(), "distinct_digests") == 1.0);
}

TEST_CASE("run_matmul_batch_sweep") {
  const auto experiment = gpu::run_matmul_batch_sweep(quick_bf16());
  REQUIRE(experiment.rows.size() == 16);
  for (const auto& row : experiment.rows) {
    const auto m = int_param(row, "M");
    CAPTURE(row.variant);
    CAPTURE(m);
    CHECK(row.elements == 4096);
    if (row.variant == "fixed_order") {
      // A fixed order gives identical bits across batch sizes.
      CHECK(changed_count(row) == 0);
      CHECK(row.fp32_changed_frac.value() == 0.0);
      continue;
    }
    // The heuristic changes bf16 outputs by 1 ULP when its split changes.
    {
      if (m <= 128) {
        CHECK(int_param(row, "split") == 4);
        CHECK(changed_count(row) == 0);
      } else {
        CHECK(int_param(row, "split") == (m <= 256 ? 2 : 1));
        // About 9 in 10 fp32 sums change, 1 in 4096 stored bf16 values, by exactly 1 ULP.
        CHECK(changed_count(row) == 1);
        CHECK(row.max_ulp == 1.0);
        CHECK(row.ulp_histogram[1] == 1);
        CHECK(row.fp32_changed_frac.value() ==
              doctest::Approx(m <= 256 ? 3634.0 / 4096 : 3807.0 / 4096));
      }
    }
  }
}

TEST_CASE("run_forced_split_k") {
  const auto experiment = gpu::run_forced_split_k(quick_bf16());
  REQUIRE(experiment.rows.size() == 15);
  for (const auto& row : experiment.rows) {
    CAPTURE(row.variant);
    CAPTURE(int_param(row, "split"));
    if (row.variant == "compute_type") {
      // fp32 partials: most fp32 sums change, at most a few stored values, by 1 ULP.
      CHECK(row.fp32_changed_frac.value() > 0.85);
      CHECK(changed_count(row) <= 1);
      CHECK(row.max_ulp <= 1.0);
    } else {
      // Partials rounded to bf16: a large fraction changes, by many ULP on cancelling sums.
      CHECK(row.changed_frac > 0.25);
      CHECK(row.max_ulp > 50.0);
    }
  }
  CHECK(changed_count(experiment.rows[3]) == 1);   // split 4, compute_type
  CHECK(changed_count(experiment.rows[1]) == 192); // split 2, output_type
}

TEST_CASE("run_atomics") {
  const auto experiment = gpu::run_atomics(quick_bf16());
  REQUIRE(experiment.rows.size() == 4);
  SUBCASE("atomics emulation varies run to run") {
    CHECK(experiment.rows[0].variant == "atomic_fp32");
    CHECK(measure(experiment.rows[0], "distinct_digests_fp32") == 20.0);
    // Rounding to bf16 hides the fp32 differences in these 20 runs.
    CHECK(measure(experiment.rows[0], "distinct_digests") == 1.0);
    CHECK(experiment.rows[1].variant == "atomic_output_dtype");
    CHECK(measure(experiment.rows[1], "distinct_digests") == 20.0);
  }
  SUBCASE("serial and two-pass combines do not") {
    for (const std::size_t i : {std::size_t{2}, std::size_t{3}}) {
      CHECK(measure(experiment.rows[i], "distinct_digests") == 1.0);
      CHECK(measure(experiment.rows[i], "distinct_digests_fp32") == 1.0);
      CHECK(experiment.rows[i].changed_frac == 0.0);
    }
  }
}

TEST_CASE("run_rmsnorm") {
  const auto experiment = gpu::run_rmsnorm(quick_bf16());
  REQUIRE(experiment.rows.size() == 9);
  for (const auto& row : experiment.rows) {
    CAPTURE(row.variant);
    CAPTURE(int_param(row, "tokens"));
    if (row.variant == "fixed_block") {
      CHECK(measure(row, "inv_rms_changed_frac") == 0.0);
      CHECK(changed_count(row) == 0);
    }
    if (row.variant == "split_row") // 4 CTAs per row at 1 token, one from 64 tokens
      CHECK(measure(row, "inv_rms_changed_frac") == doctest::Approx(3.0 / 32));
  }
}

TEST_CASE("run_attention") {
  const auto experiment = gpu::run_attention(quick_bf16());
  REQUIRE(experiment.rows.size() == 64);
  std::int64_t heuristic_changed = 0;
  for (const auto& row : experiment.rows) {
    CAPTURE(row.variant);
    CAPTURE(int_param(row, "L"));
    CAPTURE(int_param(row, "B"));
    if (row.variant == "fa2_heuristic") {
      heuristic_changed += changed_count(row);
      CHECK(row.max_ulp <= 1.0);
    } else {
      // Fixed split sizes and no split are batch-invariant.
      CHECK(changed_count(row) == 0);
      CHECK(row.fp32_changed_frac.value() == 0.0);
    }
  }
  CHECK(heuristic_changed == 19);
  // L = 4096, B = 4: 7 splits instead of 32; 2 of 4096 bf16 outputs move by 1 ULP.
  const auto& row = experiment.rows[32 + 2];
  CHECK(int_param(row, "splits") == 7);
  CHECK(changed_count(row) == 2);
}

TEST_CASE("run_flip") {
  const auto outcome = gpu::run_flip(quick_bf16());
  const auto& rows = outcome.experiment.rows;
  REQUIRE(rows.size() == 36); // 4 variants x 9 gap bins
  const auto flips = [&](std::size_t variant, std::size_t bin) {
    return measure(rows[variant * 9 + bin], "flips");
  };
  const auto rate = [&](std::size_t variant, std::size_t bin) {
    return measure(rows[variant * 9 + bin], "flip_rate");
  };
  SUBCASE("one op's reordering alone never flips bf16 logits here") {
    for (std::size_t bin = 0; bin < 9; ++bin) CHECK(flips(0, bin) == 0.0);
  }
  SUBCASE("the flip rate rises as the gap falls") {
    // fp32 logits with a drifted hidden state: bins 1e-4.., 1e-3.., 1e-2.., 3e-2.., 0.1..
    CHECK(flips(3, 2) == 328.0);
    CHECK(flips(3, 3) == 288.0);
    CHECK(flips(3, 4) == 61.0);
    CHECK(flips(3, 5) == 8.0);
    CHECK(rate(3, 2) > rate(3, 3));
    CHECK(rate(3, 3) > rate(3, 4));
    CHECK(rate(3, 4) > rate(3, 5));
    for (std::size_t bin = 6; bin < 9; ++bin) CHECK(flips(3, bin) == 0.0);
  }
  SUBCASE("the recommendation compares the largest flipping gap with tau") {
    CHECK(outcome.recommendation.any_flip);
    CHECK(outcome.recommendation.flip_gap == 0.125); // one bf16 spacing at |z| = 24
    CHECK(outcome.recommendation.default_tau == 0.05);
    CHECK(outcome.recommendation.text.find("--fragile-gap 0.2") != std::string::npos);
  }
}

TEST_CASE("run_cpu_backend") {
  gpu::ExperimentConfig config = quick_bf16();
  config.precision = numerics::Precision::fp16;
  const auto result = gpu::run_cpu_backend(config);
  CHECK(result.backend == "cpu");
  CHECK(result.dtype == "fp16");
  REQUIRE(result.experiments.size() == 8);
  const char* ids[] = {"E0", "E1", "E2", "E3", "E4", "E5", "E6", "E7"};
  for (std::size_t i = 0; i < 8; ++i) CHECK(result.experiments[i].id == ids[i]);
  CHECK(result.experiments[0].status == core::ProbeStatus::ok);
  CHECK(result.experiments[7].status == core::ProbeStatus::skipped);
  CHECK_FALSE(result.recommendation.text.empty());
}
