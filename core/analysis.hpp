// Analysis of an audit: distinct completions, divergence, gaps, fragility and its predictive power.
// Definitions follow docs/design.md "Analysis: definitions"; see analysis.cpp.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/analysis_config.hpp"
#include "core/answer_distribution.hpp"
#include "core/audit.hpp"
#include "core/completion.hpp"
#include "core/cost.hpp"
#include "core/flip_probability.hpp"
#include "core/logprob_drift.hpp"
#include "core/reasoning.hpp"
#include "core/completion_facts.hpp"
#include "core/text_divergence.hpp"
#include "core/tool_calls.hpp"
#include "core/usage_summary.hpp"

namespace llmrepro::core {

// What the evidence says of a prompt, in one level or overall. A prompt is `stable` only when
// it has at least two successful completions, no failed request, and all of them are the same;
// `unstable` as soon as two successful completions differ; `inconclusive` otherwise (fewer than
// two successful completions, or a failed request). Inconclusive is never counted stable.
enum class PromptStatus { stable, unstable, inconclusive };
const char* to_string(PromptStatus status);

// The prompt's state with the logprobs as a second axis. A stable prompt is `bitwise` when at
// least one position was compared and no compared logprob or gap differed, `token` otherwise
// (its logprobs drift, or none could be compared); `unstable` and `inconclusive` are the
// PromptStatus of the same name.
enum class StabilityTier { bitwise, token, unstable, inconclusive };
const char* to_string(StabilityTier tier);
StabilityTier stability_tier(PromptStatus status, const LogprobDrift& drift);

// How two completions part: at a token (or character) both have, or where one ends and the
// other goes on.
enum class DivergenceKind { token, length };
const char* to_string(DivergenceKind kind);

// One distinct completion of a prompt and how often it came back.
struct DistinctCompletion {
  std::string text;
  std::vector<TokenLogprob> tokens; // of the first occurrence
  int count = 0;
  std::map<int, int> count_by_concurrency;
  bool is_reference = false;
  // Leading tokens (characters in text mode) shared with the reference; empty for the reference.
  std::optional<int> divergence;
  std::optional<DivergenceKind> divergence_kind; // empty for the reference
  // Who produced it and how it ended, over its occurrences: value -> count ("" where absent).
  std::map<std::string, int> finish_reasons;
  std::map<std::string, int> models;
  std::map<std::string, int> fingerprints;
};

struct LevelAnalysis {
  int concurrency = 1;
  int runs = 0; // successful completions at this level
  int failed = 0;
  int unique_completions = 0;
  std::optional<int> first_divergence;              // against the prompt's overall reference
  PromptStatus status = PromptStatus::inconclusive; // within this level alone
  // This level's modal completion is not the serial (lowest level's) modal completion; false at
  // the lowest level and where either level has no successful completion.
  bool differs_from_serial = false;
  // Over every pair of this level's successful runs (core::logprob_drift_of).
  LogprobDrift logprob_drift;
  // The probability that one run at this level departs from the prompt's reference within the
  // window, from this level's noise (docs/design.md "Noise and the flip probability"); empty
  // where it cannot be computed (PromptAnalysis::p_flip_reason says why).
  std::optional<double> p_flip;
  // Each successful run of this level against the prompt's drift reference (the lowest level's
  // successful run of the lowest repeat), and the fewest leading tokens a run of this level that
  // differs from that reference shares with it (empty when every run equals it): what the
  // determinism check reads, level by level.
  LogprobDrift drift_from_reference;
  std::optional<int> divergence_from_reference;
  // Successful runs of this level that chose a token below its runner-up (chose_below_runner_up).
  int below_runner_up_runs = 0;
  // Distribution mode (core/answer_distribution.hpp): this level's answers with their counts,
  // their modal share over every run of the level, and against the lowest level the shift test,
  // its p Holm-adjusted over every test of the audit; `shifted` where that falls below
  // k_shift_alpha. No test at the lowest level.
  std::map<std::string, int> answers;
  ModalShare modal;
  std::optional<ShiftTest> shift;
  std::optional<double> shift_p_adjusted;
  double answer_distance_from_serial = 0.0;
  bool shifted = false;
  // This prompt's own noise samples at this level (its share of the level's noise), at most
  // k_own_noise_capacity of them: what --adaptive compares with the level's pool.
  NoiseDistribution own_noise;
  // Where this level's completions' texts part (core/text_divergence.hpp); empty: they do not.
  std::optional<TextDivergence> text_divergence;
};
inline constexpr std::size_t k_own_noise_capacity = 256;

struct PromptAnalysis {
  std::string id;
  int prompt_index = 0;
  int runs = 0;   // successful completions
  int failed = 0; // failed logical requests
  int unique_completions = 0;
  std::optional<int> first_divergence;
  // Where the earliest divergence happens: between two tokens, or where one completion ends.
  std::optional<DivergenceKind> divergence_kind;
  // Where the completions' texts part, in bytes and characters (core/text_divergence.hpp);
  // empty where every successful run's text is the same.
  std::optional<TextDivergence> text_divergence;
  // Distinct non-empty system_fingerprint values over the successful runs: more than one is
  // fingerprint drift (the server's configuration changed under the prompt).
  int fingerprints = 0;
  // The gap of the reference at first_divergence; empty for a length divergence (the reference's
  // own candidates do not include the end of the other completion) and where unknown.
  std::optional<double> gap_at_divergence;
  std::optional<double> min_gap;
  std::optional<int> min_gap_position;
  PromptStatus status = PromptStatus::inconclusive;
  bool unstable = false; // status == unstable, kept for readers of the flag
  // Over every pair of the prompt's successful runs (core::logprob_drift_of), and what that makes
  // of a stable prompt.
  LogprobDrift logprob_drift;
  StabilityTier tier = StabilityTier::inconclusive;
  // Fragility is three-valued: true, false, or empty when it cannot be computed (no logprobs,
  // text mode, gaps unknown within the window); `fragility_reason` then says why.
  std::optional<bool> fragile;
  std::string fragility_reason;
  // The gap rule's verdict (a gap below τ in the window), whichever rule `fragile` follows: the
  // flip probability is validated against it.
  std::optional<bool> fragile_by_gap;
  // The probability that the audit's runs show a flip within the window: 1 − Π over levels of
  // (1 − p_flip of the level) to the power of its runs (less the reference's own run at the
  // lowest level). Empty where the reference's gaps in the window are not all known or a level
  // has no noise estimate; `p_flip_reason` then says why.
  std::optional<double> p_flip;
  std::string p_flip_reason;
  bool has_logprobs = false; // every successful completion carried logprobs
  // Completions are compared by tokens ("token") or, where one came back without tokens, by
  // text ("char"): divergence positions are in that unit.
  bool text_mode = false;
  // Successful completions whose tokens do not concatenate to their text.
  int token_text_mismatch = 0;
  // Positions, over the distinct completions, where the sampled token is not the top candidate.
  int non_greedy_tokens = 0;
  // Fewest candidates the endpoint returned at any position; empty without logprobs.
  std::optional<int> min_candidates;
  NumberAnomalies numbers; // over every successful completion
  int lone_surrogates = 0; // lone surrogate escapes read as U+FFFD, over the same completions
  // Under --compare-on tool_calls, the step and field where a sequence first departs from the
  // reference's (core::first_tool_call_divergence); empty otherwise and when all agree.
  std::optional<ToolCallDifference> tool_call_divergence;
  // The candidates of the reference completion at first_divergence (top-1 first), for reports.
  TokenCandidates candidates_at_divergence;
  std::vector<LevelAnalysis> by_concurrency;
  std::vector<DistinctCompletion> completions; // reference first, then by count, then first seen

