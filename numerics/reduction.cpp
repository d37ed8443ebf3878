#include "numerics/reduction.hpp"

#include <vector>

namespace llmrepro::numerics {

namespace {

// Bounds of chunk c of `splits` contiguous chunks over n items (sizes differ by at most one).
std::size_t chunk_begin(std::size_t n, std::size_t splits, std::size_t c) { return n * c / splits; }

} // namespace

float dot_split_k(const float* a, const float* b, std::size_t n, int splits) {
  const std::size_t s = splits < 1 ? 1 : static_cast<std::size_t>(splits);
  float total = 0.0f;
  for (std::size_t c = 0; c < s; ++c) {
    float partial = 0.0f;
    const std::size_t end = chunk_begin(n, s, c + 1);
    for (std::size_t i = chunk_begin(n, s, c); i < end; ++i) partial += a[i] * b[i];
    total += partial;
  }
  return total;
}

float sum_split_k(const float* x, std::size_t n, int splits) {
  const std::size_t s = splits < 1 ? 1 : static_cast<std::size_t>(splits);
  float total = 0.0f;
  for (std::size_t c = 0; c < s; ++c) {
    float partial = 0.0f;
    const std::size_t end = chunk_begin(n, s, c + 1);
    for (std::size_t i = chunk_begin(n, s, c); i < end; ++i) partial += x[i];
    total += partial;
  }
  return total;
}

float sum_strided_tree(const float* x, std::size_t n, int lanes) {
  const std::size_t width = lanes < 1 ? 1 : static_cast<std::size_t>(lanes);
  std::vector<float> partial(width, 0.0f);
  for (std::size_t i = 0; i < n; ++i) partial[i % width] += x[i];
  for (std::size_t half = width / 2; half >= 1; half /= 2) {
    for (std::size_t j = 0; j < half; ++j) partial[j] += partial[j + half];
    if (half == 1) break;
  }
  return partial[0];
}

} // namespace llmrepro::numerics
