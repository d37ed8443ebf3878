#include <doctest/doctest.h>

#include "gpu/drift_metrics.hpp"

using namespace llmrepro;

TEST_CASE("compare_outputs") {
  // bf16 spacing at 1.0 is 2^-7, at 2.0 is 2^-6.
  const float reference[] = {1.0f, 1.0f, 2.0f, 2.0f, -1.0f};
  const float test[] = {1.0f, 1.0f + 0x1.0p-7f, 2.0f + 0x1.0p-5f, 2.0f + 0x1.0p-1f, 0.0f};
  const float reference_fp32[] = {1.0f, 1.0f, 2.0f, 2.0f, -1.0f};
  const float test_fp32[] = {1.0f, 1.0f, 2.0f, 2.0f, -1.0f + 0x1.0p-20f};
  const auto row = gpu::compare_outputs("v", {}, reference, test, 5, numerics::Precision::bf16,
                                        reference_fp32, test_fp32);
  CHECK(row.elements == 5);
  CHECK(row.changed_frac == doctest::Approx(0.8));
  CHECK(row.max_abs == 1.0);
  CHECK(row.max_ulp == 128.0); // |0 - (-1)| / 2^-7
  CHECK(row.ulp_histogram == std::array<std::int64_t, 5>{1, 1, 1, 0, 2});
  CHECK(row.fp32_changed_frac.value() == doctest::Approx(0.2));
  const auto without =
      gpu::compare_outputs("v", {}, reference, reference, 5, numerics::Precision::bf16);
  CHECK(without.changed_frac == 0.0);
  CHECK_FALSE(without.fp32_changed_frac.has_value());
}

TEST_CASE("output_digest") {
  const float a[] = {1.0f, 2.0f};
  const float b[] = {1.0f, 2.0000002f};
  const float c[] = {0.0f, 2.0f};
  const float d[] = {-0.0f, 2.0f};
  CHECK(gpu::output_digest(a, 2) == gpu::output_digest(a, 2));
  CHECK(gpu::output_digest(a, 2) != gpu::output_digest(b, 2));
  CHECK(gpu::output_digest(c, 2) != gpu::output_digest(d, 2)); // bits, not values
  // SHA-256 of the bytes 00 00 80 3f 00 00 00 40 (1.0f and 2.0f, little-endian).
  CHECK(gpu::output_digest(a, 2) ==
        "b9c80b5adeca450753a16950c3cc655d271f7bef7a485bc83f112b72fef21d37");
  CHECK(gpu::distinct_count({"c", "a", "c", "b", "a"}) == 3);
}
