// How two outputs of the same op are compared (docs/gpu-probe.md §7.2): bits changed, largest
// absolute and ULP distance, a ULP histogram, and digests for run-to-run checks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "numerics/float_format.hpp"
#include "core/probe_result.hpp"

namespace llmrepro::gpu {

// Compares `test` with `reference` (n values, both already rounded to `precision`). The ULP is
// the spacing of `precision` at |reference|. When both fp32 arrays are given, the row also
// carries the fraction of pre-rounding values whose bits changed.
core::ProbeRow compare_outputs(std::string variant, std::vector<core::ProbeParam> params,
                               const float* reference, const float* test, std::size_t n,
                               numerics::Precision precision, const float* reference_fp32 = nullptr,
                               const float* test_fp32 = nullptr);

// SHA-256 (lower-case hex) of the values' bit patterns, each as 4 little-endian bytes: equal
// digests for bitwise equal outputs, comparable across machines.
std::string output_digest(const float* values, std::size_t n);

// Number of distinct values in `digests`.
std::int64_t distinct_count(std::vector<std::string> digests);

// Appends a named measurement to a row.
void add_measure(core::ProbeRow& row, std::string name, double value);

} // namespace llmrepro::gpu