  // Answers (the suite's `extract`, or the text with its whitespace collapsed): distinct answers
  // with their counts, most frequent first; runs whose answer could not be parsed are counted in
  // answer_failures.
  std::vector<std::pair<std::string, int>> answers;
  int answer_failures = 0;
  // All runs succeeded, parsed, and gave one answer: what TARa@N counts.
  bool answers_agree = false;
  // The modal answer's share over every run of the prompt (failures and answers that could not
  // be extracted count against it), and whether any level's answers shifted from the lowest's.
  ModalShare modal;
  bool shifted = false;
  // The checker (`expect`): k passing runs of n; empty when the prompt has no checker.
  // A failed request counts as a run that did not pass.
  std::optional<int> passes;
  int checked_runs = 0;
  // Where core::PromptDetails keeps this prompt's completions, answer texts and own noise (the
  // prompt is slim meanwhile); -1 while they are here (core/prompt_details.hpp).
  std::int64_t detail = -1;
};

// Fragile (predicted) against unstable (observed), over prompts.
struct ConfusionMatrix {
  int true_positive = 0;  // fragile and unstable
  int false_positive = 0; // fragile, stable
  int false_negative = 0; // not fragile, unstable
  int true_negative = 0;  // not fragile, stable
  std::optional<double> precision;
  std::optional<double> recall;
};

struct LevelSummary {
  int concurrency = 1;
  int runs = 0;
  int unique_completions = 0; // summed over prompts
  int unstable_prompts = 0;   // prompts with more than one completion at this level
  int inconclusive_prompts = 0;
  // Prompts whose modal completion at this level differs from the serial level's.
  int differs_from_serial_prompts = 0;
  int failed = 0;
  // Completion tokens per second of wall time from the level's first start to its last finish,
  // and the mean request latency: the cost of each level beside its stability.
  double tokens_per_second = 0.0;
  double mean_latency_ms = 0.0;
  double median_latency_ms = 0.0; // by nearest rank, as the 95th percentile
  double p95_latency_ms = 0.0;
  // The tokens the level's successful requests used, priced by AnalysisConfig::price.
  UsageSummary usage;
  // Over the prompts whose state at this level is not inconclusive: the largest of their level
  // drifts (`max_abs`, `max_abs_gap`) and the positions they compared, summed.
  LogprobDrift logprob_drift;
  // The level's numerical noise: |Δgap| of each run against its prompt's reference run, at the
  // positions where they share the context.
  NoiseEstimate noise;
};

// The flip probability and the gap rule, scored on the same prompts: those whose p_flip and
// gap-rule fragility are both known and whose stability is not inconclusive; the outcome is
// `unstable`. The gap rule scores as a probability of 0 or 1.
struct FlipCalibration {
  int prompts = 0;
  int unstable = 0;
  PredictorScore p_flip;
  PredictorScore gap_rule;
  std::vector<ReliabilityBin> reliability; // of p_flip, ten bins
  // The τ the noise implies (recommended_tau over the levels); empty without any sample.
  std::optional<double> recommended_tau;
};

// One run of the whole suite, (concurrency, repeat), judged by the checkers.
struct RunAccuracy {
  int concurrency = 1;
  int repeat = 0;
  int passed = 0;
  int checked = 0; // prompts with a checker planned in this run
  double accuracy = 0.0;
};

// Accuracy over prompts with checkers, per run and at its extremes: best-possible counts a prompt
// right if it passed in at least one run, worst-possible only if it passed in every run.
struct CheckerSummary {
  int prompts_checked = 0;
  std::vector<RunAccuracy> per_run;
  double mean_accuracy = 0.0;
  double best_possible = 0.0;
  double worst_possible = 0.0;
  double spread = 0.0; // best_possible - worst_possible
};

struct AuditSummary {
  int prompts = 0;
  int requests = 0; // logical requests recorded
  int failed_requests = 0;
  // Why requests failed: per cause (core/failure_groups.hpp) its reason and count, most first.
  std::vector<std::pair<std::string, int>> failure_reasons;
  int stable_prompts = 0;
  int unstable_prompts = 0;
  int inconclusive_prompts = 0;
  int bitwise_stable_prompts = 0; // stable prompts of tier `bitwise`
  // The largest logprob drift (max_abs) over prompts that are not inconclusive; empty when no
  // such prompt compared a position.
  std::optional<double> max_logprob_drift;
  int prompts_with_two_completions = 0; // prompts with at least two successful completions
  int fragile_prompts = 0;
  // Distribution mode: prompts with a level whose answers shifted from the lowest level's (Holm
  // over `shift_tests` tests), and the lowest modal share of any prompt with a run.
  int shifted_prompts = 0;
  int shift_tests = 0;
  std::optional<double> min_modal_share;
  int fragility_unknown_prompts = 0;
  int prompts_without_logprobs = 0;
  int non_greedy_prompts = 0;
  int token_text_mismatch_prompts = 0;
  std::optional<int> min_candidates; // fewest candidates at any position of any completion
  NumberAnomalies numbers;
  int lone_surrogates = 0; // lone surrogate escapes read as U+FFFD, over every prompt
  ReasoningSummary reasoning;
  // The tokens every successful request used (the levels' usage summed), priced by
  // AnalysisConfig::price.
  UsageSummary usage;
  // Who answered: model and system_fingerprint -> successful completions ("" where absent).
  std::map<std::string, int> models_seen;
  std::map<std::string, int> fingerprints_seen;
  int fingerprint_drift_prompts = 0;    // prompts whose runs named more than one fingerprint
  double tarr = 0.0;                    // TARr@N
  double tara = 0.0;                    // TARa@N
  std::optional<CheckerSummary> checks; // empty when no prompt has a checker
  ConfusionMatrix predictor;            // of `fragile`, whichever rule it follows
  FlipCalibration flip_calibration;
  std::vector<LevelSummary> by_concurrency;
};

struct AuditAnalysis {
  int endpoint_index = 0;
  AuditSummary summary;
  std::vector<PromptAnalysis> prompts; // suite order
  // Each level's kept noise samples (concurrency -> distribution): what the flip probability
  // read, and what --adaptive bounds it from. Not reported.
  std::map<int, NoiseDistribution> noise;
};

// Builds one endpoint's analysis a prompt at a time, so that an audit never has to be held in
// memory whole: `report` streams each prompt's records from the database into it. Fed every
// prompt in suite order, it gives exactly what analyse() gives for the same records.
class PromptRuns; // core/prompt_runs.hpp

class AnalysisBuilder {
public:
  AnalysisBuilder(const Suite& suite, const AnalysisConfig& config, int endpoint_index = 0,
                  std::optional<ProbeKind> probe = std::nullopt);
  AnalysisBuilder(AnalysisBuilder&&) noexcept;
  AnalysisBuilder& operator=(AnalysisBuilder&&) noexcept;
  ~AnalysisBuilder();

