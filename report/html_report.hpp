// The HTML audit report: one self-contained page for reviewers (no script, style or font is
// fetched when it opens), with the verdict and the worst prompts above the fold.
#pragma once

#include <ostream>
#include <string>

#include "core/audit_report.hpp"

namespace llmrepro::report {

// The whole page. The verdict (<section id="verdict" class="verdict STATUS"> with the headline
// verbatim in #verdict-headline, class pass, fail, error, or nogate for a pass no stability gate
// judged; each gate with its scope; #verdict-errors where the audit could not be judged), the
// warnings (#warnings, one <li> each, only when there are some), summary cards, the concurrency
// levels (#levels), inline SVG charts, the probe kinds, endpoint comparison and
// semantic agreement where the audit has them (detail/html_audit_sections.hpp), a sortable and
// filterable prompt table (one small inline script, no framework) and a section per prompt. All
// model text is escaped; the page holds exactly one <script> element, ours, and no model text
// inside it.
std::string render_html(const core::AuditReport& report);

// The same page written to `out` as it is rendered, a prompt at a time, so that the page of a
// large audit is never held whole in memory.
void write_html(const core::AuditReport& report, std::ostream& out);

} // namespace llmrepro::report
