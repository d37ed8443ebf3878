// `llmrepro diff`: two audits of the same prompts (a prompt or model change, A against B),
// compared prompt by prompt with paired statistics, each difference judged beyond or within
// the run-to-run noise and, when beyond it, a regression or an improvement.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/answer_distribution.hpp"
#include "core/audit_report.hpp"
#include "core/server_description.hpp"
#include "core/statistics.hpp"

namespace llmrepro::core {

// Runs of a prompt that a checker (`expect`) accepted.
struct PassCount {
  int passed = 0;
  int runs = 0;
};

// Where pass counts come from: the prompt's checker results, or nothing where none ran.
using PassCountSource =
    std::function<std::optional<PassCount>(const AuditReport&, const PromptAnalysis&)>;

// The default pass-count source: the prompt's checker results (PromptAnalysis::passes of
// checked_runs), nothing for a prompt without a checker. Pass-rate figures of a diff exist
// only for prompts with pass counts on both sides.
std::optional<PassCount> checker_pass_count(const AuditReport& report,
                                            const PromptAnalysis& prompt);

struct DiffConfig {
  double alpha = 0.05; // significance level of every test
  int bootstrap_resamples = 10000;
  std::uint64_t seed = 0; // of the paired bootstrap
  PassCountSource pass_counts = checker_pass_count;
};

// One side of a prompt's comparison.
struct PromptSide {
  int runs = 0; // successful completions
  int failed = 0;
  int unique_completions = 0;
  int reference_count = 0; // runs that returned the modal completion
  bool unstable = false;
  bool fragile = false;         // false where unknown: read fragility_known first
  bool fragility_known = false; // fragility could be computed (logprobs within the window)
  std::string tier;             // bitwise, token, unstable or inconclusive
  double logprob_drift = 0.0;   // largest logprob drift between agreeing runs (nats)
  int drift_positions = 0;      // positions the drift compared; 0: no drift measured
  bool has_logprobs = false;
  std::optional<int> first_divergence;
  std::optional<double> min_gap;
  std::optional<PassCount> pass;
  // Its answers with their counts (the suite's `extract`, else the whitespace-collapsed text) and
  // the modal answer's share of every run: distribution mode's figures.
  std::map<std::string, int> answers;
  ModalShare modal;

