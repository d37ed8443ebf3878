#include "core/audit_report.hpp"

namespace llmrepro::core {

AuditReport make_audit_report(const AuditData& data, const ToolInfo& tool) {
  AuditReport report;
  report.data = &data;
  report.tool = tool;
  const AnalysisConfig analysis_config{data.config.fragile_gap, data.config.fragile_window};
  report.analysis = analyse(data.suite, data.records, analysis_config, 0);
  report.planned_requests =
      make_plan(data.suite, plan_config_of(data.config, static_cast<int>(data.endpoints.size())))
          .size();
  report.tara = report.analysis.summary.tara;
  report.verdict = judge(report.analysis, data.config.gates, report.tara);
  return report;
}

} // namespace llmrepro::core
