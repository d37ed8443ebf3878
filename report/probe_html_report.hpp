// The gpu-probe's HTML page: one self-contained file in the audit report's visual family, with
// the device, every experiment as a table and an inline-SVG chart of flip rate against gap.
#pragma once

#include <string>

#include "core/probe_result.hpp"

namespace llmrepro::report {

// The whole page. Every text that came from the result (device names, notes, variants) is
// escaped; nothing is fetched when the page opens.
std::string render_probe_html(const core::ProbeResult& result);

} // namespace llmrepro::report
