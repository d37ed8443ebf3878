// The HTML report's noise section, split from html_report.cpp to keep each file to one concern.
#pragma once

#include <string>

#include "core/audit_report.hpp"

namespace llmrepro::report {

// <section id="noise">: the two predictors side by side (p_flip and the gap rule, Brier and
// AUC, and the τ the noise implies), each level's noise (positions, moved, quantiles, and its
// distribution per decade as a chart), and p_flip's reliability diagram with its bins.
std::string render_noise_section(const core::AuditReport& report);

} // namespace llmrepro::report
