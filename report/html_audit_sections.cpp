#include "report/detail/distribution_text.hpp"
#include "report/detail/html_audit_sections.hpp"

#include <fmt/format.h>
#include <ostream>

#include "report/detail/drift_text.hpp"
#include "report/detail/html_style.hpp"
#include "report/detail/report_text.hpp"

namespace llmrepro::report {
namespace {

std::string dash() { return "<span class=\"muted\">\u2013</span>"; }

std::string optional_int(const std::optional<int>& value) {
  return value ? std::to_string(*value) : dash();
}

std::string endpoint_label(const core::AuditData* data, std::size_t index) {
  if (data == nullptr || index >= data->endpoints.size()) return "#" + std::to_string(index);
  const core::EndpointInfo& endpoint = data->endpoints[index];
  return endpoint.embedded ? std::string("embedded reference engine") : html_escape(endpoint.url);
}

std::string prompt_id(const core::AuditData* data, int prompt_index) {
  const auto index = static_cast<std::size_t>(prompt_index);
  if (data == nullptr || index >= data->suite.prompts.size())
    return "#" + std::to_string(prompt_index);
  return html_escape(data->suite.prompts[index].id);
}

std::string summary_line(const core::AuditSummary& summary, int distinct) {
  return fmt::format("<p class=\"probe-summary\"><b>{}</b> of {} prompts unstable \u00b7 {} "
                     "inconclusive \u00b7 {} distinct completions \u00b7 TARr {} \u00b7 TARa {} "
                     "\u00b7 {} requests ({} failed) \u00b7 {} bitwise \u00b7 max logprob drift "
                     "{}</p>",
                     summary.unstable_prompts, summary.prompts, summary.inconclusive_prompts,
                     distinct, percent_text(summary.tarr), percent_text(summary.tara),
                     summary.requests, summary.failed_requests, summary.bitwise_stable_prompts,
                     max_drift_text(summary.max_logprob_drift));
}

std::string activity_line(const core::AuditData* data, core::ProbeKind probe) {
  if (data == nullptr || data->probe_activity.empty()) return {};
  const core::ProbeActivity& a = data->probe_activity.front();
  if (core::probe_uses_fillers(probe))
    return fmt::format("<p class=\"muted activity\">{} requests beside the audited ones: {} "
                       "sent, {} failed (never recorded or analysed).</p>",
                       core::fillers_sampled(probe) ? "Sampled filler (temperature 1)" : "Filler",
                       core::fillers_sent(a, probe), core::fillers_failed(a, probe));
  if (probe == core::ProbeKind::restart)
    return fmt::format("<p class=\"muted activity\">The restart command: {} run, {} failed "
                       "(a failed round's requests are recorded as failed, never sent) \u00b7 "
                       "slowest until ready: {} ms.</p>",
                       a.restarts_run, a.restarts_failed, a.restart_ready_ms_max);
  if (probe != core::ProbeKind::prefix) return {};
  std::string flush =
      a.cold_per_request ? std::string("cold trials with the prompt cache off per request "
                                       "(<code>cache_prompt: false</code>)")
      : !a.flush_route.empty()
          ? fmt::format("cache flushed through <code>{}</code> before each cold trial",
                        html_escape(a.flush_route))
          : std::string("no cold mode (no cache flush available): cold trials ran on whatever "
                        "the cache held, so the cold cell is not tested");
  const std::string sizing = core::prefix_sizing_text(a);
  return fmt::format("<p class=\"muted activity\">Priming requests: {} sent, {} failed \u00b7 {} "
                     "\u00b7 flush requests: {} sent, {} failed{}.</p>",
                     a.primes_sent, a.primes_failed, flush, a.flushes_sent, a.flushes_failed,
                     sizing.empty() ? std::string() : " \u00b7 " + html_escape(sizing));
}

std::string prefix_table(const core::ProbeAnalysis& probe) {
  std::string out = fmt::format(
      "<h3>Warm against cold</h3><p>Prefix-cache drift, kept apart from batch drift: "
      "<b>{}</b> of {} prompts answer differently warm (after a priming request) than cold "
      "(after a flush).</p>",
      probe.prefix_drift_prompts, probe.prefix.size());
  out += "<table class=\"prefix\"><thead><tr><th>prompt</th><th class=\"num\">cold runs</th>"
         "<th class=\"num\">cold distinct</th><th class=\"num\">warm runs</th>"
         "<th class=\"num\">warm distinct</th><th>warm vs cold</th>"
         "<th class=\"num\">diverges at</th></tr></thead><tbody>";
  for (const auto& drift : probe.prefix)
    out += fmt::format("<tr><td><code>{}</code></td><td class=\"num\">{}</td><td class=\"num\">{}"
                       "</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td>"
                       "<td class=\"num\">{}</td></tr>",
                       html_escape(drift.id), drift.cold_runs, drift.cold_unique, drift.warm_runs,
                       drift.warm_unique,
                       drift.drift ? "<span class=\"tag fail\">drift</span>"
                                   : "<span class=\"tag pass\">same</span>",
                       optional_int(drift.divergence));
  return out + "</tbody></table>";
}

std::string probe_prompts_table(const core::AuditAnalysis& analysis) {
  std::string out = "<table class=\"probe-prompts\"><thead><tr><th>prompt</th>"
                    "<th class=\"num\">runs</th><th class=\"num\">distinct</th>"
                    "<th class=\"num\">first divergence</th><th>status</th></tr></thead><tbody>";
  for (const auto& prompt : analysis.prompts)
    out += fmt::format("<tr><td><code>{}</code></td><td class=\"num\">{}</td><td class=\"num\">{}"
                       "</td><td class=\"num\">{}</td><td>{}</td></tr>",
                       html_escape(prompt.id), prompt.runs, prompt.unique_completions,
                       optional_int(prompt.first_divergence), prompt_status_tag(prompt));
  return out + "</tbody></table>";
}

} // namespace

std::string prompt_status_tag(const core::PromptAnalysis& prompt) {
  switch (prompt.status) {
  case core::PromptStatus::stable: return "<span class=\"tag pass\">stable</span>";
  case core::PromptStatus::unstable:
    return fmt::format("<span class=\"tag fail\">unstable \u00b7 {}</span>",
                       prompt.unique_completions);
  case core::PromptStatus::inconclusive: break;
  }
  return prompt.runs == 0
             ? std::string("<span class=\"tag warn\">inconclusive \u00b7 no completion</span>")
             : std::string("<span class=\"tag warn\">inconclusive</span>");
}

std::string render_levels_table(const std::vector<core::LevelSummary>& levels) {
  std::string out = "<table class=\"levels\"><thead><tr><th class=\"num\">concurrency</th>"
                    "<th class=\"num\">runs</th><th class=\"num\">unstable prompts</th>"
                    "<th class=\"num\">inconclusive</th><th class=\"num\">differs from serial</th>"
                    "<th class=\"num\">failed</th><th class=\"num\">tokens/s</th>"
                    "<th class=\"num\">mean latency (ms)</th><th class=\"num\">logprob drift</th>"
                    "</tr></thead><tbody>";
  for (std::size_t i = 0; i < levels.size(); ++i) {
    const auto& level = levels[i];
    out += fmt::format("<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}"
                       "</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
                       "<td class=\"num\">{}</td><td class=\"num\">{:.1f}</td>"
                       "<td class=\"num\">{:.1f}</td><td class=\"num\">{}</td></tr>",
                       level.concurrency, level.runs, level.unstable_prompts,
                       level.inconclusive_prompts,
                       i == 0 ? std::string("<span class=\"muted\">serial</span>")
                              : std::to_string(level.differs_from_serial_prompts),
                       level.failed, level.tokens_per_second, level.mean_latency_ms,
                       level_drift_text(level.logprob_drift));
  }
  return out + "</tbody></table>";
}

std::string render_probe_sections(const core::AuditReport& report) {
  if (report.probes.size() < 2 &&
      (report.probes.empty() || report.probes.front().probe == core::ProbeKind::sweep))
    return {};
  std::string out = "<section id=\"probes\"><h2>Probe kinds</h2>";
  for (const auto& probe : report.probes) {
    const char* name = core::to_string(probe.probe);
    const core::AuditAnalysis& analysis = core::analysis_of(report, probe);
    out += fmt::format("<div class=\"panel probe\" id=\"probe-{0}\"><h3>{0}</h3>", name);
    out += summary_line(probe.analysis.summary, distinct_completions(analysis));
    out += activity_line(report.data, probe.probe);
    out += render_levels_table(probe.analysis.summary.by_concurrency);
    if (probe.probe == core::ProbeKind::prefix) out += prefix_table(probe);
    if (probe.probe == core::ProbeKind::restart)
      out += fmt::format("<h3>First after restart against later</h3><p><b>{}</b> of {} prompts "
                         "answer differently later than first after a restart.</p>",
                         probe.prefix_drift_prompts, probe.prefix.size());
    out +=
        "<details><summary>Prompts</summary>" + probe_prompts_table(analysis) + "</details></div>";
  }
  return out + "</section>\n";
}

std::string render_comparison_section(const core::AuditReport& report) {
  if (!report.comparison) return {};
  const core::EndpointComparison& comparison = *report.comparison;
  std::string out = fmt::format(
      "<section class=\"panel\" id=\"comparison\"><h2>Endpoints compared</h2><p>The same plan "
      "({} probe) against each endpoint: <b>{}</b> of {} prompts give the same reference "
      "completion everywhere.</p>",
      core::to_string(report.primary_probe), comparison.agreeing_prompts,
      comparison.prompts.size());
  out += "<table class=\"endpoints\"><thead><tr><th>#</th><th>endpoint</th>"
         "<th class=\"num\">unstable</th><th class=\"num\">TARr</th><th class=\"num\">TARa</th>"
         "<th>per level: unstable \u00b7 tokens/s \u00b7 mean latency</th>"
         "<th class=\"num\">bitwise</th><th class=\"num\">max logprob drift</th></tr></thead>"
         "<tbody>";
  for (std::size_t e = 0; e < report.endpoints.size(); ++e) {
    const core::AuditSummary& s = report.endpoints[e].summary;
    std::string levels;
    for (const auto& level : s.by_concurrency)
      levels += fmt::format("{}c={}: {} \u00b7 {:.1f} tok/s \u00b7 {:.1f} ms",
                            levels.empty() ? "" : "<br>", level.concurrency, level.unstable_prompts,
                            level.tokens_per_second, level.mean_latency_ms);
    out += fmt::format("<tr><td class=\"num\">{}</td><td><code>{}</code></td><td class=\"num\">"
                       "{} of {}{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
                       "<td class=\"nowrap\">{}</td><td class=\"num\">{}</td>"
                       "<td class=\"num\">{}</td></tr>",
                       e, endpoint_label(report.data, e), s.unstable_prompts, s.prompts,
                       s.inconclusive_prompts > 0
                           ? fmt::format(" ({} inconclusive)", s.inconclusive_prompts)
                           : std::string(),
                       percent_text(s.tarr), percent_text(s.tara), levels, s.bitwise_stable_prompts,
                       max_drift_text(s.max_logprob_drift));
  }
  out += "</tbody></table><h3>Per prompt</h3><table class=\"comparison-prompts\"><thead><tr>"
         "<th>prompt</th><th>all agree</th>";
  for (std::size_t e = 1; e < report.endpoints.size(); ++e)
    out += fmt::format("<th>endpoint {} vs 0</th>", e);
  out += "</tr></thead><tbody>";
  for (const auto& prompt : comparison.prompts) {
    out += fmt::format("<tr><td><code>{}</code></td><td>{}</td>", html_escape(prompt.id),
                       prompt.all_agree ? "<span class=\"tag pass\">agree</span>"
                                        : "<span class=\"tag fail\">differ</span>");
    for (const auto& other : prompt.endpoints) {
      if (!other.has_reference)
        out += "<td><span class=\"tag warn\">no completion</span></td>";
      else if (other.agrees)
        out += "<td>same</td>";
      else
        out += "<td>differs from token " +
               (other.first_difference ? std::to_string(*other.first_difference) : dash()) +
               "</td>";
    }
    out += "</tr>";
  }
  return out + "</tbody></table></section>\n";
}

std::string render_semantic_section(const core::AuditReport& report) {
  if (report.data == nullptr || !report.data->semantic) return {};
  const core::SemanticAgreement& semantic = *report.data->semantic;
  std::string out = fmt::format(
      "<section class=\"panel\" id=\"semantic\"><h2>Semantic agreement</h2><p>Pairwise cosine "
      "similarity of each prompt's distinct completions (embedding model <code>{}</code>): "
      "<b>{}</b> of {} prompts have every pair at or above {:g}.</p>",
      semantic.model.empty() ? std::string("default") : html_escape(semantic.model),
      semantic.agreeing_share ? percent_text(*semantic.agreeing_share) : std::string("\u2013"),
      semantic.prompts.size(), semantic.threshold);
  out += "<table class=\"semantic\"><thead><tr><th>prompt</th><th class=\"num\">distinct</th>"
         "<th class=\"num\">pairs</th><th class=\"num\">mean</th><th class=\"num\">std</th>"
         "<th class=\"num\">min</th><th>agrees</th></tr></thead><tbody>";
  for (const auto& prompt : semantic.prompts)
    out += fmt::format("<tr><td><code>{}</code></td><td class=\"num\">{}</td><td class=\"num\">{}"
                       "</td><td class=\"num\">{:.4f}</td><td class=\"num\">{:.4f}</td>"
                       "<td class=\"num\">{:.4f}</td><td>{}</td></tr>",
                       prompt_id(report.data, prompt.prompt_index), prompt.distinct, prompt.pairs,
                       prompt.mean, prompt.std, prompt.min,
                       prompt.agrees ? "<span class=\"tag pass\">yes</span>"
                                     : "<span class=\"tag fail\">no</span>");
  return out + "</tbody></table></section>\n";
}

void write_distribution_section(const core::AuditReport& report, std::ostream& stream) {
  if (!distribution_shown(report)) return;
  const bool endpoints = report.comparison.has_value();
  stream << "<section class=\"panel\" id=\"distribution\"><h2>Answer distributions</h2><p>" +
                html_escape(distribution_summary_line(report)) + "</p>";
  stream << "<table class=\"distribution\"><thead><tr><th>prompt</th><th class=\"num\">distinct "
            "answers</th><th>modal answer</th><th>modal share [95%]</th><th>shifted at</th>" +
                std::string(endpoints ? "<th>shifted from endpoint 0</th>" : "") +
                "</tr></thead><tbody>";
  // A shift beyond the test is tagged; "–" where none.
  const auto shift_cell = [](const std::string& text) {
    return text == "\u2013" ? text : "<span class=\"tag fail\">" + html_escape(text) + "</span>";
  };
  core::PromptAnalysis scratch;
  for (const core::PromptAnalysis* p : distribution_rows(report, report.analysis.prompts.size()))
    stream << fmt::format("<tr><td><code>{}</code></td><td class=\"num\">{}</td><td><code>{}</code>"
                          "</td><td>{}</td><td>{}</td>{}</tr>",
                          html_escape(p->id), p->answers.size(),
                          html_escape(core::detailed(report, *p, scratch).modal.answer),
                          modal_share_text(p->modal), shift_cell(shifted_levels_text(*p)),
                          endpoints
                              ? "<td>" + shift_cell(shifted_endpoints_text(report, *p)) + "</td>"
                              : std::string());
  stream << "</tbody></table></section>\n";
}

} // namespace llmrepro::report
