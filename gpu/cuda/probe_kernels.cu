// The device side of E2, E4, E5 and E6. Built with --fmad=false and IEEE division and square
// root (the nvcc defaults): every a * b + c is a rounded multiply then a rounded add, as the
// host emulation (-ffp-contract=off) computes it; exp and log are portable_exp and portable_log
// (numerics/portable_math.hpp), shared with the host. Comments name the CPU function each
// kernel mirrors.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "numerics/portable_math.hpp"
#include "gpu/cuda/probe_kernels.hpp"

namespace llmrepro::gpu::cuda {

namespace {

constexpr int k_precision_fp16 = 1;
constexpr int k_precision_fp32 = 2;
constexpr int k_scheme_output_type = 1;
constexpr int k_scheme_inplace = 2;

// numerics::round_to: bf16 by round-to-nearest-even on the bits, fp16 by the hardware conversion.
__device__ float round_to(float value, int precision) {
  if (precision == k_precision_fp32) return value;
  if (precision == k_precision_fp16) return __half2float(__float2half_rn(value));
  unsigned int bits = __float_as_uint(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return __uint_as_float(0x7FC00000u);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return __uint_as_float(bits & 0xFFFF0000u);
}

// Chunk bounds of numerics::dot_split_k: n * c / splits.
__device__ long long chunk_bound(long long n, long long splits, long long c) {
  return n * c / splits;
}

__device__ float dot_range(const float* a, const float* b, long long begin, long long end) {
  float partial = 0.0f;
  for (long long i = begin; i < end; ++i) partial = partial + a[i] * b[i];
  return partial;
}

// numerics::dot_split_k.
__device__ float dot_split(const float* a, const float* b, long long n, long long splits) {
  float total = 0.0f;
  for (long long c = 0; c < splits; ++c)
    total = total + dot_range(a, b, chunk_bound(n, splits, c), chunk_bound(n, splits, c + 1));
  return total;
}

__global__ void split_k_partials(const float* x, const float* w, float* partials, int n, int k,
                                 int splits) {
  const long long index = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= static_cast<long long>(n) * splits) return;
  const long long j = index / splits;
  const long long c = index % splits;
  partials[index] =
      dot_range(x, w + j * k, chunk_bound(k, splits, c), chunk_bound(k, splits, c + 1));
}

// numerics::combine_partials.
__device__ float combine(const float* partials, int count, int scheme, int precision) {
  float total = 0.0f;
  for (int c = 0; c < count; ++c) {
    if (scheme == k_scheme_output_type)
      total = total + round_to(partials[c], precision);
    else if (scheme == k_scheme_inplace)
      total = round_to(total + partials[c], precision);
    else
      total = total + partials[c];
  }
  return round_to(total, precision);
}

__global__ void combine_partials(const float* partials, float* out, float* out_fp32, int n,
                                 int splits, int scheme, int precision) {
  const int j = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (j >= n) return;
  const float* own = partials + static_cast<long long>(j) * splits;
  out[j] = combine(own, splits, scheme, precision);
  out_fp32[j] = combine(own, splits, scheme, k_precision_fp32);
}

// Pass 1 of numerics::rmsnorm_row: numerics::sum_strided_tree over one chunk of one row.
__global__ void rmsnorm_chunks(const float* x, const float* residual, float* summed,
                               float* chunk_sums, int hidden, int row_splits, int precision) {
  __shared__ float partial[1024];
  const int lanes = static_cast<int>(blockDim.x);
  const int lane = static_cast<int>(threadIdx.x);
  const long long row = blockIdx.x;
  const int c = static_cast<int>(blockIdx.y);
  const long long begin = chunk_bound(hidden, row_splits, c);
  const long long end = chunk_bound(hidden, row_splits, c + 1);
  const long long base = row * hidden;
  float own = 0.0f;
  for (long long i = begin + lane; i < end; i += lanes) {
    const float value = round_to(x[base + i] + residual[base + i], precision);
    summed[base + i] = value;
    own = own + value * value;
  }
  partial[lane] = own;
  __syncthreads();
  for (int half = lanes / 2; half >= 1; half /= 2) {
    if (lane < half) partial[lane] = partial[lane] + partial[lane + half];
    __syncthreads();
  }
  if (lane == 0) chunk_sums[row * row_splits + c] = partial[0];
}

// Pass 2: chunk sums left to right, inv_rms, then (x * inv_rms) * weight.
__global__ void rmsnorm_apply(const float* summed, const float* weight, const float* chunk_sums,
                              float* out, float* inv_rms, int hidden, int row_splits, float eps) {
  __shared__ float shared_inv;
  const long long row = blockIdx.x;
  if (threadIdx.x == 0) {
    float sum = 0.0f;
    for (int c = 0; c < row_splits; ++c) sum = sum + chunk_sums[row * row_splits + c];
    const float inv = 1.0f / sqrtf(sum / static_cast<float>(hidden) + eps);
    inv_rms[row] = inv;
    shared_inv = inv;
  }
  __syncthreads();
  const float inv = shared_inv;
  const long long base = row * hidden;
  for (long long i = threadIdx.x; i < hidden; i += blockDim.x)
    out[base + i] = (summed[base + i] * inv) * weight[i];
}

// One split of numerics::attention_decode for one query head.
__global__ void attention_split(const float* q, const float* keys, const float* values,
                                const long long* bounds, int splits, float* scores,
                                float* split_max, float* split_sum, float* split_out,
                                int query_heads, int kv_heads, int length, int head_dim,
                                float scale) {
  __shared__ float shared_max;
  const int h = static_cast<int>(blockIdx.x);
  const int s = static_cast<int>(blockIdx.y);
  const int t = static_cast<int>(threadIdx.x);
  const int kv = h / (query_heads / kv_heads);
  const float* query = q + static_cast<long long>(h) * head_dim;
  const float* k_head = keys + static_cast<long long>(kv) * length * head_dim;
  const float* v_head = values + static_cast<long long>(kv) * length * head_dim;
  float* own_scores = scores + static_cast<long long>(h) * length;
  const long long begin = bounds[s];
  const long long end = bounds[s + 1];
  for (long long j = begin + t; j < end; j += blockDim.x) {
    float dot = 0.0f;
    for (int d = 0; d < head_dim; ++d) dot = dot + query[d] * k_head[j * head_dim + d];
    own_scores[j] = dot * scale;
  }
  __syncthreads();
  if (t == 0) {
    float m = -__int_as_float(0x7F800000);
    for (long long j = begin; j < end; ++j)
      if (own_scores[j] > m) m = own_scores[j];
    shared_max = m;
  }
  __syncthreads();
  const float m = shared_max;
  // Scores become weights p_j = exp(s_j - m) in place.
  for (long long j = begin + t; j < end; j += blockDim.x)
    own_scores[j] = numerics::portable_exp(own_scores[j] - m);
  __syncthreads();
  const long long slot = static_cast<long long>(h) * splits + s;
  if (t == 0) {
    float l = 0.0f;
    for (long long j = begin; j < end; ++j) l = l + own_scores[j];
    split_sum[slot] = l;
    split_max[slot] = m;
  }
  if (t < head_dim) {
    float o = 0.0f;
    for (long long j = begin; j < end; ++j) o = o + own_scores[j] * v_head[j * head_dim + t];
    split_out[slot * head_dim + t] = o;
  }
}

// The combine of numerics::attention_decode: every thread derives the same global max, factors and
// total, then divides its own dimension.
__global__ void attention_combine(const float* split_max, const float* split_sum,
                                  const float* split_out, float* out, float* lse, int splits,
                                  int head_dim) {
  const long long h = blockIdx.x;
  const int d = static_cast<int>(threadIdx.x);
  float global_max = -__int_as_float(0x7F800000);
  for (int s = 0; s < splits; ++s)
    if (split_max[h * splits + s] > global_max) global_max = split_max[h * splits + s];
  float total = 0.0f;
  float acc = 0.0f;
  for (int s = 0; s < splits; ++s) {
    const float factor = numerics::portable_exp(split_max[h * splits + s] - global_max);
    total = total + split_sum[h * splits + s] * factor;
    if (d < head_dim) acc = acc + split_out[(h * splits + s) * head_dim + d] * factor;
  }
  if (d < head_dim) out[h * head_dim + d] = acc / total;
  if (d == 0) lse[h] = global_max + numerics::portable_log(total);
}

__global__ void flip_logits(const float* hidden, const float* perturbed, const float* weights,
                            const float* targets, float* logit_a, float* logit_b,
                            unsigned char* argmax_a, unsigned char* argmax_b, int steps, int k,
                            int precision) {
  const long long step = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (step >= steps) return;
  const float* h = hidden + step * k;
  const float* p = perturbed + step * k;
  float a[2];
  float b[2];
  for (int c = 0; c < 2; ++c) {
    const float* w = weights + (2 * step + c) * k;
    const float raw_a = dot_split(h, w, k, 1);
    const float raw_b = dot_split(p, w, k, 4);
    const float bias = targets[2 * step + c] - raw_a;
    a[c] = round_to(raw_a + bias, precision);
    b[c] = round_to(raw_b + bias, precision);
    logit_a[2 * step + c] = a[c];
    logit_b[2 * step + c] = b[c];
  }
  argmax_a[step] = a[1] > a[0] ? 1 : 0;
  argmax_b[step] = b[1] > b[0] ? 1 : 0;
}

unsigned blocks_for(long long total, int threads) {
  return static_cast<unsigned>((total + threads - 1) / threads);
}

} // namespace

int launch_split_k_partials(const float* x, const float* w, float* partials, int n, int k,
                            int splits) {
  const int threads = 128;
  split_k_partials<<<blocks_for(static_cast<long long>(n) * splits, threads), threads>>>(
      x, w, partials, n, k, splits);
  return static_cast<int>(cudaGetLastError());
}

int launch_combine_partials(const float* partials, float* out, float* out_fp32, int n, int splits,
                            int scheme, int precision) {
  const int threads = 128;
  combine_partials<<<blocks_for(n, threads), threads>>>(partials, out, out_fp32, n, splits, scheme,
                                                        precision);
  return static_cast<int>(cudaGetLastError());
}

int launch_rmsnorm(const float* x, const float* residual, const float* weight, float* summed,
                   float* chunk_sums, float* out, float* inv_rms, int rows, int hidden, int lanes,
                   int row_splits, float eps, int precision) {
  if (lanes < 1 || lanes > 1024 || (lanes & (lanes - 1)) != 0 || row_splits < 1)
    return static_cast<int>(cudaErrorInvalidValue);
  rmsnorm_chunks<<<dim3(static_cast<unsigned>(rows), static_cast<unsigned>(row_splits)),
                   static_cast<unsigned>(lanes)>>>(x, residual, summed, chunk_sums, hidden,
                                                   row_splits, precision);
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) return static_cast<int>(status);
  rmsnorm_apply<<<static_cast<unsigned>(rows), 256>>>(summed, weight, chunk_sums, out, inv_rms,
                                                      hidden, row_splits, eps);
  return static_cast<int>(cudaGetLastError());
}

