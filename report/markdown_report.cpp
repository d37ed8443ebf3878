// Markdown summary. GitHub, GitLab and most CI summary viewers render GitHub-flavoured
// Markdown, which decodes numeric character references in table cells, so escaping by
// reference works in all of them (a backslash escape of `|` does not survive inside code spans).
#include "report/markdown_report.hpp"

#include <fmt/format.h>

#include "core/cache_state.hpp"
#include "core/adaptive.hpp"
#include "core/budget.hpp"
#include "core/prompt_ranking.hpp"
#include "core/text_utf8.hpp"
#include "report/detail/distribution_text.hpp"
#include "report/detail/bidi_controls.hpp"
#include "report/detail/drift_text.hpp"
#include "report/detail/usage_text.hpp"
#include "report/detail/flip_summary.hpp"
#include "report/detail/report_text.hpp"

namespace llmrepro::report {
namespace {

std::string candidates(const core::PromptAnalysis& p) {
  const auto& c = p.candidates_at_divergence;
  if (c.size() < 2) return "\u2013";
  return fmt::format("\u201c{}\u201d {:.3f} vs \u201c{}\u201d {:.3f}",
                     markdown_escape(c[0].token, 30), c[0].logprob, markdown_escape(c[1].token, 30),
                     c[1].logprob);
}

constexpr std::size_t k_rows_shown = 10;

// "c=1: 812 tok/s, 41 ms · c=8: ..." — each level's cost, to read beside its stability.
std::string cost_text(const std::vector<core::LevelSummary>& levels) {
  std::string out;
  for (const auto& level : levels)
    out += fmt::format("{}c={}: {} unstable, {:.1f} tok/s, {:.1f} ms",
                       out.empty() ? "" : " \u00b7 ", level.concurrency, level.unstable_prompts,
                       level.tokens_per_second, level.mean_latency_ms);
  return out.empty() ? "\u2013" : out;
}

// "2 of 5", with " (1 inconclusive)" where some prompts could not be judged.
std::string unstable_text(const core::AuditSummary& s) {
  std::string out = fmt::format("{} of {}", s.unstable_prompts, s.prompts);
  if (s.inconclusive_prompts > 0) out += fmt::format(" ({} inconclusive)", s.inconclusive_prompts);
  return out;
}

std::string endpoint_text(const core::AuditData* data, std::size_t index) {
  if (data == nullptr || index >= data->endpoints.size()) return "#" + std::to_string(index);
  const core::EndpointInfo& e = data->endpoints[index];
  return e.embedded ? std::string("embedded reference engine") : markdown_escape(e.url, 100);
}

// "✅ PASS", "⚠️ NO STABILITY GATE", "❌ FAIL", "⛔ ERROR": the title's word for the
// verdict.
std::string verdict_title(const core::Verdict& verdict) {
  switch (verdict.status) {
  case core::VerdictStatus::pass:
    return verdict.stability_gated ? "\u2705 PASS" : "\u26a0\ufe0f NO STABILITY GATE";
  case core::VerdictStatus::fail: return "\u274c FAIL";
  case core::VerdictStatus::error: break;
  }
  return "\u26d4 ERROR";
}

std::string figure_text(const std::optional<double>& value) {
  return value ? fmt::format("{:g}", *value) : std::string("\u2013");
}

// Each gate in its scope, why the audit could not be judged, and the warnings.
std::string verdict_markdown(const core::AuditReport& report) {
  const core::Verdict& verdict = report.verdict;
  std::string out;
  if (!verdict.gates.empty()) {
    out += "\n| | gate | scope | measured | limit | |\n|---|---|---|---:|---:|---|\n";
    for (const core::GateResult& gate : verdict.gates)
      out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", gate.passed ? "\u2705" : "\u274c",
                         markdown_escape(gate.flag, 40), gate_scope_text(gate.scope),
                         figure_text(gate.figure), figure_text(gate.limit),
                         markdown_escape(gate.message, 200));
  }
  if (!verdict.errors.empty()) {
    out += "\nThe audit could not be judged:\n\n";
    for (const std::string& error : verdict.errors)
      out += "- \u26d4 " + markdown_escape(error, 300) + "\n";
  }
  if (!report.warnings.empty()) {
    out += "\n**Warnings**\n\n";
    for (const std::string& warning : report.warnings)
      out += "- \u26a0\ufe0f " + markdown_escape(warning, 400) + "\n";
  }
  return out;
}

// Per concurrency level: unstable, inconclusive, prompts whose modal completion differs from
// the serial (first) level's, and the logprob drift within the level.
std::string levels_markdown(const std::vector<core::LevelSummary>& levels) {
  if (levels.empty()) return {};
  std::string out = "\n| level | unstable | inconclusive | differs from serial | logprob drift |\n"
                    "|---:|---:|---:|---:|---:|\n";
  for (std::size_t i = 0; i < levels.size(); ++i)
    out += fmt::format("| c={} | {} | {} | {} | {} |\n", levels[i].concurrency,
                       levels[i].unstable_prompts, levels[i].inconclusive_prompts,
                       i == 0 ? std::string("serial")
                              : std::to_string(levels[i].differs_from_serial_prompts),
                       level_drift_text(levels[i].logprob_drift));
  return out;
}

std::string probes_markdown(const core::AuditReport& report) {
  if (report.probes.size() < 2 &&
      (report.probes.empty() || report.probes.front().probe == core::ProbeKind::sweep))
    return {};
  std::string out = "\n### Probe kinds\n\n| probe | unstable | distinct completions | TARr | "
                    "TARa | requests (failed) | per level | bitwise | max logprob drift |\n"
                    "|---|---:|---:|---:|---:|---:|---|---:|---:|\n";
  const core::ProbeAnalysis* prefix = nullptr;
  const core::ProbeAnalysis* restart = nullptr;
  for (const auto& probe : report.probes) {
    const core::AuditSummary& s = probe.analysis.summary;
    out += fmt::format(
        "| {} | {} | {} | {} | {} | {} ({}) | {} | {} | {} |\n", core::to_string(probe.probe),
        unstable_text(s), distinct_completions(core::analysis_of(report, probe)),
        percent_text(s.tarr), percent_text(s.tara), s.requests, s.failed_requests,
        cost_text(s.by_concurrency), s.bitwise_stable_prompts, max_drift_text(s.max_logprob_drift));
    if (probe.probe == core::ProbeKind::prefix) prefix = &probe;
    if (probe.probe == core::ProbeKind::restart) restart = &probe;
  }
  if (restart != nullptr) {
    out += fmt::format("\nRestart (later requests against the first after each restart): {} of "
                       "{} prompts drift",
                       restart->prefix_drift_prompts, restart->prefix.size());
    if (report.data != nullptr && !report.data->probe_activity.empty()) {
      const core::ProbeActivity& a = report.data->probe_activity.front();
      out += fmt::format("; {} restarts run, {} failed, slowest ready {} ms", a.restarts_run,
                         a.restarts_failed, a.restart_ready_ms_max);
    }
    out += ".\n";
  }
  if (prefix != nullptr) {
    out += fmt::format("\nPrefix cache (warm against cold, apart from batch drift): {} of {} "
                       "prompts drift",
                       prefix->prefix_drift_prompts, prefix->prefix.size());
    const core::AuditData* data = report.data;
    if (data != nullptr && !data->probe_activity.empty()) {
      const core::ProbeActivity& a = data->probe_activity.front();
      if (a.cold_per_request)
        out += "; cold trials with the prompt cache off per request (cache_prompt: false)";
      else
        out += a.flush_route.empty()
                   ? std::string("; no cold mode (no cache flush available): cold trials ran on "
                                 "whatever the cache held, so the cold cell is not tested")
                   : fmt::format("; {} flushes through {}", a.flushes_sent - a.flushes_failed,
                                 markdown_escape(a.flush_route, 40));
      if (const std::string sizing = core::prefix_sizing_text(a); !sizing.empty())
        out += "; " + sizing;
    }
    out += ".\n";
    std::size_t shown = 0;
    for (const auto& drift : prefix->prefix) {
      if (!drift.drift) continue;
      if (shown++ == 0)
        out += "\n| prompt | cold distinct | warm distinct | diverges at |\n|---|---:|---:|---:|\n";
      if (shown > k_rows_shown) continue;
      out += fmt::format("| {} | {} | {} | {} |\n", markdown_escape(drift.id, 60),
                         drift.cold_unique, drift.warm_unique,
                         drift.divergence ? std::to_string(*drift.divergence) : "\u2013");
    }
    if (shown > k_rows_shown)
      out += fmt::format("\n{} more drifting prompts in the HTML report.\n", shown - k_rows_shown);
  }
  return out;
}

std::string comparison_markdown(const core::AuditReport& report) {
  if (!report.comparison) return {};
  const core::EndpointComparison& comparison = *report.comparison;
  std::string out = fmt::format(
      "\n### Endpoints compared\n\n{} of {} prompts give the same reference completion on every "
      "endpoint ({} probe).\n\n| # | endpoint | unstable | TARr | TARa | per level | bitwise | "
      "max logprob drift |\n|---:|---|---:|---:|---:|---|---:|---:|\n",
      comparison.agreeing_prompts, comparison.prompts.size(),
      core::to_string(report.primary_probe));
  for (std::size_t e = 0; e < report.endpoints.size(); ++e) {
    const core::AuditSummary& s = report.endpoints[e].summary;
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", e,
                       endpoint_text(report.data, e), unstable_text(s), percent_text(s.tarr),
                       percent_text(s.tara), cost_text(s.by_concurrency), s.bitwise_stable_prompts,
                       max_drift_text(s.max_logprob_drift));
  }
  std::size_t shown = 0;
  for (const auto& prompt : comparison.prompts) {
    if (prompt.all_agree) continue;
    if (shown++ == 0) out += "\n| prompt | differs on |\n|---|---|\n";
    if (shown > k_rows_shown) continue;
    std::string where;
    for (const auto& other : prompt.endpoints) {
      if (other.agrees) continue;
      where += fmt::format(
          "{}endpoint {}: {}", where.empty() ? "" : " \u00b7 ", other.endpoint_index,
          !other.has_reference     ? std::string("no completion")
          : other.first_difference ? "from token " + std::to_string(*other.first_difference)
                                   : std::string("differs"));
    }
    out += fmt::format("| {} | {} |\n", markdown_escape(prompt.id, 60), where);
  }
  if (shown > k_rows_shown)
    out += fmt::format("\n{} more differing prompts in the HTML report.\n", shown - k_rows_shown);
  return out;
}

