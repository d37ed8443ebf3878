#include "numerics/float_format.hpp"

#include <cmath>

namespace llmrepro::numerics {

const char* to_string(Precision precision) {
  switch (precision) {
  case Precision::bf16: return "bf16";
  case Precision::fp16: return "fp16";
  case Precision::fp32: return "fp32";
  }
  return "fp32";
}

core::Result<Precision> parse_precision(const std::string& text) {
  if (text == "bf16") return Precision::bf16;
  if (text == "fp16") return Precision::fp16;
  if (text == "fp32") return Precision::fp32;
  return core::make_error(core::ErrorCode::usage,
                          "unknown dtype '" + text + "' (expected bf16, fp16 or fp32)");
}

std::uint16_t fp16_bits_from_float(float value) {
  // Scale so that the FPU itself rounds at fp16's bit position, subnormals included
  // (the technique of the FP16 library and PyTorch's c10::Half, written out here).
  const float scale_to_inf = 0x1.0p+112f;
  const float scale_to_zero = 0x1.0p-110f;
  float base = (std::fabs(value) * scale_to_inf) * scale_to_zero;

  const std::uint32_t w = float_bits(value);
  const std::uint32_t shl1_w = w + w;
  const std::uint32_t sign = w & 0x80000000u;
  std::uint32_t bias = shl1_w & 0xFF000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;

  base = float_from_bits((bias >> 1) + 0x07800000u) + base;
  const std::uint32_t bits = float_bits(base);
  const std::uint32_t exp_bits = (bits >> 13) & 0x00007C00u;
  const std::uint32_t mantissa_bits = bits & 0x00000FFFu;
  const std::uint32_t nonsign = exp_bits + mantissa_bits;
  return static_cast<std::uint16_t>((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}

float float_from_fp16_bits(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1Fu;
  std::uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0) {
    if (mantissa == 0) return float_from_bits(sign);
    // Subnormal: value = mantissa * 2^-24, exact in fp32.
    const float magnitude = static_cast<float>(mantissa) * 0x1.0p-24f;
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 0x1F) return float_from_bits(sign | 0x7F800000u | (mantissa << 13));
  return float_from_bits(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

float ulp_at(Precision precision, float reference) {
  const float magnitude = std::fabs(reference);
  switch (precision) {
  case Precision::bf16: {
    // Spacing of bf16 at |x|: 2^(e-7) for normal numbers, the subnormal step below.
    if (magnitude < 0x1.0p-126f) return 0x1.0p-133f;
    int exponent = 0;
    std::frexp(magnitude, &exponent); // magnitude = f * 2^exponent, f in [0.5, 1)
    return std::ldexp(1.0f, exponent - 1 - 7);
  }
  case Precision::fp16: {
    if (magnitude < 0x1.0p-14f) return 0x1.0p-24f;
    int exponent = 0;
    std::frexp(magnitude, &exponent);
    return std::ldexp(1.0f, exponent - 1 - 10);
  }
  case Precision::fp32: {
    if (magnitude < 0x1.0p-126f) return 0x1.0p-149f;
    int exponent = 0;
    std::frexp(magnitude, &exponent);
    return std::ldexp(1.0f, exponent - 1 - 23);
  }
  }
  return 0.0f;
}

} // namespace llmrepro::numerics
