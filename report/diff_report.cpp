// Renderings of an AuditDiff. The JSON is built with nlohmann/json here (never in a header);
// the Markdown and HTML escape every prompt id, endpoint and model name they print.
#include "report/diff_report.hpp"

#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report/detail/html_style.hpp"
#include "report/detail/server_json.hpp"
#include "report/markdown_report.hpp"

namespace llmrepro::report {
namespace {

using nlohmann::ordered_json;

ordered_json number_or_null(double value) {
  return std::isfinite(value) ? ordered_json(value) : ordered_json(nullptr);
}

template <typename T> ordered_json optional_json(const std::optional<T>& value) {
  if (!value) return nullptr;
  if constexpr (std::is_floating_point_v<T>)
    return number_or_null(*value);
  else
    return *value;
}

ordered_json interval_json(const std::optional<core::Interval>& interval) {
  if (!interval) return nullptr;
  return ordered_json::array({number_or_null(interval->low), number_or_null(interval->high)});
}

ordered_json side_json(const core::AuditSide& side) {
  ordered_json out;
  out["audit_id"] = side.audit_id;
  out["endpoint"] = side.endpoint;
  out["model"] = side.model;
  out["fingerprints"] = side.fingerprints;
  out["server"] = detail::server_json<ordered_json>(side.server);
  out["prompts"] = side.prompts;
  out["runs"] = side.runs;
  out["verdict"] = side.verdict;
  out["requests"] = side.requests;
  out["failed_requests"] = side.failed_requests;
  out["dead_prompts"] = side.dead_prompts;
  out["max_failed_rate"] = number_or_null(side.max_failed_rate);
  return out;
}

ordered_json prompt_side_json(const core::PromptSide& side) {
  ordered_json out;
  out["runs"] = side.runs;
  out["failed"] = side.failed;
  out["unique_completions"] = side.unique_completions;
  out["reference_count"] = side.reference_count;
  out["agreement"] = number_or_null(side.agreement());
  out["unstable"] = side.unstable;
  out["fragile"] = side.fragility_known ? ordered_json(side.fragile) : ordered_json(nullptr);
  out["tier"] = side.tier;
  out["logprob_drift"] =
      side.drift_positions > 0 ? number_or_null(side.logprob_drift) : ordered_json(nullptr);
  out["first_divergence"] = optional_json(side.first_divergence);
  out["min_gap"] = optional_json(side.min_gap);
  if (side.pass)
    out["pass"] = {{"passed", side.pass->passed}, {"runs", side.pass->runs}};
  else
    out["pass"] = nullptr;
  return out;
}

std::string verdict_status(const core::AuditDiff& diff) {
  if (diff.evidence_lost()) return "lost_evidence";
  if (diff.regression()) return "regression";
  if (diff.improvement()) return "improvement";
  return "no_change";
}

std::string p_text(double p) {
  return p < 0.001 ? std::string("<0.001") : fmt::format("{:.3f}", p);
}

// A metric's value: rates in %, means with two decimals.
std::string value_text(const core::MetricDiff& m, double v) {
  if (m.test == "mcnemar_exact" || m.name == "pass_rate" || m.name == "mean_agreement" ||
      m.name == "pooled_agreement") {
    return fmt::format("{:.1f}%", 100.0 * v);
  }
  if (m.name == "mean_logprob_drift") return fmt::format("{:.3g}", v);
  return fmt::format("{:.2f}", v);
}

std::string delta_text(const core::MetricDiff& m) {
  if (m.test == "mcnemar_exact" || m.name == "pass_rate" || m.name == "mean_agreement" ||
      m.name == "pooled_agreement") {
    return fmt::format("{:+.1f} pp", 100.0 * m.delta);
  }
  return fmt::format("{:+.2f}", m.delta);
}

// With evidence lost no row is a finding: what remains was compared, but not judged.
constexpr const char* k_not_judged = "not judged (evidence lost)";

std::string metric_verdict(const core::AuditDiff& diff, const core::MetricDiff& m) {
  if (diff.evidence_lost()) return k_not_judged;
  if (m.regression) return "regression (beyond noise)";
  if (m.improvement) return "improvement (beyond noise)";
  return "within noise";
}

std::string prompt_verdict(const core::AuditDiff& diff, const core::PromptDiff& p) {
  if (diff.evidence_lost()) return k_not_judged;
  if (p.regression && p.improvement) return "changed (beyond noise)";
  if (p.regression) return "regression (beyond noise)";
  if (p.improvement) return "improvement (beyond noise)";
  return "within noise";
}

bool notable(const core::PromptDiff& p) {
  return p.beyond_noise || p.tier_worsened || p.agreement_change == "newly unstable" ||
         p.agreement_change == "newly stable";
}

// Names what regressed (metrics, then prompt ids, at most k_named_prompts of them), so the
// verdict line alone tells a reviewer where to look; empty without a regression.
constexpr std::size_t k_named_prompts = 8;

std::string regression_summary(const core::AuditDiff& diff, bool markdown) {
  if (diff.evidence_lost()) return {};
  const auto escape = [markdown](const std::string& text) {
    return markdown ? markdown_escape(text, 60) : html_escape(text);
  };
  std::string metrics;
  for (const core::MetricDiff& m : diff.metrics) {
    if (!m.regression) continue;
    // Metric names are the tool's own identifiers, printed as the metric table prints them.
    metrics += fmt::format("{}{} {} \u2192 {}", metrics.empty() ? "" : ", ",
                           markdown ? m.name : html_escape(m.name), value_text(m, m.a),
                           value_text(m, m.b));
  }
  std::vector<std::string> ids;
  for (const core::PromptDiff& p : diff.prompts) {
    if (p.regression) ids.push_back(p.id);
  }
  std::string prompts;
  for (std::size_t i = 0; i < ids.size() && i < k_named_prompts; ++i) {
    prompts += (i == 0 ? "" : ", ") + escape(ids[i]);
  }
  if (ids.size() > k_named_prompts) prompts += ", \u2026";
  std::string out = metrics;
  if (!ids.empty()) {
    out += fmt::format("{}{} prompt{} ({})", out.empty() ? "" : "; ", ids.size(),
                       ids.size() == 1 ? "" : "s", prompts);
  }
  return out;
}

// The prompts whose stability tier moved towards unstable, with the move ("q1 (bitwise -> token)"),
// at most k_named_prompts of them; empty when none did.
std::string worsened_tiers(const core::AuditDiff& diff, bool markdown) {
  std::string out;
  std::size_t named = 0;
  for (const core::PromptDiff& p : diff.prompts) {
    if (!p.tier_worsened) continue;
    if (named++ == k_named_prompts) {
      out += ", \u2026";
      break;
    }
    out += fmt::format("{}{} ({})", out.empty() ? "" : ", ",
                       markdown ? markdown_escape(p.id, 60) : html_escape(p.id), p.tier_change);
  }
  return out;
}

// Prompts a reviewer acts on come first: regressions, then improvements, then the rest, each
// in A's suite order.
// The speed table's cells of one level, in column order: level, A and B tokens/s, their ratio,
// A's and B's latency (mean and p95), their ratio. Markdown and HTML print the same cells.
std::vector<std::string> speed_cells(const core::LevelSpeed& s) {
  const auto ratio = [](const std::optional<double>& r) {
    return r ? fmt::format("{:.2f}", *r) : std::string("\u2013");
  };
  return {fmt::format("c={}", s.concurrency),
          fmt::format("{:.1f}", s.a_tokens_per_second),
          fmt::format("{:.1f}", s.b_tokens_per_second),
          ratio(s.throughput_ratio),
          fmt::format("{:.1f} ({:.0f})", s.a_mean_latency_ms, s.a_p95_latency_ms),
          fmt::format("{:.1f} ({:.0f})", s.b_mean_latency_ms, s.b_p95_latency_ms),
          ratio(s.latency_ratio)};
}

constexpr const char* k_speed_heads[] = {
    "level", "A tok/s", "B tok/s", "B/A", "A latency ms (p95)", "B latency ms (p95)", "B/A"};

std::vector<const core::PromptDiff*> prompts_by_concern(const core::AuditDiff& diff) {
  std::vector<const core::PromptDiff*> out;
  for (int rank = 0; rank < 3; ++rank) {
    for (const core::PromptDiff& p : diff.prompts) {
      const int own = p.regression ? 0 : p.improvement ? 1 : 2;
      if (own == rank) out.push_back(&p);
    }
  }
  return out;
}

} // namespace

std::string render_diff_json(const core::AuditDiff& diff) {
  ordered_json out;
  out["schema"] = "llmrepro.diff.v1";
  out["a"] = side_json(diff.a);
  out["b"] = side_json(diff.b);
  out["config"] = {{"alpha", diff.alpha},
                   {"bootstrap_resamples", diff.bootstrap_resamples},
                   {"seed", diff.seed}};
  out["paired_prompts"] = diff.paired_prompts;
  out["only_in_a"] = diff.only_in_a;
  out["only_in_b"] = diff.only_in_b;
  out["lost_evidence"] = diff.lost_evidence;
  out["server_changes"] = diff.server_changes;
  out["speeds"] = ordered_json::array();
  for (const core::LevelSpeed& s : diff.speeds)
    out["speeds"].push_back({{"concurrency", s.concurrency},
                             {"a_tokens_per_second", number_or_null(s.a_tokens_per_second)},
                             {"b_tokens_per_second", number_or_null(s.b_tokens_per_second)},
                             {"throughput_ratio", optional_json(s.throughput_ratio)},
                             {"a_mean_latency_ms", number_or_null(s.a_mean_latency_ms)},
                             {"b_mean_latency_ms", number_or_null(s.b_mean_latency_ms)},
                             {"latency_ratio", optional_json(s.latency_ratio)},
                             {"a_p95_latency_ms", number_or_null(s.a_p95_latency_ms)},
                             {"b_p95_latency_ms", number_or_null(s.b_p95_latency_ms)}});
  out["metrics"] = ordered_json::array();
  for (const core::MetricDiff& m : diff.metrics) {
    ordered_json j;
    j["name"] = m.name;
    j["description"] = m.description;
    j["higher_is_better"] = m.higher_is_better;
    j["pairs"] = m.pairs;
    j["a"] = number_or_null(m.a);
    j["b"] = number_or_null(m.b);
    j["delta"] = number_or_null(m.delta);
    j["a_interval"] = interval_json(m.a_interval);
    j["b_interval"] = interval_json(m.b_interval);
    j["delta_interval"] = interval_json(m.delta_interval);
    j["test"] = m.test;
    j["p_value"] = number_or_null(m.p_value);
    j["only_a"] = optional_json(m.only_a);
    j["only_b"] = optional_json(m.only_b);
    j["sign_test_p"] = optional_json(m.sign_test_p);
    j["beyond_noise"] = m.beyond_noise;
    j["regression"] = m.regression;
    j["improvement"] = m.improvement;
    out["metrics"].push_back(std::move(j));
  }
  out["prompts"] = ordered_json::array();
  for (const core::PromptDiff& p : diff.prompts) {
    ordered_json j;
    j["id"] = p.id;
    j["a"] = prompt_side_json(p.a);
    j["b"] = prompt_side_json(p.b);
    j["agreement_change"] = p.agreement_change;
    j["tier_change"] = p.tier_change;
    j["tier_worsened"] = p.tier_worsened;
    j["agreement_p"] = number_or_null(p.agreement_p);
    j["agreement_p_adjusted"] = number_or_null(p.agreement_p_adjusted);
    j["pass_p"] = optional_json(p.pass_p);
    j["pass_p_adjusted"] = optional_json(p.pass_p_adjusted);
    j["answer_shift_p"] =
        p.answer_shift ? number_or_null(p.answer_shift->p) : ordered_json(nullptr);
    j["answer_shift_p_adjusted"] = optional_json(p.answer_shift_p_adjusted);
    j["answers_shifted"] = p.answers_shifted;
    j["beyond_noise"] = p.beyond_noise;
    j["regression"] = p.regression;
    j["improvement"] = p.improvement;
    out["prompts"].push_back(std::move(j));
  }
  out["verdict"] = {{"status", verdict_status(diff)},
                    {"regression", diff.regression()},
                    {"improvement", diff.improvement()}};
  // Model text can hold invalid UTF-8; replace it rather than throw.
  return out.dump(2, ' ', false, ordered_json::error_handler_t::replace) + "\n";
}

std::string render_diff_markdown(const core::AuditDiff& diff) {
  const std::string status = verdict_status(diff);
  std::string out =
      fmt::format("## llmrepro diff: {}\n\n",
                  status == "lost_evidence" ? "\u26a0\ufe0f no finding: evidence was lost"
                  : status == "regression"  ? "\u274c regression beyond noise"
                  : status == "improvement" ? "\u2705 improvement beyond noise"
                                            : "\u2705 no difference beyond noise");
  // The serving stack first: a changed build or slot count explains the numbers below it. Its
  // arrows as the line below writes them ("->" would be escaped into "-&#62;").
  std::vector<std::string> arrows;
  for (const std::string& change : diff.server_changes) {
    std::string shown = markdown_escape(change, 300);
    for (auto at = shown.find(" -&#62; "); at != std::string::npos; at = shown.find(" -&#62; "))
      shown.replace(at, 8, " \u2192 ");
    arrows.push_back(shown);
  }
  if (const std::string changed = core::server_change_line(arrows); !changed.empty())
    out += changed + "\n\n";
  out += fmt::format("A {} ({}) \u2192 B {} ({}) \u00b7 {} paired prompts \u00b7 \u03b1 = {:g}\n\n",
                     markdown_escape(diff.a.audit_id, 40), markdown_escape(diff.a.model, 40),
                     markdown_escape(diff.b.audit_id, 40), markdown_escape(diff.b.model, 40),
                     diff.paired_prompts, diff.alpha);
  for (const std::string& line : diff.lost_evidence) {
    out += "**Lost evidence:** " + markdown_escape(line, 400) + "\n\n";
  }
  if (const std::string named = regression_summary(diff, true); !named.empty()) {
    out += "**Regressed:** " + named + "\n\n";
  }
  if (const std::string tiers = worsened_tiers(diff, true); !tiers.empty()) {
    out += "**Tiers worsened:** " + tiers + "\n\n";
  }
  // Distribution mode: the prompts whose answers changed beyond chance between the audits.
  std::string shifted;
  for (const core::PromptDiff& p : diff.prompts)
    if (p.answers_shifted && p.answer_shift_p_adjusted)
      shifted += fmt::format("{}{} (p {:.2g})", shifted.empty() ? "" : ", ",
                             markdown_escape(p.id, 60), *p.answer_shift_p_adjusted);
  if (!shifted.empty()) out += "**Answers shifted:** " + shifted + "\n\n";
  if (!diff.only_in_a.empty() || !diff.only_in_b.empty()) {
    out += fmt::format("{} prompts only in A, {} only in B (not compared).\n\n",
                       diff.only_in_a.size(), diff.only_in_b.size());
  }
  // What B's serving cost against A's, level by level (a deterministic mode's price).
  if (!diff.speeds.empty()) {
    out += "| " + fmt::format("{}", fmt::join(k_speed_heads, " | ")) +
           " |\n|---|---:|---:|---:|---:|---:|---:|\n";
    for (const core::LevelSpeed& s : diff.speeds)
      out += "| " + fmt::format("{}", fmt::join(speed_cells(s), " | ")) + " |\n";
    out += "\n";
  }
  if (!diff.metrics.empty()) {
    out += "| metric | A | B | change | p | verdict |\n|---|---:|---:|---:|---:|---|\n";
    for (const core::MetricDiff& m : diff.metrics) {
      out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", m.name, value_text(m, m.a),
                         value_text(m, m.b), delta_text(m), p_text(m.p_value),
                         metric_verdict(diff, m));
    }
  }
  std::string rows;
  int shown = 0;
  for (const core::PromptDiff& p : diff.prompts) {
    if (!notable(p) || shown == 10) continue;
    ++shown;
    rows += fmt::format("| {} | {} | {} \u2192 {} | {:.0f}% \u2192 {:.0f}% | {} | {} |\n",
                        markdown_escape(p.id, 60), p.agreement_change, p.a.unique_completions,
                        p.b.unique_completions, 100.0 * p.a.agreement(), 100.0 * p.b.agreement(),
                        p_text(p.agreement_p_adjusted), prompt_verdict(diff, p));
  }
  if (!rows.empty()) {
    out += "\n### Prompts that changed\n\n| prompt | stability | distinct | agreement | p "
           "(Tarone-BH) | "
           "verdict |\n"
           "|---|---|---:|---:|---:|---|\n" +
           rows;
  }
  return out;
}

