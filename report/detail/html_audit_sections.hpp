// The HTML report's sections beyond one endpoint's sweep: each probe kind on its own (with the
// prefix probe's warm-against-cold drift apart from batch drift), the comparison of endpoints
// (stability beside cost), and semantic agreement. Split from html_report.cpp to keep each file
// to one concern; every model text and URL is escaped with html_escape.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/audit_report.hpp"

namespace llmrepro::report {

// A prompt's status as a tag: stable (green), unstable with its distinct completions (red),
// inconclusive (amber; "no completion" where none succeeded).
std::string prompt_status_tag(const core::PromptAnalysis& prompt);

// <table class="levels">: per concurrency level its runs, unstable and inconclusive prompts,
// the prompts whose modal completion differs from the serial (first) level's, failed requests,
// tokens per second and mean latency.
std::string render_levels_table(const std::vector<core::LevelSummary>& levels);

// <section id="probes">: one panel per configured probe kind (id "probe-<kind>") with its
// unstable prompts, distinct completions, TARr, TARa, what the probe sent beside the audited
// requests, and per concurrency level the stability beside tokens per second and latency; the
// prefix panel adds the warm-against-cold table. Empty when only the sweep ran.
std::string render_probe_sections(const core::AuditReport& report);

// <section id="comparison">: per endpoint its stability beside its cost per level, and per
// prompt whether each endpoint's reference completion agrees with endpoint 0's and where it
// first differs. Empty without a comparison.
std::string render_comparison_section(const core::AuditReport& report);

// <section id="semantic">: the embedding model, threshold, share of agreeing prompts and each
// prompt's pairwise cosine statistics. Empty when semantic agreement was not measured.
std::string render_semantic_section(const core::AuditReport& report);

// Distribution mode (where distribution_shown): each prompt's distinct answers, modal answer and
// share with its interval, and the levels its answers shifted at; every answer is model text,
// escaped. Written to `stream` a row at a time; nothing where distribution mode is not shown.
void write_distribution_section(const core::AuditReport& report, std::ostream& stream);

} // namespace llmrepro::report
