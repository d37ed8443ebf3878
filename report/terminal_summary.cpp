#include "report/terminal_summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <string_view>
#include <vector>

#include "core/cache_state.hpp"
#include "core/adaptive.hpp"
#include "core/budget.hpp"
#include "core/prompt_ranking.hpp"
#include "report/detail/distribution_text.hpp"
#include "report/detail/bidi_controls.hpp"
#include "report/detail/drift_text.hpp"
#include "report/detail/usage_text.hpp"
#include "report/detail/flip_summary.hpp"
#include "report/detail/report_text.hpp"

namespace llmrepro::report {
namespace {

constexpr std::size_t k_id_width = 24;
constexpr std::size_t k_token_width = 16;
constexpr std::size_t k_field_width = 60;
constexpr std::size_t k_worst = 5;
constexpr std::size_t k_reasons = 5;      // failure reasons listed before "N more"
constexpr std::size_t k_label_width = 11; // "prompts    ": the label column

// Decodes one UTF-8 code point at `at`; returns its length, or 0 when the bytes there are not a
// well-formed sequence (overlong forms and surrogates included).
std::size_t decode_utf8(std::string_view text, std::size_t at, char32_t& code_point) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[at + i]); };
  const unsigned char lead = byte(0);
  std::size_t length = 0;
  char32_t minimum = 0;
  if (lead < 0x80) {
    code_point = lead;
    return 1;
  }
  if ((lead & 0xE0) == 0xC0) {
    length = 2;
    minimum = 0x80;
    code_point = lead & 0x1Fu;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3;
    minimum = 0x800;
    code_point = lead & 0x0Fu;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4;
    minimum = 0x10000;
    code_point = lead & 0x07u;
  } else {
    return 0;
  }
  if (at + length > text.size()) return 0;
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return 0;
    code_point = (code_point << 6) | (byte(i) & 0x3Fu);
  }
  if (code_point < minimum || code_point > 0x10FFFF ||
      (code_point >= 0xD800 && code_point <= 0xDFFF))
    return 0;
  return length;
}

// Code points that change how the terminal lays out or reorders the text around them: the C1
// controls and the bidirectional ones (bidi_controls.hpp, marked as every format marks them).
bool is_layout_control(char32_t code_point) {
  return (code_point >= 0x80 && code_point <= 0x9F) || detail::is_bidi_control(code_point);
}

// One visible piece of escaped text and the columns it takes.
struct Piece {
  std::string text;
  std::size_t columns;
};

std::vector<Piece> escape_pieces(std::string_view text) {
  std::vector<Piece> pieces;
  std::size_t at = 0;
  while (at < text.size()) {
    char32_t code_point = 0;
    const std::size_t length = decode_utf8(text, at, code_point);
    if (length == 0) {
      pieces.push_back({fmt::format("\\x{:02x}", static_cast<unsigned char>(text[at])), 4});
      ++at;
      continue;
    }
    std::string piece;
    switch (code_point) {
    case '\\': piece = "\\\\"; break;
    case '\n': piece = "\\n"; break;
    case '\t': piece = "\\t"; break;
    case '\r': piece = "\\r"; break;
    default:
      if (code_point < 0x20 || code_point == 0x7F)
        piece = fmt::format("\\x{:02x}", static_cast<unsigned>(code_point));
      else if (is_layout_control(code_point))
        piece = detail::bidi_marker(code_point); // the same "\u{...}" spelling for C1 controls
    }
    if (piece.empty())
      pieces.push_back({std::string(text.substr(at, length)), 1});
    else
      pieces.push_back({piece, piece.size()});
    at += length;
  }
  return pieces;
}

class Painter {
public:
  explicit Painter(bool color) : m_color(color) {}
  std::string bold(const std::string& text) const { return paint(text, "1"); }
  std::string red(const std::string& text) const { return paint(text, "1;31"); }
  std::string green(const std::string& text) const { return paint(text, "1;32"); }
  std::string yellow(const std::string& text) const { return paint(text, "33"); }

private:
  std::string paint(const std::string& text, const char* code) const {
    if (!m_color) return text;
    return fmt::format("\x1b[{}m{}\x1b[0m", code, text);
  }
  bool m_color;
};

std::string quoted(const std::string& token) {
  return "\"" + escape_terminal_text(token, k_token_width) + "\"";
}

std::string optional_ratio(const std::optional<double>& value) {
  return value ? fmt::format("{:.2f}", *value) : std::string("n/a");
}

