#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "numerics/reduction.hpp"
#include "numerics/reduction_schemes.hpp"

using namespace llmrepro::numerics;

TEST_CASE("dot_chunk_partials") {
  std::vector<float> a(1000);
  std::vector<float> b(1000);
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = 1.0f / static_cast<float>(i + 1);
    b[i] = static_cast<float>(i % 7) - 3.0f;
  }
  for (const int splits : {1, 3, 8}) {
    std::vector<float> partials(static_cast<std::size_t>(splits));
    dot_chunk_partials(a.data(), b.data(), a.size(), splits, partials.data());
    float total = 0.0f;
    for (const float partial : partials) total += partial;
    CHECK(float_bits(total) == float_bits(dot_split_k(a.data(), b.data(), a.size(), splits)));
  }
}

TEST_CASE("combine_partials") {
  SUBCASE("inplace rounds after every add") {
    // Exact sum 1 + 0.75 * 2^-7 rounds up; rounding after each add loses every small term.
    const float partials[] = {1.0f, 0x1.0p-9f, 0x1.0p-9f, 0x1.0p-9f};
    CHECK(combine_partials(partials, 4, PartialScheme::compute_type, Precision::bf16) ==
          1.0f + 0x1.0p-7f);
    CHECK(combine_partials(partials, 4, PartialScheme::output_type, Precision::bf16) ==
          1.0f + 0x1.0p-7f);
    CHECK(combine_partials(partials, 4, PartialScheme::inplace, Precision::bf16) == 1.0f);
  }
  SUBCASE("output_type rounds each partial before the sum") {
    // p = 1 + 2^-8 + 2^-10 rounds to 1 + 2^-7 in bf16; p - 1 cancels what is left.
    const float partials[] = {1.0f + 0x1.0p-8f + 0x1.0p-10f, -1.0f};
    CHECK(combine_partials(partials, 2, PartialScheme::compute_type, Precision::bf16) ==
          0x1.0p-8f + 0x1.0p-10f);
    CHECK(combine_partials(partials, 2, PartialScheme::output_type, Precision::bf16) == 0x1.0p-7f);
    CHECK(combine_partials(partials, 2, PartialScheme::inplace, Precision::bf16) == 0x1.0p-7f);
  }
}

TEST_CASE("sum_in_order") {
  const float values[] = {1.0e8f, 1.0f, -1.0e8f, 1.0f};
  const std::size_t forward[] = {0, 1, 2, 3};
  const std::size_t cancel_first[] = {0, 2, 1, 3};
  CHECK(sum_in_order(values, forward, 4, false, Precision::fp32) == 1.0f);
  CHECK(sum_in_order(values, cancel_first, 4, false, Precision::fp32) == 2.0f);
}

TEST_CASE("rmsnorm_row") {
  const float x[] = {3.0f, 4.0f, 0.0f, 0.0f};
  const float weight[] = {1.0f, 1.0f, 1.0f, 2.0f};
  float out[4];
  const float inv_rms = rmsnorm_row(x, weight, 4, {2, 1}, 0.0f, Precision::fp32, out);
  CHECK(inv_rms == doctest::Approx(0.4f)); // sqrt(25 / 4) = 2.5
  CHECK(out[0] == doctest::Approx(1.2f));
  CHECK(out[1] == doctest::Approx(1.6f));
  SUBCASE("the split-row order is the same sum here") {
    float split_out[4];
    CHECK(rmsnorm_row(x, weight, 4, {1, 2}, 0.0f, Precision::fp32, split_out) == inv_rms);
  }
}

TEST_CASE("attention_decode") {
  // Two keys with equal scores: the output is the mean of the values, LSE = log 2.
  const float q[] = {1.0f, 0.0f};
  const float keys[] = {1.0f, 0.0f, 1.0f, 5.0f};
  const float values[] = {2.0f, 4.0f, 6.0f, 8.0f};
  float out[2];
  const float lse = attention_decode(q, keys, values, 2, 2, {0, 2}, 1.0f, Precision::fp32, out);
  CHECK(out[0] == 4.0f);
  CHECK(out[1] == 6.0f);
  CHECK(lse == doctest::Approx(1.0f + std::log(2.0f)));
  float split_out[2];
  const float split_lse =
      attention_decode(q, keys, values, 2, 2, {0, 1, 2}, 1.0f, Precision::fp32, split_out);
  CHECK(split_out[0] == 4.0f);
  CHECK(split_lse == doctest::Approx(lse));
}
