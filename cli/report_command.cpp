// `llmrepro report`: re-renders the reports of a stored audit, without touching the endpoint.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <memory>
#include <unistd.h>

#include "cli/commands.hpp"
#include "cli/report_outputs.hpp"
#include "report/audit_database.hpp"
#include "report/report_loader.hpp"
#include "report/terminal_summary.hpp"

namespace llmrepro::cli {

namespace {

struct ReportOptions {
  std::string db;
  ReportOutputs outputs;
  bool quiet = false;
};

int run_report(const ReportOptions& options) {
  auto database = report::AuditDatabase::open(options.db);
  if (!database) return report_error(database.error());
  auto loaded = report::load_report(*database, tool_info());
  if (!loaded) return report_error(loaded.error());
  const core::AuditReport& audit_report = loaded->report;
  if (auto written = write_report_outputs(audit_report, options.outputs); !written)
    return report_error(written.error());
  if (!options.quiet)
    fmt::print("{}", report::render_terminal_summary(audit_report, isatty(STDOUT_FILENO) != 0));
  return audit_report.verdict.passed ? k_exit_pass : k_exit_gate_failed;
}

} // namespace

void register_report_command(CLI::App& app, CommandResult& result) {
  auto options = std::make_shared<ReportOptions>();
  CLI::App* command = app.add_subcommand(
      "report", "Re-render JSON, HTML, JUnit and Markdown from an audit database");
  command->add_option("--db", options->db, "Audit database written by `llmrepro audit`")->required();
  add_report_output_options(*command, options->outputs);
  command->add_flag("--quiet", options->quiet, "Print nothing but errors");
  command->callback([options, &result] { result.exit_code = run_report(*options); });
}

} // namespace llmrepro::cli
