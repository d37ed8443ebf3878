#include "engine/model.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "numerics/batched_matmul.hpp"
#include "numerics/float_format.hpp"
#include "numerics/split_kv_attention.hpp"
#include "core/random.hpp"

namespace llmrepro::engine {

namespace {

constexpr float k_rms_eps = 1e-5f;
constexpr float k_unk_bias = -10.0f;

float bf16(float value) { return numerics::round_to(numerics::Precision::bf16, value); }

// Uniform values with the given standard deviation, rounded to bf16: weights are stored in the
// model's dtype.
std::vector<float> random_tensor(core::SplitMix64& rng, std::size_t count, float stddev) {
  std::vector<float> values(count);
  const double half_width = std::sqrt(3.0) * static_cast<double>(stddev);
  for (float& value : values)
    value = bf16(static_cast<float>((2.0 * rng.uniform() - 1.0) * half_width));
  return values;
}

// Norm gains near 1, so that the multiplication by the gain really rounds.
std::vector<float> random_gain(core::SplitMix64& rng, std::size_t count) {
  std::vector<float> values(count);
  for (float& value : values) value = bf16(static_cast<float>(0.9 + 0.2 * rng.uniform()));
  return values;
}

} // namespace

Model::Model(const ModelConfig& config)
    : m_config(config), m_vocabulary(Vocabulary::from_corpus()),
      m_prior(BigramPrior::from_corpus(m_vocabulary)) {
  const std::size_t d = config.d_model;
  const std::size_t v = m_vocabulary.size();
  core::SplitMix64 rng(config.seed);
  m_embedding = random_tensor(rng, v * d, 1.0f);
  // Sinusoidal positions at half the embedding's scale, computed once and stored in bf16.
  m_positions.resize(config.max_context * d);
  for (std::size_t p = 0; p < config.max_context; ++p)
    for (std::size_t i = 0; i < d; i += 2) {
      const double angle = static_cast<double>(p) /
                           std::pow(10000.0, static_cast<double>(i) / static_cast<double>(d));
      m_positions[p * d + i] = bf16(static_cast<float>(0.5 * std::sin(angle)));
      if (i + 1 < d) m_positions[p * d + i + 1] = bf16(static_cast<float>(0.5 * std::cos(angle)));
    }
  const float in_scale = 1.0f / std::sqrt(static_cast<float>(d));
  const float layer_scale = config.layer_gain * in_scale;
  const float ffn_scale = config.layer_gain / std::sqrt(static_cast<float>(config.d_ffn));
  for (std::size_t l = 0; l < config.n_layers; ++l) {
    Layer layer;
    layer.attn_norm = random_gain(rng, d);
    layer.wqkv = random_tensor(rng, d * 3 * d, layer_scale);
    layer.wo = random_tensor(rng, d * d, layer_scale);
    layer.ffn_norm = random_gain(rng, d);
    layer.w_up = random_tensor(rng, d * config.d_ffn, layer_scale);
    layer.w_down = random_tensor(rng, config.d_ffn * d, ffn_scale);
    m_layers.push_back(std::move(layer));
  }
  m_final_norm = random_gain(rng, d);
  m_unembedding = random_tensor(rng, d * v, config.output_scale * in_scale);
}

KvCache Model::make_cache(std::size_t capacity) const {
  KvCache cache;
  cache.keys.assign(m_config.n_layers, std::vector<float>(capacity * m_config.d_model, 0.0f));
  cache.values.assign(m_config.n_layers, std::vector<float>(capacity * m_config.d_model, 0.0f));
  return cache;
}

void Model::linear(const std::vector<float>& x, std::size_t rows, const std::vector<float>& w,
                   std::size_t k, std::size_t n, const KernelPolicy& policy, ThreadPool& pool,
                   std::vector<float>& out) const {
  out.resize(rows * n);
  const int splits = policy.matmul_splits(rows, n, k);
  constexpr std::size_t block = 64;
  const std::size_t blocks = (n + block - 1) / block;
  pool.parallel_for(blocks, [&](std::size_t b0, std::size_t b1) {
    if (b0 < b1)
      numerics::matmul_split_k(x.data(), rows, k, w.data(), n, splits,
                               numerics::SplitPartials::bf16, out.data(), b0 * block,
                               std::min(b1 * block, n));
  });
  numerics::round_bf16_inplace(out.data(), out.size());
}

void Model::forward(const std::vector<StepItem>& items, const KernelPolicy& policy,
                    ThreadPool& pool, std::vector<float>& hidden) const {
  const std::size_t d = m_config.d_model;
  const std::size_t heads = m_config.n_heads;
  const std::size_t head_dim = d / heads;
  const std::size_t ffn = m_config.d_ffn;

  // Which item and position each row of the step belongs to.
  std::vector<std::size_t> row_item;
  std::vector<std::size_t> row_pos;
  for (std::size_t i = 0; i < items.size(); ++i)
    for (std::size_t p = items[i].start; p < items[i].start + items[i].count; ++p) {
      row_item.push_back(i);
      row_pos.push_back(p);
    }
  const std::size_t rows = row_item.size();

  std::vector<float> x(rows * d);
  for (std::size_t r = 0; r < rows; ++r) {
    const auto token = static_cast<std::size_t>((*items[row_item[r]].tokens)[row_pos[r]]);
    for (std::size_t i = 0; i < d; ++i)
      x[r * d + i] = bf16(m_embedding[token * d + i] + m_positions[row_pos[r] * d + i]);
  }

  const numerics::RmsReduction rms = policy.rms_reduction(rows);
  auto norm_rows = [&](const std::vector<float>& in, const std::vector<float>& gain,
                       std::vector<float>& out) {
    out.resize(rows * d);
    pool.parallel_for(rows, [&](std::size_t r0, std::size_t r1) {
      for (std::size_t r = r0; r < r1; ++r)
        numerics::rms_norm_row(in.data() + r * d, gain.data(), d, k_rms_eps, rms,
                               out.data() + r * d);
    });
  };

  const float scale = m_config.attention_sharpness / std::sqrt(static_cast<float>(head_dim));
  std::vector<float> h, qkv, attn(rows * d), o, up, down;
  for (std::size_t l = 0; l < m_layers.size(); ++l) {
    const Layer& layer = m_layers[l];
    norm_rows(x, layer.attn_norm, h);
    linear(h, rows, layer.wqkv, d, 3 * d, policy, pool, qkv);
    // Every key and value of the step is cached before any row attends, so that the rows of
    // one prefill chunk see each other.
    for (std::size_t r = 0; r < rows; ++r) {
      KvCache& cache = *items[row_item[r]].cache;
      std::copy_n(qkv.begin() + static_cast<std::ptrdiff_t>(r * 3 * d + d), d,
                  cache.keys[l].begin() + static_cast<std::ptrdiff_t>(row_pos[r] * d));
      std::copy_n(qkv.begin() + static_cast<std::ptrdiff_t>(r * 3 * d + 2 * d), d,
                  cache.values[l].begin() + static_cast<std::ptrdiff_t>(row_pos[r] * d));
    }
    pool.parallel_for(rows * heads, [&](std::size_t t0, std::size_t t1) {
      for (std::size_t t = t0; t < t1; ++t) {
        const std::size_t r = t / heads;
        const std::size_t head = t % heads;
        const KvCache& cache = *items[row_item[r]].cache;
        const std::size_t length = row_pos[r] + 1;
        const int splits = policy.attention_splits(rows, heads, length);
        float* out = attn.data() + r * d + head * head_dim;
        numerics::attention_split_kv(
            qkv.data() + r * 3 * d + head * head_dim, cache.keys[l].data() + head * head_dim,
            cache.values[l].data() + head * head_dim, length, head_dim, d, scale, splits, out);
        numerics::round_bf16_inplace(out, head_dim);
      }
    });
    linear(attn, rows, layer.wo, d, d, policy, pool, o);
    for (std::size_t i = 0; i < rows * d; ++i) x[i] = bf16(x[i] + o[i]);

    norm_rows(x, layer.ffn_norm, h);
    linear(h, rows, layer.w_up, d, ffn, policy, pool, up);
    for (float& value : up) value = std::max(value, 0.0f);
    linear(up, rows, layer.w_down, ffn, d, policy, pool, down);
    for (std::size_t i = 0; i < rows * d; ++i) x[i] = bf16(x[i] + down[i]);
  }
  norm_rows(x, m_final_norm, hidden);
}

void Model::output_bias(const std::vector<int>& tokens, std::size_t length, float* bias) const {
  const std::size_t v = m_vocabulary.size();
  std::fill(bias, bias + v, -m_config.unseen_penalty);
  bias[Vocabulary::k_unk] = k_unk_bias;
  for (const auto& entry : m_prior.successors(tokens[length - 1]))
    bias[entry.next] = m_config.prior_scale * std::log1p(static_cast<float>(entry.count));
  // A word seen in the last few tokens is penalised once: without it, greedy decoding of a
  // bigram-shaped model loops on the most frequent pairs.
  std::vector<int> seen;
  const std::size_t from = length > m_config.repeat_window ? length - m_config.repeat_window : 0;
  for (std::size_t p = from; p < length; ++p) {
    const int token = tokens[p];
    if (token == Vocabulary::k_unk || m_vocabulary.is_punctuation(token)) continue;
    if (std::find(seen.begin(), seen.end(), token) != seen.end()) continue;
    seen.push_back(token);
    bias[token] -= m_config.repeat_penalty;
  }
}

std::vector<TokenChoice> Model::step(const std::vector<StepItem>& items, const KernelPolicy& policy,
                                     ThreadPool& pool,
                                     std::vector<std::vector<float>>* logits_out) const {
  const std::size_t d = m_config.d_model;
  const std::size_t v = m_vocabulary.size();
  std::vector<float> hidden;
  forward(items, policy, pool, hidden);

  // The last row of each item that wants a next token.
  std::vector<std::size_t> wanted;
  std::vector<float> selected;
  std::size_t row = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    row += items[i].count;
    if (!items[i].wants_logits) continue;
    wanted.push_back(i);
    selected.insert(selected.end(), hidden.begin() + static_cast<std::ptrdiff_t>((row - 1) * d),
                    hidden.begin() + static_cast<std::ptrdiff_t>(row * d));
  }
  const std::size_t rows = wanted.size();
  std::vector<float> sums(rows * v);
  const int splits = policy.matmul_splits(rows, v, d);
  constexpr std::size_t block = 64;
  pool.parallel_for((v + block - 1) / block, [&](std::size_t b0, std::size_t b1) {
    if (b0 < b1)
      numerics::matmul_split_k(selected.data(), rows, d, m_unembedding.data(), v, splits,
                               numerics::SplitPartials::bf16, sums.data(), b0 * block,
                               std::min(b1 * block, v));
  });

