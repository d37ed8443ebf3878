// The report files an audit, `report` or `diff` can write, the flags that name them, and the one
// way audit, report and merge emit a judged audit: its files, then its summary.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "core/audit_report.hpp"
#include "core/result.hpp"
#include "store/output_file.hpp"

namespace CLI {
class App;
}

namespace llmrepro::cli {

struct ReportOutputs {
  std::string json;
  std::string html;
  std::string junit;
  std::string markdown;
};

// Adds --json, --html, --junit and --markdown to a subcommand.
void add_report_output_options(CLI::App& command, ReportOutputs& outputs);

// Renders and writes each report that has a path; each file is written whole or not at all.
core::Result<void> write_report_outputs(const core::AuditReport& report,
                                        const ReportOutputs& outputs);

// Writes each report file, then prints the terminal summary on stdout, or under `quiet` only
// the verdict's headline (print_quiet_verdict). `note`, when not empty, is printed on stderr
// just before the summary (never under `quiet`).
core::Result<void> emit_reports(const core::AuditReport& report, const ReportOutputs& outputs,
                                bool quiet, const std::string& note = {});

// The report outputs as store::check_output_paths takes them, flag by flag.
std::vector<store::NamedPath> named_outputs(const ReportOutputs& outputs);

// Whether one of the reports goes to standard output ("-"); the terminal summary then goes to
// stderr, so that the report on stdout stays whole.
bool writes_standard_output(const ReportOutputs& outputs);

// Writes `content` to `path` as store::write_output_file does: "-" is standard output, a device
// or FIFO is written in place, a regular file is replaced through an exclusive temporary.
core::Result<void> write_file_atomically(const std::string& path, const std::string& content);

// As above, with the content written by `write` into the temporary file as it is produced.
core::Result<void> write_file_atomically(const std::string& path,
                                         const std::function<void(std::ostream&)>& write);

} // namespace llmrepro::cli
