#include <doctest/doctest.h>

#include <cstddef>
#include <initializer_list>

#include "numerics/rms_norm.hpp"
#include "engine/kernel_policy.hpp"

using namespace llmrepro;

TEST_CASE("KernelPolicy") {
  SUBCASE("adaptive mode picks orders from the shape") {
    const engine::KernelPolicy policy(false);
    CHECK(policy.matmul_splits(1, 192, 192) == 8);
    CHECK(policy.matmul_splits(16, 192, 192) == 8);
    CHECK(policy.matmul_splits(17, 192, 192) == 5);
    CHECK(policy.matmul_splits(32, 192, 192) == 5);
    CHECK(policy.matmul_splits(33, 192, 192) == 3);
    CHECK(policy.matmul_splits(49, 192, 192) == 2);
    CHECK(policy.matmul_splits(1, 576, 192) == 3);
    CHECK(policy.matmul_splits(17, 576, 192) == 1);
    CHECK(policy.rms_reduction(1).kind == numerics::RmsReduction::Kind::strided_tree);
    CHECK(policy.rms_reduction(100).kind == numerics::RmsReduction::Kind::split_k);
    CHECK(policy.attention_splits(1, 4, 64) == 4);
    CHECK(policy.attention_splits(1, 4, 1000) == 8);
    CHECK(policy.attention_splits(16, 4, 1000) == 2);
    CHECK(policy.attention_splits(32, 4, 1000) == 1);
  }
  SUBCASE("batch-invariant mode fixes every order") {
    const engine::KernelPolicy policy(true);
    for (std::size_t rows : {1u, 2u, 7u, 16u, 100u}) {
      CHECK(policy.matmul_splits(rows, 192, 192) == 1);
      CHECK(policy.rms_reduction(rows).kind == numerics::RmsReduction::Kind::split_k);
      CHECK(policy.rms_reduction(rows).parameter == 1);
      CHECK(policy.attention_splits(rows, 4, 500) == 1);
    }
  }
}
