#include "gpu/drift_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "numerics/sha256.hpp"

namespace llmrepro::gpu {

core::ProbeRow compare_outputs(std::string variant, std::vector<core::ProbeParam> params,
                               const float* reference, const float* test, std::size_t n,
                               numerics::Precision precision, const float* reference_fp32,
                               const float* test_fp32) {
  core::ProbeRow row;
  row.variant = std::move(variant);
  row.params = std::move(params);
  row.elements = static_cast<std::int64_t>(n);
  std::int64_t changed = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (numerics::float_bits(reference[i]) == numerics::float_bits(test[i])) {
      ++row.ulp_histogram[0];
      continue;
    }
    ++changed;
    const double difference =
        std::fabs(static_cast<double>(test[i]) - static_cast<double>(reference[i]));
    const double ulps = difference / static_cast<double>(numerics::ulp_at(precision, reference[i]));
    row.max_abs = std::max(row.max_abs, difference);
    // NaN against a number is the worst kind of change: count it as unbounded.
    const double distance = std::isnan(ulps) ? std::numeric_limits<double>::infinity() : ulps;
    row.max_ulp = std::max(row.max_ulp, distance);
    if (distance == 0.0)
      ++row.ulp_histogram[0]; // +0 vs -0
    else if (distance <= 1.0)
      ++row.ulp_histogram[1];
    else if (distance <= 2.0)
      ++row.ulp_histogram[2];
    else if (distance < 8.0)
      ++row.ulp_histogram[3];
    else
      ++row.ulp_histogram[4];
  }
  row.changed_frac = n == 0 ? 0.0 : static_cast<double>(changed) / static_cast<double>(n);
  if (reference_fp32 != nullptr && test_fp32 != nullptr) {
    std::int64_t changed_fp32 = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (numerics::float_bits(reference_fp32[i]) != numerics::float_bits(test_fp32[i]))
        ++changed_fp32;
    row.fp32_changed_frac =
        n == 0 ? 0.0 : static_cast<double>(changed_fp32) / static_cast<double>(n);
  }
  return row;
}

std::string output_digest(const float* values, std::size_t n) {
  // Little-endian bytes of each value's bits, so the digest does not depend on the host.
  std::vector<unsigned char> bytes(4 * n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t bits = numerics::float_bits(values[i]);
    for (std::size_t byte = 0; byte < 4; ++byte)
      bytes[4 * i + byte] = static_cast<unsigned char>(bits >> (8 * byte));
  }
  return numerics::sha256_hex(bytes.data(), bytes.size());
}

std::int64_t distinct_count(std::vector<std::string> digests) {
  std::sort(digests.begin(), digests.end());
  return static_cast<std::int64_t>(std::unique(digests.begin(), digests.end()) - digests.begin());
}

void add_measure(core::ProbeRow& row, std::string name, double value) {
  row.measures.push_back({std::move(name), value});
}

} // namespace llmrepro::gpu
