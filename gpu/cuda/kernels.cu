// The probe's reference kernels. Built with --fmad=false: every a * b + c below is a rounded
// multiply then a rounded add, exactly as the host emulation (compiled with -ffp-contract=off)
// computes it, so the same order gives the same bits on CPU and GPU (experiment E0).
#include <cuda_runtime.h>

#include "gpu/cuda/kernels.hpp"

namespace llmrepro::gpu::cuda {

namespace {

constexpr int k_tile = 16;
constexpr int k_depth = 32;

// Each thread owns one output and walks K from 0 to k-1 through shared-memory tiles, so the
// summation order is the plain sequential one whatever m is.
__global__ void fixed_order_gemm(const float* x, const float* w, float* out, int m, int n, int k) {
  __shared__ float x_tile[k_tile][k_depth + 1];
  __shared__ float w_tile[k_tile][k_depth + 1];
  const int row = blockIdx.y * k_tile + threadIdx.y;
  const int col = blockIdx.x * k_tile + threadIdx.x;
  const int thread = threadIdx.y * k_tile + threadIdx.x;
  float partial = 0.0f;
  for (int base = 0; base < k; base += k_depth) {
    // 256 threads load two 16 x 32 tiles: two elements of each per thread.
    for (int e = thread; e < k_tile * k_depth; e += k_tile * k_tile) {
      const int r = e / k_depth;
      const int c = e % k_depth;
      const int xr = blockIdx.y * k_tile + r;
      const int wr = blockIdx.x * k_tile + r;
      x_tile[r][c] = (xr < m && base + c < k) ? x[static_cast<long long>(xr) * k + base + c] : 0.0f;
      w_tile[r][c] = (wr < n && base + c < k) ? w[static_cast<long long>(wr) * k + base + c] : 0.0f;
    }
    __syncthreads();
    const int depth = min(k_depth, k - base);
    for (int c = 0; c < depth; ++c)
      partial = partial + x_tile[threadIdx.y][c] * w_tile[threadIdx.x][c];
    __syncthreads();
  }
  if (row < m && col < n) {
    float total = 0.0f;
    total = total + partial;
    out[static_cast<long long>(row) * n + col] = total;
  }
}

__device__ float chunk_sum(const float* a, const float* b, long long begin, long long end) {
  float partial = 0.0f;
  for (long long i = begin; i < end; ++i) partial = partial + a[i] * b[i];
  return partial;
}

__global__ void split_k_gemm(const float* x, const float* w, float* out, int m, int n, int k,
                             int splits) {
  const long long index = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= static_cast<long long>(m) * n) return;
  const long long row = index / n;
  const long long col = index % n;
  const float* a = x + row * k;
  const float* b = w + col * k;
  const long long s = splits < 1 ? 1 : splits;
  float total = 0.0f;
  for (long long c = 0; c < s; ++c) total = total + chunk_sum(a, b, k * c / s, k * (c + 1) / s);
  out[index] = total;
}

__global__ void atomic_split_k(const float* x, const float* w, float* out, int n, int k,
                               int splits) {
  const long long index = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= static_cast<long long>(n) * splits) return;
  const long long col = index / splits;
  const long long c = index % splits;
  const float partial = chunk_sum(x, w + col * k, k * c / splits, k * (c + 1) / splits);
  atomicAdd(out + col, partial);
}

} // namespace

int launch_fixed_order_gemm(const float* x, const float* w, float* out, int m, int n, int k) {
  const dim3 block(k_tile, k_tile);
  const dim3 grid((n + k_tile - 1) / k_tile, (m + k_tile - 1) / k_tile);
  fixed_order_gemm<<<grid, block>>>(x, w, out, m, n, k);
  return static_cast<int>(cudaGetLastError());
}

int launch_split_k_gemm(const float* x, const float* w, float* out, int m, int n, int k,
                        int splits) {
  const long long total = static_cast<long long>(m) * n;
  const int threads = 128;
  split_k_gemm<<<static_cast<unsigned>((total + threads - 1) / threads), threads>>>(x, w, out, m, n,
                                                                                    k, splits);
  return static_cast<int>(cudaGetLastError());
}

int launch_atomic_split_k(const float* x, const float* w, float* out, int n, int k, int splits) {
  cudaError_t status = cudaMemset(out, 0, sizeof(float) * static_cast<size_t>(n));
  if (status != cudaSuccess) return static_cast<int>(status);
  const long long total = static_cast<long long>(n) * splits;
  const int threads = 128;
  atomic_split_k<<<static_cast<unsigned>((total + threads - 1) / threads), threads>>>(x, w, out, n,
                                                                                      k, splits);
  return static_cast<int>(cudaGetLastError());
}

} // namespace llmrepro::gpu::cuda
