// Everything a renderer needs for one audit: the stored data, its analysis, the verdict, the tool.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "core/analysis.hpp"
#include "core/audit.hpp"
#include "core/probe_analysis.hpp"
#include "core/verdict.hpp"

namespace llmrepro::core {

struct AuditReport {
  const AuditData* data = nullptr; // not owned; outlives the report
  AuditAnalysis analysis;          // of endpoint 0, its primary probe kind
  ProbeKind primary_probe = ProbeKind::sweep;
  std::vector<ProbeAnalysis> probes;   // endpoint 0, each configured probe kind on its own
  std::vector<AuditAnalysis> endpoints; // each endpoint's primary probe; [0] is `analysis`
  std::optional<EndpointComparison> comparison; // with two or more endpoints
  Verdict verdict;
  ToolInfo tool;
  std::size_t planned_requests = 0;
  std::optional<double> tara;      // TARa@N where answers were extracted
};

// Builds an audit's report a prompt at a time (every analysis of make_audit_report at once), so
// that `report` can stream the records from the database instead of holding the audit whole.
class AuditReportBuilder {
public:
  // `header` is the audit without its records (configuration, endpoints, suite); what the
  // builder needs of it is copied.
  explicit AuditReportBuilder(const AuditData& header);

  // Every record of prompt `prompt_index` (all endpoints and probe kinds), in recording order.
  // Prompts in ascending index order, each at most once.
  void add_prompt(int prompt_index, const std::vector<RequestRecord>& records);
  void add_prompt(int prompt_index, const std::vector<const RequestRecord*>& records);

  // The report of every prompt added, over `data` (the same audit; it must outlive the report,
  // and its records are read by renderers only for their outcomes). The builder is spent.
  AuditReport finish(const ToolInfo& tool, const AuditData& data);

private:
  struct ProbeBuilder {
    ProbeKind probe;
    std::optional<AnalysisBuilder> analysis; // empty for the primary kind: endpoint 0's is reused
    std::vector<PrefixPromptDrift> prefix;
    int prefix_drift_prompts = 0;
  };
  std::unique_ptr<Suite> m_suite; // the analysis builders point at it
  AnalysisConfig m_config;
  ProbeKind m_primary_probe;
  std::vector<AnalysisBuilder> m_endpoints; // each endpoint's primary probe kind
  std::vector<ProbeBuilder> m_probes;       // endpoint 0, each configured kind
};

// Analyses the stored audit (endpoint 0's primary probe at top level; every probe kind and
// endpoint beside it), counts its planned requests, and applies its gates.
// `data` must outlive the returned report.
AuditReport make_audit_report(const AuditData& data, const ToolInfo& tool);

} // namespace llmrepro::core
