#include "cli/report_outputs.hpp"

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "report/json_report.hpp"

namespace llmrepro::cli {

void add_report_output_options(CLI::App& command, ReportOutputs& outputs) {
  command.add_option("--json", outputs.json, "Write the JSON report (llmrepro.audit.v1) here");
}

core::Result<void> write_file_atomically(const std::string& path, const std::string& content) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out)
      return core::make_error(core::ErrorCode::environment,
                              "cannot write '" + path + "': " + std::strerror(errno));
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    if (!out)
      return core::make_error(core::ErrorCode::environment, "cannot write '" + path + "'");
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error)
    return core::make_error(core::ErrorCode::environment,
                            "cannot write '" + path + "': " + error.message());
  return {};
}

core::Result<void> write_report_outputs(const core::AuditReport& report, const ReportOutputs& outputs) {
  if (!outputs.json.empty())
    if (auto written = write_file_atomically(outputs.json, report::render_json(report)); !written)
      return written;
  return {};
}

} // namespace llmrepro::cli