std::string endpoint_line(const core::AuditData& data) {
  if (data.endpoints.empty()) return "endpoint   (none recorded)";
  const auto& endpoint = data.endpoints[0];
  std::string where = endpoint.embedded ? "embedded reference engine"
                                        : escape_terminal_text(endpoint.url, k_field_width);
  std::string model = !endpoint.model.empty() ? endpoint.model : data.config.plan.model;
  if (model.empty()) model = "(unknown)";
  return fmt::format("endpoint   {}   model {}   dialect {}", where,
                     escape_terminal_text(model, k_id_width),
                     endpoint.dialect.empty() ? std::string("(unknown)")
                                              : escape_terminal_text(endpoint.dialect, k_id_width));
}

std::string worst_line(const core::PromptAnalysis& prompt) {
  std::string line = fmt::format("  {:<{}} {} unique", escape_terminal_text(prompt.id, k_id_width),
                                 k_id_width, prompt.unique_completions);
  if (prompt.status == core::PromptStatus::inconclusive)
    line += fmt::format("  inconclusive ({} successful, {} failed)", prompt.runs, prompt.failed);
  if (prompt.first_divergence) {
    line += fmt::format("  diverges at {} {}", prompt.text_mode ? "char" : "token",
                        *prompt.first_divergence);
    if (prompt.divergence_kind == core::DivergenceKind::length)
      line += " (one completion ends there)";
    if (prompt.gap_at_divergence) line += fmt::format("  gap {:.4f}", *prompt.gap_at_divergence);
    const auto& candidates = prompt.candidates_at_divergence;
    if (candidates.size() >= 2)
      line += fmt::format("  {} ({:.4f}) vs {} ({:.4f})", quoted(candidates[0].token.str()),
                          candidates[0].logprob, quoted(candidates[1].token.str()),
                          candidates[1].logprob);
  } else if (prompt.min_gap && prompt.min_gap_position) {
    line += fmt::format("  {}min gap {:.4f} at token {}",
                        prompt.status == core::PromptStatus::stable ? "stable, " : "",
                        *prompt.min_gap, *prompt.min_gap_position);
  }
  if (prompt.runs > 0 && !prompt.has_logprobs) line += "  (no logprobs)";
  return line;
}

// The label column, padded: "prompts    ".
std::string label(const std::string& text) { return fmt::format("{:<{}}", text, k_label_width); }

// "unstable 2", painted when it is not zero.
std::string count_of(const Painter& paint, const char* what, int count) {
  const std::string text = fmt::format("{} {}", what, count);
  return count > 0 ? paint.yellow(text) : text;
}

// The verdict as every output states it: the headline, then each gate and each reason the audit
// could not be judged. Green only for a pass that a stability gate judged.
void verdict_lines(const core::Verdict& verdict, const Painter& paint,
                   const std::function<void(const std::string&)>& line) {
  const std::string headline = escape_terminal_text(verdict.headline, 0);
  if (verdict.status == core::VerdictStatus::pass)
    line(verdict.stability_gated ? paint.green(headline) : paint.yellow(headline));
  else
    line(paint.red(headline));
  for (const auto& gate : verdict.gates)
    line(fmt::format("  {} {}", gate.passed ? "\u2714" : "\u2718",
                     escape_terminal_text(gate.message, 0)));
  for (const auto& error : verdict.errors) line("  error: " + escape_terminal_text(error, 0));
}

// Stability over prompts, then a line per concurrency level.
void stability_lines(const core::AuditSummary& summary, const Painter& paint,
                     const std::function<void(const std::string&)>& line) {
  line(label("stable") + fmt::format("{} of {}   ", summary.stable_prompts, summary.prompts) +
       count_of(paint, "unstable", summary.unstable_prompts) + "   " +
       count_of(paint, "inconclusive", summary.inconclusive_prompts));
  // The logprobs as a second axis: stable prompts whose numbers also agree, and the largest drift.
  line(label("tiers") + tier_counts_text(summary, "   ") + "   max logprob drift " +
       max_drift_text(summary.max_logprob_drift));
  if (const std::string reasoning = reasoning_summary_text(summary.reasoning); !reasoning.empty())
    line(label("reasoning") + reasoning);
  const bool several = summary.by_concurrency.size() > 1;
  for (std::size_t i = 0; i < summary.by_concurrency.size(); ++i) {
    const auto& level = summary.by_concurrency[i];
    std::string text = label("  c=" + std::to_string(level.concurrency)) +
                       count_of(paint, "unstable", level.unstable_prompts) + "   " +
                       count_of(paint, "inconclusive", level.inconclusive_prompts);
    if (several)
      text += i == 0 ? std::string("   (serial)")
                     : "   " + count_of(paint, "differs from serial",
                                        level.differs_from_serial_prompts);
    text += "   drift " + level_drift_text(level.logprob_drift);
    line(text);
  }
  // How fast each level served.
  for (std::size_t i = 0; i < summary.by_concurrency.size(); ++i)
    if (const std::string text = speed_text(summary.by_concurrency[i]); !text.empty())
      line(label(i == 0 ? "speed" : "") +
           "c=" + std::to_string(summary.by_concurrency[i].concurrency) + " " + text);
  // What the requests used, then each level's share where there are several.
  if (const std::string usage = usage_text(summary.usage); !usage.empty()) {
    line(label("usage") + usage);
    for (const auto& level : summary.by_concurrency)
      if (const std::string text = usage_text(level.usage); several && !text.empty())
        line(label("") + "c=" + std::to_string(level.concurrency) + " " + text);
  }
}

