// `llmrepro report`: re-renders the reports of a stored audit, without touching the endpoint.
// Judging flags given here re-judge the audit for this report only; the database keeps its own.
// So does --price, which re-prices the stored usage.
#include <CLI/CLI.hpp>

#include <memory>
#include <optional>

#include "audit/judging.hpp"
#include "audit/session.hpp"
#include "cli/commands.hpp"
#include "cli/config_file.hpp"
#include "cli/judging_options.hpp"
#include "cli/report_outputs.hpp"
#include "core/audit_report.hpp"
#include "core/cost.hpp"
#include "core/result.hpp"
#include "store/output_file.hpp"

namespace llmrepro::cli {

namespace {

struct ReportOptions {
  std::string config; // --config FILE
  std::string db;
  ReportOutputs outputs;
  JudgingOptions judging;
  // --price as given, and what it parses to.
  std::optional<std::string> price_text;
  std::optional<core::Price> price;
  bool quiet = false;
};

// The stored configuration with the judging flags given on the command line in place of the
// stored ones, checked against the audit it judges.
core::Result<void> rejudge_config(const ReportOptions& options, core::AuditData& header) {
  LLMREPRO_TRY(audit::apply_judging(judging_of(options.judging), header.config, true));
  if (options.price) header.config.analysis.price = options.price;
  return audit::check_gates_fit(header.config, header.endpoints.size(),
                                "audit again with --compare URL to compare endpoints");
}

int run_report(ReportOptions options) {
  // The flags' values are checked before the database is read.
  core::AuditConfig scratch;
  if (auto valid = audit::apply_judging(judging_of(options.judging), scratch, true); !valid)
    return report_error(valid.error());
  if (options.price_text) {
    auto price = core::parse_price(*options.price_text);
    if (!price) return report_error(price.error());
    options.price = *price;
  }
  // No report may replace the database it is rendered from, nor another report.
  if (auto checked =
          store::check_output_paths(named_outputs(options.outputs), {}, {{"--db", options.db}});
      !checked)
    return report_error(checked.error());
  // The judging flags and --price given change the stored header before the analysis is built:
  // --fragile-gap, --fragile-window and --price the analysis, the gates the verdict.
  audit::SessionOptions session_options;
  session_options.tool = tool_info();
  session_options.lean = true; // memory flat in the prompts and runs
  if (judging_of(options.judging).given.any() || options.price)
    session_options.adjust = [&options](core::AuditData& header) {
      return rejudge_config(options, header);
    };
  auto loaded = audit::load_session(options.db, session_options, print_stderr);
  if (!loaded) return report_error(loaded.error());
  const core::AuditReport& audit_report = loaded->report;
  if (auto emitted = emit_reports(audit_report, options.outputs, options.quiet); !emitted)
    return report_error(emitted.error());
  return exit_code_of(audit_report.verdict);
}

} // namespace

void register_report_command(CLI::App& app, CommandResult& result) {
  auto options = std::make_shared<ReportOptions>();
  CLI::App* command = app.add_subcommand(
      "report", "Re-render JSON, HTML, JUnit and Markdown from an audit database, and re-judge "
                "it with any judging flag given (the database keeps its own)");
  add_config_option(*command, options->config);
  // Required, but checked after --config, which may give it.
  command->add_option("--db", options->db, "Audit database written by `llmrepro audit` (required)");
  add_judging_options(*command, options->judging);
  command->add_option("--price", options->price_text,
                      "Price the stored usage at input=X,output=Y per million tokens, in place "
                      "of the audit's own --price");
  add_report_output_options(*command, options->outputs);
  command->add_flag("--quiet", options->quiet,
                    "Print nothing but errors and, unless the verdict is pass, its headline");
  command->callback([command, options, &result] {
    if (auto applied = apply_config_file(*command, options->config); !applied) {
      result.exit_code = report_error(applied.error());
      return;
    }
    if (options->db.empty()) {
      result.exit_code = report_error(core::make_error(
          core::ErrorCode::usage, "--db is required (on the command line or in --config)"));
      return;
    }
    result.exit_code = run_report(*options);
  });
}

} // namespace llmrepro::cli
