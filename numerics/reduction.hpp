// Reduction orders, written out explicitly: the mechanism of batch-dependent drift.
// fp32 addition is not associative, so the order in which partial sums meet decides the bits.
// The reference engine picks an order from the batch shape, as GPU libraries do; the gpu-probe's
// CPU backend runs the same orders. Every function here adds in exactly the order it documents.
#pragma once

#include <cstddef>

namespace llmrepro::numerics {

// Sum of a[i]*b[i] in fp32, split into `splits` contiguous chunks of K (as split-K matmul does):
// each chunk summed left to right, then the chunk partials summed left to right.
// splits <= 1 is the plain sequential order.
float dot_split_k(const float* a, const float* b, std::size_t n, int splits);

// Sum of x[i] in fp32 with the same chunked order as dot_split_k.
float sum_split_k(const float* x, std::size_t n, int splits);

// Sum of x[i] as a block reduction does it: `lanes` strided partial sums (lane j adds x[j],
// x[j+lanes], ...), then a halving tree over the lanes (lanes must be a power of two).
float sum_strided_tree(const float* x, std::size_t n, int lanes);

} // namespace llmrepro::numerics
