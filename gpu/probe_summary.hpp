// A plain-text summary of a probe result for the terminal: one line per experiment.
#pragma once

#include <string>

#include "core/probe_result.hpp"

namespace llmrepro::gpu {

// Backend and why, the device, per experiment its status and how many rows drifted, and the
// flip recommendation. Ends with a newline.
std::string probe_summary_text(const core::ProbeResult& result);

// True when the self-test (E0) passed: every other figure depends on it.
bool self_test_passed(const core::ProbeResult& result);

} // namespace llmrepro::gpu
