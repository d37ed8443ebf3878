// Distribution mode's wording (core/answer_distribution.hpp), shared by the terminal, Markdown
// and HTML reports so that the same figure reads the same everywhere. Private to report/.
#pragma once

#include <string>
#include <vector>

#include "core/analysis.hpp"
#include "core/audit_report.hpp"

namespace llmrepro::report {

// Whether the reports show the answer distributions: the audit ran at the provider's default
// (core::temperature_in_effect), or a distribution gate (--fail-on shift, --min-modal-share)
// judged it.
bool distribution_shown(const core::AuditReport& report);

// "12 prompts: 7 with one answer, lowest modal share 0.40 (p-07); 1 shifted between levels
// (Holm over 18 tests, family-wise 0.05)", of endpoint 0's prompts; with endpoints compared
// "...; 1 shifted between levels, 2 between endpoints (Holm over 30 tests, family-wise 0.05)".
std::string distribution_summary_line(const core::AuditReport& report);

// "0.60 [0.23, 0.88] of 5": the modal share, its Wilson 95% interval and the runs.
std::string modal_share_text(const core::ModalShare& modal);

// The levels whose answers shifted from the lowest level's, with the adjusted p: "c=8 (p 0.004)";
// "–" where none did.
std::string shifted_levels_text(const core::PromptAnalysis& prompt);

// The compared endpoints whose answers to the prompt shifted from endpoint 0's, with the
// adjusted p: "endpoint 1 (p 2.3e-08)"; "–" where none did or the prompt was not compared.
std::string shifted_endpoints_text(const core::AuditReport& report,
                                   const core::PromptAnalysis& prompt);

// At most `count` of endpoint 0's prompts, those that shifted (between levels or endpoints)
// first, then the lowest modal shares (suite order among equals); prompts without a run are left
// out.
std::vector<const core::PromptAnalysis*> distribution_rows(const core::AuditReport& report,
                                                           std::size_t count);

} // namespace llmrepro::report
