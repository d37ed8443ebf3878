// Host-callable launchers of the device kernels behind E2, E4, E5 and E6 (probe_kernels.cu,
// compiled with --fmad=false). Each kernel adds in exactly the order of its CPU counterpart in
// numerics/reduction_schemes.hpp and numerics/reduction.hpp, so the same order gives the
// same bits. All pointers are device memory; fp32 arrays hold values already exact in the dtype.
// Codes: precision 0 = bf16, 1 = fp16, 2 = fp32 (numerics::Precision); scheme 0 = compute_type,
// 1 = output_type, 2 = inplace (numerics::PartialScheme). Launchers run on the default stream and
// return a cudaError_t as int (0 = ok), so this header needs no CUDA header.
#pragma once

namespace llmrepro::gpu::cuda {

// partials[j*splits + c] = chunk c of dot(x, w row j) (numerics::dot_chunk_partials): one thread
// per (output, chunk), as split-K CTAs each own a slice of K.
int launch_split_k_partials(const float* x, const float* w, float* partials, int n, int k,
                            int splits);

// out[j] = numerics::combine_partials(partials of j, scheme, precision) and out_fp32[j] the same
// with fp32: the second (workspace) pass of split-K, one thread per output.
int launch_combine_partials(const float* partials, float* out, float* out_fp32, int n, int splits,
                            int scheme, int precision);

// RMSNorm of `rows` rows with the fused residual add: summed = round(x + residual) (written to
// `summed`), then numerics::rmsnorm_row with RowReduction{lanes, row_splits} and fp32 output.
// Pass 1: one CTA of `lanes` threads per (row, chunk), strided partials and a halving tree in
// shared memory, chunk sums to `chunk_sums` (rows x row_splits). Pass 2: one CTA per row adds
// the chunk sums left to right, writes inv_rms[row] and out (rows x hidden).
// lanes: a power of two <= 1024.
int launch_rmsnorm(const float* x, const float* residual, const float* weight, float* summed,
                   float* chunk_sums, float* out, float* inv_rms, int rows, int hidden, int lanes,
                   int row_splits, float eps, int precision);

// Decode attention for every query head (GQA: head h reads KV head h / (query_heads / kv_heads))
// as numerics::attention_decode with fp32 output: one CTA of head_dim threads per (head, split)
// computes scores, the split max, sum and weighted values; one CTA per head combines the splits
// left to right and writes out (query_heads x head_dim) and lse (query_heads).
// bounds: splits + 1 key positions. Scratch: scores (query_heads x length), split_max and
// split_sum (query_heads x splits), split_out (query_heads x splits x head_dim).
int launch_attention_decode(const float* q, const float* keys, const float* values,
                            const long long* bounds, int splits, float* scores, float* split_max,
                            float* split_sum, float* split_out, float* out, float* lse,
                            int query_heads, int kv_heads, int length, int head_dim, float scale);

// E6's logits, one thread per step: for candidates c = 0, 1, raw_a = dot(hidden, w_c) in one
// split, raw_b = dot(perturbed, w_c) in four (numerics::dot_split_k), bias = target_c - raw_a,
// logit = round(raw + bias) to `precision`; argmax with the first-index tie rule.
// hidden, perturbed: steps x k; weights: steps x 2 x k; targets, logit_a, logit_b: steps x 2.
int launch_flip_logits(const float* hidden, const float* perturbed, const float* weights,
                       const float* targets, float* logit_a, float* logit_b,
                       unsigned char* argmax_a, unsigned char* argmax_b, int steps, int k,
                       int precision);

} // namespace llmrepro::gpu::cuda
