#include "report/detail/distribution_text.hpp"

#include <fmt/core.h>

#include <algorithm>

namespace llmrepro::report {

bool distribution_shown(const core::AuditReport& report) {
  if (report.data == nullptr) return false;
  const core::GateConfig& gates = report.data->config.gates;
  return core::temperature_in_effect(*report.data) == core::TemperatureMode::provider_default ||
         gates.fail_on.shift || gates.min_modal_share.has_value();
}

namespace {

// The comparison's row of a prompt of endpoint 0 (its rows are in suite order); null without one.
const core::PromptComparison* comparison_row(const core::AuditReport& report,
                                             const core::PromptAnalysis& prompt) {
  if (!report.comparison) return nullptr;
  const auto& rows = report.comparison->prompts;
  const auto found = std::lower_bound(
      rows.begin(), rows.end(), prompt.prompt_index,
      [](const core::PromptComparison& row, int index) { return row.prompt_index < index; });
  return found != rows.end() && found->prompt_index == prompt.prompt_index ? &*found : nullptr;
}

bool shifted_anywhere(const core::AuditReport& report, const core::PromptAnalysis& prompt) {
  const core::PromptComparison* row = comparison_row(report, prompt);
  return prompt.shifted || (row != nullptr && row->shifted);
}

} // namespace

std::string distribution_summary_line(const core::AuditReport& report) {
  const core::AuditSummary& s = report.analysis.summary;
  int one_answer = 0;
  const core::PromptAnalysis* lowest = nullptr;
  for (const auto& prompt : report.analysis.prompts) {
    if (prompt.modal.runs == 0) continue;
    if (prompt.answers.size() == 1 && prompt.modal.count == prompt.modal.runs) ++one_answer;
    if (lowest == nullptr || prompt.modal.share < lowest->modal.share) lowest = &prompt;
  }
  std::string line = fmt::format("{} prompts: {} with one answer", s.prompts, one_answer);
  if (lowest != nullptr)
    line += fmt::format(", lowest modal share {:.2f} ({})", lowest->modal.share, lowest->id);
  line += fmt::format("; {} shifted between levels", s.shifted_prompts);
  if (report.comparison)
    line += fmt::format(", {} between endpoints", report.comparison->shifted_prompts);
  line +=
      fmt::format(" (Holm over {} tests, family-wise {:g})", s.shift_tests, core::k_shift_alpha);
  return line;
}

std::string modal_share_text(const core::ModalShare& modal) {
  return fmt::format("{:.2f} [{:.2f}, {:.2f}] of {}", modal.share, modal.interval.low,
                     modal.interval.high, modal.runs);
}

std::string shifted_levels_text(const core::PromptAnalysis& prompt) {
  std::string text;
  for (const auto& level : prompt.by_concurrency)
    if (level.shifted && level.shift_p_adjusted)
      text += fmt::format("{}c={} (p {:.2g})", text.empty() ? "" : ", ", level.concurrency,
                          *level.shift_p_adjusted);
  return text.empty() ? std::string("\u2013") : text;
}

std::string shifted_endpoints_text(const core::AuditReport& report,
                                   const core::PromptAnalysis& prompt) {
  std::string text;
  if (const core::PromptComparison* row = comparison_row(report, prompt))
    for (const auto& other : row->endpoints)
      if (other.shifted && other.shift_p_adjusted)
        text += fmt::format("{}endpoint {} (p {:.2g})", text.empty() ? "" : ", ",
                            other.endpoint_index, *other.shift_p_adjusted);
  return text.empty() ? std::string("\u2013") : text;
}

std::vector<const core::PromptAnalysis*> distribution_rows(const core::AuditReport& report,
                                                           std::size_t count) {
  std::vector<const core::PromptAnalysis*> rows;
  for (const auto& prompt : report.analysis.prompts)
    if (prompt.modal.runs > 0) rows.push_back(&prompt);
  std::stable_sort(rows.begin(), rows.end(), [&report](const auto* a, const auto* b) {
    const bool a_shifted = shifted_anywhere(report, *a);
    const bool b_shifted = shifted_anywhere(report, *b);
    if (a_shifted != b_shifted) return a_shifted;
    return a->modal.share < b->modal.share;
  });
  if (rows.size() > count) rows.resize(count);
  return rows;
}

} // namespace llmrepro::report
