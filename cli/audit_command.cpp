// `llmrepro audit`: the driver. It reads as a list of named passes over one
// context (cli/audit_passes.hpp), each a wiring of rules that live in core and probes. This file
// holds the pass list; the flags are in cli/audit_flags.cpp, a --config file's values are
// applied to them (cli/config_file.hpp) before the first pass.
#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "cli/audit_options.hpp"
#include "cli/audit_passes.hpp"
#include "cli/audit_flags.hpp"
#include "cli/commands.hpp"
#include "cli/config_file.hpp"
#include "cli/help_export.hpp"
#include "cli/judging_options.hpp"
#include "cli/open_file_limit.hpp"
#include "cli/report_outputs.hpp"
#include "core/clock.hpp"
#include "core/result.hpp"

namespace llmrepro::cli {

namespace {

// The passes of an audit, in order; the first error ends it.
core::Result<void> run_passes(AuditRun& run) {
  const AuditOptions& options = run.options;
  // Every flag and the suite are checked, and a stored audit read, before anything is sent.
  LLMREPRO_TRY(load_or_resume(run));
  // --dry-run ends here: the plan and its bounds are printed, nothing is sent or written.
  if (options.dry_run) return print_plan(run);
  // No report may replace an input, and one process at a time writes the database.
  LLMREPRO_TRY(claim_files(run));
  // Running out of descriptors mid-run would look like an endpoint that cannot be reached.
  LLMREPRO_TRY(check_open_file_limit(run));
  // Each endpoint is reached (or the embedded engine started) and its dialect and model known.
  LLMREPRO_TRY(connect_endpoints(run));
  // The header is stored before the first request, so that a crash leaves a resumable audit.
  LLMREPRO_TRY(open_database(run));
  // The plan fixes every request up front; --resume skips what is already recorded.
  LLMREPRO_TRY(plan_requests(run));
  // Each level's concurrency is held exactly; its own error is reported after the reports.
  LLMREPRO_TRY(run_requests(run));
  // The analysis reads the records back as stored, a prompt at a time, in bounded memory.
  LLMREPRO_TRY(analyse_records(run));
  // Complete only when every planned request is recorded, so --resume knows what is left.
  LLMREPRO_TRY(finish_status(run));
  // What only the run knows (an interruption, an unreachable endpoint) enters the verdict.
  LLMREPRO_TRY(judge_run(run));
  // The files, the terminal summary and the exit code all state the one verdict.
  LLMREPRO_TRY(emit_reports(run.report(), options.outputs, options.quiet));
  return {};
}

int run_audit(const AuditOptions& options) {
  const core::SystemClock clock;
  AuditRun run{options, clock}; // the context every pass reads and fills
  // An error ends the audit with the exit code of its kind (commands.hpp).
  if (auto done = run_passes(run); !done) return report_error(done.error());
  if (options.dry_run) return run.dry_run_within_budget ? 0 : 1;
  return conclude(run);
}

} // namespace

void register_audit_command(CLI::App& app, CommandResult& result) {
  auto options = std::make_shared<AuditOptions>();
  CLI::App* audit = app.add_subcommand(
      "audit",
      "Send each prompt of a suite N times at each concurrency level and analyse the drift");
  add_config_option(*audit, options->config);
  add_endpoint_flags(*audit, *options);
  add_plan_flags(*audit, *options);
  add_probe_flags(*audit, *options);
  add_judging_options(*audit, options->judging);
  add_budget_flags(*audit, *options);
  add_output_flags(*audit, *options);
  add_engine_flags(*audit, *options);
  audit->callback([audit, options, &result] {
    // The file's values are in place, or its error reported, before any pass runs.
    if (auto applied = apply_config_file(*audit, options->config); !applied) {
      result.exit_code = report_error(applied.error());
      return;
    }
    result.exit_code = run_audit(*options);
  });
}

} // namespace llmrepro::cli
