// Markdown summary. GitHub, GitLab and most CI summary viewers render GitHub-flavoured
// Markdown, which decodes numeric character references in table cells, so escaping by
// reference works in all of them (a backslash escape of `|` does not survive inside code spans).
#include "report/markdown_report.hpp"

#include <fmt/format.h>

#include "core/prompt_ranking.hpp"
#include "core/text_utf8.hpp"

namespace llmrepro::report {
namespace {

std::string pct(double share) {
  return fmt::format("{:.1f}%", 100.0 * share);
}

std::string candidates(const core::PromptAnalysis &p) {
  const auto &c = p.candidates_at_divergence;
  if (c.size() < 2) return "\u2013";
  return fmt::format("\u201c{}\u201d {:.3f} vs \u201c{}\u201d {:.3f}",
                     markdown_escape(c[0].token, 30), c[0].logprob, markdown_escape(c[1].token, 30),
                     c[1].logprob);
}

} // namespace

std::string markdown_escape(std::string_view text, std::size_t max_code_points) {
  std::string out;
  const std::vector<std::string> points = core::utf8_code_points(text);
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (i == max_code_points) {
      out += "\u2026";
      break;
    }
    const std::string &point = points[i];
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

std::string render_markdown(const core::AuditReport &report) {
  const core::AuditSummary &s = report.analysis.summary;
  const core::AuditData *data = report.data;
  std::string out = fmt::format("## llmrepro audit: {}\n\n",
                                report.verdict.passed ? "\u2705 PASS" : "\u274c FAIL");
  const auto index = static_cast<std::size_t>(report.analysis.endpoint_index);
  if (data != nullptr && index < data->endpoints.size()) {
    const core::EndpointInfo &e = data->endpoints[index];
    out += fmt::format(
        "Endpoint {} \u00b7 model {} \u00b7 {} runs per level\n\n",
        e.embedded ? std::string("embedded reference engine") : markdown_escape(e.url, 100),
        e.model.empty() ? std::string("\u2013") : markdown_escape(e.model, 60), data->config.runs);
  }
  std::string levels;
  for (const core::LevelSummary &level : s.by_concurrency) {
    levels += fmt::format("{}c={}: {}", levels.empty() ? "" : " \u00b7 ", level.concurrency,
                          level.unstable_prompts);
  }
  const auto opt = [](const std::optional<double> &v) {
    return v ? fmt::format("{:.2f}", *v) : std::string("\u2013");
  };
  out += "| | |\n|---|---|\n";
  out += fmt::format("| prompts | {} |\n", s.prompts);
  out += fmt::format("| requests (failed) | {} ({}) |\n", s.requests, s.failed_requests);
  out += fmt::format("| unstable prompts | {} of {}{} |\n", s.unstable_prompts, s.prompts,
                     levels.empty() ? "" : " (" + levels + ")");
  out += fmt::format("| fragile prompts | {} |\n", s.fragile_prompts);
  out += fmt::format("| TARr | {} |\n", pct(s.tarr));
  if (report.tara) out += fmt::format("| TARa | {} |\n", pct(*report.tara));
  if (s.checks) {
    out += fmt::format("| accuracy (best / worst possible) | {} ({} / {}) |\n",
                       pct(s.checks->mean_accuracy), pct(s.checks->best_possible),
                       pct(s.checks->worst_possible));
  }
  out += fmt::format("| fragility predictor precision / recall | {} / {} |\n",
                     opt(s.predictor.precision), opt(s.predictor.recall));
  if (!report.verdict.gates.empty()) {
    out += "\n";
    for (const core::GateResult &gate : report.verdict.gates) {
      out += fmt::format("- {} `{}`: {}\n", gate.passed ? "\u2705" : "\u274c", gate.name,
                         markdown_escape(gate.message, 200));
    }
  }
  const auto worst = core::worst_prompts(report.analysis, 5);
  if (!worst.empty()) {
    out += "\n### Worst prompts\n\n| prompt | distinct | first divergence | gap (nats) | "
           "candidates |\n"
           "|---|---:|---:|---:|---|\n";
    for (const core::PromptAnalysis *p : worst) {
      const std::optional<double> gap = p->gap_at_divergence ? p->gap_at_divergence : p->min_gap;
      out += fmt::format(
          "| {} | {} | {} | {} | {} |\n", markdown_escape(p->id, 60), p->unique_completions,
          p->first_divergence ? std::to_string(*p->first_divergence) : std::string("\u2013"),
          gap ? fmt::format("{:.3g}", *gap) : std::string("\u2013"), candidates(*p));
    }
  }
  return out;
}

} // namespace llmrepro::report