std::string semantic_markdown(const core::AuditReport& report) {
  if (report.data == nullptr || !report.data->semantic) return {};
  const core::SemanticAgreement& semantic = *report.data->semantic;
  std::string out = fmt::format(
      "\n### Semantic agreement\n\n{} of {} prompts have every pair of distinct completions at "
      "cosine \u2265 {:g} (embedding model {}).\n",
      semantic.agreeing_share ? percent_text(*semantic.agreeing_share) : std::string("\u2013"),
      semantic.prompts.size(), semantic.threshold,
      semantic.model.empty() ? std::string("default") : markdown_escape(semantic.model, 60));
  std::size_t shown = 0;
  for (const auto& prompt : semantic.prompts) {
    if (prompt.agrees) continue;
    if (shown++ == 0)
      out += "\n| prompt | distinct | mean | std | min |\n|---|---:|---:|---:|---:|\n";
    if (shown > k_rows_shown) continue;
    const auto index = static_cast<std::size_t>(prompt.prompt_index);
    const std::string id = index < report.data->suite.prompts.size()
                               ? report.data->suite.prompts[index].id
                               : "#" + std::to_string(prompt.prompt_index);
    out += fmt::format("| {} | {} | {:.4f} | {:.4f} | {:.4f} |\n", markdown_escape(id, 60),
                       prompt.distinct, prompt.mean, prompt.std, prompt.min);
  }
  if (shown > k_rows_shown)
    out += fmt::format("\n{} more prompts below the threshold in the HTML report.\n",
                       shown - k_rows_shown);
  return out;
}

} // namespace

