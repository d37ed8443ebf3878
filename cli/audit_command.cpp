// `llmrepro audit`: the flags (cli/audit_flags.cpp, a --config file's values applied to them by
// cli/config_file.hpp) made into the audit room's request, its passes run (audit/run.hpp), and
// what a run ends with printed: the reports, the summary, how to continue, the exit code.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <memory>
#include <string>
#include <vector>

#include "audit/request.hpp"
#include "audit/run.hpp"
#include "cli/audit_flags.hpp"
#include "cli/audit_options.hpp"
#include "cli/commands.hpp"
#include "cli/config_file.hpp"
#include "cli/dry_run.hpp"
#include "cli/judging_options.hpp"
#include "cli/report_outputs.hpp"
#include "core/clock.hpp"
#include "core/redaction.hpp"
#include "core/result.hpp"

namespace llmrepro::cli {

namespace {

// Reports the run's own error and how to continue an interrupted audit (stderr), and returns
// the exit code of the verdict.
int conclude(audit::AuditRun& run) {
  const std::string& db = run.request.db;
  if (!run.ran) report_error(run.ran.error());
  if (run.budget && run.budget->overrun())
    fmt::print(stderr, "llmrepro: warning: {}; no request was started after it\n",
               run.budget->overrun_message());
  if (run.budget && (run.budget->exhausted() || run.budget->overrun()))
    fmt::print(stderr,
               "llmrepro: the budget stopped the audit; '{}' holds a partial audit: continue it "
               "with --resume --db {} and a larger budget\n",
               db, db);
  if (run.interrupted)
    fmt::print(stderr,
               "llmrepro: interrupted; '{}' holds a partial audit: continue it with "
               "--resume --db {}\n",
               db, db);
  return exit_code_of(run.report().verdict, run.interrupted);
}

// --dry-run: the plan printed with its bounds, the URLs' credentials shown as [redacted]; exit 1
// when a budget is below the plan's own bound.
int print_plan(const audit::AuditRun& run) {
  std::vector<std::string> shown;
  for (const std::string& url : run.urls) shown.push_back(core::redact(url));
  return print_dry_run(run.config(), run.header.suite, shown, audit::dry_run_plan(run)) ? 0 : 1;
}

int run_audit(const AuditOptions& options) {
  const audit::AuditRequest request = request_of(options);
  const core::SystemClock clock;
  audit::AuditRun run{request, clock}; // the context every pass reads and fills
  // Every flag and the suite are checked, and a stored audit read, before anything is sent; an
  // error ends the audit with the exit code of its kind (commands.hpp).
  if (auto loaded = audit::load_or_resume(run); !loaded) return report_error(loaded.error());
  // --dry-run ends here: the plan and its bounds are printed, nothing is sent or written.
  if (request.dry_run) return print_plan(run);
  if (auto done = audit::execute(run); !done) return report_error(done.error());
  // The files, the terminal summary and the exit code all state the one verdict.
  if (auto emitted = emit_reports(run.report(), options.outputs, request.quiet); !emitted)
    return report_error(emitted.error());
  return conclude(run);
}

} // namespace

void register_audit_command(CLI::App& app, CommandResult& result) {
  auto options = std::make_shared<AuditOptions>();
  CLI::App* audit = app.add_subcommand(
      "audit",
      "Send each prompt of a suite N times at each concurrency level and analyse the drift");
  add_audit_flags(*audit, *options);
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
