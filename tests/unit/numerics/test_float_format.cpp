#include <doctest/doctest.h>

#include <cmath>

#include "numerics/float_format.hpp"
#include "numerics/reduction.hpp"

using namespace llmrepro::numerics;

TEST_CASE("bf16_bits_from_float") {
  // Test vectors of docs/gpu-probe.md §6.2.
  CHECK(bf16_bits_from_float(float_from_bits(0x3F808000u)) == 0x3F80); // tie, even below
  CHECK(bf16_bits_from_float(float_from_bits(0x3F818000u)) == 0x3F82); // tie, odd below
  CHECK(bf16_bits_from_float(float_from_bits(0x3F808001u)) == 0x3F81); // above the tie
  CHECK(bf16_bits_from_float(1.0f) == 0x3F80);
  SUBCASE("NaN with a low payload stays NaN") {
    const float nan = float_from_bits(0x7F800001u);
    CHECK(std::isnan(float_from_bf16_bits(bf16_bits_from_float(nan))));
  }
  SUBCASE("overflow rounds to infinity") {
    CHECK(std::isinf(float_from_bf16_bits(bf16_bits_from_float(float_from_bits(0x7F7FFFFFu)))));
  }
}

TEST_CASE("fp16_bits_from_float") {
  CHECK(fp16_bits_from_float(1.0f) == 0x3C00);
  CHECK(fp16_bits_from_float(-2.0f) == 0xC000);
  CHECK(fp16_bits_from_float(65504.0f) == 0x7BFF);
  CHECK(fp16_bits_from_float(65520.0f) == 0x7C00);          // rounds to infinity
  CHECK(fp16_bits_from_float(0x1.0p-24f) == 0x0001);        // smallest subnormal
  CHECK(fp16_bits_from_float(1.0f + 0x1.0p-11f) == 0x3C00); // tie to even
  CHECK(fp16_bits_from_float(1.0f + 3 * 0x1.0p-11f) == 0x3C02);
  for (std::uint32_t h : {0x0001u, 0x03FFu, 0x3C00u, 0x7BFFu, 0xBC01u})
    CHECK(fp16_bits_from_float(float_from_fp16_bits(static_cast<std::uint16_t>(h))) == h);
}

TEST_CASE("ulp_at") {
  CHECK(ulp_at(Precision::bf16, 1.0f) == 0x1.0p-7f);
  CHECK(ulp_at(Precision::bf16, 0.75f) == 0x1.0p-8f);
  CHECK(ulp_at(Precision::fp16, 1.0f) == 0x1.0p-10f);
}

TEST_CASE("dot_split_k") {
  // 1e8 + 1 - 1e8 ...: the order decides whether the small terms survive.
  const float a[4] = {1e8f, 1.0f, -1e8f, 1.0f};
  const float ones[4] = {1, 1, 1, 1};
  CHECK(dot_split_k(a, ones, 4, 1) == 1.0f); // ((1e8+1)-1e8)+1 = 0+1
  CHECK(dot_split_k(a, ones, 4, 2) == 0.0f); // (1e8+1) + (-1e8+1) = 1e8 + -1e8
  CHECK(sum_split_k(a, 4, 4) == 1.0f);
  CHECK(sum_strided_tree(a, 4, 2) == 2.0f); // lanes {1e8 + -1e8, 1 + 1}, then 0 + 2
}