int launch_attention_decode(const float* q, const float* keys, const float* values,
                            const long long* bounds, int splits, float* scores, float* split_max,
                            float* split_sum, float* split_out, float* out, float* lse,
                            int query_heads, int kv_heads, int length, int head_dim, float scale) {
  if (head_dim < 1 || head_dim > 1024 || splits < 1 || kv_heads < 1 || query_heads % kv_heads != 0)
    return static_cast<int>(cudaErrorInvalidValue);
  attention_split<<<dim3(static_cast<unsigned>(query_heads), static_cast<unsigned>(splits)),
                    static_cast<unsigned>(head_dim)>>>(q, keys, values, bounds, splits, scores,
                                                       split_max, split_sum, split_out, query_heads,
                                                       kv_heads, length, head_dim, scale);
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) return static_cast<int>(status);
  attention_combine<<<static_cast<unsigned>(query_heads), static_cast<unsigned>(head_dim)>>>(
      split_max, split_sum, split_out, out, lse, splits, head_dim);
  return static_cast<int>(cudaGetLastError());
}

int launch_flip_logits(const float* hidden, const float* perturbed, const float* weights,
                       const float* targets, float* logit_a, float* logit_b,
                       unsigned char* argmax_a, unsigned char* argmax_b, int steps, int k,
                       int precision) {
  const int threads = 128;
  flip_logits<<<blocks_for(steps, threads), threads>>>(hidden, perturbed, weights, targets, logit_a,
                                                       logit_b, argmax_a, argmax_b, steps, k,
                                                       precision);
  return static_cast<int>(cudaGetLastError());
}

} // namespace llmrepro::gpu::cuda