// Why requests failed, most frequent reason first.
void failure_lines(const core::AuditSummary& summary,
                   const std::function<void(const std::string&)>& line) {
  const auto& reasons = summary.failure_reasons;
  for (std::size_t i = 0; i < reasons.size() && i < k_reasons; ++i)
    line(label(i == 0 ? "failures" : "") +
         fmt::format("{} x {}", reasons[i].second, escape_terminal_text(reasons[i].first, 100)));
  if (reasons.size() > k_reasons)
    line(label("") + fmt::format("{} more reasons", reasons.size() - k_reasons));
}

// "every prompt stable" only when every prompt is.
std::string nothing_worst_line(const core::AuditSummary& summary) {
  if (summary.prompts == 0) return "worst      none: no prompt was analysed";
  if (summary.stable_prompts != summary.prompts)
    return fmt::format("worst      none listed ({} of {} prompts stable)", summary.stable_prompts,
                       summary.prompts);
  if (summary.fragility_unknown_prompts > 0)
    return fmt::format("worst      none: every prompt stable, none known to be fragile ({} of "
                       "unknown fragility)",
                       summary.fragility_unknown_prompts);
  return "worst      none: every prompt stable and none fragile";
}

} // namespace

std::string escape_terminal_text(std::string_view text, std::size_t width) {
  const std::vector<Piece> pieces = escape_pieces(text);
  std::size_t total = 0;
  for (const auto& piece : pieces) total += piece.columns;
  std::string out;
  if (width == 0 || total <= width) {
    for (const auto& piece : pieces) out += piece.text;
    return out;
  }
  // One column is kept for the ellipsis.
  std::size_t used = 0;
  for (const auto& piece : pieces) {
    if (used + piece.columns > width - 1) break;
    out += piece.text;
    used += piece.columns;
  }
  return out + "\u2026";
}

