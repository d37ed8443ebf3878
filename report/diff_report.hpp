// Renderings of `llmrepro diff`: JSON for CI scripts (schema "llmrepro.diff.v1"), Markdown
// for a pull-request comment, and a self-contained HTML page for reviewers.
#pragma once

#include <string>

#include "core/audit_diff.hpp"

namespace llmrepro::report {

// {"schema":"llmrepro.diff.v1","a":{...},"b":{...},"config":{"alpha","bootstrap_resamples",
// "seed"},"paired_prompts","only_in_a":[..],"only_in_b":[..],"metrics":[..],"prompts":[..],
// "verdict":{"status":"regression"|"improvement"|"no_change","regression","improvement"}}.
// Absent optional numbers are null; 2-space indent.
std::string render_diff_json(const core::AuditDiff& diff);

// Verdict, the metrics table (A, B, change, p, verdict) and the prompts whose change is beyond
// noise or whose stability flipped.
std::string render_diff_markdown(const core::AuditDiff& diff);

// One self-contained page: verdict, metrics with their intervals, and every paired prompt.
std::string render_diff_html(const core::AuditDiff& diff);

} // namespace llmrepro::report
