#include "numerics/batched_matmul.hpp"

#include <algorithm>
#include <array>

#include "numerics/float_format.hpp"

namespace llmrepro::numerics {

namespace {

// Columns computed together: wide enough for the compiler to vectorise across columns (which
// never reorders any single column's sum), small enough to stay in registers.
constexpr std::size_t k_column_block = 64;

} // namespace

void matmul_split_k(const float* x, std::size_t rows, std::size_t k, const float* w, std::size_t n,
                    int splits, float* out, std::size_t col_begin, std::size_t col_end) {
  matmul_split_k(x, rows, k, w, n, splits, SplitPartials::fp32, out, col_begin, col_end);
}

void matmul_split_k(const float* x, std::size_t rows, std::size_t k, const float* w, std::size_t n,
                    int splits, SplitPartials partials, float* out, std::size_t col_begin,
                    std::size_t col_end) {
  const std::size_t s = splits < 1 ? 1 : static_cast<std::size_t>(splits);
  const bool round_partials = partials == SplitPartials::bf16 && s > 1;
  std::array<float, k_column_block> partial{};
  std::array<float, k_column_block> total{};
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * k;
    for (std::size_t j0 = col_begin; j0 < col_end; j0 += k_column_block) {
      const std::size_t width = std::min(k_column_block, col_end - j0);
      std::fill(total.begin(), total.end(), 0.0f);
      for (std::size_t c = 0; c < s; ++c) {
        // Chunk bounds as in numerics::dot_split_k: sizes differ by at most one.
        const std::size_t begin = k * c / s;
        const std::size_t end = k * (c + 1) / s;
        std::fill(partial.begin(), partial.end(), 0.0f);
        if (width == k_column_block) {
          // A constant trip count lets the compiler vectorise across the columns.
          for (std::size_t i = begin; i < end; ++i) {
            const float xi = xr[i];
            const float* wi = w + i * n + j0;
            for (std::size_t j = 0; j < k_column_block; ++j) partial[j] += xi * wi[j];
          }
        } else {
          for (std::size_t i = begin; i < end; ++i) {
            const float xi = xr[i];
            const float* wi = w + i * n + j0;
            for (std::size_t j = 0; j < width; ++j) partial[j] += xi * wi[j];
          }
        }
        if (round_partials)
          for (std::size_t j = 0; j < width; ++j)
            partial[j] = round_to(Precision::bf16, partial[j]);
        for (std::size_t j = 0; j < width; ++j) total[j] += partial[j];
      }
      std::copy(total.begin(), total.begin() + static_cast<std::ptrdiff_t>(width),
                out + r * n + j0);
    }
  }
}

void round_bf16_inplace(float* v, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) v[i] = round_to(Precision::bf16, v[i]);
}

} // namespace llmrepro::numerics
