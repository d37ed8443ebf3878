#include "core/answer_distribution.hpp"

#include "core/analysis.hpp"

#include <algorithm>
#include <cmath>

namespace llmrepro::core {

namespace {

int total(const std::map<std::string, int>& answers) {
  int sum = 0;
  for (const auto& [answer, count] : answers) sum += count;
  return sum;
}

// The most frequent answer; the map's order (bytewise) breaks ties.
const std::pair<const std::string, int>* most_frequent(const std::map<std::string, int>& answers) {
  const std::pair<const std::string, int>* best = nullptr;
  for (const auto& entry : answers)
    if (best == nullptr || entry.second > best->second) best = &entry;
  return best;
}

int count_of(const std::map<std::string, int>& answers, const std::string& answer) {
  const auto found = answers.find(answer);
  return found == answers.end() ? 0 : found->second;
}

} // namespace

ModalShare modal_share(const std::map<std::string, int>& answers, int runs) {
  ModalShare modal;
  modal.runs = std::max(runs, total(answers));
  if (const auto* best = most_frequent(answers)) {
    modal.answer = best->first;
    modal.count = best->second;
  }
  modal.share = modal.runs > 0 ? static_cast<double>(modal.count) / modal.runs : 0.0;
  modal.interval = wilson_interval(modal.count, modal.runs);
  return modal;
}

ShiftTest shift_test(const std::map<std::string, int>& a, const std::map<std::string, int>& b) {
  ShiftTest test;
  test.a_answers = total(a);
  test.b_answers = total(b);
  if (test.a_answers == 0 || test.b_answers == 0) return test;
  std::map<std::string, int> pooled = a;
  for (const auto& [answer, count] : b) pooled[answer] += count;
  test.answer = most_frequent(pooled)->first;
  test.a_count = count_of(a, test.answer);
  test.b_count = count_of(b, test.answer);
  test.p = fisher_exact_p(test.a_count, test.a_answers, test.b_count, test.b_answers);
  return test;
}

double answer_distance(const std::map<std::string, int>& a, const std::map<std::string, int>& b) {
  const int na = total(a);
  const int nb = total(b);
  if (na == 0 || nb == 0) return 0.0;
  double sum = 0.0;
  for (const auto& [answer, count] : a)
    sum +=
        std::abs(static_cast<double>(count) / na - static_cast<double>(count_of(b, answer)) / nb);
  for (const auto& [answer, count] : b)
    if (a.find(answer) == a.end()) sum += static_cast<double>(count) / nb;
  return sum / 2.0;
}

void judge_answer_distribution(PromptAnalysis& prompt, const std::vector<RunAnswer>& runs) {
  std::map<int, int> level_runs; // every run of a level, failures included
  std::map<std::string, int> all;
  for (const RunAnswer& run : runs) {
    ++level_runs[run.concurrency];
    if (!run.answer) continue;
    ++all[*run.answer];
    for (LevelAnalysis& level : prompt.by_concurrency)
      if (level.concurrency == run.concurrency) ++level.answers[*run.answer];
  }
  prompt.modal = modal_share(all, static_cast<int>(runs.size()));
  for (LevelAnalysis& level : prompt.by_concurrency) {
    level.modal = modal_share(level.answers, level_runs[level.concurrency]);
    if (&level == &prompt.by_concurrency.front()) continue;
    const auto& serial = prompt.by_concurrency.front().answers;
    level.shift = shift_test(serial, level.answers);
    level.answer_distance_from_serial = answer_distance(serial, level.answers);
  }
}

// Holm's adjustment over every shift test of the analysis (each level against the lowest, every
// prompt): the family-wise error rate stays at k_shift_alpha however many prompts and levels
// there are. A test whose pooled answers are all one answer can never reject (its p is 1 however
// they split) and is left out of the family: the pooled counts are fixed under the hypothesis,
// so leaving it out keeps the rate and spends nothing on it (Tarone's argument).
void judge_shifts(AuditAnalysis& analysis) {
  std::vector<LevelAnalysis*> tested;
  std::vector<double> p_values;
  for (PromptAnalysis& prompt : analysis.prompts)
    for (LevelAnalysis& level : prompt.by_concurrency) {
      if (!level.shift || level.shift->a_answers == 0 || level.shift->b_answers == 0) continue;
      if (level.shift->a_count + level.shift->b_count ==
          level.shift->a_answers + level.shift->b_answers)
        continue;
      tested.push_back(&level);
      p_values.push_back(level.shift->p);
    }
  const std::vector<double> adjusted = holm_adjust(p_values);
  for (std::size_t i = 0; i < tested.size(); ++i) {
    tested[i]->shift_p_adjusted = adjusted[i];
    tested[i]->shifted = adjusted[i] < k_shift_alpha;
  }
  AuditSummary& summary = analysis.summary;
  summary.shift_tests = static_cast<int>(tested.size());
  for (PromptAnalysis& prompt : analysis.prompts) {
    for (const LevelAnalysis& level : prompt.by_concurrency) prompt.shifted |= level.shifted;
    if (prompt.shifted) ++summary.shifted_prompts;
    if (prompt.modal.runs > 0)
      summary.min_modal_share = std::min(summary.min_modal_share.value_or(1.0), prompt.modal.share);
  }
}

} // namespace llmrepro::core
