// Everything a renderer needs for one audit: the stored data, its analysis, the verdict, the tool.
#pragma once

#include <optional>

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

} // namespace llmrepro::core

namespace llmrepro::core {

// Analyses the stored audit (endpoint 0's primary probe at top level; every probe kind and
// endpoint beside it), counts its planned requests, and applies its gates.
// `data` must outlive the returned report.
AuditReport make_audit_report(const AuditData& data, const ToolInfo& tool);

} // namespace llmrepro::core
