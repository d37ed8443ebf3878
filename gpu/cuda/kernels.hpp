// Host-callable launchers of the probe's reference kernels (kernels.cu, compiled with
// --fmad=false). Every array is device memory of fp32 values that already hold dtype-rounded
// inputs; every launcher runs on the default stream and returns a cudaError_t as int (0 = ok),
// so this header needs no CUDA header.
#pragma once

namespace llmrepro::gpu::cuda {

// out[r*n + j] = sum over i of x[r*k + i] * w[j*k + i], each output summed left to right in
// K order (numerics::dot_split_k with one split), in shared-memory tiles. The order never depends
// on m: the probe's batch-invariant kernel.
int launch_fixed_order_gemm(const float* x, const float* w, float* out, int m, int n, int k);

// The same product with each output summed as numerics::dot_split_k(…, splits): one thread per
// output, chunk partials left to right, then the partials left to right.
int launch_split_k_gemm(const float* x, const float* w, float* out, int m, int n, int k,
                        int splits);

// Row 0 of x against n weight rows with `splits` chunk partials per output, each added to
// out[j] (zeroed first) with atomicAdd in whatever order the hardware lands them.
int launch_atomic_split_k(const float* x, const float* w, float* out, int n, int k, int splits);

} // namespace llmrepro::gpu::cuda
