#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "numerics/batched_matmul.hpp"
#include "numerics/float_format.hpp"
#include "numerics/reduction.hpp"
#include "numerics/rms_norm.hpp"
#include "numerics/split_kv_attention.hpp"
#include "core/random.hpp"

using namespace llmrepro;

namespace {

// bf16 values in [-scale, scale), as the engine's activations and weights are.
std::vector<float> bf16_values(std::uint64_t seed, std::size_t count, double scale = 1.0) {
  core::SplitMix64 rng(seed);
  std::vector<float> values(count);
  for (float& value : values)
    value = numerics::round_to(numerics::Precision::bf16,
                               static_cast<float>((2.0 * rng.uniform() - 1.0) * scale));
  return values;
}

std::size_t differing_bits(const std::vector<float>& a, const std::vector<float>& b) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    count += numerics::float_bits(a[i]) != numerics::float_bits(b[i]);
  return count;
}

} // namespace

TEST_CASE("matmul_split_k") {
  const std::size_t rows = 3, k = 192, n = 130;
  const auto x = bf16_values(1, rows * k);
  const auto w = bf16_values(2, k * n, 0.1);
  SUBCASE("each output is summed in the order of dot_split_k") {
    for (int splits : {1, 2, 3, 4, 8}) {
      std::vector<float> out(rows * n);
      numerics::matmul_split_k(x.data(), rows, k, w.data(), n, splits, out.data(), 0, n);
      std::vector<float> column(k);
      std::size_t mismatches = 0;
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t j = 0; j < n; ++j) {
          for (std::size_t i = 0; i < k; ++i) column[i] = w[i * n + j];
          const float expected = numerics::dot_split_k(x.data() + r * k, column.data(), k, splits);
          mismatches += numerics::float_bits(expected) != numerics::float_bits(out[r * n + j]);
        }
      CHECK_MESSAGE(mismatches == 0, "splits " << splits);
    }
  }
  SUBCASE("the split count changes fp32 bits, and some bf16 outputs") {
    std::vector<float> one(rows * n), four(rows * n);
    numerics::matmul_split_k(x.data(), rows, k, w.data(), n, 1, one.data(), 0, n);
    numerics::matmul_split_k(x.data(), rows, k, w.data(), n, 4, four.data(), 0, n);
    const std::size_t fp32_changed = differing_bits(one, four);
    CHECK(fp32_changed > rows * n / 4);
    // At a long K, a few outputs also change after rounding to bf16 (docs/gpu-probe.md §0: ~0.05%).
    const std::size_t long_k = 4096, many = 128;
    const auto big_x = bf16_values(3, many * long_k);
    const auto big_w = bf16_values(4, long_k * n, 0.05);
    std::vector<float> a(many * n), b(many * n);
    numerics::matmul_split_k(big_x.data(), many, long_k, big_w.data(), n, 1, a.data(), 0, n);
    numerics::matmul_split_k(big_x.data(), many, long_k, big_w.data(), n, 4, b.data(), 0, n);
    numerics::round_bf16_inplace(a.data(), a.size());
    numerics::round_bf16_inplace(b.data(), b.size());
    const std::size_t bf16_changed = differing_bits(a, b);
    CHECK(bf16_changed > 0);
    CHECK(bf16_changed < a.size() / 10);
  }
  SUBCASE("a row's result does not depend on the other rows at a fixed split count") {
    std::vector<float> alone(n), batched(rows * n);
    numerics::matmul_split_k(x.data() + k, 1, k, w.data(), n, 2, alone.data(), 0, n);
    numerics::matmul_split_k(x.data(), rows, k, w.data(), n, 2, batched.data(), 0, n);
    const std::vector<float> second(batched.begin() + static_cast<std::ptrdiff_t>(n),
                                    batched.begin() + static_cast<std::ptrdiff_t>(2 * n));
    CHECK(differing_bits(alone, second) == 0);
  }
  SUBCASE("column ranges compute the same bits as the whole") {
    std::vector<float> whole(rows * n), parts(rows * n);
    numerics::matmul_split_k(x.data(), rows, k, w.data(), n, 3, whole.data(), 0, n);
    numerics::matmul_split_k(x.data(), rows, k, w.data(), n, 3, parts.data(), 0, 64);
    numerics::matmul_split_k(x.data(), rows, k, w.data(), n, 3, parts.data(), 64, n);
    CHECK(differing_bits(whole, parts) == 0);
  }
}