std::string render_terminal_summary(const core::AuditReport& report, bool color) {
  static const core::AuditData k_empty;
  const core::AuditData& data = report.data != nullptr ? *report.data : k_empty;
  const auto& summary = report.analysis.summary;
  const Painter paint(color);
  std::string out;
  const auto line = [&out](const std::string& text) { out += text + "\n"; };

  std::string status = data.info.status == "complete"
                           ? std::string("complete")
                           : fmt::format("partial: {} of {} planned "
                                         "requests recorded",
                                         core::recorded_requests(data), report.planned_requests);
  // The verdict leads, then what a reader must know before trusting the figures.
  verdict_lines(report.verdict, paint, line);
  if (!report.determinism.empty()) {
    const core::DeterminismCheck& check = report.determinism.front();
    const std::string text = escape_terminal_text(core::determinism_line(check), 0);
    line(check.held ? paint.green(text) : paint.red(text));
    line(escape_terminal_text(core::determinism_coverage_line(check), 0));
  }
  if (const std::string capped = core::stop_after_line(data.config); !capped.empty())
    line(paint.yellow(capped));
  if (data.adaptive) {
    line(core::adaptive_line(*data.adaptive));
    line(core::adaptive_guarantee(*data.adaptive));
    for (const auto& note : core::adaptive_notes(*data.adaptive))
      line(paint.yellow(escape_terminal_text(note, 0)));
  }
  for (const auto& warning : report.warnings)
    line(paint.yellow("warning: " + escape_terminal_text(warning, 0)));

  line(paint.bold("llmrepro audit " + escape_terminal_text(data.info.id, k_field_width)) + "  (" +
       status + ")");
  line(endpoint_line(data));
  // One line per endpoint whose server described itself (untrusted text, escaped).
  for (std::size_t e = 0; e < data.endpoints.size(); ++e)
    if (data.endpoints[e].server.known())
      line(fmt::format("server     {}{}",
                       data.endpoints.size() > 1 ? fmt::format("#{} ", e) : std::string(),
                       escape_terminal_text(data.endpoints[e].server.summary, 0)));
  // What the preflight found; what was requested against what was in effect, where they differ.
  for (std::size_t e = 0; e < data.endpoints.size(); ++e) {
    const core::EndpointCapabilities& found = data.endpoints[e].capabilities;
    if (!found.checked()) continue;
    const std::string prefix = data.endpoints.size() > 1 ? fmt::format("#{} ", e) : std::string();
    if (const std::string effect = core::temperature_effect_line(found); !effect.empty())
      line(paint.yellow("temperature " + prefix + escape_terminal_text(effect, 0)));
    line(prefix + escape_terminal_text(core::capabilities_line(found), 0));
  }
  line(fmt::format("prompts    {}   requests {}   failed {}", summary.prompts, summary.requests,
                   summary.failed_requests));
  stability_lines(summary, paint, line);
  line(fmt::format("fragile    {} of {}   (top-2 gap < {} nats within the first {} tokens)",
                   summary.fragile_prompts, summary.prompts, data.config.analysis.fragile_gap,
                   data.config.analysis.fragile_window));
  if (summary.fragility_unknown_prompts > 0) {
    std::string why;
    for (const auto& prompt : report.analysis.prompts)
      if (!prompt.fragile) {
        why = fmt::format(" (first: {}: {})", escape_terminal_text(prompt.id, k_id_width),
                          escape_terminal_text(prompt.fragility_reason, k_field_width));
        break;
      }
    line(label("") + fmt::format("fragility unknown: {} of {}{}", summary.fragility_unknown_prompts,
                                 summary.prompts, why));
  }
  // Sampling by design: how the answers spread, and the prompts that moved or spread most.
  if (distribution_shown(report)) {
    line(label("answers") + escape_terminal_text(distribution_summary_line(report), 0));
    for (const core::PromptAnalysis* p : distribution_rows(report, 3)) {
      const std::string endpoints = shifted_endpoints_text(report, *p);
      const bool endpoint_shift = endpoints != "\u2013";
      if (p->shifted || endpoint_shift || p->modal.share < 1.0)
        line(fmt::format("  {:<{}} {} distinct, modal {}, shifted {}{}",
                         escape_terminal_text(p->id, k_id_width), k_id_width, p->answers.size(),
                         modal_share_text(p->modal), shifted_levels_text(*p),
                         report.comparison ? ", vs endpoint 0: " + endpoints : ""));
    }
  }
  if (summary.prompts_without_logprobs > 0)
    line(fmt::format("           prompts without logprobs: {} (judged on text alone)",
                     summary.prompts_without_logprobs));
  failure_lines(summary, line);
  line(fmt::format("TARr       {}   TARa {}", percent_text(summary.tarr),
                   report.tara ? percent_text(*report.tara) : std::string("n/a")));
  const auto& predictor = summary.predictor;
  line(fmt::format("predictor  precision {}  recall {}  (tp {} fp {} fn {} tn {})",
                   optional_ratio(predictor.precision), optional_ratio(predictor.recall),
                   predictor.true_positive, predictor.false_positive, predictor.false_negative,
                   predictor.true_negative));
  line("flip model " +
       predictor_comparison_line(summary.flip_calibration, data.config.analysis.fragile_gap));
  for (std::size_t i = 0; i < summary.by_concurrency.size(); ++i) {
    const auto& level = summary.by_concurrency[i];
    line(label(i == 0 ? "noise" : "") +
         fmt::format("c={} {}", level.concurrency, noise_text(level.noise)));
  }
  if (const std::string cache = core::cache_state_line(summary.by_concurrency); !cache.empty())
    line(label("cache") + cache);
  // --profile adi: the leaderboard protocol's figures, beside ours.
  const std::vector<std::string> adi = core::adi_lines(report.adi);
  for (std::size_t i = 0; i < adi.size(); ++i) line(label(i == 0 ? "adi" : "") + adi[i]);

  // Each probe kind on its own (only when more than the sweep ran), then the endpoints side by
  // side.
  if (report.probes.size() > 1 || report.primary_probe != core::ProbeKind::sweep) {
    // The probe column fits the longest name shown ("mixed-sampling"), and at least "prefix".
    std::size_t width = 6;
    for (const auto& probe : report.probes)
      width = std::max(width, std::string_view(core::to_string(probe.probe)).size());
    for (const auto& probe : report.probes) {
      const auto& s = probe.analysis.summary;
      std::string extra;
      if (probe.probe == core::ProbeKind::prefix) {
        extra = fmt::format("   warm vs cold drift {} of {}", probe.prefix_drift_prompts,
                            probe.prefix.size());
        if (!data.probe_activity.empty() && data.probe_activity.front().cold_per_request)
          extra += "   (cold: prompt cache off per request)";
        else if (!data.probe_activity.empty() && data.probe_activity.front().flush_looked_up)
          extra += data.probe_activity.front().flush_route.empty()
                       ? "   (no cold mode: no cache flush available)"
                       : "   (flushed via " + data.probe_activity.front().flush_route + ")";
        if (!data.probe_activity.empty() && data.probe_activity.front().prefix_shortened)
          extra += "   (" + core::prefix_sizing_text(data.probe_activity.front()) + ")";
      } else if (probe.probe == core::ProbeKind::restart) {
        extra = fmt::format("   later vs first after restart drift {} of {}",
                            probe.prefix_drift_prompts, probe.prefix.size());
        if (!data.probe_activity.empty()) {
          const core::ProbeActivity& activity = data.probe_activity.front();
          extra += fmt::format("   (restarts {} run, {} failed, slowest ready {} ms)",
                               activity.restarts_run, activity.restarts_failed,
                               activity.restart_ready_ms_max);
        }
      } else if (core::probe_uses_fillers(probe.probe) && !data.probe_activity.empty()) {
        const core::ProbeActivity& activity = data.probe_activity.front();
        extra = fmt::format("   {} {} sent, {} failed",
                            core::fillers_sampled(probe.probe) ? "sampled filler" : "filler",
                            core::fillers_sent(activity, probe.probe),
                            core::fillers_failed(activity, probe.probe));
      }
      line(fmt::format("probe {:<{}} unstable {} of {}{}   bitwise {}   max drift {}   TARr {}{}",
                       core::to_string(probe.probe), width, s.unstable_prompts, s.prompts,
                       s.inconclusive_prompts > 0
                           ? fmt::format("   inconclusive {}", s.inconclusive_prompts)
                           : std::string(),
                       s.bitwise_stable_prompts, max_drift_text(s.max_logprob_drift),
                       percent_text(s.tarr), extra));
      if (const std::string usage = usage_text(s.usage); !usage.empty())
        line(std::string(7 + width, ' ') + usage); // under the figures, past "probe sweep  "
    }
  }
  if (report.comparison) {
    line(fmt::format("endpoints  {} agree on the reference completion of {} of {} prompts",
                     report.endpoints.size(), report.comparison->agreeing_prompts,
                     report.comparison->prompts.size()));
    for (std::size_t e = 0; e < report.endpoints.size(); ++e) {
      const auto& s = report.endpoints[e].summary;
      std::string cost;
      for (const auto& level : s.by_concurrency)
        cost += fmt::format("  c={}: {:.1f} tok/s {:.0f} ms", level.concurrency,
                            level.tokens_per_second, level.mean_latency_ms);
      const std::string url = e < data.endpoints.size() ? data.endpoints[e].url : "";
      line(fmt::format("  #{} {}  unstable {} of {}{}  bitwise {}  max drift {}{}", e,
                       escape_terminal_text(url, 48), s.unstable_prompts, s.prompts,
                       s.inconclusive_prompts > 0
                           ? fmt::format("  inconclusive {}", s.inconclusive_prompts)
                           : std::string(),
                       s.bitwise_stable_prompts, max_drift_text(s.max_logprob_drift), cost));
    }
  }

  if (data.semantic && data.semantic->agreeing_share && !data.semantic->prompts.empty()) {
    const core::SemanticAgreement& semantic = *data.semantic;
    double mean = 0.0;
    for (const auto& prompt : semantic.prompts) mean += prompt.mean;
    mean /= static_cast<double>(semantic.prompts.size());
    line(fmt::format("semantic agreement: {:.1f}% of {} prompts have every pair of distinct "
                     "completions at cosine >= {} (mean pairwise similarity {:.4f})",
                     *semantic.agreeing_share * 100.0, semantic.prompts.size(), semantic.threshold,
                     mean));
  }

  const auto worst = core::worst_prompts(report.analysis, k_worst);
  if (worst.empty()) {
    line(nothing_worst_line(summary));
  } else {
    line("worst prompts");
    for (const auto* prompt : worst) line(worst_line(*prompt));
  }
  return out;
}

} // namespace llmrepro::report