  std::vector<TokenChoice> choices(rows);
  if (logits_out != nullptr) logits_out->assign(rows, {});
  pool.parallel_for(rows, [&](std::size_t r0, std::size_t r1) {
    std::vector<float> bias(v);
    std::vector<int> order(v);
    for (std::size_t r = r0; r < r1; ++r) {
      const StepItem& item = items[wanted[r]];
      output_bias(*item.tokens, item.start + item.count, bias.data());
      float* logits = sums.data() + r * v;
      // The bias is the matmul's epilogue: added in fp32, then the logit is stored in bf16.
      for (std::size_t j = 0; j < v; ++j) logits[j] = bf16(logits[j] + bias[j]);
      // log_softmax in fp32 over the rounded logits, summed in vocabulary order.
      const float max = *std::max_element(logits, logits + v);
      float total = 0.0f;
      for (std::size_t j = 0; j < v; ++j) total += std::exp(logits[j] - max);
      const float log_normaliser = max + std::log(total);
      std::iota(order.begin(), order.end(), 0);
      const std::size_t top = std::min(k_top_candidates, v);
      std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(top),
                        order.end(), [&](int a, int b) {
                          const float la = logits[a];
                          const float lb = logits[b];
                          return la > lb || (la == lb && a < b);
                        });
      TokenChoice& choice = choices[r];
      for (std::size_t t = 0; t < top; ++t) {
        const int token = order[t];
        choice.top.push_back({token, logits[token] - log_normaliser});
      }
      choice.token = choice.top.front().token;
      choice.logprob = choice.top.front().logprob;
      if (logits_out != nullptr) (*logits_out)[r].assign(logits, logits + v);
    }
  });
  return choices;
}

std::vector<float> Model::embed(const std::vector<int>& tokens) const {
  const std::size_t d = m_config.d_model;
  std::vector<float> embedding(d, 0.0f);
  if (tokens.empty()) return embedding;
  const std::size_t length = std::min(tokens.size(), m_config.max_context);
  const std::vector<int> clipped(tokens.begin(),
                                 tokens.begin() + static_cast<std::ptrdiff_t>(length));
  KvCache cache = make_cache(length);
  const std::vector<StepItem> items{{&clipped, &cache, 0, length, false}};
  ThreadPool pool(1);
  std::vector<float> hidden;
  forward(items, KernelPolicy(true), pool, hidden);
  for (std::size_t r = 0; r < length; ++r)
    for (std::size_t i = 0; i < d; ++i) embedding[i] += hidden[r * d + i];
  float norm = 0.0f;
  for (float& value : embedding) {
    value /= static_cast<float>(length);
    norm += value * value;
  }
  norm = std::sqrt(norm);
  if (norm > 0.0f)
    for (float& value : embedding) value /= norm;
  return embedding;
}

} // namespace llmrepro::engine
