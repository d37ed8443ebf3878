// bf16 and fp16 rounding emulated on the CPU, bit-exact with the GPU's round-to-nearest-even.
// Shared by the reference engine and the gpu-probe's CPU backend.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace llmrepro::numerics {

enum class Precision { bf16, fp16, fp32 };

const char* to_string(Precision precision);
core::Result<Precision> parse_precision(const std::string& text);

inline std::uint32_t float_bits(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

inline float float_from_bits(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// fp32 -> bf16 bits, round to nearest, ties to even; NaN stays a quiet NaN (never Inf).
inline std::uint16_t bf16_bits_from_float(float value) {
  const std::uint32_t bits = float_bits(value);
  if ((bits & 0x7F800000u) == 0x7F800000u && (bits & 0x007FFFFFu) != 0)
    return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);
  const std::uint32_t lsb = (bits >> 16) & 1u;
  return static_cast<std::uint16_t>((bits + 0x7FFFu + lsb) >> 16);
}

inline float float_from_bf16_bits(std::uint16_t bits) {
  return float_from_bits(static_cast<std::uint32_t>(bits) << 16);
}

// fp32 -> fp16 bits, round to nearest even, with subnormals, overflow to Inf and NaN kept.
std::uint16_t fp16_bits_from_float(float value);
float float_from_fp16_bits(std::uint16_t bits);

// Rounds an fp32 value to the precision and back: what storing into that dtype does.
inline float round_to(Precision precision, float value) {
  switch (precision) {
  case Precision::bf16: return float_from_bf16_bits(bf16_bits_from_float(value));
  case Precision::fp16: return float_from_fp16_bits(fp16_bits_from_float(value));
  case Precision::fp32: return value;
  }
  return value;
}

// Every value rounded to the precision: a tensor stored in that dtype.
inline std::vector<float> round_each_to(Precision precision, const std::vector<float>& values) {
  std::vector<float> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = round_to(precision, values[i]);
  return out;
}

// Distance between |reference| and the next representable value of the precision above it:
// the unit in which drift is reported (docs/gpu-probe.md §7.2).
float ulp_at(Precision precision, float reference);

} // namespace llmrepro::numerics
