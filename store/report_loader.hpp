// Loads a stored audit for reporting without holding it whole: each prompt's records stream from
// the database into the analysis and are dropped, so memory follows the report, not the audit.
#pragma once

#include <memory>

#include "core/audit.hpp"
#include "core/audit_report.hpp"
#include "core/result.hpp"
#include "store/audit_database.hpp"

namespace llmrepro::store {

// A stored audit and its report. `data` keeps every record's key and outcome but not the
// completion text and tokens, which only the analysis needed; `report.data` points into it.
struct LoadedReport {
  std::unique_ptr<core::AuditData> data;
  core::AuditReport report;
};

// Reads the audit in `database` in one snapshot and analyses it prompt by prompt. The same
// report as core::make_audit_report over AuditDatabase::load(), in bounded memory.
core::Result<LoadedReport> load_report(const AuditDatabase& database, const core::ToolInfo& tool);

} // namespace llmrepro::store
