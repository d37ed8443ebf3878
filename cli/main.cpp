// llmrepro: audits how reproducible an LLM inference endpoint is at temperature 0.
// Thin main: the subcommands live in their own files (the llmrepro_cli library, unit-tested in
// tests/unit/cli); this registers them and is the one last-resort catch.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <cstdio>
#include <exception>

#include "cli/commands.hpp"

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
