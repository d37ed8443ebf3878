// The passes of an audit and the one context they share. A command calls load_or_resume, then
// (unless it is a dry run) execute(), which calls the other passes in order; each reads what the
// passes before it filled in and fills in its own part. The rules they apply live in core and
// probes; the passes only wire them to the request, the endpoints and the database.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "audit/request.hpp"
#include "audit/session.hpp"
#include "core/audit.hpp"
#include "core/audit_report.hpp"
#include "core/budget.hpp"
#include "core/clock.hpp"
#include "core/plan.hpp"
#include "core/recorded_requests.hpp"
#include "core/result.hpp"
#include "engine/engine_server.hpp"
#include "probes/scheduler.hpp"
#include "store/audit_database.hpp"
#include "store/database_lock.hpp"

namespace llmrepro::audit {

// One endpoint as it will be driven: either the user's, or the embedded engine started here
// (kept alive for as long as the run holds this).
struct Target {
  probes::EndpointTarget target;
  core::EndpointInfo info;
  std::unique_ptr<engine::EngineServer> embedded;
};

// The context every pass reads and fills, in the order the passes run.
struct AuditRun {
  AuditRun(const AuditRequest& given_request, const core::Clock& given_clock)
      : request(given_request), clock(given_clock) {}

  const AuditRequest& request;
  const core::Clock& clock; // the audit's id and its start and finish times

  // load_or_resume: the endpoints to drive ("" for the embedded reference engine), the audit's
  // header (configuration and suite; on --resume also its endpoints and identity) and, on
  // --resume, the stored database.
  std::vector<std::string> urls;
  core::AuditData header;
  std::optional<store::AuditDatabase> database;
  bool database_existed = false; // --db named an existing file (replaced under --overwrite)
  bool judging_changed = false;  // --resume was given judging flags that differ from the stored

  // load_or_resume (audit/keys.hpp): the key for each URL ("" none), and for --embeddings.
  std::vector<std::string> keys;
  std::string embeddings_key;
  // claim_files: the writer lock of --db, held until the run ends.
  std::optional<store::DatabaseLock> lock;

  // connect_endpoints: one target per URL, in order.
  std::vector<Target> targets;

  // plan_requests: the whole plan, and what of it the database already holds.
  core::Plan plan;
  core::RecordedRequests recorded;

  // run_requests: how the run ended (its error is reported after the reports are written),
  // whether Ctrl-C stopped it, and the probes' side traffic.
  core::Result<void> ran;
  bool interrupted = false;
  std::vector<core::ProbeActivity> activity;
  // The budgets' ledger (empty: no budget), and the requests connect_endpoints sent before the
  // run (the capability preflight), which it counts as spent.
  std::optional<core::BudgetLedger> budget;
  int preflight_requests = 0;
  // An adaptive audit's decisions as its last look left them: stored after every look, and the
  // last with the run's outcome (judge_run).
  std::optional<core::AdaptiveOutcome> adaptive;

  // analyse_records: the audit read back from the database and analysed, not yet judged.
  std::optional<Session> loaded;

  const core::AuditConfig& config() const { return header.config; }
  core::AuditReport& report() { return loaded->report; }
};

// After load_or_resume: every other pass in order, from claim_files to judge_run; the first error
// ends it. The run's own error (run.ran) is not one: the reports still say what was done.
core::Result<void> execute(AuditRun& run);

// --dry-run: the plan the run load_or_resume prepared would send, for the endpoints named.
core::Plan dry_run_plan(const AuditRun& run);

// Checks every flag, then reads the stored audit (--resume: its plan must agree with the flags
// given) or loads the suite for a new one, and decides which endpoints to drive.
core::Result<void> load_or_resume(AuditRun& run);

// Before anything is sent: checks every report path against --db, the suite and each other
// (store::check_output_paths) and takes the writer lock of --db (store::DatabaseLock), so that a
// second writer of the same database stops here.
core::Result<void> claim_files(AuditRun& run);

// Connects to each endpoint, or starts the embedded reference engine, detecting the dialect
// (--api auto) and the model where asked.
core::Result<void> connect_endpoints(AuditRun& run);

// Creates the database with the header before any request, so that a crash leaves a resumable
// audit; on --resume records the endpoints as now connected and any judging flags given.
core::Result<void> open_database(AuditRun& run);

// Builds the plan and reads which of its requests are already recorded (--resume skips them).
core::Result<void> plan_requests(AuditRun& run);

// Runs the plan: exactly c requests in flight per level, each committed as it finishes. The
// first Ctrl-C stops it cleanly (the database stays consistent); a second leaves at once. An
// error of the run itself is kept in run.ran, not returned: the reports still say what was done.
core::Result<void> run_requests(AuditRun& run);

// Reads the recorded audit back and analyses it, streaming each prompt's records.
core::Result<void> analyse_records(AuditRun& run);

// Measures semantic agreement (--embeddings) after a whole run, marks the audit complete when
// every planned request is recorded (and an adaptive audit's decisions are finished) or partial,
// and saves that outcome in one write (store::AuditDatabase::store_outcome): status, finish
// time, this run's budget stop line, the last adaptive decisions, the semantic agreement. Then
// judges the audit, once, with what only the run knows: an interruption, an endpoint that
// refused every connection, the budget stop.
core::Result<void> judge_run(AuditRun& run);

} // namespace llmrepro::audit