std::string markdown_escape(std::string_view text, std::size_t max_code_points) {
  std::string out;
  const std::vector<std::string> points =
      core::utf8_code_points(detail::mark_bidi_controls(core::sanitize_utf8(text)));
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (i == max_code_points) {
      out += "\u2026";
      break;
    }
    const std::string& point = points[i];
    if (point.size() != 1) {
      out += point;
      continue;
    }
    const char c = point[0];
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\u23ce";
    } else if (c == '\t' || c == '\r') {
      out += ' ';
    } else if (byte < 0x20 || byte == 0x7F) {
      continue;
    } else if (std::string_view("|`*_[]<>&\\~#!").find(c) != std::string_view::npos) {
      out += fmt::format("&#{};", static_cast<int>(byte));
    } else {
      out += c;
    }
  }
  return out;
}

std::string render_markdown(const core::AuditReport& report) {
  const core::AuditSummary& s = report.analysis.summary;
  const core::AuditData* data = report.data;
  // The headline verbatim, the first line after the title (escaped, so a prompt id or an error
  // text in it renders as itself).
  std::string out = fmt::format("## llmrepro audit: {}\n\n{}\n\n", verdict_title(report.verdict),
                                markdown_escape(report.verdict.headline, 1000));
  if (!report.determinism.empty()) {
    out += markdown_escape(core::determinism_line(report.determinism.front()), 1000) + "\n\n";
    out +=
        markdown_escape(core::determinism_coverage_line(report.determinism.front()), 2000) + "\n\n";
  }
  if (!report.adi.empty()) {
    out += "**--profile adi** (the agent-determinism leaderboard's protocol):\n\n";
    for (const std::string& text : core::adi_lines(report.adi))
      out += "- " + markdown_escape(text, 1000) + "\n";
    out += "\n";
  }
  if (data != nullptr)
    if (const std::string capped = core::stop_after_line(data->config); !capped.empty())
      out += markdown_escape(capped, 1000) + "\n\n";
  if (data != nullptr && data->adaptive) {
    const core::AdaptiveOutcome& outcome = *data->adaptive;
    out += markdown_escape(core::adaptive_line(outcome), 1000) + "\n\n" +
           markdown_escape(core::adaptive_guarantee(outcome), 2000) + "\n\n";
    for (const auto& note : core::adaptive_notes(outcome))
      out += markdown_escape(note, 2000) + "\n\n";
    out +=
        "<details><summary>Runs per prompt</summary>\n\n| prompt | runs | stop | p_flip bound |\n"
        "|---|---:|---|---:|\n";
    for (const auto& prompt : outcome.prompts)
      out += fmt::format("| {} | {} | {} | {} |\n", markdown_escape(prompt.id, 60), prompt.runs(),
                         core::to_string(prompt.stop),
                         prompt.p_flip_bound ? fmt::format("{:.3g}", *prompt.p_flip_bound)
                                             : std::string("\u2013"));
    out += "\n</details>\n\n";
  }
  const auto index = static_cast<std::size_t>(report.analysis.endpoint_index);
  if (data != nullptr && index < data->endpoints.size()) {
    const core::EndpointInfo& e = data->endpoints[index];
    out += fmt::format("Endpoint {} \u00b7 model {} \u00b7 {} runs per level\n\n",
                       e.embedded ? std::string("embedded reference engine")
                                  : markdown_escape(e.url, 100),
                       e.model.empty() ? std::string("\u2013") : markdown_escape(e.model, 60),
                       data->config.plan.runs);
  }
  // One line per endpoint whose server described itself (untrusted text, escaped).
  if (data != nullptr)
    for (std::size_t e = 0; e < data->endpoints.size(); ++e)
      if (data->endpoints[e].server.known())
        out += fmt::format("Serving stack{} \u00b7 {}\n\n",
                           data->endpoints.size() > 1 ? fmt::format(" #{}", e) : std::string(),
                           markdown_escape(data->endpoints[e].server.summary, 300));
  // What the preflight found: what was requested against what was in effect, first.
  if (data != nullptr)
    for (std::size_t e = 0; e < data->endpoints.size(); ++e) {
      const core::EndpointCapabilities& found = data->endpoints[e].capabilities;
      if (!found.checked()) continue;
      const std::string effect = core::temperature_effect_line(found);
      out += fmt::format("Capabilities{} \u00b7 {}{}\n\n",
                         data->endpoints.size() > 1 ? fmt::format(" #{}", e) : std::string(),
                         effect.empty() ? std::string()
                                        : "**" + markdown_escape(effect, 200) + "** \u00b7 ",
                         markdown_escape(core::capabilities_line(found), 1000));
    }
  const auto opt = [](const std::optional<double>& v) {
    return v ? fmt::format("{:.2f}", *v) : std::string("\u2013");
  };
  const double tau =
      data != nullptr ? data->config.analysis.fragile_gap : core::AnalysisConfig{}.fragile_gap;
  out += "| | |\n|---|---|\n";
  out += fmt::format("| prompts | {} |\n", s.prompts);
  out += fmt::format("| requests (failed) | {} ({}) |\n", s.requests, s.failed_requests);
  out += fmt::format("| stable prompts | {} of {} |\n", s.stable_prompts, s.prompts);
  out += fmt::format("| unstable prompts | {} of {} |\n", s.unstable_prompts, s.prompts);
  out += fmt::format("| inconclusive prompts | {} of {} |\n", s.inconclusive_prompts, s.prompts);
  out += fmt::format("| stability tiers | {} |\n", tier_counts_text(s, " \u00b7 "));
  out += fmt::format("| max logprob drift | {} |\n", max_drift_text(s.max_logprob_drift));
  if (const std::string reasoning = reasoning_summary_text(s.reasoning); !reasoning.empty())
    out += fmt::format("| reasoning | {} |\n", reasoning);
  out += fmt::format("| fragile prompts | {} |\n", s.fragile_prompts);
  out += fmt::format("| fragility unknown | {} |\n", s.fragility_unknown_prompts);
  if (const std::string usage = usage_text(s.usage); !usage.empty())
    out += fmt::format("| usage | {} |\n", usage);
  if (s.by_concurrency.size() > 1)
    if (const std::string levels = level_usage_text(s.by_concurrency, "; "); !levels.empty())
      out += fmt::format("| usage per level | {} |\n", levels);
  out += fmt::format("| TARr | {} |\n", percent_text(s.tarr));
  if (report.tara) out += fmt::format("| TARa | {} |\n", percent_text(*report.tara));
  if (s.checks) {
    out += fmt::format("| accuracy (best / worst possible) | {} ({} / {}) |\n",
                       percent_text(s.checks->mean_accuracy), percent_text(s.checks->best_possible),
                       percent_text(s.checks->worst_possible));
  }
  out += fmt::format("| fragility predictor precision / recall | {} / {} |\n",
                     opt(s.predictor.precision), opt(s.predictor.recall));
  out +=
      fmt::format("| flip predictors | {} |\n", predictor_comparison_line(s.flip_calibration, tau));
  for (const auto& level : s.by_concurrency)
    out += fmt::format("| noise at c={} | {} |\n", level.concurrency, noise_text(level.noise));
  if (const std::string cache = core::cache_state_line(s.by_concurrency); !cache.empty())
    out += fmt::format("| prompt cache | {} |\n", markdown_escape(cache, 400));
  out += levels_markdown(s.by_concurrency);
  out += verdict_markdown(report);
  const auto worst = core::worst_prompts(report.analysis, 5);
  if (!worst.empty()) {
    out += "\n### Worst prompts\n\n| prompt | status | distinct | first divergence | gap (nats) | "
           "candidates |\n"
           "|---|---|---:|---:|---:|---|\n";
    for (const core::PromptAnalysis* p : worst) {
      const std::optional<double> gap = p->gap_at_divergence ? p->gap_at_divergence : p->min_gap;
      std::string status = core::to_string(p->status);
      if (p->fragile == true) status += ", fragile";
      std::string divergence = "\u2013";
      if (p->first_divergence) {
        divergence = std::to_string(*p->first_divergence);
        if (p->text_mode) divergence += " (char)";
        if (p->divergence_kind == core::DivergenceKind::length) divergence += " (one ends)";
      }
      out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", markdown_escape(p->id, 60), status,
                         p->unique_completions, divergence,
                         gap ? fmt::format("{:.3g}", *gap) : std::string("\u2013"), candidates(*p));
    }
  }
  if (distribution_shown(report)) {
    const bool endpoints = report.comparison.has_value();
    out += "\n### Answer distributions\n\n" +
           markdown_escape(distribution_summary_line(report), 400) +
           "\n\n| prompt | distinct answers | modal answer | modal share [95%] | shifted at |" +
           (endpoints ? " shifted from endpoint 0 |\n|---|---:|---|---|---|---|\n"
                      : "\n|---|---:|---|---|---|\n");
    core::PromptAnalysis scratch;
    for (const core::PromptAnalysis* p : distribution_rows(report, k_rows_shown))
      out += fmt::format("| {} | {} | {} | {} | {} |{}\n", markdown_escape(p->id, 60),
                         p->answers.size(),
                         markdown_escape(core::detailed(report, *p, scratch).modal.answer, 80),
                         modal_share_text(p->modal), shifted_levels_text(*p),
                         endpoints ? " " + shifted_endpoints_text(report, *p) + " |" : "");
  }
  out += probes_markdown(report);
  out += comparison_markdown(report);
  out += semantic_markdown(report);
  return out;
}

} // namespace llmrepro::report
