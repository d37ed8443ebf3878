// exp and log for the gpu-probe's attention orders, written out in plain fp32 adds and
// multiplies so that the host (-ffp-contract=off) and the CUDA reference kernels (--fmad=false)
// compute the same bits: the C library's expf/logf and CUDA's differ in their last bits, which
// would hide the reduction-order effect behind a library difference. Accurate to a few ULP;
// used only where the gpu-probe compares CPU and GPU orders, never by the engine.
// Header-only and C++17 so that nvcc compiles the same functions for the device.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define LLMREPRO_HOST_DEVICE __host__ __device__
#else
#define LLMREPRO_HOST_DEVICE
#endif

namespace llmrepro::numerics {

namespace portable_math_detail {

LLMREPRO_HOST_DEVICE inline std::uint32_t bits_of(float value) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(value);
#else
  std::uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
#endif
}

LLMREPRO_HOST_DEVICE inline float float_of(std::uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float value = 0.0f;
  std::memcpy(&value, &bits, sizeof value);
  return value;
#endif
}

// 2^n for n in [-126, 127], exactly.
LLMREPRO_HOST_DEVICE inline float power_of_two(int n) {
  return float_of(static_cast<std::uint32_t>(n + 127) << 23);
}

} // namespace portable_math_detail

// e^x: Cody-Waite reduction x = n ln2 + r (|r| <= ln2/2, n*ln2_hi exact), a degree-7 Taylor
// polynomial in Horner form, then scaling by 2^n. Below -87.3 it returns 0 (no subnormal
// results); above 88.7 +inf; NaN stays NaN.
LLMREPRO_HOST_DEVICE inline float portable_exp(float x) {
  using namespace portable_math_detail;
  if (x != x) return x;
  if (x > 88.72f) return float_of(0x7F800000u);
  if (x < -87.33f) return 0.0f;
  const float t = x * 1.44269504f;
  const int n = static_cast<int>(t >= 0.0f ? t + 0.5f : t - 0.5f);
  const float fn = static_cast<float>(n);
  const float r = (x - fn * 0.693145751953125f) - fn * 1.428606765330187e-06f;
  float p = 1.98412698e-04f; // 1/7!
  p = p * r + 1.38888889e-03f;
  p = p * r + 8.33333333e-03f;
  p = p * r + 4.16666667e-02f;
  p = p * r + 1.66666667e-01f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  if (n > 127) return (p * power_of_two(127)) * power_of_two(n - 127);
  return p * power_of_two(n);
}

// Natural logarithm: x = 2^e m with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s) with
// s = (m - 1) / (m + 1) as an odd series, then e ln2 added in two parts. log(0) = -inf,
// negative or NaN input gives NaN, +inf stays +inf.
LLMREPRO_HOST_DEVICE inline float portable_log(float x) {
  using namespace portable_math_detail;
  if (x != x || x < 0.0f) return float_of(0x7FC00000u);
  if (x == 0.0f) return float_of(0xFF800000u);
  if (bits_of(x) == 0x7F800000u) return x;
  int e = 0;
  if (x < power_of_two(-126)) {
    x = x * 8388608.0f; // 2^23: subnormals become normal
    e = -23;
  }
  const std::uint32_t bits = bits_of(x);
  e += static_cast<int>(bits >> 23) - 127;
  float m = float_of((bits & 0x007FFFFFu) | 0x3F800000u);
  if (m > 1.41421356f) {
    m = m * 0.5f;
    e += 1;
  }
  const float f = m - 1.0f;
  const float s = f / (2.0f + f);
  const float z = s * s;
  float p = 9.09090909e-02f; // 1/11
  p = p * z + 1.11111111e-01f;
  p = p * z + 1.42857143e-01f;
  p = p * z + 2.0e-01f;
  p = p * z + 3.33333333e-01f;
  p = p * z + 1.0f;
  const float log_m = (s + s) * p;
  const float fe = static_cast<float>(e);
  return fe * 0.693145751953125f + (fe * 1.428606765330187e-06f + log_m);
}

} // namespace llmrepro::numerics
