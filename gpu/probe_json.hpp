// The probe's JSON report (schema "llmrepro.gpu-probe.v1"), written and read without a JSON
// library so that the CUDA helper and the probe-only build can produce it.
#pragma once

#include <string>

#include "core/probe_result.hpp"
#include "core/result.hpp"

namespace llmrepro::gpu {

// The whole result as one JSON document (compact, UTF-8).
std::string probe_result_to_json(const core::ProbeResult& result);

// Reads a document written by probe_result_to_json. A missing or wrongly typed field, or a
// different schema, is an error naming it.
core::Result<core::ProbeResult> probe_result_from_json(const std::string& text);

} // namespace llmrepro::gpu
