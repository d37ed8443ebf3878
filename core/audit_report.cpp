#include "core/audit_report.hpp"

namespace llmrepro::core {

AuditReport make_audit_report(const AuditData& data, const ToolInfo& tool) {
  AuditReport report;
  report.data = &data;
  report.tool = tool;
  const AnalysisConfig analysis_config{data.config.fragile_gap, data.config.fragile_window};
  report.primary_probe = primary_probe(data.config.probes);
  report.analysis = analyse(data.suite, data.records, analysis_config, 0, report.primary_probe);
  report.probes = analyse_probes(data.suite, data.records, analysis_config, 0, data.config.probes);
  report.endpoints.push_back(report.analysis);
  for (std::size_t e = 1; e < data.endpoints.size(); ++e)
    report.endpoints.push_back(analyse(data.suite, data.records, analysis_config,
                                       static_cast<int>(e), report.primary_probe));
  if (report.endpoints.size() > 1) report.comparison = compare_endpoints(report.endpoints);
  report.planned_requests =
      make_plan(data.suite, plan_config_of(data.config, static_cast<int>(data.endpoints.size())))
          .size();
  report.tara = report.analysis.summary.tara;
  report.verdict = judge(report.analysis, data.config.gates, report.tara);
  return report;
}

} // namespace llmrepro::core
