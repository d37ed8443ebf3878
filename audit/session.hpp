// A stored audit opened and analysed: the one way every command opens an audit database, and the
// one loader that reads one back and analyses it (the audit's own analysis and its adaptive
// looks, `report` and its re-judging, `merge`, `diff`).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "audit/request.hpp"
#include "core/audit.hpp"
#include "core/audit_report.hpp"
#include "core/request_record.hpp"
#include "core/result.hpp"
#include "store/audit_database.hpp"

namespace llmrepro::audit {

// store::AuditDatabase::open with every record checked against the stored plan, saying through
// `notify` (one line) when the file was of an older schema version: upgraded in place, or read as
// it is because it is read-only.
core::Result<store::AuditDatabase> open_audit_database(const std::string& path,
                                                       const Notify& notify);

// A stored audit and its report. `data` keeps every record's key and outcome but not the
// completion text and tokens, which only the analysis needed (a lean session: its failed records
// alone); `report.data` points into it.
struct Session {
  std::unique_ptr<core::AuditData> data;
  core::AuditReport report;
  // Successful records of each prompt (index = prompt index), over every endpoint and probe
  // kind, counted as they were read.
  std::vector<long> successes;
};

struct SessionOptions {
  core::ToolInfo tool; // the tool's identity, in the report
  // Applied to the stored header before the analysis is built, and to `data` after the load:
  // what the caller knows better than the database (`report`'s judging flags and --price, a
  // run's adaptive decisions not yet stored). Its error ends the load.
  std::function<core::Result<void>(core::AuditData&)> adjust;
  // Only the records it keeps are analysed (an adaptive look reads the rounds planned so far);
  // empty: every record. `data` keeps every record either way.
  std::function<bool(const core::RequestRecord&)> keep;
  // Judged by the stored gates and the facts the stored audit gives; false leaves the verdict to
  // the caller, which judges once with facts of its own (core::rejudge).
  bool judge = true;
  // A lean report, for rendering: each prompt's detail kept in a temporary file
  // (core::AuditReportBuilder::keep_details) and only the failed records kept in `data`
  // (store::AuditDatabase::KeptRecords::failures), so that memory stays flat however many
  // prompts and runs the audit holds.
  bool lean = false;
  // Each prompt's records read on this thread while another analyses them (audit::ReadAhead),
  // where the machine runs two threads or more: the same report, sooner.
  bool read_ahead = true;
};

// Reads the audit in `database` in one snapshot and analyses it a prompt at a time, in bounded
// memory: the same report as core::make_audit_report over AuditDatabase::load().
core::Result<Session> load_session(const store::AuditDatabase& database,
                                   const SessionOptions& options);

// As above, the database at `path` opened first (open_audit_database).
core::Result<Session> load_session(const std::string& path, const SessionOptions& options,
                                   const Notify& notify);

} // namespace llmrepro::audit
