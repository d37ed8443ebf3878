#include "cli/report_outputs.hpp"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <cstdio>
#include <vector>
#include <unistd.h>

#include "cli/judging_options.hpp"
#include "cli/option_groups.hpp"

#include "core/result.hpp"
#include "report/html_report.hpp"
#include "report/json_report.hpp"
#include "report/junit_report.hpp"
#include "report/markdown_report.hpp"
#include "store/output_file.hpp"
#include "report/terminal_summary.hpp"

namespace llmrepro::cli {

void add_report_output_options(CLI::App& command, ReportOutputs& outputs) {
  const OptionGroupScope group{command, k_group_outputs};
  command.add_option("--json", outputs.json,
                     "Write the JSON report (llmrepro.audit.v1) here (-: standard output)");
  command.add_option("--html", outputs.html,
                     "Write the self-contained HTML report here (-: standard output)");
  command.add_option("--junit", outputs.junit,
                     "Write JUnit XML (one test case per prompt) here (-: standard output)");
  command.add_option("--markdown", outputs.markdown,
                     "Write a Markdown summary (for a PR comment) here (-: standard output)");
}

core::Result<void> write_file_atomically(const std::string& path,
                                         const std::function<void(std::ostream&)>& write) {
  return store::write_output_file(path, write);
}

core::Result<void> write_file_atomically(const std::string& path, const std::string& content) {
  return write_file_atomically(path, [&content](std::ostream& out) {
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
  });
}

std::vector<store::NamedPath> named_outputs(const ReportOutputs& outputs) {
  return {{"--json", outputs.json},
          {"--html", outputs.html},
          {"--junit", outputs.junit},
          {"--markdown", outputs.markdown}};
}

bool writes_standard_output(const ReportOutputs& outputs) {
  for (const auto& output : named_outputs(outputs))
    if (output.path == "-") return true;
  return false;
}

namespace {

// A renderer that returns its document whole, as a writer into a stream.
template <std::string (*Render)(const core::AuditReport&)>
void write_rendered(const core::AuditReport& report, std::ostream& out) {
  const std::string text = Render(report);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
}

} // namespace

core::Result<void> write_report_outputs(const core::AuditReport& report,
                                        const ReportOutputs& outputs) {
  // The JSON, HTML and JUnit reports grow with the prompts: they are streamed into their files a
  // prompt at a time, each prompt's detail read back from a lean report's file as it is written.
  const struct {
    const std::string& path;
    void (*write)(const core::AuditReport&, std::ostream&);
  } files[] = {{outputs.json, report::write_json},
               {outputs.html, report::write_html},
               {outputs.junit, report::write_junit},
               {outputs.markdown, write_rendered<report::render_markdown>}};
  for (const auto& file : files) {
    if (file.path.empty()) continue;
    auto written = write_file_atomically(file.path, [&](std::ostream& out) {
      file.write(report, out);
      // A detail that could not be read back leaves the file unwritten.
      if (report.details && !report.details->error()) out.setstate(std::ios::badbit);
    });
    if (report.details) LLMREPRO_TRY(report.details->error());
    if (!written) return written;
  }
  return {};
}

core::Result<void> emit_reports(const core::AuditReport& report, const ReportOutputs& outputs,
                                bool quiet, const std::string& note) {
  LLMREPRO_TRY(write_report_outputs(report, outputs));
  if (quiet) {
    print_quiet_verdict(report.verdict);
    return {};
  }
  if (!note.empty()) fmt::print(stderr, "{}", note);
  // A report on standard output (-) keeps it to itself: the summary goes to stderr.
  const bool to_stderr = writes_standard_output(outputs);
  std::FILE* stream = to_stderr ? stderr : stdout;
  fmt::print(stream, "{}", report::render_terminal_summary(report, isatty(fileno(stream)) != 0));
  return {};
}

} // namespace llmrepro::cli
