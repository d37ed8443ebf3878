// The Markdown summary of an audit: short enough for a pull-request comment or a CI job
// summary, with the verdict, the key numbers and the worst prompts.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/audit_report.hpp"

namespace llmrepro::report {

// The title with the verdict (PASS, NO STABILITY GATE, FAIL, ERROR), the verdict's headline
// verbatim as the first line after it, a table of key numbers (stable, unstable, inconclusive,
// fragile and fragility-unknown prompts), a table per concurrency level (unstable, inconclusive,
// differs from serial), the gates (flag, scope, measured, limit, message), why the audit could
// not be judged, the warnings, and up to five worst prompts with their divergence position, gap
// and candidates; then, where the audit has them, a table of probe
// kinds (with the prefix probe's warm-against-cold drift and up to ten drifting prompts), the
// endpoints compared (stability beside tokens/s and latency per level, up to ten differing
// prompts) and semantic agreement (up to ten prompts below the threshold). Model text and URLs
// are escaped (markdown_escape).
std::string render_markdown(const core::AuditReport& report);

// Text safe inside a GitHub-flavoured Markdown table cell: at most `max_code_points` code
// points, newlines shown as ⏎, control characters dropped, HTML and the characters that
// start Markdown syntax (| ` * _ [ ] < > & \ ~ # !) written as character references, so the
// text renders as itself and cannot close the cell, open a code span or inject HTML.
std::string markdown_escape(std::string_view text, std::size_t max_code_points = 80);

} // namespace llmrepro::report
