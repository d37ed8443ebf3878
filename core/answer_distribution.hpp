// Distribution mode (docs/design.md "Distribution mode"): where an endpoint samples (the
// provider's default temperature, or temperature 0 refused or ignored), answers differ from run
// to run by design, and the question becomes whether each prompt's answer distribution holds:
// across concurrency levels, between endpoints, and between audits. Pure functions over answer
// counts (the suite's `extract`, else the text with its whitespace collapsed).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/statistics.hpp"

namespace llmrepro::core {

struct AuditAnalysis;
struct EndpointComparison;
struct PromptAnalysis;

// One run of a prompt: its level and its answer (empty where the request failed or the answer
// could not be extracted).
struct RunAnswer {
  int concurrency = 1;
  std::optional<std::string> answer;
};

// The family-wise error rate the shift test holds over every test of one audit (Holm's
// adjustment over every prompt, level, probe kind and endpoint), and what `--fail-on shift`
// fails beyond.
inline constexpr double k_shift_alpha = 0.05;

// A prompt's (or a level's) most frequent answer and its share of the runs: failed requests
// and answers that could not be extracted count as runs that did not give it (an error is never
// agreement). `interval` is the Wilson 95% interval of the share. Ties go to the answer that
// sorts first, so that the same counts always name the same answer.
struct ModalShare {
  std::string answer;
  int count = 0;
  int runs = 0; // every run: answers, failures and answers that could not be extracted
  double share = 0.0;
  Interval interval{0.0, 1.0};
  friend bool operator==(const ModalShare& a, const ModalShare& b) {
    return a.answer == b.answer && a.count == b.count && a.runs == b.runs;
  }
};

// `runs` counts every run, so it is at least the answers' total.
ModalShare modal_share(const std::map<std::string, int>& answers, int runs);

// The two-sample test of two answer distributions: Fisher's exact test of the share the pooled
// modal answer (the most frequent over both sides, ties to the one that sorts first) has on each
// side. Under the hypothesis that both sides' answers are independent draws from one
// distribution, the pooled counts are fixed by the data and the test is exact; it is blind to a
// shift among the other answers that leaves the modal answer's share alone. Only answers count
// (failures are judged by --max-failed-rate). p is 1 where either side has no answer.
struct ShiftTest {
  std::string answer; // the pooled modal answer
  int a_count = 0;
  int a_answers = 0;
  int b_count = 0;
  int b_answers = 0;
  double p = 1.0;
};

ShiftTest shift_test(const std::map<std::string, int>& a, const std::map<std::string, int>& b);

// Whether the test can reject at all: both sides have an answer and the pooled answers are not
// all the modal one. One that cannot has p 1 however its answers split, and is left out of every
// family (the pooled counts are fixed under the hypothesis, so leaving it out keeps the
// family-wise rate and spends nothing on it: Tarone's argument).
bool shift_can_reject(const ShiftTest& test);

// A prompt's answers over every run of every level, answer -> count.
std::map<std::string, int> answer_counts(const PromptAnalysis& prompt);

// Total variation distance between two answer distributions (half the sum of the absolute
// differences of their shares): 0 for equal distributions, 1 for disjoint ones; 0 where either
// side has no answer.
double answer_distance(const std::map<std::string, int>& a, const std::map<std::string, int>& b);

// A prompt's distribution figures from every one of its runs: each level's answers and modal
// share, the prompt's modal share, and each level's shift test against the lowest level (its
// by_concurrency must list every level the runs name, lowest first).
void judge_answer_distribution(PromptAnalysis& prompt, const std::vector<RunAnswer>& runs);

// Holm's adjustment over one family of shift tests: every level's test against the lowest level
// in each of `scopes` (every endpoint and probe kind of an audit), and with `comparison` every
// compared endpoint's test against endpoint 0 (EndpointDivergence::shift). Sets each test's
// adjusted p and `shifted`, each prompt's `shifted` (its levels) and each comparison row's (its
// endpoints), and each summary's shifted_prompts, shift_tests (the family's size: every test that
// can reject, shift_can_reject) and min_modal_share; comparison's shifted_prompts and
// shift_tests the same. Earlier judgements of the same analyses are replaced.
void judge_shifts(const std::vector<AuditAnalysis*>& scopes, EndpointComparison* comparison);

// One analysis on its own: its level tests are the whole family.
void judge_shifts(AuditAnalysis& analysis);

} // namespace llmrepro::core
