#include <doctest/doctest.h>

#include "numerics/reduction.hpp"
#include "gpu/detail/cpu_experiments.hpp"
#include "gpu/detail/experiment_ops.hpp"

using namespace llmrepro;

TEST_CASE("CpuOps") {
  gpu::CpuOps ops;
  CHECK(ops.name() == "cpu");
  CHECK(ops.sm_count() == 132);
  SUBCASE("split_k: one split with fp32 partials is the sequential dot product") {
    const auto x = gpu::random_values(1000, 1, numerics::Precision::bf16);
    const auto w = gpu::random_values(3000, 2, numerics::Precision::bf16);
    auto out = ops.split_k(x.data(), w.data(), 3, 1000, 1, numerics::PartialScheme::compute_type,
                           numerics::Precision::bf16);
    REQUIRE(out.has_value());
    for (std::size_t j = 0; j < 3; ++j) {
      const float exact = numerics::dot_split_k(x.data(), w.data() + j * 1000, 1000, 1);
      CHECK(numerics::float_bits(out->out_fp32[j]) == numerics::float_bits(exact));
      CHECK(numerics::float_bits(out->out[j]) ==
            numerics::float_bits(numerics::round_to(numerics::Precision::bf16, exact)));
    }
  }
  SUBCASE("flip_logits: the bias puts order A exactly on the target, ties go to index 0") {
    gpu::FlipInputs in;
    in.k = 8;
    in.steps = 1;
    in.hidden = {1, 2, 3, 4, 5, 6, 7, 8};
    in.drifted = in.hidden;
    in.weights = {1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0};
    in.targets = {4.0f, 4.0f};
    auto logits = ops.flip_logits(in, numerics::Precision::bf16, false);
    REQUIRE(logits.has_value());
    CHECK(logits->logit_a[0] == 4.0f);
    CHECK(logits->logit_a[1] == 4.0f);
    CHECK(logits->argmax_a[0] == 0);
    CHECK(logits->argmax_b[0] == 0);
  }
}
