// Per-prompt detail of the HTML report. Every piece of model text passes through
// html_escape exactly once, here, on its way into an element or a quoted attribute.
#include "report/detail/html_prompt_detail.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <optional>

#include "core/text_utf8.hpp"
#include "report/detail/drift_text.hpp"
#include "report/detail/html_style.hpp"
#include "report/detail/svg_chart.hpp"

namespace llmrepro::report {
namespace {

constexpr std::size_t k_max_variants = 6;         // variants shown beside the reference
constexpr std::size_t k_shared_context = 40;      // shared tokens shown before a divergence
constexpr std::size_t k_tail_tokens = 80;         // tokens shown after a divergence
constexpr std::size_t k_segment_code_points = 90; // text shown per tree node
constexpr std::size_t k_max_children = 8;         // branches shown per tree node

struct Branch {
  const std::vector<std::string>* tokens = nullptr;
  int count = 0;
};

std::string join(const std::vector<std::string>& tokens, std::size_t begin, std::size_t end) {
  std::string out;
  for (std::size_t i = begin; i < end && i < tokens.size(); ++i) out += tokens[i];
  return out;
}

std::string percent(int part, int whole) {
  if (whole <= 0) return "";
  return fmt::format("{:.1f}%", 100.0 * part / whole);
}

// "“Queens” −0.0213": one candidate for a title attribute (escaped by the caller).
std::string candidate_text(const core::TokenCandidate& candidate) {
  return fmt::format("\u201c{}\u201d {:.4f}", candidate.token, candidate.logprob);
}

// The hover text of a token: its top candidates with logprobs, and the top-1/top-2 gap.
std::string token_title(const core::TokenLogprob& token, std::size_t position) {
  std::string out =
      fmt::format("token {}: \u201c{}\u201d logprob {:.4f}", position, token.token, token.logprob);
  for (std::size_t k = 0; k < token.top.size() && k < 2; ++k) {
    out += fmt::format("\ntop-{}: {}", k + 1, candidate_text(token.top[k]));
  }
  if (const auto gap = token.gap()) out += fmt::format("\ngap {:.4g} nats", *gap);
  return out;
}

// The unit positions are counted in: tokens, or characters where the prompt was compared by
// text (a completion came back without tokens).
const char* unit_of(const core::PromptAnalysis& prompt) {
  return prompt.text_mode ? "char" : "token";
}

void render_tree_node(const std::vector<Branch>& group, std::size_t start, int total,
                      const char* unit, std::string& out) {
  // Extend the shared part while every branch has the same token at the position.
  std::size_t end = start;
  for (;;) {
    bool same = true;
    for (const Branch& branch : group) {
      if (end >= branch.tokens->size() || (*branch.tokens)[end] != (*group.front().tokens)[end]) {
        same = false;
        break;
      }
    }
    if (!same) break;
    ++end;
  }
  if (group.size() == 1) end = group.front().tokens->size();
  int count = 0;
  for (const Branch& branch : group) count += branch.count;

  const std::vector<std::string>& tokens = *group.front().tokens;
  out += "<li><span class=\"node\">";
  if (start > 0 && start < tokens.size()) {
    out += fmt::format("<span class=\"muted\">at {} {}</span>", unit, start);
  }
  if (end > start) {
    // The first token of a branch is what made it a branch: highlight it.
    const std::string first = tokens[start];
    const std::string rest =
        core::truncate_utf8(join(tokens, start + 1, end), k_segment_code_points);
    out += "<span class=\"completion\">";
    if (start > 0)
      out += "<mark>" + html_escape(first) + "</mark>";
    else
      out += html_escape(first);
    out += html_escape(rest) + "</span>";
  } else if (start > 0) {
    out += "<span class=\"completion\"><mark>\u27e8end\u27e9</mark></span>";
  }
  out += fmt::format("<span class=\"muted\">({} {}s)</span>", end - start, unit);
  const bool major = count * 2 > total;
  out += fmt::format("<span class=\"count {}\">{} run{} {}</span>", major ? "major" : "minor",
                     count, count == 1 ? "" : "s", percent(count, total));
  out += "</span>";
  if (group.size() > 1) {
    // Partition by the token at `end` (a branch that ended there forms its own group).
    std::vector<std::vector<Branch>> children;
    for (const Branch& branch : group) {
      const bool ended = end >= branch.tokens->size();
      auto found =
          std::find_if(children.begin(), children.end(), [&](const std::vector<Branch>& c) {
            const bool c_ended = end >= c.front().tokens->size();
            return ended ? c_ended : !c_ended && (*c.front().tokens)[end] == (*branch.tokens)[end];
          });
      if (found == children.end())
        children.push_back({branch});
      else
        found->push_back(branch);
    }
    const auto weight = [](const std::vector<Branch>& c) {
      int sum = 0;
      for (const Branch& b : c) sum += b.count;
      return sum;
    };
    std::stable_sort(children.begin(), children.end(),
                     [&](const auto& x, const auto& y) { return weight(x) > weight(y); });
    // Branches whose shown units are all equal cannot be told apart here (the caller shows
    // distinct completions by units that differ, so this is a guard against endless recursion).
    if (children.size() < 2) {
      out += "</li>";
      return;
    }
    out += "<ul>";
    for (std::size_t i = 0; i < children.size() && i < k_max_children; ++i) {
      render_tree_node(children[i], end, total, unit, out);
    }
    if (children.size() > k_max_children) {
      out += fmt::format("<li class=\"muted\">{} more branches</li>",
                         children.size() - k_max_children);
    }
    out += "</ul>";
  }
  out += "</li>";
}

// One side of a pair: shared context muted, the token at `divergence` highlighted, then the rest.
// In text mode `tokens` are characters and carry no candidates to show on hover.
std::string render_side(const core::DistinctCompletion& completion,
                        const std::vector<std::string>& tokens, std::size_t divergence,
                        bool reference, bool text_mode) {
  const char* unit = text_mode ? "char" : "token";
  std::string out = "<pre class=\"completion\">";
  const std::size_t shared_from = divergence > k_shared_context ? divergence - k_shared_context : 0;
  if (shared_from > 0) {
    out +=
        fmt::format("<span class=\"muted\">\u2026{} shared {}s\u2026 </span>", shared_from, unit);
  }
  out += "<span class=\"shared\">" + html_escape(join(tokens, shared_from, divergence)) + "</span>";
  const char* mark_class = reference ? " class=\"ref\"" : "";
  if (divergence < tokens.size()) {
    std::string title;
    if (!text_mode && divergence < completion.tokens.size())
      title = token_title(completion.tokens[divergence], divergence);
    out += fmt::format("<mark{} title=\"{}\">{}</mark>", mark_class, html_escape(title),
                       html_escape(tokens[divergence]));
    const std::size_t tail_end = std::min(tokens.size(), divergence + 1 + k_tail_tokens);
    out += html_escape(join(tokens, divergence + 1, tail_end));
    if (tail_end < tokens.size()) {
      out += fmt::format("<span class=\"muted\"> \u2026{} more {}s</span>",
                         tokens.size() - tail_end, unit);
    }
  } else {
    out += fmt::format("<mark{} title=\"the completion ends here\">\u27e8end\u27e9</mark>",
                       mark_class);
  }
  return out + "</pre>";
}

std::string by_level(const core::DistinctCompletion& completion) {
  std::string out;
  for (const auto& [level, count] : completion.count_by_concurrency) {
    if (!out.empty()) out += ", ";
    out += fmt::format("c={}: {}", level, count);
  }
  return out;
}

// "stop: 4, length: 1": value -> count, most first; a value the endpoint did not send is "(none)".
std::string counts_html(const std::map<std::string, int>& counts) {
  if (counts.empty()) return "<span class=\"muted\">\u2013</span>";
  std::vector<std::pair<std::string, int>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (const auto& [value, count] : sorted) {
    if (!out.empty()) out += ", ";
    out += value.empty() ? std::string("<span class=\"muted\">(none)</span>")
                         : "<code>" + html_escape(value) + "</code>";
    out += fmt::format(": {}", count);
  }
  return out;
}

// "token 3" / "char 0, where one ends": where a completion parts from the reference.
std::string divergence_text(const core::PromptAnalysis& prompt, std::optional<int> at,
                            std::optional<core::DivergenceKind> kind) {
  if (!at) return "<span class=\"muted\">\u2013</span>";
  std::string out = fmt::format("{} {}", unit_of(prompt), *at);
  if (kind == core::DivergenceKind::length) out += ", where one ends";
  return out;
}

// What the evidence says of the prompt: its status, how it was compared, where it diverged and
// whether it is fragile (and why that is unknown), then what the endpoint sent that a reader
// should know of.
std::string render_facts(const core::PromptAnalysis& prompt) {
  std::string out = fmt::format(
      "<p class=\"facts\">status <b class=\"status-{0}\">{0}</b> \u00b7 compared by {1}",
      core::to_string(prompt.status),
      prompt.text_mode ? "characters (a completion came back "
                         "without tokens)"
                       : "tokens");
  if (prompt.first_divergence) {
    out +=
        fmt::format(" \u00b7 first divergence at {} {}", unit_of(prompt), *prompt.first_divergence);
    out += prompt.divergence_kind == core::DivergenceKind::length
               ? std::string(", where one completion ends and another goes on")
               : fmt::format(", where two {}s differ", unit_of(prompt));
  } else {
    out += " \u00b7 no divergence";
  }
  if (!prompt.fragile)
    out += " \u00b7 fragile: <span class=\"fragile-unknown\">unknown</span> (" +
           html_escape(prompt.fragility_reason) + ")";
  else
    out += *prompt.fragile ? " \u00b7 fragile: yes" : " \u00b7 fragile: no";
  out += fmt::format(" \u00b7 {} successful, {} failed", prompt.runs, prompt.failed);
  // The logprobs as a second axis: whether stable tokens also came with identical numbers.
  out += fmt::format(" \u00b7 tier <b class=\"tier-{0}\">{0}</b> \u00b7 logprob drift {1}",
                     core::to_string(prompt.tier), level_drift_text(prompt.logprob_drift));
  if (prompt.non_greedy_tokens > 0)
    out += fmt::format(" \u00b7 {} tokens not the top candidate", prompt.non_greedy_tokens);
  if (prompt.token_text_mismatch > 0)
    out += fmt::format(" \u00b7 {} completions whose tokens do not match their text",
                       prompt.token_text_mismatch);
  if (prompt.min_candidates)
    out += fmt::format(" \u00b7 fewest candidates {}", *prompt.min_candidates);
  if (prompt.numbers.total() > 0)
    out +=
        fmt::format(" \u00b7 {} log probabilities not finite (NaN {}, Infinity {}, -Infinity "
                    "{}, overflow {}, null {})",
                    prompt.numbers.total(), prompt.numbers.nan, prompt.numbers.infinity,
                    prompt.numbers.negative_infinity, prompt.numbers.overflow, prompt.numbers.null);
  return out + "</p>";
}

// One row per distinct completion: its runs, where it parts from the reference, and who
// produced it and how it ended.
std::string render_completions_table(const core::PromptAnalysis& prompt) {
  std::string out =
      "<table class=\"completions\"><thead><tr><th>completion</th>"
      "<th class=\"num\">runs</th><th>by level</th><th>diverges at</th>"
      "<th>finish reasons</th><th>models</th><th>fingerprints</th></tr></thead><tbody>";
  std::size_t variant = 0;
  for (const core::DistinctCompletion& completion : prompt.completions) {
    const std::string name =
        completion.is_reference ? std::string("reference") : fmt::format("variant {}", ++variant);
    out += fmt::format("<tr><td>{}</td><td class=\"num\">{}</td><td class=\"nowrap\">{}</td>"
                       "<td class=\"nowrap\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                       name, completion.count, by_level(completion),
                       divergence_text(prompt, completion.divergence, completion.divergence_kind),
                       counts_html(completion.finish_reasons), counts_html(completion.models),
                       counts_html(completion.fingerprints));
  }
  return out + "</tbody></table>";
}

// The units each distinct completion is shown in (in prompt.completions order): tokens, or the
// text's code points where the prompt was compared by text or two distinct completions have the
// same tokens (tokens that do not describe their text: byte fragments, a stream chunk whose
// logprobs were null), so that distinct completions always show distinct units.
struct ShownCompletions {
  std::vector<std::vector<std::string>> units;
  bool by_text = false;
};

ShownCompletions shown_completions(const core::PromptAnalysis& prompt) {
  ShownCompletions shown;
  shown.units.reserve(prompt.completions.size());
  for (const core::DistinctCompletion& completion : prompt.completions)
    shown.units.push_back(display_tokens(completion));
  bool by_text = prompt.text_mode;
  for (std::size_t i = 0; i < shown.units.size() && !by_text; ++i)
    for (std::size_t j = i + 1; j < shown.units.size() && !by_text; ++j)
      by_text = shown.units[i] == shown.units[j];
  if (by_text) {
    shown.by_text = true;
    for (std::size_t i = 0; i < shown.units.size(); ++i)
      shown.units[i] = core::utf8_code_points(prompt.completions[i].text);
  }
  return shown;
}

std::string render_gap_line(const core::PromptAnalysis& prompt,
                            const core::DistinctCompletion& reference, double fragile_gap) {
  LineSeries series;
  series.name = "gap";
  for (std::size_t i = 0; i < reference.tokens.size(); ++i) {
    if (const auto gap = reference.tokens[i].gap()) {
      series.x.push_back(static_cast<double>(i));
      series.y.push_back(*gap);
    }
  }
  if (series.x.empty()) return "";
  LineChart chart;
  chart.title = "top-1/top-2 gap along the reference completion (nats, log scale)";
  chart.x_label = "token position";
  chart.series.push_back(std::move(series));
  chart.log_y = true;
  chart.log_floor = 1e-3;
  chart.threshold_y = fragile_gap;
  chart.threshold_label = fmt::format("\u03c4 = {:g}", fragile_gap);
  if (prompt.first_divergence) {
    chart.marker_x = *prompt.first_divergence;
    chart.marker_label = fmt::format("first divergence @{}", *prompt.first_divergence);
  }
  chart.compact = true;
  chart.width = 780;
  chart.height = 130;
  return "<h3>Gap along the tokens <span class=\"muted\">(log scale; red: \u03c4; amber: first "
         "divergence)</span></h3><div class=\"spark\">" +
         render_line_chart(chart) + "</div>";
}

} // namespace

std::vector<std::string> display_tokens(const core::DistinctCompletion& completion) {
  if (completion.tokens.empty()) return core::utf8_code_points(completion.text);
  std::vector<std::string> tokens;
  tokens.reserve(completion.tokens.size());
  for (const core::TokenLogprob& token : completion.tokens) tokens.push_back(token.token.str());
  return tokens;
}

std::string render_divergence_tree(const core::PromptAnalysis& prompt) {
  if (prompt.completions.empty()) return "<p class=\"muted\">No successful completion.</p>";
  const ShownCompletions shown = shown_completions(prompt);
  const std::vector<std::vector<std::string>>& all = shown.units;
  std::vector<Branch> group;
  int total = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    group.push_back({&all[i], prompt.completions[i].count});
    total += prompt.completions[i].count;
  }
  std::string out = "<ul class=\"tree\">";
  render_tree_node(group, 0, total, shown.by_text ? "char" : "token", out);
  return out + "</ul>";
}

