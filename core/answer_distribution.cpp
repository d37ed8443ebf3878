#include "core/answer_distribution.hpp"

#include "core/analysis.hpp"
#include "core/probe_analysis.hpp"

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

bool shift_can_reject(const ShiftTest& test) {
  return test.a_answers > 0 && test.b_answers > 0 &&
         test.a_count + test.b_count < test.a_answers + test.b_answers;
}

std::map<std::string, int> answer_counts(const PromptAnalysis& prompt) {
  return {prompt.answers.begin(), prompt.answers.end()};
}

namespace {

// One test of the family, and where its judgement goes.
struct FamilyMember {
  const ShiftTest* test = nullptr;
  std::optional<double>* p_adjusted = nullptr;
  bool* shifted = nullptr;
};

void enter(std::vector<FamilyMember>& family, const std::optional<ShiftTest>& test,
           std::optional<double>& p_adjusted, bool& shifted) {
  p_adjusted.reset();
  shifted = false;
  if (test && shift_can_reject(*test)) family.push_back({&*test, &p_adjusted, &shifted});
}

} // namespace

// Holm's adjustment over the whole family: the family-wise error rate stays at k_shift_alpha
// however many prompts, levels, probe kinds and endpoints there are, since `--fail-on shift`
// fails on any of them. A test that can never reject is left out (shift_can_reject).
void judge_shifts(const std::vector<AuditAnalysis*>& scopes, EndpointComparison* comparison) {
  std::vector<FamilyMember> family;
  for (AuditAnalysis* analysis : scopes)
    for (PromptAnalysis& prompt : analysis->prompts)
      for (LevelAnalysis& level : prompt.by_concurrency)
        enter(family, level.shift, level.shift_p_adjusted, level.shifted);
  if (comparison != nullptr)
    for (PromptComparison& row : comparison->prompts)
      for (EndpointDivergence& other : row.endpoints)
        enter(family, other.shift, other.shift_p_adjusted, other.shifted);
  std::vector<double> p_values;
  for (const FamilyMember& member : family) p_values.push_back(member.test->p);
  const std::vector<double> adjusted = holm_adjust(p_values);
  for (std::size_t i = 0; i < family.size(); ++i) {
    *family[i].p_adjusted = adjusted[i];
    *family[i].shifted = adjusted[i] < k_shift_alpha;
  }
  const int tests = static_cast<int>(family.size());
  for (AuditAnalysis* analysis : scopes) {
    AuditSummary& summary = analysis->summary;
    summary.shift_tests = tests;
    summary.shifted_prompts = 0;
    summary.min_modal_share.reset();
    for (PromptAnalysis& prompt : analysis->prompts) {
      prompt.shifted = false;
      for (const LevelAnalysis& level : prompt.by_concurrency) prompt.shifted |= level.shifted;
      if (prompt.shifted) ++summary.shifted_prompts;
      if (prompt.modal.runs > 0)
        summary.min_modal_share =
            std::min(summary.min_modal_share.value_or(1.0), prompt.modal.share);
    }
  }
  if (comparison == nullptr) return;
  comparison->shift_tests = tests;
  comparison->shifted_prompts = 0;
  for (PromptComparison& row : comparison->prompts) {
    row.shifted = false;
    for (const EndpointDivergence& other : row.endpoints) row.shifted |= other.shifted;
    if (row.shifted) ++comparison->shifted_prompts;
  }
}

void judge_shifts(AuditAnalysis& analysis) { judge_shifts({&analysis}, nullptr); }

} // namespace llmrepro::core