TEST_CASE("matmul_split_k with bf16 partials") {
  const std::size_t rows = 4, k = 192, n = 130;
  const auto x = bf16_values(5, rows * k);
  const auto w = bf16_values(6, k * n, 0.1);
  SUBCASE("each output is the fp32 sum of its bf16-rounded chunk partials") {
    for (int splits : {2, 3, 8}) {
      std::vector<float> out(rows * n);
      numerics::matmul_split_k(x.data(), rows, k, w.data(), n, splits,
                               numerics::SplitPartials::bf16, out.data(), 0, n);
      const auto s = static_cast<std::size_t>(splits);
      std::size_t mismatches = 0;
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t j = 0; j < n; ++j) {
          float total = 0.0f;
          for (std::size_t c = 0; c < s; ++c) {
            float partial = 0.0f;
            for (std::size_t i = k * c / s; i < k * (c + 1) / s; ++i)
              partial += x[r * k + i] * w[i * n + j];
            total += numerics::round_to(numerics::Precision::bf16, partial);
          }
          mismatches += numerics::float_bits(total) != numerics::float_bits(out[r * n + j]);
        }
      CHECK_MESSAGE(mismatches == 0, "splits " << splits);
    }
  }
  SUBCASE("one split is the plain fp32 order") {
    std::vector<float> plain(rows * n), reduced(rows * n);
    numerics::matmul_split_k(x.data(), rows, k, w.data(), n, 1, plain.data(), 0, n);
    numerics::matmul_split_k(x.data(), rows, k, w.data(), n, 1, numerics::SplitPartials::bf16,
                             reduced.data(), 0, n);
    CHECK(differing_bits(plain, reduced) == 0);
  }
  SUBCASE("a split-count change is visible in many bf16 outputs, not only in rare ones") {
    std::vector<float> one(rows * n), two(rows * n);
    numerics::matmul_split_k(x.data(), rows, k, w.data(), n, 1, numerics::SplitPartials::bf16,
                             one.data(), 0, n);
    numerics::matmul_split_k(x.data(), rows, k, w.data(), n, 2, numerics::SplitPartials::bf16,
                             two.data(), 0, n);
    numerics::round_bf16_inplace(one.data(), one.size());
    numerics::round_bf16_inplace(two.data(), two.size());
    // Rounding each of two partials to 8 significant bits moves the sum by up to about one
    // bf16 step of the output, so a large share of outputs change (docs/gpu-probe.md §2.3: ~51%).
    CHECK(differing_bits(one, two) > rows * n / 10);
  }
}

TEST_CASE("round_bf16_inplace") {
  std::vector<float> values{numerics::float_from_bits(0x3F808000u),
                            numerics::float_from_bits(0x3F818000u),
                            numerics::float_from_bits(0x3F808001u)};
  numerics::round_bf16_inplace(values.data(), values.size());
  CHECK(numerics::float_bits(values[0]) == 0x3F800000u);
  CHECK(numerics::float_bits(values[1]) == 0x3F820000u);
  CHECK(numerics::float_bits(values[2]) == 0x3F810000u);
}

TEST_CASE("rms_norm_row") {
  const std::size_t d = 192;
  const auto gain = bf16_values(9, d, 1.0);
  SUBCASE("the reduction strategy changes inv_rms bits for some rows") {
    std::size_t changed = 0;
    std::vector<float> out(d);
    for (std::uint64_t seed = 0; seed < 200; ++seed) {
      const auto x = bf16_values(100 + seed, d, 3.0);
      const float sequential = numerics::rms_norm_row(
          x.data(), gain.data(), d, 1e-5f, {numerics::RmsReduction::Kind::split_k, 1}, out.data());
      const float tree =
          numerics::rms_norm_row(x.data(), gain.data(), d, 1e-5f,
                                 {numerics::RmsReduction::Kind::strided_tree, 64}, out.data());
      changed += numerics::float_bits(sequential) != numerics::float_bits(tree);
    }
    CHECK(changed > 10);
  }
  SUBCASE("outputs are bf16 values and match a direct computation") {
    const auto x = bf16_values(5, d, 2.0);
    std::vector<float> out(d);
    const float inv = numerics::rms_norm_row(
        x.data(), gain.data(), d, 1e-5f, {numerics::RmsReduction::Kind::split_k, 1}, out.data());
    for (std::size_t i = 0; i < d; ++i) {
      CHECK((numerics::float_bits(out[i]) & 0xFFFFu) == 0u);
      const float expected =
          numerics::round_to(numerics::Precision::bf16,
                             numerics::round_to(numerics::Precision::bf16, x[i] * inv) * gain[i]);
      CHECK(out[i] == expected);
    }
  }
}

TEST_CASE("attention_split_kv") {
  const std::size_t length = 100, head_dim = 48, stride = 192;
  const auto keys = bf16_values(11, length * stride);
  const auto values = bf16_values(12, length * stride);
  const auto q = bf16_values(13, head_dim, 2.0);
  std::vector<float> one(head_dim), four(head_dim), again(head_dim);
  numerics::attention_split_kv(q.data(), keys.data(), values.data(), length, head_dim, stride, 0.3f,
                               1, one.data());
  numerics::attention_split_kv(q.data(), keys.data(), values.data(), length, head_dim, stride, 0.3f,
                               4, four.data());
  numerics::attention_split_kv(q.data(), keys.data(), values.data(), length, head_dim, stride, 0.3f,
                               4, again.data());
  SUBCASE("the split count changes bits, a fixed count repeats them") {
    CHECK(differing_bits(one, four) > 0);
    CHECK(differing_bits(four, again) == 0);
  }
  SUBCASE("every split count computes the same attention up to rounding") {
    for (std::size_t d = 0; d < head_dim; ++d)
      CHECK(one[d] == doctest::Approx(four[d]).epsilon(1e-5));
  }
  SUBCASE("one position returns its value") {
    std::vector<float> out(head_dim);
    numerics::attention_split_kv(q.data(), keys.data(), values.data(), 1, head_dim, stride, 0.3f, 8,
                                 out.data());
    for (std::size_t d = 0; d < head_dim; ++d) CHECK(out[d] == values[d]);
  }
}