std::string render_prompt_detail(const core::PromptAnalysis& prompt, double fragile_gap) {
  std::string out = render_facts(prompt);
  if (!prompt.completions.empty()) out += render_completions_table(prompt);
  const core::DistinctCompletion* reference = nullptr;
  for (const core::DistinctCompletion& completion : prompt.completions) {
    if (completion.is_reference) reference = &completion;
  }
  if (prompt.completions.size() > 1) {
    out += "<h3>Divergence tree <span class=\"muted\">(where the completions branch, with run "
           "counts)</span></h3>";
    out += render_divergence_tree(prompt);
  }
  if (reference == nullptr) return out + "<p class=\"muted\">No successful completion.</p>";
  const ShownCompletions shown_units = shown_completions(prompt);
  const std::size_t reference_at = static_cast<std::size_t>(reference - prompt.completions.data());
  const std::vector<std::string>& reference_tokens = shown_units.units[reference_at];
  std::size_t shown = 0;
  for (std::size_t v = 0; v < prompt.completions.size(); ++v) {
    const core::DistinctCompletion& variant = prompt.completions[v];
    if (variant.is_reference) continue;
    if (shown == k_max_variants) {
      out += fmt::format("<p class=\"muted\">{} more variants not shown.</p>",
                         prompt.completions.size() - 1 - k_max_variants);
      break;
    }
    ++shown;
    const std::vector<std::string>& tokens = shown_units.units[v];
    // Highlighted where the shown units part (the analysis's position where they are tokens);
    // the heading gives the analysis's position in its unit.
    std::size_t highlight = 0;
    while (highlight < tokens.size() && highlight < reference_tokens.size() &&
           tokens[highlight] == reference_tokens[highlight])
      ++highlight;
    const int divergence = variant.divergence.value_or(static_cast<int>(highlight));
    out += "<div class=\"pair\"><div class=\"side\">";
    out += fmt::format("<h4>reference \u00b7 {} runs ({}) \u00b7 {}</h4>", reference->count,
                       by_level(*reference), html_escape(percent(reference->count, prompt.runs)));
    out += render_side(*reference, reference_tokens, highlight, true, shown_units.by_text);
    out += "</div><div class=\"side\">";
    out += fmt::format(
        "<h4>variant {} \u00b7 {} run{} ({}) \u00b7 diverges at {} {}{}</h4>", shown, variant.count,
        variant.count == 1 ? "" : "s", by_level(variant), unit_of(prompt), divergence,
        variant.divergence_kind == core::DivergenceKind::length ? " (one ends there)" : "");
    out += render_side(variant, tokens, highlight, false, shown_units.by_text);
    out += "</div></div>";
  }
  if (prompt.completions.size() == 1) {
    out += fmt::format("<h3>The one completion <span class=\"muted\">({} runs)</span></h3>",
                       reference->count);
    out += "<pre class=\"completion\">" +
           html_escape(join(reference_tokens, 0, reference_tokens.size())) + "</pre>";
  }
  out += render_gap_line(prompt, *reference, fragile_gap);
  return out;
}

} // namespace llmrepro::report
