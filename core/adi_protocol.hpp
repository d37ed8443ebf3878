// --profile adi: the public agent-determinism leaderboard's protocol and its figures, so that an
// audit of an endpoint can stand beside that leaderboard's score for it. Per prompt (a "case") a
// burst of k_adi_burst concurrent requests and k_adi_serial_runs serial requests spaced
// k_adi_serial_spacing_s apart; judged by whether the case's responses diverge, where they first
// part in bytes and characters, the modal response's share and fingerprint drift. Definitions:
// docs/design.md "The adi profile".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/analysis.hpp"
#include "core/audit.hpp"

namespace llmrepro::core {

struct AdiSummary {
  int burst = k_adi_burst;             // the burst's size, and its level
  int serial_runs = k_adi_serial_runs; // serial requests per case
  double serial_spacing_s = 0.0;       // the fewest seconds between two of them (as run)
  int cases = 0;                       // prompts with at least one recorded request
  int diverged = 0;                    // cases with two distinct completions over all runs
  int burst_diverged = 0;              // ... among the burst's completions
  int serial_diverged = 0;             // ... among the serial completions
  int burst_differs_from_serial = 0;   // the burst's modal completion is not the serial one's
  // Over the diverged cases whose texts part (two completions can differ in tokens alone): the
  // first divergence in bytes and in characters (core/text_divergence.hpp), least and median.
  int text_diverged = 0;
  std::optional<int> min_divergence_bytes;
  std::optional<double> median_divergence_bytes;
  std::optional<int> min_divergence_characters;
  std::optional<double> median_divergence_characters;
  // The modal completion's share of every run of a case (failed requests count against it),
  // mean and least over the cases.
  std::optional<double> mean_modal_share;
  std::optional<double> min_modal_share;
  int fingerprints = 0;            // distinct non-empty system_fingerprint values
  int fingerprint_drift_cases = 0; // cases whose runs named more than one
  int diverged_with_fingerprint_drift = 0;
  friend bool operator==(const AdiSummary&, const AdiSummary&) = default;
};

// The protocol's figures of one endpoint's analysis (its sweep: levels 1 and the burst) run with
// `config` (its spacing).
AdiSummary adi_summary(const AuditAnalysis& analysis, const AuditConfig& config);

// adi_summary a prompt at a time: each prompt added as it is analysed (it reads nothing the
// global passes judge later), then the figures of the analysis's summary.
class AdiTally {
public:
  explicit AdiTally(const AuditConfig& config);
  void add(const PromptAnalysis& prompt);
  AdiSummary finish(const AuditSummary& summary) const;

private:
  AdiSummary m_summary;
  std::vector<int> m_bytes;
  std::vector<int> m_characters;
  double m_share_total = 0.0;
};

// A case's modal completion share: the most frequent completion's count over every recorded run
// (successful and failed); empty without a recorded run.
std::optional<double> modal_completion_share(const PromptAnalysis& prompt);

// The summary in words, a line each, for the terminal, Markdown and HTML: what ran, what
// diverged, where, the modal share and the fingerprints.
std::vector<std::string> adi_lines(const AdiSummary& summary);
// Every endpoint's lines, each prefixed "#e " where there are several endpoints.
std::vector<std::string> adi_lines(const std::vector<AdiSummary>& endpoints);

} // namespace llmrepro::core
