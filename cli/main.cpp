// llmrepro: audits how reproducible an LLM inference endpoint is at temperature 0.
// Thin main: the subcommands live in their own files; this is the one last-resort catch.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <cstdio>
#include <exception>

#include "audit/session.hpp"
#include "cli/build_info.hpp"
#include "cli/commands.hpp"
#include "cli/config_file.hpp"
#include "core/redaction.hpp"

namespace llmrepro::cli {

core::Result<store::AuditDatabase> open_audit_database(const std::string& path) {
  return audit::open_audit_database(path, print_stderr);
}

int report_error(const core::Error& error) {
  // A usage error about a value from --config names the line that set it.
  const bool about_flags =
      error.code == core::ErrorCode::usage || error.code == core::ErrorCode::input;
  const std::string message =
      core::redact(error.message + (about_flags ? config_origins_in(error.message) : ""));
  std::fprintf(stderr, "llmrepro: error: %s\n", message.c_str());
  switch (error.code) {
  case core::ErrorCode::usage:
  case core::ErrorCode::input: return k_exit_usage;
  case core::ErrorCode::endpoint:
  case core::ErrorCode::environment: return k_exit_endpoint;
  case core::ErrorCode::internal: return k_exit_internal;
  }
  return k_exit_internal;
}

void print_stderr(std::string_view text) {
  const std::string redacted = core::redact(text);
  std::fwrite(redacted.data(), 1, redacted.size(), stderr);
}

core::ToolInfo tool_info() { return {LLMREPRO_VERSION, LLMREPRO_BUILD_INFO, LLMREPRO_CUDA_STATE}; }

} // namespace llmrepro::cli

int main(int argc, char** argv) {
  using namespace llmrepro::cli;
  CLI::App app{"llmrepro: audit how reproducible an LLM inference endpoint is at temperature 0"};
  app.require_subcommand(1);
  const auto info = tool_info();
  app.set_version_flag("--version", fmt::format("llmrepro {}\nbuilt with {}\nCUDA backend: {}",
                                                info.version, info.build, info.cuda));
  CommandResult result;
  register_audit_command(app, result);
  register_report_command(app, result);
  register_diff_command(app, result);
  register_merge_command(app, result);
  register_import_command(app, result);
  register_serve_command(app, result);
  register_gpu_probe_command(app, result);
  register_help_export_command(app, result);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error);
    return code == 0 ? 0 : k_exit_usage;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "llmrepro: internal error: %s\n", error.what());
    return k_exit_internal;
  }
  return result.exit_code;
}
