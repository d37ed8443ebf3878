#include "core/audit_report.hpp"

#include <algorithm>

namespace llmrepro::core {

AuditReportBuilder::AuditReportBuilder(const AuditData& data)
    : m_suite(std::make_unique<Suite>(data.suite)),
      m_config{data.config.fragile_gap, data.config.fragile_window},
      m_primary_probe(primary_probe(data.config.probes)) {
  // Endpoint 0's primary probe is analysed once and reused as probes[k] and endpoints[0].
  for (std::size_t e = 0; e < std::max<std::size_t>(data.endpoints.size(), 1); ++e)
    m_endpoints.emplace_back(*m_suite, m_config, static_cast<int>(e), m_primary_probe);
  for (ProbeKind probe : data.config.probes) {
    ProbeBuilder builder{probe, std::nullopt, {}, 0};
    if (probe != m_primary_probe) builder.analysis.emplace(*m_suite, m_config, 0, probe);
    m_probes.push_back(std::move(builder));
  }
}

void AuditReportBuilder::add_prompt(int prompt_index, const std::vector<RequestRecord>& records) {
  std::vector<const RequestRecord*> pointers;
  pointers.reserve(records.size());
  for (const auto& record : records) pointers.push_back(&record);
  add_prompt(prompt_index, pointers);
}

void AuditReportBuilder::add_prompt(int prompt_index,
                                    const std::vector<const RequestRecord*>& records) {
  for (auto& endpoint : m_endpoints) endpoint.add_prompt(prompt_index, records);
  for (auto& probe : m_probes) {
    if (probe.analysis) probe.analysis->add_prompt(prompt_index, records);
    if (probe.probe != ProbeKind::prefix) continue;
    auto drift = prefix_drift_of_prompt(*m_suite, prompt_index, records, m_config, 0);
    if (!drift) continue;
    if (drift->drift) ++probe.prefix_drift_prompts;
    probe.prefix.push_back(std::move(*drift));
  }
}

AuditReport AuditReportBuilder::finish(const ToolInfo& tool, const AuditData& data) {
  AuditReport report;
  report.data = &data;
  report.tool = tool;
  report.primary_probe = m_primary_probe;
  for (auto& endpoint : m_endpoints) report.endpoints.push_back(endpoint.finish());
  report.analysis = report.endpoints.front();
  for (auto& probe : m_probes) {
    ProbeAnalysis analysis;
    analysis.probe = probe.probe;
    analysis.analysis = probe.analysis ? probe.analysis->finish() : report.analysis;
    analysis.prefix = std::move(probe.prefix);
    analysis.prefix_drift_prompts = probe.prefix_drift_prompts;
    report.probes.push_back(std::move(analysis));
  }
  if (report.endpoints.size() > 1) report.comparison = compare_endpoints(report.endpoints);
  report.planned_requests =
      make_plan(data.suite, plan_config_of(data.config, static_cast<int>(data.endpoints.size())))
          .size();
  report.tara = report.analysis.summary.tara;
  report.verdict = judge(report.analysis, data.config.gates, report.tara);
  return report;
}

AuditReport make_audit_report(const AuditData& data, const ToolInfo& tool) {
  AuditReportBuilder builder(data);
  const auto by_prompt = records_by_prompt(data.suite, data.records);
  for (std::size_t p = 0; p < by_prompt.size(); ++p)
    builder.add_prompt(static_cast<int>(p), by_prompt[p]);
  return builder.finish(tool, data);
}

} // namespace llmrepro::core