  // The records of prompt `prompt_index` (those of other endpoints, probe kinds or prompts are
  // skipped), in recording order. Prompts in ascending index order, each at most once. Returns
  // the prompt's analysis as kept (valid until the next call), null where no record was its.
  PromptAnalysis* add_prompt(int prompt_index, const std::vector<const RequestRecord*>& records);

  // add_prompt for records whose tokens are read one record at a time (a prompt streamed from
  // an audit file), so that memory holds one run's tokens and a few completions, not the
  // prompt's runs: begin_prompt; add_run with each record of the prompt, in analysis_order,
  // while it has its tokens (`position`: its index in the prompt's records in recording order);
  // end_prompt with every record of the prompt in recording order, whose tokens may be gone
  // (their text, tool calls and the rest are read). The same analysis as add_prompt. `facts`:
  // completion_facts of the record, where they were computed as it was read (RecordTokens::facts).
  void begin_prompt(int prompt_index);
  void add_run(const RequestRecord& record, std::size_t position,
               const CompletionFacts* facts = nullptr);
  PromptAnalysis* end_prompt(const std::vector<const RequestRecord*>& records);

  // The analysis of every prompt added; the builder is spent.
  AuditAnalysis finish();

private:
  struct Totals;
  bool in_suite(int prompt_index) const;
  // Whether `record` is of this builder's endpoint, probe kind (if any) and prompt.
  bool counts(const RequestRecord& record, int prompt_index) const;
  std::vector<const RequestRecord*> mine_of(const std::vector<const RequestRecord*>& records,
                                            int prompt_index) const;
  void add_counted_run(const RequestRecord& record, const RequestRecord& compared,
                       std::size_t position, const CompletionFacts* facts = nullptr);
  PromptAnalysis* close_prompt(const std::vector<const RequestRecord*>& mine);

