// Everything a renderer needs for one audit: the stored data, its analysis, the verdict, the tool.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <optional>
#include <vector>

#include "core/adi_protocol.hpp"
#include "core/analysis.hpp"
#include "core/audit.hpp"
#include "core/determinism_check.hpp"
#include "core/probe_analysis.hpp"
#include "core/prompt_details.hpp"
#include "core/record_tokens.hpp"
#include "core/verdict.hpp"

namespace llmrepro::core {

// Who answered one endpoint, over all its probe kinds: model and system_fingerprint of every
// successful completion -> count ("" where the response named none).
struct EndpointObservations {
  std::map<std::string, int> models;
  std::map<std::string, int> fingerprints;
};

struct AuditReport {
  const AuditData* data = nullptr; // not owned; outlives the report
  AuditAnalysis analysis;          // of endpoint 0, its primary probe kind
  ProbeKind primary_probe = ProbeKind::sweep;
  std::vector<ProbeAnalysis> probes;    // endpoint 0, each configured probe kind on its own
  std::vector<AuditAnalysis> endpoints; // each endpoint's primary probe; [0] is `analysis`
  // Endpoints 1.. with their non-primary probe kinds, so that the gates judge every scope.
  std::vector<ProbeAnalysis> other_endpoint_probes;
  std::vector<int> other_endpoint_indices;      // endpoint of other_endpoint_probes[i]
  std::optional<EndpointComparison> comparison; // with two or more endpoints
  std::vector<EndpointObservations> observed;   // per endpoint
  Verdict verdict;
  // Things a reader must know before trusting the figures (several models answered, the
  // endpoint is not greedy, fewer candidates than asked, ...): one line each, every output.
  std::vector<std::string> warnings;
  ToolInfo tool;
  std::size_t planned_requests = 0;
  std::optional<double> tara; // TARa@N where answers were extracted
  // --profile deterministic: the determinism check of each endpoint ([0] is the top-level one);
  // empty under the standard profile.
  std::vector<DeterminismCheck> determinism;
  // --profile adi: the leaderboard protocol's figures of each endpoint (core/adi_protocol.hpp);
  // empty under the other profiles.
  std::vector<AdiSummary> adi;
  // Where the report is lean (AuditReportBuilder::keep_details): the detail of every prompt
  // analysis, which is slim (core/prompt_details.hpp); the prompts of endpoint 0's primary
  // probe kind are then in `analysis` alone, `endpoints[0]` and that kind's entry of `probes`
  // holding their summaries only (analysis_of). Null: every prompt is whole, as analysed.
  std::shared_ptr<const PromptDetails> details;
};

// The analysis of one of endpoint 0's probe kinds: in a lean report `analysis` for the primary
// kind (the one copy of its prompts it keeps), else the probe's own.
const AuditAnalysis& analysis_of(const AuditReport& report, const ProbeAnalysis& probe);

// `prompt` (of one of the report's analyses) with its detail: itself where it is whole, else
// `scratch` made the whole prompt (core::detailed).
const PromptAnalysis& detailed(const AuditReport& report, const PromptAnalysis& prompt,
                               PromptAnalysis& scratch);

// Every scope the gates judge: endpoint 0's primary probe kind first, then endpoint 0's other
// kinds, then each further endpoint's kinds. Pointers into `report`.
std::vector<JudgedScope> judged_scopes(const AuditReport& report);

// The determinism check of each endpoint over all its probe kinds (endpoint 0 first).
std::vector<DeterminismCheck> determinism_checks(const AuditReport& report);

// The facts about the run that the stored audit gives: planned against recorded requests.
RunFacts stored_run_facts(const AuditReport& report);

// Judges the report again (different gates, or facts only the run knows: an interruption, an
// unreachable endpoint) and refreshes its verdict.
void rejudge(AuditReport& report, const GateConfig& gates, const RunFacts& facts);

// Builds an audit's report a prompt at a time (every analysis of make_audit_report at once), so
// that `report` can stream the records from the database instead of holding the audit whole.
class AuditReportBuilder {
public:
  // `header` is the audit without its records (configuration, endpoints, suite); what the
  // builder needs of it is copied.
  explicit AuditReportBuilder(const AuditData& header);