std::string render_diff_html(const core::AuditDiff& diff) {
  const std::string status = verdict_status(diff);
  std::string out =
      html_document_head("llmrepro diff " + diff.a.audit_id + " vs " + diff.b.audit_id);
  out += "<main>\n<header class=\"page\"><h1>llmrepro diff</h1><span class=\"meta\">";
  out += fmt::format(
      "A <code>{}</code> ({}) \u2192 B <code>{}</code> ({}) \u00b7 {} paired prompts \u00b7 "
      "\u03b1 = {:g} \u00b7 bootstrap {} resamples, seed {}",
      html_escape(diff.a.audit_id), html_escape(diff.a.model), html_escape(diff.b.audit_id),
      html_escape(diff.b.model), diff.paired_prompts, diff.alpha, diff.bootstrap_resamples,
      diff.seed);
  out += "</span></header>\n";
  const bool lost = status == "lost_evidence";
  const bool bad = lost || status == "regression";
  std::string lost_lines;
  if (const std::string changed = core::server_change_line(diff.server_changes); !changed.empty())
    lost_lines += "<div>" + html_escape(changed) + "</div>";
  for (const std::string& line : diff.lost_evidence) {
    lost_lines += "<div>Lost evidence: " + html_escape(line) + "</div>";
  }
  out += fmt::format(
      "<section class=\"verdict {}\" id=\"verdict\"><span class=\"badge\">{}</span><div><strong>{}"
      "</strong>{}{}<div class=\"muted\">{} prompts only in A, {} only in B (not "
      "compared)</div></div>"
      "</section>\n",
      bad ? "fail" : "pass",
      lost                      ? "NO FINDING"
      : bad                     ? "REGRESSION"
      : status == "improvement" ? "IMPROVED"
                                : "NO CHANGE",
      lost  ? "Failed requests lost evidence: the diff is no finding either way."
      : bad ? "A difference beyond run-to-run noise is a regression."
      : status == "improvement" ? "Differences beyond noise are improvements."
                                : "Every difference is within run-to-run noise.",
      lost_lines + (worsened_tiers(diff, false).empty()
                        ? std::string()
                        : "<div>Tiers worsened: " + worsened_tiers(diff, false) + "</div>"),
      status == "regression" ? "<div>Regressed: " + regression_summary(diff, false) + "</div>"
                             : std::string(),
      diff.only_in_a.size(), diff.only_in_b.size());
  out += "<section class=\"panel\" id=\"metrics\"><h2>Overall</h2><table><thead><tr><th>metric</th>"
         "<th class=\"num\">A</th><th class=\"num\">B</th><th "
         "class=\"num\">change</th><th>interval</th>"
         "<th>test</th><th class=\"num\">p</th><th>verdict</th></tr></thead><tbody>";
  for (const core::MetricDiff& m : diff.metrics) {
    std::string interval;
    if (m.a_interval && m.b_interval) {
      interval = fmt::format("A [{}, {}] \u00b7 B [{}, {}]", value_text(m, m.a_interval->low),
                             value_text(m, m.a_interval->high), value_text(m, m.b_interval->low),
                             value_text(m, m.b_interval->high));
    }
    if (m.delta_interval) {
      interval += fmt::format("{}change [{:+.3f}, {:+.3f}]", interval.empty() ? "" : " \u00b7 ",
                              m.delta_interval->low, m.delta_interval->high);
    }
    const char* tag = m.regression ? "fail" : m.improvement ? "pass" : "info";
    out += fmt::format(
        "<tr><td><strong>{}</strong><div class=\"muted\">{}</div></td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num nowrap\">{}</td><td class=\"muted\">{}</td>"
        "<td>{}</td><td class=\"num\">{}</td><td class=\"nowrap\"><span class=\"tag {}\">{}</span>"
        "</td></tr>",
        html_escape(m.name), html_escape(m.description), value_text(m, m.a), value_text(m, m.b),
        delta_text(m), interval, html_escape(m.test), html_escape(p_text(m.p_value)), tag,
        metric_verdict(diff, m));
  }
  out += "</tbody></table></section>\n";
  if (!diff.speeds.empty()) {
    out += "<section class=\"panel\" id=\"speeds\"><h2>Serving speed per level</h2><table>"
           "<thead><tr>";
    for (const char* head : k_speed_heads) out += fmt::format("<th>{}</th>", html_escape(head));
    out += "</tr></thead><tbody>";
    for (const core::LevelSpeed& s : diff.speeds) {
      out += "<tr>";
      for (const std::string& cell : speed_cells(s))
        out += fmt::format("<td class=\"num\">{}</td>", html_escape(cell));
      out += "</tr>";
    }
    out += "</tbody></table></section>\n";
  }
  out += "<section class=\"panel\" "
         "id=\"prompts\"><h2>Prompts</h2><table><thead><tr><th>prompt</th><th>stability</th>"
         "<th class=\"num\">distinct A \u2192 B</th><th class=\"num\">agreement A \u2192 B</th>"
         "<th class=\"num\">pass A \u2192 B</th><th class=\"num\">p "
         "(Tarone-BH)</th><th>verdict</th></tr></thead><tbody>";
  for (const core::PromptDiff* prompt : prompts_by_concern(diff)) {
    const core::PromptDiff& p = *prompt;
    const char* tag = p.regression ? "fail" : p.improvement ? "pass" : "info";
    std::string pass = "\u2013";
    if (p.a.pass && p.b.pass) {
      pass = fmt::format("{}/{} \u2192 {}/{}", p.a.pass->passed, p.a.pass->runs, p.b.pass->passed,
                         p.b.pass->runs);
    }
    out += fmt::format("<tr><td><code>{}</code></td><td>{}</td><td class=\"num\">{} \u2192 {}</td>"
                       "<td class=\"num\">{}/{} \u2192 {}/{}</td><td class=\"num\">{}</td><td "
                       "class=\"num\">{}</td>"
                       "<td><span class=\"tag {}\">{}</span></td></tr>",
                       html_escape(p.id), html_escape(p.agreement_change), p.a.unique_completions,
                       p.b.unique_completions, p.a.reference_count, p.a.runs, p.b.reference_count,
                       p.b.runs, pass, html_escape(p_text(p.agreement_p_adjusted)), tag,
                       prompt_verdict(diff, p));
  }
  out += "</tbody></table></section>\n<footer>Written by llmrepro. Self-contained: this page "
         "fetches nothing."
         "</footer>\n</main>\n</body>\n</html>\n";
  return out;
}

} // namespace llmrepro::report
