// Host arrays in the probe's dtypes for the CUDA helper: the probe's own kernels take fp32
// arrays of dtype-exact values, cuBLASLt takes the dtype's bytes (internal to gpu/cuda).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "numerics/float_format.hpp"

namespace llmrepro::gpu::cuda {

// The cuBLASLt workspace every GEMM variant shares (and the heuristic's limit).
inline constexpr std::size_t k_workspace_bytes = 32u << 20;

inline std::size_t element_bytes(numerics::Precision precision) {
  return precision == numerics::Precision::fp32 ? 4 : 2;
}

// Host floats (already exact in the dtype) encoded as the dtype's bytes.
inline std::vector<unsigned char> encode(numerics::Precision precision,
                                         const std::vector<float>& values) {
  std::vector<unsigned char> bytes(values.size() * element_bytes(precision));
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (precision == numerics::Precision::fp32) {
      std::memcpy(bytes.data() + 4 * i, &values[i], 4);
      continue;
    }
    const std::uint16_t bits = precision == numerics::Precision::bf16
                                   ? numerics::bf16_bits_from_float(values[i])
                                   : numerics::fp16_bits_from_float(values[i]);
    std::memcpy(bytes.data() + 2 * i, &bits, 2);
  }
  return bytes;
}

inline std::vector<float> decode(numerics::Precision precision, const unsigned char* bytes,
                                 std::size_t n) {
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (precision == numerics::Precision::fp32) {
      std::memcpy(&values[i], bytes + 4 * i, 4);
      continue;
    }
    std::uint16_t bits = 0;
    std::memcpy(&bits, bytes + 2 * i, 2);
    values[i] = precision == numerics::Precision::bf16 ? numerics::float_from_bf16_bits(bits)
                                                       : numerics::float_from_fp16_bits(bits);
  }
  return values;
}

} // namespace llmrepro::gpu::cuda
