#include "numerics/reduction_schemes.hpp"

#include <cmath>
#include <limits>

#include "numerics/portable_math.hpp"
#include "numerics/reduction.hpp"

namespace llmrepro::numerics {

void dot_chunk_partials(const float* a, const float* b, std::size_t n, int splits,
                        float* partials) {
  const std::size_t s = splits < 1 ? 1 : static_cast<std::size_t>(splits);
  for (std::size_t c = 0; c < s; ++c) {
    float partial = 0.0f;
    const std::size_t end = n * (c + 1) / s;
    for (std::size_t i = n * c / s; i < end; ++i) partial += a[i] * b[i];
    partials[c] = partial;
  }
}

const char* to_string(PartialScheme scheme) {
  switch (scheme) {
  case PartialScheme::compute_type: return "compute_type";
  case PartialScheme::output_type: return "output_type";
  case PartialScheme::inplace: return "inplace";
  }
  return "compute_type";
}

float combine_partials(const float* partials, std::size_t count, PartialScheme scheme,
                       Precision precision) {
  float total = 0.0f;
  for (std::size_t c = 0; c < count; ++c) {
    switch (scheme) {
    case PartialScheme::compute_type: total += partials[c]; break;
    case PartialScheme::output_type: total += round_to(precision, partials[c]); break;
    case PartialScheme::inplace: total = round_to(precision, total + partials[c]); break;
    }
  }
  return round_to(precision, total);
}

float sum_in_order(const float* values, const std::size_t* order, std::size_t n, bool round_each,
                   Precision precision) {
  float total = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    total += values[order[i]];
    if (round_each) total = round_to(precision, total);
  }
  return total;
}

float rmsnorm_row(const float* x, const float* weight, std::size_t n, RowReduction order, float eps,
                  Precision precision, float* out) {
  std::vector<float> squares(n);
  for (std::size_t i = 0; i < n; ++i) squares[i] = x[i] * x[i];
  const std::size_t splits = order.row_splits < 1 ? 1 : static_cast<std::size_t>(order.row_splits);
  float sum = 0.0f;
  for (std::size_t c = 0; c < splits; ++c) {
    const std::size_t begin = n * c / splits;
    const std::size_t end = n * (c + 1) / splits;
    sum += sum_strided_tree(squares.data() + begin, end - begin, order.lanes);
  }
  const float inv_rms = 1.0f / std::sqrt(sum / static_cast<float>(n) + eps);
  for (std::size_t i = 0; i < n; ++i) out[i] = round_to(precision, (x[i] * inv_rms) * weight[i]);
  return inv_rms;
}

float attention_decode(const float* q, const float* keys, const float* values, std::size_t length,
                       std::size_t head_dim, const std::vector<std::size_t>& bounds, float scale,
                       Precision precision, float* out) {
  std::vector<float> scores(length);
  for (std::size_t j = 0; j < length; ++j) {
    float dot = 0.0f;
    for (std::size_t d = 0; d < head_dim; ++d) dot += q[d] * keys[j * head_dim + d];
    scores[j] = dot * scale;
  }
  const std::size_t splits = bounds.size() < 2 ? 0 : bounds.size() - 1;
  std::vector<float> split_max(splits, -std::numeric_limits<float>::infinity());
  std::vector<float> split_sum(splits, 0.0f);
  std::vector<float> split_out(splits * head_dim, 0.0f);
  for (std::size_t s = 0; s < splits; ++s) {
    for (std::size_t j = bounds[s]; j < bounds[s + 1]; ++j)
      if (scores[j] > split_max[s]) split_max[s] = scores[j];
    float* o = split_out.data() + s * head_dim;
    for (std::size_t j = bounds[s]; j < bounds[s + 1]; ++j) {
      const float p = portable_exp(scores[j] - split_max[s]);
      split_sum[s] += p;
      for (std::size_t d = 0; d < head_dim; ++d) o[d] += p * values[j * head_dim + d];
    }
  }
  float global_max = -std::numeric_limits<float>::infinity();
  for (std::size_t s = 0; s < splits; ++s)
    if (split_max[s] > global_max) global_max = split_max[s];
  float total = 0.0f;
  std::vector<float> acc(head_dim, 0.0f);
  for (std::size_t s = 0; s < splits; ++s) {
    const float factor = portable_exp(split_max[s] - global_max);
    total += split_sum[s] * factor;
    for (std::size_t d = 0; d < head_dim; ++d) acc[d] += split_out[s * head_dim + d] * factor;
  }
  for (std::size_t d = 0; d < head_dim; ++d) out[d] = round_to(precision, acc[d] / total);
  return global_max + portable_log(total);
}

} // namespace llmrepro::numerics