  // Makes the report lean: each prompt analysis, once every pass that reads it whole has, keeps
  // its detail in `details` and stays in memory slim, so that memory does not grow with the
  // prompts; renderers read the detail back a prompt at a time (AuditReport::details). Before
  // the first prompt is added.
  void keep_details(std::shared_ptr<PromptDetails> details);

  // Every record of prompt `prompt_index` (all endpoints and probe kinds), in recording order.
  // Prompts in ascending index order, each at most once.
  void add_prompt(int prompt_index, const std::vector<RequestRecord>& records);
  void add_prompt(int prompt_index, const std::vector<const RequestRecord*>& records);
  // add_prompt for a prompt streamed from an audit file: `records` in recording order, whose
  // tokens `tokens` reads by index into `records`; `use` lists, ascending, the indexes of those
  // to add. Each is read, added to every analysis and dropped in turn, so that memory holds one
  // record's tokens and a few completions, not the prompt's runs (a probe's first cold trial,
  // which its sides are compared with, is read once more first). An error reading tokens is
  // returned, and the prompt is not added.
  Result<void> add_streamed_prompt(int prompt_index, const std::vector<RequestRecord>& records,
                                   const std::vector<std::size_t>& use, RecordTokens& tokens);

  // The report of every prompt added, over `data` (the same audit; it must outlive the report,
  // and its records are read by renderers only for their outcomes), judged by data's gates and
  // the facts the stored audit gives. The builder is spent.
  AuditReport finish(const ToolInfo& tool, const AuditData& data);

  // As finish, without the verdict: for a caller that judges once with facts of its own
  // (rejudge), such as the run that just recorded the audit. The builder is spent.
  AuditReport finish_unjudged(const ToolInfo& tool, const AuditData& data);

private:
  // The analyses a prompt is added to: each endpoint's primary kind, then the other endpoints'
  // other kinds, then endpoint 0's other kinds.
  std::vector<AnalysisBuilder*> analyses();
  // What add_prompt does once `added` (analyses() order, null where one had none of the prompt's
  // records) holds the prompt's analyses and the prefix drifts are kept: the comparison across
  // endpoints, the ADI tallies, the models seen, the details.
  void prompt_added(const std::vector<const RequestRecord*>& records,
                    const std::vector<PromptAnalysis*>& added);

  struct ProbeBuilder {
    ProbeKind probe;
    std::optional<AnalysisBuilder> analysis; // empty for the primary kind: endpoint 0's is reused
    std::vector<PrefixPromptDrift> prefix;
    int prefix_drift_prompts = 0;
  };
  // A probe kind whose two sides are compared (prefix cache, restart), at `endpoint`.
  struct SidedProbe {
    int endpoint;
    ProbeBuilder* probe;
    bool counts_drift; // endpoint 0's: prefix_drift_prompts counts the prompts that drift
  };
  // The other endpoints' (for the determinism check), then endpoint 0's.
  std::vector<SidedProbe> sided_probes();
  static void keep_prefix_drift(const SidedProbe& sided, std::optional<PrefixPromptDrift> drift);
  std::unique_ptr<Suite> m_suite; // the analysis builders point at it
  AnalysisConfig m_config;
  ProbeKind m_primary_probe;
  std::vector<AnalysisBuilder> m_endpoints; // each endpoint's primary probe kind
  std::vector<ProbeBuilder> m_probes;       // endpoint 0, each configured kind
  // Endpoints 1.., each non-primary kind: (endpoint, builder).
  std::vector<std::pair<int, ProbeBuilder>> m_other_probes;
  std::vector<EndpointObservations> m_observed;
  int m_top_logprobs = 2;
  bool m_determinism = false; // --profile deterministic
  // Built as the prompts are added: the endpoint comparison (two or more endpoints) and, under
  // --profile adi, each endpoint's figures.
  EndpointComparison m_comparison;
  std::vector<AdiTally> m_adi;
  std::shared_ptr<PromptDetails> m_details; // lean: keep_details
};

// Analyses the stored audit (endpoint 0's primary probe at top level; every probe kind and
// endpoint beside it), counts its planned requests, and applies its gates.
// `data` must outlive the returned report.
AuditReport make_audit_report(const AuditData& data, const ToolInfo& tool);

} // namespace llmrepro::core