  const Suite* m_suite;
  AnalysisConfig m_config;
  std::optional<ProbeKind> m_probe;
  AuditAnalysis m_analysis;
  std::unique_ptr<Totals> m_totals;
  std::unique_ptr<PromptRuns> m_open; // the prompt begun, its runs counted so far
};

// The order in which AnalysisBuilder::add_run takes a prompt's records (given in recording
// order): by level, then repeat, recording order among equals; indexes into `records`.
std::vector<std::size_t> analysis_order(const std::vector<const RequestRecord*>& records);

// Analyses the records of one endpoint (records of other endpoints are ignored) against the
// suite's prompts; with `probe`, only that probe kind's records, so that one probe's drift is
// never mixed with another's.
AuditAnalysis analyse(const Suite& suite, const std::vector<RequestRecord>& records,
                      const AnalysisConfig& config, int endpoint_index = 0,
                      std::optional<ProbeKind> probe = std::nullopt);

// The records of each prompt of the suite (index = prompt index), in recording order; records
// naming no prompt of the suite are left out.
std::vector<std::vector<const RequestRecord*>>
records_by_prompt(const Suite& suite, const std::vector<RequestRecord>& records);

// The prompt's analysis at `concurrency`; null where it has none.
const LevelAnalysis* level_of(const PromptAnalysis& prompt, int concurrency);

// Leading tokens two completions share (token strings; texts' characters when either lacks tokens).
int shared_prefix_length(const Completion& a, const Completion& b);

} // namespace llmrepro::core
