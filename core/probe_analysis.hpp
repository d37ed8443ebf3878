// Analysis beyond one endpoint's sweep: each probe kind on its own, the prefix probe's warm
// against cold trials, and the same plan's outcomes compared across endpoints.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/analysis.hpp"
#include "core/plan.hpp"

namespace llmrepro::core {

// One prompt of the prefix probe: its cold trials (after a cache flush, or none where the
// engine offers none) against its warm ones (after a priming request with the same prefix).
// The restart probe's two sides have the same shape: its "cold" side is each round's first
// request after the restart command, its "warm" side the round's later request.
struct PrefixPromptDrift {
  std::string id;
  int prompt_index = 0;
  int cold_runs = 0; // successful
  int warm_runs = 0;
  int cold_unique = 0;
  int warm_unique = 0;
  // The modal warm completion differs from the modal cold one: drift that prefix caching
  // brings, even where each side alone is stable.
  bool drift = false;
  // Leading tokens the modal warm and cold completions share; empty when they agree or a side
  // has no successful run.
  std::optional<int> divergence;
  // Every trial against the first cold one (the successful cold trial of the lowest repeat), for
  // the determinism check: the logprob drift while tokens agree, and the fewest leading tokens a
  // differing trial shares with it (empty when every trial of that side equals it).
  LogprobDrift cold_drift_from_reference;
  LogprobDrift warm_drift_from_reference;
  std::optional<int> cold_divergence_from_reference;
  std::optional<int> warm_divergence_from_reference;
  // Successful cold trials whose response said the server served part of the prompt from its
  // cache (TokenUsage::cached_prompt > 0): not confirmed cold.
  int cold_cache_reused = 0;
};

// One probe kind's analysis of one endpoint.
struct ProbeAnalysis {
  ProbeKind probe = ProbeKind::sweep;
  AuditAnalysis analysis;
  // Prefix and restart probes only: per prompt, suite order, and how many prompts drifted warm
  // vs cold (restart: later vs first after the restart).
  std::vector<PrefixPromptDrift> prefix;
  int prefix_drift_prompts = 0;
};

// Whether `probe` pairs two sides per prompt (PrefixPromptDrift): prefix and restart.
bool probe_has_sides(ProbeKind probe);

// The warm-against-cold drift of one prompt from its records of `probe` (prefix: warm trials
// against cold ones; restart: later requests against the first after each restart), only
// endpoint `endpoint_index`'s counting; empty when it has none.
std::optional<PrefixPromptDrift> prefix_drift_of_prompt(
    const Suite& suite, int prompt_index, const std::vector<const RequestRecord*>& records,
    const AnalysisConfig& config, int endpoint_index, ProbeKind probe = ProbeKind::prefix);

// prefix_drift_of_prompt taken one record at a time, for a prompt streamed from an audit file
// (core::AuditReportBuilder::add_streamed_prompt): the two sides' analyses
// (AnalysisBuilder::add_run) and the comparison with the first cold trial are made as each
// record comes, so that no more than that trial and each side's distinct completions are kept.
// For one prompt: construct, set_reference with reference_of's record (its tokens read), add_run
// with every record of the prompt in analysis_order, then end_prompt.
class PrefixDriftRuns {
public:
  PrefixDriftRuns(const Suite& suite, const AnalysisConfig& config, int prompt_index,
                  int endpoint_index, ProbeKind probe);
  PrefixDriftRuns(PrefixDriftRuns&&) noexcept;
  PrefixDriftRuns& operator=(PrefixDriftRuns&&) noexcept;
  ~PrefixDriftRuns();

  // The index in `records` of the first cold trial (the successful cold trial of the lowest
  // repeat, the first recorded among equals) every trial is compared with; empty where none. Read
  // off the records' keys and outcomes, not their tokens.
  std::optional<std::size_t> reference_of(const std::vector<const RequestRecord*>& records) const;
  // That trial's completion, copied.
  void set_reference(const Completion& reference);
  // `record` (any endpoint or probe kind; the others are skipped) at `position` in the prompt's
  // records in recording order.
  void add_run(const RequestRecord& record, std::size_t position);
  // The drift, as prefix_drift_of_prompt gives it, from every record of the prompt in recording
  // order (their tokens are not read).
  std::optional<PrefixPromptDrift> end_prompt(const std::vector<const RequestRecord*>& records);

private:
  struct Sides;
  std::unique_ptr<Sides> m_sides;
};

// The probe kind whose analysis is the audit's top-level one: the sweep when it ran, otherwise
// the first configured kind.
ProbeKind primary_probe(const std::vector<ProbeKind>& probes);

// One endpoint's reference completion of a prompt against endpoint 0's.
struct EndpointDivergence {
  int endpoint_index = 0;
  bool has_reference = false; // the endpoint has a successful run of the prompt
  bool agrees = false;        // its reference equals endpoint 0's
  // Leading tokens shared with endpoint 0's reference; empty when they agree or either lacks one.
  std::optional<int> first_difference;
  // Distribution mode: this endpoint's answers to the prompt against endpoint 0's, every level's
  // runs pooled on each side (both ran the same plan), by the shift test; its p Holm-adjusted in
  // the audit's one family (judge_shifts), `shifted` where that falls below k_shift_alpha, and
  // the total variation distance between the two. No test where either side has no answer.
  std::optional<ShiftTest> shift;
  std::optional<double> shift_p_adjusted;
  double answer_distance = 0.0;
  bool shifted = false;
};

struct PromptComparison {
  std::string id;
  int prompt_index = 0;
  bool all_agree = false; // every endpoint has a reference and all equal endpoint 0's
  std::vector<EndpointDivergence> endpoints; // endpoints 1..n-1
  bool shifted = false;                      // some endpoint's answers shifted from endpoint 0's
};

struct EndpointComparison {
  std::vector<PromptComparison> prompts; // prompts analysed at endpoint 0, suite order
  int agreeing_prompts = 0;
  // Prompts whose answers shifted on some endpoint, and the size of the Holm family the tests
  // were judged in (every shift test of the audit that can reject: judge_shifts).
  int shifted_prompts = 0;
  int shift_tests = 0;
};

// Compares the reference completions of each endpoint's analysis (one per endpoint, index i at
// position i, all of the same probe kind) prompt by prompt against endpoint 0's, and their
// answers by the shift test (its Holm adjustment is judge_shifts', over the whole audit).
EndpointComparison compare_endpoints(const std::vector<AuditAnalysis>& per_endpoint);

// compare_endpoints' row of one prompt: endpoint 0's analysis of it against each further
// endpoint's (others[i] is endpoint i + 1's, null where that endpoint has none).
PromptComparison compare_prompt(const PromptAnalysis& base,
                                const std::vector<const PromptAnalysis*>& others);

} // namespace llmrepro::core
