// The analysis of an audit, exactly as docs/design.md "Analysis: definitions" states it.
//
// The prompt-level rules live in core/prompt_runs.cpp; here an audit's prompts are added up and
// judged together (flip probabilities, Holm adjustment, checkers, the summary).
#include "core/analysis.hpp"

#include "core/answer_check.hpp"
#include "core/completion_identity.hpp"
#include "core/failure_groups.hpp"
#include "core/prompt_runs.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <utility>

namespace llmrepro::core {

// A prompt's window gaps (window_gaps), read when the prompt is added, so that the flip
// probability, judged once every prompt is in, needs no completion kept in memory. Outside the
// anonymous namespace: AnalysisBuilder::Totals holds them.
struct AnalysisWindowGaps {
  std::optional<std::vector<double>> gaps;
  std::string reason; // why there are none
};

const char* to_string(PromptStatus status) {
  switch (status) {
  case PromptStatus::stable: return "stable";
  case PromptStatus::unstable: return "unstable";
  case PromptStatus::inconclusive: return "inconclusive";
  }
  return "inconclusive";
}

const char* to_string(StabilityTier tier) {
  switch (tier) {
  case StabilityTier::bitwise: return "bitwise";
  case StabilityTier::token: return "token";
  case StabilityTier::unstable: return "unstable";
  case StabilityTier::inconclusive: return "inconclusive";
  }
  return "inconclusive";
}

// Bitwise needs evidence, as stable does: a stable prompt none of whose positions could be
// compared (no logprobs, text mode) is token-stable only.
StabilityTier stability_tier(PromptStatus status, const LogprobDrift& drift) {
  switch (status) {
  case PromptStatus::stable:
    return drift.positions_compared > 0 && !has_drift(drift) ? StabilityTier::bitwise
                                                             : StabilityTier::token;
  case PromptStatus::unstable: return StabilityTier::unstable;
  case PromptStatus::inconclusive: return StabilityTier::inconclusive;
  }
  return StabilityTier::inconclusive;
}

const char* to_string(DivergenceKind kind) {
  return kind == DivergenceKind::length ? "length" : "token";
}

namespace {
using detail::IdentityMode;
using detail::shared_prefix;

// The reference's gaps within the window, all of them known; otherwise empty and `reason` says
// why, as fragility does.
std::optional<std::vector<double>> window_gaps(const PromptAnalysis& prompt,
                                               const AnalysisConfig& config, std::string& reason) {
  if (prompt.completions.empty()) {
    reason = "no successful completion";
    return std::nullopt;
  }
  if (prompt.text_mode) {
    reason = "text mode: a completion came back without tokens";
    return std::nullopt;
  }
  if (!prompt.has_logprobs) {
    reason = "no logprobs";
    return std::nullopt;
  }
  const auto& tokens = prompt.completions.front().tokens; // the reference comes first
  const auto window =
      std::min(tokens.size(), static_cast<std::size_t>(std::max(config.fragile_window, 0)));
  if (window == 0) {
    reason = "the reference completion has no tokens";
    return std::nullopt;
  }
  // A runner-up at the logprob floor has no probability to flip to: its position adds no chance
  // (measured_gap), where a floor distance of thousands of nats would stand in for a margin.
  std::vector<double> gaps;
  std::size_t unknown = 0;
  for (std::size_t position = 0; position < window; ++position) {
    const auto& token = tokens[position];
    if (const auto gap = measured_gap(token))
      gaps.push_back(*gap);
    else if (!token.gap())
      ++unknown;
  }
  if (unknown > 0) {
    reason = "gap unknown at " + std::to_string(unknown) + " of " + std::to_string(window) +
             " positions";
    return std::nullopt;
  }
  return gaps;
}

// p_flip per level and overall (docs/design.md "Noise and the flip probability").
void judge_flip_probability(PromptAnalysis& prompt, const AnalysisWindowGaps& window,
                            const std::map<int, NoiseDistribution>& noise) {
  if (!window.gaps) {
    prompt.p_flip_reason = window.reason;
    return;
  }
  const std::vector<double>* gaps = &*window.gaps;
  // The lowest level with a run holds the reference's own run, and its noise the reference's.
  const NoiseDistribution* reference_noise = nullptr;
  std::vector<LevelChances> chances;
  bool lowest = true;
  for (LevelAnalysis& level : prompt.by_concurrency) {
    if (level.runs == 0) continue;
    const bool reference_level = std::exchange(lowest, false);
    const auto found = noise.find(level.concurrency);
    if (found == noise.end() || found->second.empty()) {
      if (prompt.p_flip_reason.empty())
        prompt.p_flip_reason =
            "no noise sample at concurrency " + std::to_string(level.concurrency);
      continue;
    }
    level.p_flip = window_flip_probability(found->second, *gaps);
    if (reference_level) reference_noise = &found->second;
    chances.push_back({&found->second, level.runs - (reference_level ? 1 : 0)});
  }
  // Without a run beside the reference nothing can depart from it.
  if (prompt.p_flip_reason.empty())
    prompt.p_flip =
        reference_noise ? audit_flip_probability(*reference_noise, chances, *gaps) : 0.0;
}

// Under --fragile-p, fragility follows the flip probability instead of the gap rule.
void judge_fragility_by_probability(PromptAnalysis& prompt, double fragile_p) {
  if (prompt.p_flip) {
    prompt.fragile = *prompt.p_flip >= fragile_p;
    prompt.fragility_reason.clear();
  } else {
    prompt.fragile.reset();
    prompt.fragility_reason = "flip probability unknown: " + prompt.p_flip_reason;
  }
}

} // namespace

int shared_prefix_length(const Completion& a, const Completion& b) {
  const bool tokens = !a.tokens.empty() && !b.tokens.empty();
  return shared_prefix(a, b, tokens ? IdentityMode::tokens : IdentityMode::text);
}

// The builder's running totals: everything the summary needs that is not in the kept prompts.
struct AnalysisBuilder::Totals {
  int agreeing = 0;
  int answers_agreeing = 0;
  // Checkers: per run (concurrency, repeat), and prompts that passed at least once / every time.
  int prompts_checked = 0;
  std::map<std::pair<int, int>, RunAccuracy> runs;
  int best = 0;
  int worst = 0;
  // Usage and time per level, from the raw records.
  std::map<int, LevelAccount> levels;
  std::vector<AnalysisWindowGaps> windows; // of each prompt kept, in its order
  FailureGroups failure_reasons;
  LevelNoise noise;
};

AnalysisBuilder::AnalysisBuilder(const Suite& suite, const AnalysisConfig& config,
                                 int endpoint_index, std::optional<ProbeKind> probe)
    : m_suite(&suite), m_config(config), m_probe(probe), m_totals(std::make_unique<Totals>()) {
  m_analysis.endpoint_index = endpoint_index;
  m_analysis.summary.reasoning.compare_on = config.compare_on;
}

AnalysisBuilder::AnalysisBuilder(AnalysisBuilder&&) noexcept = default;
AnalysisBuilder& AnalysisBuilder::operator=(AnalysisBuilder&&) noexcept = default;
AnalysisBuilder::~AnalysisBuilder() = default;

bool AnalysisBuilder::in_suite(int prompt_index) const {
  return prompt_index >= 0 && static_cast<std::size_t>(prompt_index) < m_suite->prompts.size();
}

bool AnalysisBuilder::counts(const RequestRecord& record, int prompt_index) const {
  return record.planned.endpoint_index == m_analysis.endpoint_index &&
         (!m_probe || record.planned.probe == *m_probe) &&
         record.planned.prompt_index == prompt_index;
}

std::vector<const RequestRecord*>
AnalysisBuilder::mine_of(const std::vector<const RequestRecord*>& records, int prompt_index) const {
  std::vector<const RequestRecord*> mine;
  for (const auto* record : records)
    if (counts(*record, prompt_index)) mine.push_back(record);
  return mine;
}

PromptAnalysis* AnalysisBuilder::add_prompt(int prompt_index,
                                            const std::vector<const RequestRecord*>& records) {
  if (!in_suite(prompt_index)) return nullptr;
  const std::vector<const RequestRecord*> mine = mine_of(records, prompt_index);
  if (mine.empty()) return nullptr;
  // The records outlive the prompt's analysis: it keeps pointers, not copies.
  std::vector<RequestRecord> compared_copies;
  const auto compared = compared_records(mine, m_config.compare_on, compared_copies);
  m_open = std::make_unique<PromptRuns>(prompt_index, false);
  for (std::size_t i : analysis_order(mine)) add_counted_run(*mine[i], *compared[i], i);
  return close_prompt(mine);
}

void AnalysisBuilder::begin_prompt(int prompt_index) {
  m_open.reset();
  if (in_suite(prompt_index)) m_open = std::make_unique<PromptRuns>(prompt_index, true);
}

void AnalysisBuilder::add_run(const RequestRecord& record, std::size_t position,
                              const CompletionFacts* facts) {
  if (!m_open || !counts(record, m_open->prompt_index())) return;
  // The facts are of the record as read, not of a part compared instead.
  if (compares_part(record, m_config.compare_on))
    add_counted_run(record, compared_record(record, m_config.compare_on), position);
  else
    add_counted_run(record, record, position, facts);
}

PromptAnalysis* AnalysisBuilder::end_prompt(const std::vector<const RequestRecord*>& records) {
  if (!m_open) return nullptr;
  const std::vector<const RequestRecord*> mine = mine_of(records, m_open->prompt_index());
  if (mine.empty()) {
    m_open.reset();
    return nullptr;
  }
  return close_prompt(mine);
}

// What is read of a run's tokens is read here, while the run has them.
void AnalysisBuilder::add_counted_run(const RequestRecord& record, const RequestRecord& compared,
                                      std::size_t position, const CompletionFacts* facts) {
  Totals& totals = *m_totals;
  m_open->add(compared, position, totals.noise, facts);
  if (record.outcome.ok) m_analysis.summary.reasoning.add(record.outcome.completion);
  totals.levels[record.planned.concurrency].add(record);
}

PromptAnalysis* AnalysisBuilder::close_prompt(const std::vector<const RequestRecord*>& mine) {
  const int prompt_index = m_open->prompt_index();
  const Prompt& suite_prompt = m_suite->prompts[static_cast<std::size_t>(prompt_index)];
  Totals& totals = *m_totals;
  PromptAnalysis prompt = m_open->finish(suite_prompt, mine, m_config);
  m_open.reset();
  if (m_config.compare_on == CompareOn::tool_calls && !prompt.completions.empty())
    prompt.tool_call_divergence = first_tool_call_divergence(prompt.completions[0].text, mine);
  judge_text_divergence(prompt);
  AnalysisWindowGaps& window = totals.windows.emplace_back();
  window.gaps = window_gaps(prompt, m_config, window.reason);
  AuditSummary& summary = m_analysis.summary;
  if (prompt.fingerprints > 1) ++summary.fingerprint_drift_prompts;
  ++summary.prompts;
  summary.requests += prompt.runs + prompt.failed;
  summary.failed_requests += prompt.failed;
  switch (prompt.status) {
  case PromptStatus::stable: ++summary.stable_prompts; break;
  case PromptStatus::unstable: ++summary.unstable_prompts; break;
  case PromptStatus::inconclusive: ++summary.inconclusive_prompts; break;
  }
  if (prompt.tier == StabilityTier::bitwise) ++summary.bitwise_stable_prompts;
  if (prompt.status != PromptStatus::inconclusive && prompt.logprob_drift.positions_compared > 0)
    summary.max_logprob_drift =
        std::max(summary.max_logprob_drift.value_or(0.0), prompt.logprob_drift.max_abs);
  if (prompt.runs >= 2) ++summary.prompts_with_two_completions;
  if (prompt.runs > 0 && !prompt.has_logprobs) ++summary.prompts_without_logprobs;
  if (prompt.non_greedy_tokens > 0) ++summary.non_greedy_prompts;
  if (prompt.token_text_mismatch > 0) ++summary.token_text_mismatch_prompts;
  if (prompt.min_candidates &&
      (!summary.min_candidates || *prompt.min_candidates < *summary.min_candidates))
    summary.min_candidates = prompt.min_candidates;
  summary.numbers += prompt.numbers;
  summary.lone_surrogates += prompt.lone_surrogates;
  if (prompt.status == PromptStatus::stable) ++totals.agreeing;
  if (prompt.answers_agree) ++totals.answers_agreeing;

  // Checkers: per-run accuracy, and the best/worst-possible accuracy over prompts.
  if (suite_prompt.expect.kind != Expectation::Kind::none) {
    ++totals.prompts_checked;
    int passed_runs = 0;
    TextAnswers read(suite_prompt.extract, suite_prompt.expect);
    for (const auto* record : mine) {
      const bool passed = record->outcome.ok && read.passes(record->outcome.completion.text);
      RunAccuracy& run = totals.runs[{record->planned.concurrency, record->planned.repeat}];
      run.concurrency = record->planned.concurrency;
      run.repeat = record->planned.repeat;
      ++run.checked;
      if (passed) {
        ++run.passed;
        ++passed_runs;
      }
    }
    if (passed_runs > 0) ++totals.best;
    if (passed_runs == static_cast<int>(mine.size())) ++totals.worst;
  }

  for (const auto* record : mine) {
    if (record->outcome.ok) {
      ++summary.models_seen[record->outcome.completion.model];
      ++summary.fingerprints_seen[record->outcome.completion.system_fingerprint];
    } else {
      totals.failure_reasons.add(record->outcome);
    }
  }
  return &m_analysis.prompts.emplace_back(std::move(prompt));
}

AuditAnalysis AnalysisBuilder::finish() {
  AuditAnalysis analysis = std::move(m_analysis);
  const Totals& totals = *m_totals;
  AuditSummary& summary = analysis.summary;
  summary.tarr = summary.prompts > 0 ? static_cast<double>(totals.agreeing) / summary.prompts : 0.0;
  summary.tara =
      summary.prompts > 0 ? static_cast<double>(totals.answers_agreeing) / summary.prompts : 0.0;
  if (totals.prompts_checked > 0) {
    CheckerSummary checks;
    checks.prompts_checked = totals.prompts_checked;
    double total = 0.0;
    for (auto run : totals.runs) {
      run.second.accuracy = static_cast<double>(run.second.passed) / run.second.checked;
      total += run.second.accuracy;
      checks.per_run.push_back(run.second);
    }
    checks.mean_accuracy =
        totals.runs.empty() ? 0.0 : total / static_cast<double>(totals.runs.size());
    checks.best_possible = static_cast<double>(totals.best) / checks.prompts_checked;
    checks.worst_possible = static_cast<double>(totals.worst) / checks.prompts_checked;
    checks.spread = checks.best_possible - checks.worst_possible;
    summary.checks = std::move(checks);
  }
  summary.failure_reasons = totals.failure_reasons.sorted();
  // The flip probability needs every level's noise, so it is judged once all prompts are in; so
  // are fragility's counts, which follow it under --fragile-p.
  std::map<int, NoiseDistribution> noise;
  std::vector<const NoiseDistribution*> levels_noise;
  for (const auto& [concurrency, samples] : totals.noise)
    levels_noise.push_back(&noise.emplace(concurrency, samples.distribution()).first->second);
  judge_shifts(analysis);
  ConfusionMatrix& m = summary.predictor;
  std::vector<double> predicted;
  std::vector<double> gap_rule;
  std::vector<bool> observed;
  for (std::size_t i = 0; i < analysis.prompts.size(); ++i) {
    PromptAnalysis& prompt = analysis.prompts[i];
    judge_flip_probability(prompt, totals.windows[i], noise);
    if (m_config.fragile_p) judge_fragility_by_probability(prompt, *m_config.fragile_p);
    if (prompt.fragile == true) ++summary.fragile_prompts;
    if (!prompt.fragile) ++summary.fragility_unknown_prompts;
    if (prompt.status == PromptStatus::inconclusive) continue;
    // Only prompts whose fragility and stability are both known take part in the predictor.
    if (prompt.fragile) {
      if (*prompt.fragile && prompt.unstable)
        ++m.true_positive;
      else if (*prompt.fragile)
        ++m.false_positive;
      else if (prompt.unstable)
        ++m.false_negative;
      else
        ++m.true_negative;
    }
    if (prompt.p_flip && prompt.fragile_by_gap) {
      predicted.push_back(*prompt.p_flip);
      gap_rule.push_back(*prompt.fragile_by_gap ? 1.0 : 0.0);
      observed.push_back(prompt.unstable);
    }
  }
  FlipCalibration& calibration = summary.flip_calibration;
  calibration.prompts = static_cast<int>(observed.size());
  calibration.unstable = static_cast<int>(std::count(observed.begin(), observed.end(), true));
  calibration.p_flip = score_predictor(predicted, observed);
  calibration.gap_rule = score_predictor(gap_rule, observed);
  calibration.reliability = reliability_bins(predicted, observed);
  calibration.recommended_tau = recommended_tau(levels_noise);
  if (m.true_positive + m.false_positive > 0)
    m.precision = static_cast<double>(m.true_positive) / (m.true_positive + m.false_positive);
  if (m.true_positive + m.false_negative > 0)
    m.recall = static_cast<double>(m.true_positive) / (m.true_positive + m.false_negative);

  // Per level: stability from the prompt analyses, cost from the raw records.
  std::map<int, LevelSummary> levels;
  for (const auto& prompt : analysis.prompts) {
    for (const auto& level : prompt.by_concurrency) {
      LevelSummary& out = levels[level.concurrency];
      out.concurrency = level.concurrency;
      out.runs += level.runs;
      out.failed += level.failed;
      out.unique_completions += level.unique_completions;
      if (level.status == PromptStatus::unstable) ++out.unstable_prompts;
      if (level.status == PromptStatus::inconclusive) ++out.inconclusive_prompts;
      if (level.differs_from_serial) ++out.differs_from_serial_prompts;
      if (level.status != PromptStatus::inconclusive) {
        out.logprob_drift.max_abs =
            std::max(out.logprob_drift.max_abs, level.logprob_drift.max_abs);
        out.logprob_drift.max_abs_gap =
            std::max(out.logprob_drift.max_abs_gap, level.logprob_drift.max_abs_gap);
        out.logprob_drift.positions_compared += level.logprob_drift.positions_compared;
      }
    }
  }
  for (auto& [concurrency, level] : levels) {
    if (const auto level_noise = totals.noise.find(concurrency); level_noise != totals.noise.end())
      level.noise = level_noise->second.estimate(noise.at(concurrency));
    if (const auto found = totals.levels.find(concurrency); found != totals.levels.end()) {
      level.tokens_per_second = found->second.tokens_per_second();
      level.mean_latency_ms = found->second.mean_latency_ms();
      level.median_latency_ms = found->second.latency_quantile_ms(0.5);
      level.p95_latency_ms = found->second.latency_quantile_ms(0.95);
      level.usage = found->second.usage.priced(m_config.price);
    }
    summary.by_concurrency.push_back(level);
  }
  for (const auto& [concurrency, account] : totals.levels) summary.usage += account.usage;
  summary.usage = summary.usage.priced(m_config.price);
  analysis.noise = std::move(noise);
  return analysis;
}

} // namespace llmrepro::core
