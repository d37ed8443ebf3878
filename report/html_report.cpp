// The HTML audit report. The page is assembled top-down in reading order: header, verdict (its
// headline verbatim, #verdict-headline), warnings, summary cards, worst prompts (a reviewer
// decides from these without scrolling at 1280x800), the concurrency levels, charts, each probe
// kind, the endpoint comparison and semantic agreement (where the audit has them), the prompt
// table, then one collapsible section per prompt. Model text is escaped where it enters
// (html_escape); the only script is a constant string with no data in it, so no model text can ever
// reach a script context.
#include "report/html_report.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <ostream>
#include <set>
#include <sstream>

#include "core/adaptive.hpp"
#include "core/budget.hpp"
#include "core/prompt_ranking.hpp"
#include "core/text_utf8.hpp"
#include "report/detail/drift_text.hpp"
#include "report/detail/usage_text.hpp"
#include "report/detail/html_audit_sections.hpp"
#include "report/detail/html_noise_section.hpp"
#include "report/detail/html_prompt_detail.hpp"
#include "report/detail/html_style.hpp"
#include "report/detail/iso_time.hpp"
#include "report/detail/svg_chart.hpp"
#include "report/detail/report_text.hpp"

namespace llmrepro::report {
namespace {

constexpr std::size_t k_worst_shown = 5;

void write_text(std::ostream& stream, std::string_view text) {
  stream.write(text.data(), static_cast<std::streamsize>(text.size()));
}

std::string gap_text(const std::optional<double>& gap) {
  return gap ? fmt::format("{:.3g}", *gap) : std::string("\u2013");
}

std::string position_text(const std::optional<int>& position) {
  return position ? std::to_string(*position) : std::string("\u2013");
}

std::string prompt_anchor(const core::PromptAnalysis& prompt) {
  return "prompt-" + std::to_string(prompt.prompt_index);
}

// "“Queens” (−0.69) vs “New” (−0.70)", escaped.
std::string candidates_html(const core::PromptAnalysis& prompt) {
  const auto& c = prompt.candidates_at_divergence;
  if (c.size() < 2) return "<span class=\"muted\">\u2013</span>";
  return fmt::format("<span class=\"tok\">{}</span> <span class=\"muted\">{:.3f}</span> vs "
                     "<span class=\"tok\">{}</span> <span class=\"muted\">{:.3f}</span>",
                     html_escape(c[0].token), c[0].logprob, html_escape(c[1].token), c[1].logprob);
}

// The status tag, then what else a reader should see at a glance: failed requests, missing
// logprobs. The prompt table shows fragility in a column of its own.
std::string status_tags_without_fragility(const core::PromptAnalysis& prompt) {
  std::string out = prompt_status_tag(prompt);
  if (prompt.runs > 0 && !prompt.has_logprobs)
    out += " <span class=\"tag info\">no logprobs</span>";
  if (prompt.failed > 0)
    out += fmt::format(" <span class=\"tag fail\">{} failed</span>", prompt.failed);
  return out;
}

std::string status_tags(const core::PromptAnalysis& prompt) {
  std::string out = prompt_status_tag(prompt);
  if (prompt.fragile == true) out += " <span class=\"tag warn\">fragile</span>";
  if (!prompt.fragile)
    out += " <span class=\"tag info\" title=\"" + html_escape(prompt.fragility_reason) +
           "\">fragility unknown</span>";
  if (prompt.runs > 0 && !prompt.has_logprobs)
    out += " <span class=\"tag info\">no logprobs</span>";
  if (prompt.failed > 0)
    out += fmt::format(" <span class=\"tag fail\">{} failed</span>", prompt.failed);
  return out;
}

// pass, fail, error, or nogate for a pass no stability gate judged (never shown as a green PASS).
const char* verdict_class(const core::Verdict& verdict) {
  switch (verdict.status) {
  case core::VerdictStatus::pass: return verdict.stability_gated ? "pass" : "nogate";
  case core::VerdictStatus::fail: return "fail";
  case core::VerdictStatus::error: break;
  }
  return "error";
}

const char* verdict_badge(const core::Verdict& verdict) {
  switch (verdict.status) {
  case core::VerdictStatus::pass: return verdict.stability_gated ? "PASS" : "NO GATE";
  case core::VerdictStatus::fail: return "FAIL";
  case core::VerdictStatus::error: break;
  }
  return "ERROR";
}

std::string render_header(const core::AuditReport& report) {
  const core::AuditData* data = report.data;
  std::string out = "<header class=\"page\"><h1>llmrepro audit</h1><span class=\"meta\">";
  std::vector<std::string> parts;
  if (data != nullptr) {
    parts.push_back("audit <code>" + html_escape(data->info.id) + "</code>");
    if (data->info.started_ms > 0)
      parts.push_back(html_escape(format_iso_utc_ms(data->info.started_ms)));
    if (!data->suite.source.empty())
      parts.push_back("suite <code>" + html_escape(data->suite.source) + "</code>");
    std::string levels;
    for (int level : data->config.plan.levels)
      levels += (levels.empty() ? "" : ",") + std::to_string(level);
    parts.push_back(fmt::format("{} runs \u00d7 concurrency {}", data->config.plan.runs, levels));
    parts.push_back(fmt::format("\u03c4 = {:g} nats, window {}", data->config.analysis.fragile_gap,
                                data->config.analysis.fragile_window));
    if (data->info.status != "complete")
      parts.push_back("<span class=\"tag warn\">partial audit</span>");
  }
  if (!report.tool.version.empty()) parts.push_back("llmrepro " + html_escape(report.tool.version));
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? " \u00b7 " : "") + parts[i];
  return out + "</span></header>\n";
}

// The verdict every output states: the headline verbatim, the counts behind it, each gate in its
// scope, and why the audit could not be judged where it could not.
std::string render_verdict(const core::AuditReport& report) {
  const core::AuditSummary& s = report.analysis.summary;
  const core::Verdict& verdict = report.verdict;
  const char* status = verdict_class(verdict);
  std::string out = fmt::format(
      "<section class=\"verdict {0}\" id=\"verdict\" data-status=\"{1}\"><span "
      "class=\"badge\">{2}</span><div><div class=\"headline {0}\" id=\"verdict-headline\">{3}"
      "</div>",
      status, core::to_string(verdict.status), verdict_badge(verdict),
      html_escape(verdict.headline));
  out += fmt::format(
      "<div><strong>{} of {} prompts unstable</strong> \u00b7 {} stable \u00b7 {} inconclusive "
      "\u00b7 {} fragile \u00b7 {} of unknown fragility \u00b7 TARr {} \u00b7 {} of {} requests "
      "failed</div>",
      s.unstable_prompts, s.prompts, s.stable_prompts, s.inconclusive_prompts, s.fragile_prompts,
      s.fragility_unknown_prompts, percent_text(s.tarr), s.failed_requests, s.requests);
  out += fmt::format("<div id=\"tiers\">stability tiers: {} \u00b7 max logprob drift {}</div>",
                     tier_counts_text(s, " \u00b7 "), max_drift_text(s.max_logprob_drift));
  if (const std::string reasoning = reasoning_summary_text(s.reasoning); !reasoning.empty())
    out += fmt::format("<div id=\"reasoning\">{}</div>", html_escape(reasoning));
  if (const std::string usage = usage_text(s.usage); !usage.empty()) {
    std::string levels =
        s.by_concurrency.size() > 1 ? level_usage_text(s.by_concurrency, "; ") : std::string();
    out +=
        fmt::format("<div id=\"usage\">{}{}</div>", html_escape(usage),
                    levels.empty() ? std::string() : " \u00b7 per level: " + html_escape(levels));
  }
  if (!report.determinism.empty()) {
    const core::DeterminismCheck& check = report.determinism.front();
    out += fmt::format("<div id=\"determinism\" data-held=\"{}\"><strong>{}</strong></div>"
                       "<div id=\"determinism-coverage\" class=\"muted\">{}</div>",
                       check.held ? "true" : "false", html_escape(core::determinism_line(check)),
                       html_escape(core::determinism_coverage_line(check)));
  }
  if (!report.adi.empty()) {
    out += "<div id=\"adi\"><strong>--profile adi</strong> (the agent-determinism "
           "leaderboard's protocol)<ul>";
    for (const std::string& text : core::adi_lines(report.adi))
      out += "<li>" + html_escape(text) + "</li>";
    out += "</ul></div>";
  }
  if (report.data != nullptr)
    if (const std::string capped = core::stop_after_line(report.data->config); !capped.empty())
      out += fmt::format("<div id=\"stop-after\">{}</div>", html_escape(capped));
  if (report.data != nullptr && report.data->adaptive) {
    const core::AdaptiveOutcome& outcome = *report.data->adaptive;
    out += fmt::format("<div id=\"adaptive\"><p>{}</p><p class=\"muted\">{}</p>",
                       html_escape(core::adaptive_line(outcome)),
                       html_escape(core::adaptive_guarantee(outcome)));
    for (const auto& note : core::adaptive_notes(outcome))
      out += fmt::format("<p class=\"adaptive-note\">{}</p>", html_escape(note));
    out += "<details><summary>Runs per prompt</summary><table><tr><th>prompt</th><th>runs</th>"
           "<th>stop</th><th>p_flip bound</th></tr>";
    for (const auto& prompt : outcome.prompts)
      out += fmt::format("<tr data-stop=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                         core::to_string(prompt.stop), html_escape(prompt.id), prompt.runs(),
                         core::to_string(prompt.stop),
                         prompt.p_flip_bound ? fmt::format("{:.3g}", *prompt.p_flip_bound)
                                             : std::string("\u2013"));
    out += "</table></details></div>";
  }
  out += "<ul class=\"gates\">";
  if (verdict.gates.empty()) out += "<li class=\"muted\">no gate configured</li>";
  for (const core::GateResult& gate : verdict.gates) {
    out += fmt::format("<li class=\"{}\">{} <code title=\"{}\">{}</code> {} <span "
                       "class=\"scope\">({})</span></li>",
                       gate.passed ? "passed" : "failed", gate.passed ? "\u2714" : "\u2718",
                       html_escape(gate.name), html_escape(gate.flag), html_escape(gate.message),
                       gate_scope_text(gate.scope));
  }
  out += "</ul>";
  if (!verdict.errors.empty()) {
    out += "<ul class=\"verdict-errors\" id=\"verdict-errors\">";
    for (const std::string& error : verdict.errors)
      out += "<li>\u2718 could not judge: " + html_escape(error) + "</li>";
    out += "</ul>";
  }
  return out + "</div></section>\n";
}

// What a reader must know before trusting the figures; nothing when there is nothing to say.
std::string render_warnings(const core::AuditReport& report) {
  if (report.warnings.empty()) return {};
  std::string out = "<section class=\"panel warnings\" id=\"warnings\"><h2>Warnings</h2><ul>";
  for (const std::string& warning : report.warnings) out += "<li>" + html_escape(warning) + "</li>";
  return out + "</ul></section>\n";
}

// Per concurrency level: unstable, inconclusive and differing-from-serial prompts beside cost.
std::string render_levels(const core::AuditReport& report) {
  const auto& levels = report.analysis.summary.by_concurrency;
  if (levels.empty()) return {};
  return "<section class=\"panel\" id=\"levels\"><h2>Concurrency levels</h2>" +
         render_levels_table(levels) + "</section>\n";
}

std::string card(const std::string& label, const std::string& value_html,
                 const std::string& sub_html, const std::string& extra_class = "") {
  return fmt::format(
      "<div class=\"card {}\"><div class=\"label\">{}</div><div class=\"value{}\">{}</div>"
      "<div class=\"sub\">{}</div></div>",
      extra_class, label, extra_class.find("text") != std::string::npos ? " small" : "", value_html,
      sub_html.empty() ? "&nbsp;" : sub_html);
}

std::string render_cards(const core::AuditReport& report) {
  const core::AuditSummary& s = report.analysis.summary;
  std::string endpoint = "\u2013";
  std::string dialect;
  std::string model = "\u2013";
  std::string fingerprints = "\u2013";
  std::size_t fingerprint_count = 0;
  const core::ServerDescription* server = nullptr;
  const core::EndpointCapabilities* capabilities = nullptr;
  const auto index = static_cast<std::size_t>(report.analysis.endpoint_index);
  if (report.data != nullptr && index < report.data->endpoints.size()) {
    const core::EndpointInfo& e = report.data->endpoints[index];
    endpoint = e.embedded ? std::string("embedded reference engine") : html_escape(e.url);
    dialect = html_escape(e.dialect);
    if (!e.model.empty()) model = html_escape(e.model);
    if (e.server.known()) server = &e.server;
    if (e.capabilities.checked()) capabilities = &e.capabilities;
    fingerprint_count = e.fingerprints.size();
    if (!e.fingerprints.empty()) {
      fingerprints.clear();
      for (const std::string& f : e.fingerprints)
        fingerprints += (fingerprints.empty() ? "" : ", ") + html_escape(f);
    }
  }
  std::string out = "<section class=\"cards\" id=\"summary\">";
  out += card("endpoint", "<span title=\"" + endpoint + "\">" + endpoint + "</span>", dialect,
              "wide text");
  out += card("model", "<span title=\"" + model + "\">" + model + "</span>", "", "wide text");
  // What the server said about itself (untrusted text, escaped like every other).
  if (server != nullptr) {
    const std::string head = html_escape(server->kind + " " + server->version);
    const std::string summary = html_escape(server->summary);
    out += card("serving stack", "<span title=\"" + summary + "\">" + head + "</span>", summary,
                "wide text");
  }
  // What the preflight found (server text in it escaped like every other): the temperature in
  // effect as the card's value, the findings beneath.
  if (capabilities != nullptr) {
    const std::string effect = core::temperature_effect_line(*capabilities);
    const std::string findings = html_escape(core::capabilities_line(*capabilities));
    out += card("temperature",
                capabilities->in_effect == core::TemperatureMode::zero ? "0" : "provider default",
                "<span title=\"" + findings + "\">" +
                    (effect.empty() ? findings : html_escape(effect)) + "</span>",
                effect.empty() ? "wide text" : "wide text warn");
  }
  out += card("fingerprints", std::to_string(fingerprint_count),
              "<span title=\"" + fingerprints + "\">" + fingerprints + "</span>",
              fingerprint_count > 1 ? "warn" : "");
  out += card("prompts", std::to_string(s.prompts),
              s.prompts_without_logprobs > 0
                  ? fmt::format("{} without logprobs", s.prompts_without_logprobs)
                  : "");
  out += card("requests", std::to_string(s.requests),
              report.planned_requests > 0 ? fmt::format("of {} planned", report.planned_requests)
                                          : "");
  out += card("failures", std::to_string(s.failed_requests), "failed requests",
              s.failed_requests > 0 ? "fail" : "pass");
  out += card("unstable", std::to_string(s.unstable_prompts),
              s.prompts > 0
                  ? fmt::format("{} of prompts",
                                percent_text(static_cast<double>(s.unstable_prompts) / s.prompts))
                  : "",
              s.unstable_prompts > 0 ? "fail" : "pass");
  out += card("inconclusive", std::to_string(s.inconclusive_prompts),
              fmt::format("{} stable", s.stable_prompts),
              s.inconclusive_prompts > 0 ? "warn" : "pass");
  out +=
      card("fragile", std::to_string(s.fragile_prompts),
           s.fragility_unknown_prompts > 0 ? fmt::format("{} unknown", s.fragility_unknown_prompts)
                                           : std::string("min gap below \u03c4"),
           s.fragile_prompts > 0 || s.fragility_unknown_prompts > 0 ? "warn" : "pass");
  out += card("TARr", percent_text(s.tarr), "identical runs", s.tarr < 1.0 ? "fail" : "pass");
  const auto& p = s.predictor;
  const auto opt = [](const std::optional<double>& v) {
    return v ? fmt::format("{:.2f}", *v) : std::string("\u2013");
  };
  out += card("predictor P / R", opt(p.precision) + " / " + opt(p.recall),
              fmt::format("TP {} FP {} FN {} TN {}", p.true_positive, p.false_positive,
                          p.false_negative, p.true_negative));
  if (report.tara)
    out += card("TARa", percent_text(*report.tara), "one answer",
                *report.tara < 1.0 ? "warn" : "pass");
  if (s.checks) {
    out += card("accuracy", percent_text(s.checks->mean_accuracy),
                fmt::format("best {} \u00b7 worst {}", percent_text(s.checks->best_possible),
                            percent_text(s.checks->worst_possible)),
                s.checks->spread > 0.0 ? "warn" : "pass");
  }
  const std::string status = verdict_class(report.verdict);
  out += card("verdict", verdict_badge(report.verdict),
              fmt::format("{} gate{}", report.verdict.gates.size(),
                          report.verdict.gates.size() == 1 ? "" : "s"),
              status == "pass"     ? "pass"
              : status == "nogate" ? "warn"
                                   : "fail");
  return out + "</section>\n";
}

std::string render_worst(const core::AuditReport& report) {
  const auto worst = core::worst_prompts(report.analysis, k_worst_shown);
  std::string out = "<section class=\"panel\" id=\"worst\"><h2>Worst prompts</h2>";
  if (worst.empty()) {
    const core::AuditSummary& s = report.analysis.summary;
    if (s.prompts > 0 && s.stable_prompts == s.prompts)
      return out + (s.fragility_unknown_prompts > 0
                        ? fmt::format("<p class=\"muted\">Every prompt gave one completion in "
                                      "every run; none is known to be fragile ({} of unknown "
                                      "fragility).</p></section>\n",
                                      s.fragility_unknown_prompts)
                        : std::string("<p class=\"muted\">Every prompt gave one completion in "
                                      "every run, and none is fragile.</p></section>\n"));
    return out + fmt::format("<p class=\"muted\">No prompt to list ({} of {} prompts stable)."
                             "</p></section>\n",
                             s.stable_prompts, s.prompts);
  }
  out += "<table><thead><tr><th>prompt</th><th class=\"num\">distinct</th><th>by level</th>"
         "<th class=\"num\">first divergence</th><th class=\"num\">gap</th><th>candidates at "
         "divergence</th>"
         "<th>status</th></tr></thead><tbody>";
  for (const core::PromptAnalysis* prompt : worst) {
    std::string levels;
    for (const core::LevelAnalysis& level : prompt->by_concurrency) {
      levels += fmt::format("{}c={}: {}", levels.empty() ? "" : " \u00b7 ", level.concurrency,
                            level.unique_completions);
    }
    const std::optional<double> gap =
        prompt->gap_at_divergence ? prompt->gap_at_divergence : prompt->min_gap;
    out += fmt::format("<tr><td><a href=\"#{}\"><code>{}</code></a></td><td "
                       "class=\"num\">{}</td><td class=\"nowrap\">{}</td>"
                       "<td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td "
                       "class=\"nowrap\">{}</td></tr>",
                       prompt_anchor(*prompt), html_escape(core::truncate_utf8(prompt->id, 48)),
                       prompt->unique_completions, levels, position_text(prompt->first_divergence),
                       gap_text(gap), candidates_html(*prompt), status_tags(*prompt));
  }
  return out + "</tbody></table></section>\n";
}

// Bin edges for gaps (nats): log-spaced, with τ itself an edge so the threshold line falls on one.
std::vector<double> gap_edges(double tau) {
  std::set<double> edges{0.0, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0};
  if (tau > 0.0) edges.insert(tau);
  return {edges.begin(), edges.end()};
}

std::string render_charts(const core::AuditReport& report) {
  const core::AuditAnalysis& analysis = report.analysis;
  const core::AuditSummary& s = analysis.summary;
  const double tau = report.data != nullptr ? report.data->config.analysis.fragile_gap
                                            : core::k_default_fragile_gap;
  std::string out = "<section class=\"charts\" id=\"charts\">";

  BarChart unique;
  unique.title = "Distinct completions by concurrency level";
  unique.x_label = "concurrency level";
  unique.y_label = "distinct completions (all prompts)";
  unique.series.push_back({"distinct completions", {}});
  for (const core::LevelSummary& level : s.by_concurrency) {
    unique.categories.push_back(fmt::format("c={}", level.concurrency));
    unique.series[0].values.push_back(level.unique_completions);
    unique.value_labels.push_back(
        fmt::format("{} ({} unstable)", level.unique_completions, level.unstable_prompts));
  }
  unique.reference_y = s.prompts;
  unique.reference_label = fmt::format("{} = one per prompt", s.prompts);
  unique.empty_message = "no completions";
  unique.counts = true;
  out += "<div class=\"panel\">" + render_bar_chart(unique) + "</div>";

  BarChart divergence;
  divergence.title = "First-divergence positions (unstable prompts)";
  divergence.x_label = "token position of the first divergence";
  divergence.y_label = "prompts";
  divergence.empty_message = "no divergence: every prompt agreed with itself";
  divergence.counts = true;
  std::vector<int> positions;
  for (const core::PromptAnalysis& p : analysis.prompts) {
    if (p.first_divergence) positions.push_back(*p.first_divergence);
  }
  if (!positions.empty()) {
    const int top = *std::max_element(positions.begin(), positions.end());
    const int width = std::max(1, static_cast<int>(std::ceil((top + 1) / 16.0)));
    const int bins = top / width + 1;
    divergence.series.push_back(
        {"prompts", std::vector<double>(static_cast<std::size_t>(bins), 0.0)});
    for (int b = 0; b < bins; ++b) {
      divergence.categories.push_back(
          width == 1 ? std::to_string(b)
                     : fmt::format("{}\u2013{}", b * width, b * width + width - 1));
    }
    for (int position : positions)
      divergence.series[0].values[static_cast<std::size_t>(position / width)] += 1.0;
  }
  out += "<div class=\"panel\">" + render_bar_chart(divergence) + "</div>";

  BarChart gaps;
  gaps.title = "Top-1/top-2 gap: at divergence points vs all tokens";
  gaps.x_label = "gap (nats)";
  gaps.y_label = "share";
  gaps.percent = true;
  gaps.empty_message = "no logprobs: gaps unknown";
  const std::vector<double> edges = gap_edges(tau);
  std::vector<double> at_divergence(edges.size(), 0.0);
  std::vector<double> all_tokens(edges.size(), 0.0);
  const auto bin_of = [&](double gap) {
    const auto it = std::upper_bound(edges.begin(), edges.end(), gap);
    return static_cast<std::size_t>(std::max<std::ptrdiff_t>(0, (it - edges.begin()) - 1));
  };
  double divergence_total = 0.0;
  double token_total = 0.0;
  core::PromptAnalysis scratch;
  for (const core::PromptAnalysis& prompt : analysis.prompts) {
    if (prompt.gap_at_divergence) {
      at_divergence[bin_of(*prompt.gap_at_divergence)] += 1.0;
      divergence_total += 1.0;
    }
    const core::PromptAnalysis& p = core::detailed(report, prompt, scratch);
    for (const core::DistinctCompletion& c : p.completions) {
      if (!c.is_reference) continue;
      for (const core::TokenLogprob& token : c.tokens) {
        if (const auto gap = token.gap()) {
          all_tokens[bin_of(*gap)] += 1.0;
          token_total += 1.0;
        }
      }
    }
  }
  if (token_total > 0.0) {
    for (std::size_t i = 0; i < edges.size(); ++i) {
      gaps.categories.push_back(i + 1 < edges.size()
                                    ? fmt::format("{:g}\u2013{:g}", edges[i], edges[i + 1])
                                    : fmt::format("\u2265{:g}", edges[i]));
      gaps.edge_labels.push_back(fmt::format("{:g}", edges[i]));
      at_divergence[i] = divergence_total > 0.0 ? at_divergence[i] / divergence_total : 0.0;
      all_tokens[i] /= token_total;
    }
    gaps.edge_labels.push_back("\u221e");
    gaps.series.push_back(
        {fmt::format("at divergence (n={})", static_cast<int>(divergence_total)), at_divergence});
    gaps.series.push_back(
        {fmt::format("all reference tokens (n={})", static_cast<int>(token_total)), all_tokens});
    const auto tau_edge = std::find(edges.begin(), edges.end(), tau);
    if (tau_edge != edges.end()) {
      // Edge k is the left side of category k.
      gaps.threshold_edge = static_cast<double>(tau_edge - edges.begin());
      gaps.threshold_label = fmt::format("\u03c4 = {:g}", tau);
    }
  }
  out += "<div class=\"panel\">" + render_bar_chart(gaps) + "</div>";

  BarChart speed;
  speed.title = "Throughput by concurrency level";
  speed.x_label = "concurrency level";
  speed.y_label = "completion tokens / s";
  speed.empty_message = "no timing recorded";
  speed.series.push_back({"tokens/s", {}});
  for (const core::LevelSummary& level : s.by_concurrency) {
    speed.categories.push_back(fmt::format("c={}", level.concurrency));
    speed.series[0].values.push_back(level.tokens_per_second);
    speed.value_labels.push_back(fmt::format("{:.0f} tok/s \u00b7 {:.0f} ms",
                                             level.tokens_per_second, level.mean_latency_ms));
  }
  out += "<div class=\"panel\">" + render_bar_chart(speed) + "</div>";
  return out + "</section>\n";
}

std::string sort_value(const std::optional<double>& v) {
  return v ? fmt::format("{}", *v) : std::string();
}
std::string sort_value(const std::optional<int>& v) {
  return v ? std::to_string(*v) : std::string();
}

// Written a row at a time: the table grows with the prompts.
void write_table(const core::AuditReport& report, std::ostream& stream) {
  const core::AuditAnalysis& analysis = report.analysis;
  std::vector<int> levels;
  for (const core::LevelSummary& level : analysis.summary.by_concurrency)
    levels.push_back(level.concurrency);
  bool any_checker = false;
  for (const core::PromptAnalysis& p : analysis.prompts)
    any_checker = any_checker || p.passes.has_value();

  std::string out =
      "<section class=\"panel\" id=\"prompts\"><h2>Prompts</h2><div class=\"filters\">"
      "<input type=\"search\" id=\"prompt-filter\" placeholder=\"filter by prompt id\" "
      "aria-label=\"filter prompts\"><label><input type=\"checkbox\" id=\"only-problems\"> "
      "unstable, inconclusive or fragile only</label><span class=\"muted\" "
      "id=\"shown-count\"></span></div>";
  out += "<table id=\"prompt-table\"><thead><tr><th class=\"sortable num\">#</th><th "
         "class=\"sortable\">prompt</th>"
         "<th class=\"sortable num\">runs</th><th class=\"sortable num\">failed</th>"
         "<th class=\"sortable num\">distinct</th>";
  for (int level : levels) out += fmt::format("<th class=\"sortable num\">c={}</th>", level);
  out +=
      "<th class=\"sortable num\">first divergence</th><th class=\"sortable num\">gap at div.</th>"
      "<th class=\"sortable num\">min gap</th><th class=\"sortable num\">p_flip</th>";
  if (any_checker) out += "<th class=\"sortable num\">pass</th>";
  out += "<th class=\"sortable\">status</th><th class=\"sortable\">fragile</th>"
         "<th class=\"sortable\">tier</th><th class=\"sortable num\">logprob drift</th></tr>"
         "</thead><tbody>";
  write_text(stream, out);
  for (const core::PromptAnalysis& p : analysis.prompts) {
    out.clear();
    const bool problem = p.status != core::PromptStatus::stable || p.fragile == true;
    const int rank = p.status == core::PromptStatus::inconclusive ? 2
                     : p.status == core::PromptStatus::unstable   ? 1
                                                                  : 0;
    out += fmt::format("<tr data-problem=\"{}\" data-id=\"{}\"><td class=\"num\">{}</td>"
                       "<td><a href=\"#{}\"><code>{}</code></a></td><td class=\"num\">{}</td><td "
                       "class=\"num\">{}</td>"
                       "<td class=\"num\">{}</td>",
                       problem ? 1 : 0, html_escape(p.id), p.prompt_index, prompt_anchor(p),
                       html_escape(core::truncate_utf8(p.id, 60)), p.runs, p.failed,
                       p.unique_completions);
    for (int level : levels) {
      const auto found =
          std::find_if(p.by_concurrency.begin(), p.by_concurrency.end(),
                       [&](const core::LevelAnalysis& l) { return l.concurrency == level; });
      if (found == p.by_concurrency.end())
        out += "<td class=\"num\" data-sort=\"\">\u2013</td>";
      else
        out += fmt::format("<td class=\"num\">{}</td>", found->unique_completions);
    }
    out += fmt::format(
        "<td class=\"num\" data-sort=\"{}\">{}</td><td class=\"num\" data-sort=\"{}\">{}</td>"
        "<td class=\"num\" data-sort=\"{}\">{}</td>",
        sort_value(p.first_divergence), position_text(p.first_divergence),
        sort_value(p.gap_at_divergence), gap_text(p.gap_at_divergence), sort_value(p.min_gap),
        gap_text(p.min_gap));
    // The flip probability, with why it is unknown as the cell's title.
    out += p.p_flip
               ? fmt::format("<td class=\"num\" data-sort=\"{}\">{:.3f}</td>", *p.p_flip, *p.p_flip)
               : fmt::format("<td class=\"num\" data-sort=\"\" title=\"{}\">\u2013</td>",
                             html_escape(p.p_flip_reason));
    if (any_checker) {
      if (p.passes) {
        out +=
            fmt::format("<td class=\"num\" data-sort=\"{}\">{}/{}</td>",
                        p.checked_runs > 0 ? static_cast<double>(*p.passes) / p.checked_runs : 0.0,
                        *p.passes, p.checked_runs);
      } else {
        out += "<td class=\"num\" data-sort=\"\">\u2013</td>";
      }
    }
    out += fmt::format("<td data-sort=\"{}\">{}</td>", rank, status_tags_without_fragility(p));
    if (!p.fragile)
      out += "<td data-sort=\"1\" title=\"" + html_escape(p.fragility_reason) +
             "\"><span class=\"tag info\">unknown</span></td>";
    else if (*p.fragile)
      out += "<td data-sort=\"2\"><span class=\"tag warn\">yes</span></td>";
    else
      out += "<td data-sort=\"0\">no</td>";
    out += fmt::format("<td class=\"tier\">{}</td>", core::to_string(p.tier));
    if (p.logprob_drift.positions_compared > 0)
      out += fmt::format("<td class=\"num\" data-sort=\"{}\">{}</td></tr>", p.logprob_drift.max_abs,
                         drift_nats(p.logprob_drift.max_abs));
    else
      out += "<td class=\"num\" data-sort=\"\">\u2013</td></tr>";
    write_text(stream, out);
  }
  write_text(stream, "</tbody></table></section>\n");
}

// Written a prompt at a time, each read back whole from the report's detail.
void write_details(const core::AuditReport& report, std::ostream& stream) {
  const double tau = report.data != nullptr ? report.data->config.analysis.fragile_gap
                                            : core::k_default_fragile_gap;
  const auto worst = core::worst_prompts(report.analysis, 1);
  write_text(stream, "<section id=\"details\"><h2>Per prompt</h2>");
  std::string out;
  core::PromptAnalysis scratch;
  for (const core::PromptAnalysis& p : report.analysis.prompts) {
    const bool open = !worst.empty() && worst.front() == &p;
    out = fmt::format(
        "<details class=\"prompt\" id=\"{}\"{}><summary><span class=\"id\">{}</span> {} "
        "<span class=\"muted\">{} runs \u00b7 first divergence {} \u00b7 min gap {}",
        prompt_anchor(p), open ? " open" : "", html_escape(core::truncate_utf8(p.id, 80)),
        status_tags(p), p.runs, position_text(p.first_divergence), gap_text(p.min_gap));
    if (p.min_gap_position) out += fmt::format(" at token {}", *p.min_gap_position);
    out += "</span></summary><div class=\"body\">";
    out += render_prompt_detail(core::detailed(report, p, scratch), tau);
    out += "</div></details>";
    write_text(stream, out);
  }
  write_text(stream, "</section>\n");
}

// Sorting, filtering and opening a prompt's section from a link. A constant: no data inside.
constexpr std::string_view k_script = R"js(
(function () {
  var table = document.getElementById('prompt-table');
  if (!table) return;
  var body = table.tBodies[0];
  var heads = table.tHead.rows[0].cells;
  function key(row, i) {
    var cell = row.cells[i];
    var v = cell.getAttribute('data-sort');
    return v === null ? cell.textContent.trim() : v;
  }
  function sortBy(i) {
    var th = heads[i];
    var dir = th.getAttribute('aria-sort') === 'ascending' ? 'descending' : 'ascending';
    for (var h = 0; h < heads.length; h++) heads[h].removeAttribute('aria-sort');
    th.setAttribute('aria-sort', dir);
    var numeric = th.classList.contains('num');
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a, i), y = key(b, i), r;
      if (numeric) {
        if (x === '' || y === '') return x === y ? 0 : (x === '' ? 1 : -1);
        r = parseFloat(x) - parseFloat(y);
      } else {
        r = x.localeCompare(y);
      }
      return dir === 'ascending' ? r : -r;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }
  Array.prototype.forEach.call(heads, function (th, i) {
    if (th.classList.contains('sortable')) th.addEventListener('click', function () { sortBy(i); });
  });
  var filter = document.getElementById('prompt-filter');
  var only = document.getElementById('only-problems');
  var count = document.getElementById('shown-count');
  function apply() {
    var text = filter.value.toLowerCase();
    var shown = 0;
    Array.prototype.forEach.call(body.rows, function (row) {
      var visible = row.getAttribute('data-id').toLowerCase().indexOf(text) !== -1 &&
        (!only.checked || row.getAttribute('data-problem') === '1');
      row.classList.toggle('hidden', !visible);
      if (visible) shown++;
    });
    count.textContent = shown + ' of ' + body.rows.length + ' shown';
  }
  filter.addEventListener('input', apply);
  only.addEventListener('change', apply);
  apply();
  function openTarget() {
    var target = location.hash ? document.getElementById(location.hash.slice(1)) : null;
    if (target && target.tagName === 'DETAILS') target.open = true;
  }
  window.addEventListener('hashchange', openTarget);
  openTarget();
})();
)js";

} // namespace

