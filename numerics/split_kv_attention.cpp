#include "numerics/split_kv_attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace llmrepro::numerics {

void attention_split_kv(const float* q, const float* keys, const float* values, std::size_t length,
                        std::size_t head_dim, std::size_t stride, float scale, int splits,
                        float* out) {
  std::fill(out, out + head_dim, 0.0f);
  if (length == 0) return;
  std::size_t s = splits < 1 ? 1 : static_cast<std::size_t>(splits);
  s = std::min(s, length);

  std::vector<float> scores(length);
  for (std::size_t i = 0; i < length; ++i) {
    const float* key = keys + i * stride;
    float dot = 0.0f;
    for (std::size_t d = 0; d < head_dim; ++d) dot += q[d] * key[d];
    scores[i] = dot * scale;
  }

  std::vector<float> chunk_max(s);
  std::vector<float> chunk_sum(s);
  std::vector<float> chunk_acc(s * head_dim, 0.0f);
  for (std::size_t c = 0; c < s; ++c) {
    const std::size_t begin = length * c / s;
    const std::size_t end = length * (c + 1) / s;
    float m = -std::numeric_limits<float>::infinity();
    for (std::size_t i = begin; i < end; ++i) m = std::max(m, scores[i]);
    float l = 0.0f;
    float* acc = chunk_acc.data() + c * head_dim;
    for (std::size_t i = begin; i < end; ++i) {
      const float p = std::exp(scores[i] - m);
      l += p;
      const float* value = values + i * stride;
      for (std::size_t d = 0; d < head_dim; ++d) acc[d] += p * value[d];
    }
    chunk_max[c] = m;
    chunk_sum[c] = l;
  }

  float global_max = chunk_max[0];
  for (std::size_t c = 1; c < s; ++c) global_max = std::max(global_max, chunk_max[c]);
  float denominator = 0.0f;
  for (std::size_t c = 0; c < s; ++c) {
    const float factor = std::exp(chunk_max[c] - global_max);
    denominator += chunk_sum[c] * factor;
    const float* acc = chunk_acc.data() + c * head_dim;
    for (std::size_t d = 0; d < head_dim; ++d) out[d] += acc[d] * factor;
  }
  for (std::size_t d = 0; d < head_dim; ++d) out[d] /= denominator;
}

} // namespace llmrepro::numerics