  // Share of runs that returned the modal completion; 0 without runs.
  double agreement() const;
};

// A prompt present in both audits.
struct PromptDiff {
  std::string id;
  PromptSide a;
  PromptSide b;
  // "stable", "unstable", "newly unstable", "newly stable", or "no completions" when either
  // side has no successful run (such prompts are left out of every statistic).
  std::string agreement_change;
  // The stability tier, "bitwise" when equal, else "bitwise -> token" (A's, then B's); a tier
  // that moved towards unstable (bitwise, token, unstable) has worsened. Inconclusive on either
  // side: "inconclusive", never worsened.
  std::string tier_change;
  bool tier_worsened = false;
  // One-sided Fisher exact test of agreement (reference_count of runs) in the direction B
  // moved, then Tarone's Benjamini-Hochberg over the prompts (each direction its own family), so
  // that a long suite neither raises false alarms nor drowns the few prompts that changed.
  double agreement_p = 1.0;
  double agreement_p_adjusted = 1.0;
  // The same for pass counts, where the pass-count source gave both sides.
  std::optional<double> pass_p;
  std::optional<double> pass_p_adjusted;
  // Distribution mode: the two audits' answer distributions compared (shift_test, Holm over the
  // prompts whose pooled answers are not all one answer); `answers_shifted` where the adjusted p
  // is below alpha; where either audit ran in distribution mode it is also a regression. Empty
  // where either side has no answer.
  std::optional<ShiftTest> answer_shift;
  std::optional<double> answer_shift_p_adjusted;
  bool answers_shifted = false;
  bool beyond_noise = false; // an adjusted p below alpha
  bool regression = false;   // beyond noise and worse in B (lower agreement or pass rate)
  bool improvement = false;  // beyond noise and better in B
};

// One overall difference between the audits, over the paired prompts.
struct MetricDiff {
  // tarr, bitwise_rate, fragile_rate, fragility_known_rate, mean_unique_completions,
  // mean_agreement, mean_logprob_drift, pass_rate
  std::string name;
  std::string description; // one line a reviewer reads
  bool higher_is_better = true;
  int pairs = 0; // prompts the metric was computed over
  double a = 0.0;
  double b = 0.0;
  double delta = 0.0;                 // b - a
  std::optional<Interval> a_interval; // Wilson, for rates
  std::optional<Interval> b_interval;
  std::optional<Interval> delta_interval; // bootstrap percentile interval, for means
  std::string test;                       // "mcnemar_exact" or "paired_bootstrap"
  double p_value = 1.0;
  // McNemar only: prompts where the event (stable, fragile) held in A only and in B only.
  std::optional<int> only_a;
  std::optional<int> only_b;
  // Bootstrap only: the exact sign test of the same differences. A bootstrap on a handful of
  // prompts can give a zero-width interval; a mean is only called beyond noise when the sign
  // test agrees.
  std::optional<double> sign_test_p;
  bool beyond_noise = false;
  bool regression = false;
  bool improvement = false;
};

struct AuditSide {
  std::string audit_id;
  std::string endpoint;
  std::string model;
  std::vector<std::string> fingerprints;
  ServerDescription server; // what the endpoint's server said about itself; empty: nothing
  int prompts = 0;
  int runs = 0;        // runs per prompt per level, from the audit's configuration
  std::string verdict; // the audit's own verdict: "pass", "fail" or "error"
  // Logical requests of the compared analysis (successful + failed) and those that failed.
  int requests = 0;
  int failed_requests = 0;
  int dead_prompts = 0;         // prompts without a single successful completion
  double max_failed_rate = 0.0; // the audit's own --max-failed-rate
};

// One concurrency level as both audits served it: what B's serving (a deterministic mode, another
// build) cost against A's in throughput and latency. Figures, not tests: wall time depends on
// the machine and on what else ran beside each audit.
struct LevelSpeed {
  int concurrency = 1;
  double a_tokens_per_second = 0.0;
  double b_tokens_per_second = 0.0;
  double a_mean_latency_ms = 0.0;
  double b_mean_latency_ms = 0.0;
  double a_p95_latency_ms = 0.0;
  double b_p95_latency_ms = 0.0;
  std::optional<double> throughput_ratio; // B / A tokens per second; empty where A's is 0
  std::optional<double> latency_ratio;    // B / A mean latency; empty where A's is 0
};

struct AuditDiff {
  AuditSide a;
  AuditSide b;
  // Every level both audits' top-level analyses served a request at, lowest first.
  std::vector<LevelSpeed> speeds;
  double alpha = 0.05;
  int bootstrap_resamples = 0;
  std::uint64_t seed = 0;
  std::vector<std::string> only_in_a; // prompt ids, suite order
  std::vector<std::string> only_in_b;
  int paired_prompts = 0; // ids in both with completions on both sides
  std::vector<MetricDiff> metrics;
  std::vector<PromptDiff> prompts; // ids in both, in A's suite order
  // Why the diff cannot be a finding, one line each naming the audit: an audit whose verdict is
  // ERROR, more failed requests than the audit's own --max-failed-rate allows, prompts with no
  // successful run on one side only. Failures are lost evidence: whatever the statistics say
  // over what remains, `llmrepro diff` exits 3 and reports neither a regression nor an
  // improvement nor "no difference". Empty when both audits' evidence is whole.
  std::vector<std::string> lost_evidence;
  // Each difference between A's and B's server descriptions (core::server_changes), named
  // before any number: a changed build or slot count is a cause a reviewer looks at first.
  // It changes no verdict and no exit code by itself.
  std::vector<std::string> server_changes;

  // True when any difference beyond noise is a regression: what `llmrepro diff` exits 1 on.
  // False whenever evidence was lost (no finding either way).
  bool regression() const;
  // True when some difference beyond noise is an improvement; false when evidence was lost.
  bool improvement() const;
  bool evidence_lost() const { return !lost_evidence.empty(); }
};

// One plan-defining value in which audit A and audit B differ.
struct DiffPlanDifference {
  std::string flag; // "--runs", "--concurrency", "--adaptive", ...
  std::string a;    // A's value, as the flag would spell it
  std::string b;
};

// Every value of the plans of A and B that makes their statistics incomparable, in this order:
// --runs, --concurrency, --adaptive (and, both adaptive, --adaptive-initial and
// --adaptive-epsilon), --probe, --profile, --max-tokens, --top-logprobs, --stream, --stop-after,
// --shard, --fragile-gap, --fragile-window, --fragile-p, --compare-on. Agreement, stability and
// the per-prompt tests all count runs: the same endpoint audited with 3 runs and with 12 (or
// fixed and adaptive) differs in TARr by the plan alone. What an A/B comparison changes on
// purpose (endpoint, --api, --model, --seed) and what does not shape the evidence (timeouts,
// retries, budgets, gates) is not compared. Empty when the plans agree.
std::vector<DiffPlanDifference> diff_plan_differences(const AuditConfig& a, const AuditConfig& b);

// "--runs 3 (A) vs 12 (B)".
std::string to_string(const DiffPlanDifference& difference);

// Each level both summaries served a successful request at (A's order), with B's speed against
// A's.
std::vector<LevelSpeed> level_speeds(const AuditSummary& a, const AuditSummary& b);

// Compares B against A over the prompt ids present in both (A's order).
AuditDiff diff_audits(const AuditReport& a, const AuditReport& b, const DiffConfig& config);

} // namespace llmrepro::core