void write_html(const core::AuditReport& report, std::ostream& stream) {
  std::string title = "llmrepro audit";
  if (report.data != nullptr && !report.data->info.id.empty()) title += " " + report.data->info.id;
  std::string out = html_document_head(title);
  out += "<main>\n";
  out += render_header(report);
  out += render_verdict(report);
  out += render_warnings(report);
  out += render_cards(report);
  out += render_worst(report);
  out += render_levels(report);
  out += render_charts(report);
  out += render_noise_section(report);
  out += render_probe_sections(report);
  out += render_comparison_section(report);
  out += render_semantic_section(report);
  write_text(stream, out);
  write_distribution_section(report, stream);
  write_table(report, stream);
  write_details(report, stream);
  out = "<footer>Written by llmrepro";
  if (!report.tool.version.empty()) out += " " + html_escape(report.tool.version);
  if (!report.tool.build.empty()) out += " \u00b7 " + html_escape(report.tool.build);
  out += ". Self-contained: this page fetches nothing.</footer>\n</main>\n<script "
         "id=\"llmrepro-script\">";
  out += k_script;
  out += "</script>\n</body>\n</html>\n";
  write_text(stream, out);
}

std::string render_html(const core::AuditReport& report) {
  std::ostringstream out;
  write_html(report, out);
  return std::move(out).str();
}

} // namespace llmrepro::report
