// The summary `llmrepro audit` prints when it ends: readable in five seconds, about 15 lines.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/audit_report.hpp"

namespace llmrepro::report {

// Renders the verdict first (its headline verbatim: green for a pass a stability gate judged,
// yellow for a pass without one, red for fail and error; then each gate with its message and
// each reason the audit could not be judged), every warning ("warning: ..."), then endpoint,
// counts, stable / unstable / inconclusive prompts overall and per level (with the prompts whose
// modal completion differs from the serial level's), fragility (known and unknown), failed
// requests by reason, TARr, the predictor, each probe kind and the endpoints compared (where the
// audit has them), semantic agreement (when it was measured) and the worst prompts. ANSI colors
// only when `color`. Every string that came from the suite, the endpoint or the model is passed
// through escape_terminal_text, so no completion can move the cursor or recolor the terminal.
// `report.data` must not be null.
std::string render_terminal_summary(const core::AuditReport& report, bool color);

// `text` made inert for a terminal and cut to at most `width` columns (counted as code points,
// "…" included when cut): backslash becomes "\\", newline "\n", tab "\t", carriage return "\r",
// other C0 controls, DEL and invalid UTF-8 bytes "\xHH", C1 controls and the bidirectional
// overrides and isolates (U+202A..U+202E, U+2066..U+2069) "\u{XXXX}". An escape is never cut in
// half. A width of 0 means no limit.
std::string escape_terminal_text(std::string_view text, std::size_t width);

} // namespace llmrepro::report
