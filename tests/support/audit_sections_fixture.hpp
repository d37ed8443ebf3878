// Adds hand-set probe kinds, an endpoint comparison and semantic agreement to a report fixture,
// so the HTML, Markdown and JSON renderers' sections beyond the sweep are tested on known values.
// A hostile id and URL carry markup, pipes, backticks and a newline.
#pragma once

#include <string>

#include "core/audit_report.hpp"

namespace llmrepro::test {

inline const std::string k_hostile_section_id = "drift<i>|`x`\nid";
inline const std::string k_hostile_url = "http://127.0.0.1:9/<b>|`v1`";

inline core::AuditAnalysis section_analysis(int unstable, int prompts, double tarr, double tara,
                                            double tokens_per_second) {
  core::AuditAnalysis analysis;
  analysis.summary.prompts = prompts;
  analysis.summary.requests = prompts * 4;
  analysis.summary.failed_requests = 1;
  analysis.summary.stable_prompts = prompts - unstable;
  analysis.summary.unstable_prompts = unstable;
  analysis.summary.prompts_with_two_completions = prompts;
  analysis.summary.tarr = tarr;
  analysis.summary.tara = tara;
  // concurrency, runs, unique, unstable, inconclusive, differs from serial, failed, tok/s, ms
  analysis.summary.by_concurrency = {
      {1, prompts * 2, prompts * 2, unstable, 0, 0, 0, tokens_per_second, 12.5},
      {4, prompts * 2, prompts * 2, unstable, 0, unstable, 1, tokens_per_second * 3, 40.5}};
  // The stable prompts are bitwise; each unstable one drifts by 1/16 nats per unstable prompt
  // before it diverges, at c=4 only (dyadic, so printed exactly).
  analysis.summary.bitwise_stable_prompts = prompts - unstable;
  analysis.summary.max_logprob_drift = 0.0625 * unstable;
  analysis.summary.by_concurrency[0].logprob_drift = {0.0, 0.0, prompts * 6};
  analysis.summary.by_concurrency[1].logprob_drift = {0.0625 * unstable, 0.0, prompts * 6};
  for (int i = 0; i < prompts; ++i) {
    core::PromptAnalysis prompt;
    prompt.id = i == 0 ? k_hostile_section_id : "p" + std::to_string(i);
    prompt.prompt_index = i;
    prompt.runs = 4;
    prompt.unique_completions = i < unstable ? 2 : 1;
    prompt.unstable = i < unstable;
    prompt.status = prompt.unstable ? core::PromptStatus::unstable : core::PromptStatus::stable;
    prompt.fragile = false;
    if (prompt.unstable) prompt.first_divergence = 3 + i;
    analysis.prompts.push_back(prompt);
  }
  return analysis;
}

// Sweep (0 of 2 unstable), mixed (1 of 2, 3 distinct completions), prefix (2 of 2 unstable, one
// prompt drifting warm against cold at token 5); endpoints 0 and 1 (the second one's URL hostile)
// agreeing on 1 of 2 prompts; semantic agreement over 2 prompts, one below the threshold.
template <typename Fixture> void add_audit_sections(Fixture& fixture) {
  core::AuditData& data = fixture.data;
  core::AuditReport& report = fixture.report;
  data.config.plan.probes = {core::ProbeKind::sweep, core::ProbeKind::mixed,
                             core::ProbeKind::prefix};
  data.endpoints.resize(1);
  data.endpoints.push_back({k_hostile_url, "openai-chat", "other", false, {}});
  core::ProbeActivity activity;
  activity.filler_sent = 17;
  activity.filler_failed = 1;
  activity.primes_sent = 4;
  activity.flushes_sent = 5;
  activity.flushes_failed = 1;
  activity.flush_looked_up = true;
  activity.flush_route = "/reset_prefix_cache";
  data.probe_activity = {activity, core::ProbeActivity{}};

  report.probes.clear();
  report.probes.push_back({core::ProbeKind::sweep, section_analysis(0, 2, 1.0, 1.0, 100.0), {}, 0});
  report.probes.push_back({core::ProbeKind::mixed, section_analysis(1, 2, 0.5, 1.0, 80.0), {}, 0});
  core::ProbeAnalysis prefix{
      core::ProbeKind::prefix, section_analysis(2, 2, 0.0, 0.5, 50.0), {}, 1};
  prefix.prefix.push_back({k_hostile_section_id, 0, 2, 2, 1, 1, true, 5});
  prefix.prefix.push_back({"p1", 1, 2, 2, 2, 2, false, std::nullopt});
  report.probes.push_back(prefix);

  report.endpoints = {section_analysis(0, 2, 1.0, 1.0, 100.0),
                      section_analysis(1, 2, 0.5, 0.5, 250.0)};
  report.endpoints[1].endpoint_index = 1;
  core::EndpointComparison comparison;
  comparison.agreeing_prompts = 1;
  comparison.prompts.push_back({k_hostile_section_id, 0, false, {{1, true, false, 7}}});
  comparison.prompts.push_back({"p1", 1, true, {{1, true, true, std::nullopt}}});
  report.comparison = comparison;

  core::SemanticAgreement semantic;
  semantic.model = "embed<x>";
  semantic.threshold = 0.9;
  semantic.prompts = {{0, 3, 3, 0.8125, 0.0625, 0.75, false}, {1, 1, 0, 1.0, 0.0, 1.0, true}};
  semantic.agreeing_share = 0.5;
  data.semantic = semantic;
}

} // namespace llmrepro::test
