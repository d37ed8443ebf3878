// The subcommands of `llmrepro`. Each registers itself on the CLI11 app; its callback runs the
// command and stores the exit code. The commands wire modules together and hold no domain logic.
#pragma once

#include <string>
#include <string_view>

#include "core/audit.hpp"
#include "core/result.hpp"
#include "store/audit_database.hpp"

namespace CLI {
class App;
}

namespace llmrepro::cli {

// The documented exit codes (docs/design.md "Verdict and gates"); a judged audit's exit code
// comes from its verdict (exit_code_of in cli/judging_options.hpp).
inline constexpr int k_exit_pass = 0;
inline constexpr int k_exit_gate_failed = 1;
inline constexpr int k_exit_usage = 2;
inline constexpr int k_exit_endpoint = 3;
inline constexpr int k_exit_internal = 70;
inline constexpr int k_exit_interrupted = 130; // Ctrl-C: the audit is partial

// Set by whichever subcommand ran.
struct CommandResult {
  int exit_code = k_exit_pass;
};

// Prints "llmrepro: error: <message>" to stderr, the run's secrets redacted, and returns the exit
// code for the error's kind.
int report_error(const core::Error& error);

// Writes `text` to stderr with the run's secrets redacted (core/redaction.hpp): every line that
// can quote a server, a URL or an error goes through it.
void print_stderr(std::string_view text);

// store::AuditDatabase::open, saying on stderr (one line) when the file was of an older schema
// version: upgraded in place, or read as it is because it is read-only. Every command that opens
// an existing audit database opens it through this.
core::Result<store::AuditDatabase> open_audit_database(const std::string& path);

// The tool's identity, for --version and every report.
core::ToolInfo tool_info();

void register_audit_command(CLI::App& app, CommandResult& result);
void register_report_command(CLI::App& app, CommandResult& result);
void register_diff_command(CLI::App& app, CommandResult& result);
void register_merge_command(CLI::App& app, CommandResult& result);
void register_import_command(CLI::App& app, CommandResult& result);
void register_serve_command(CLI::App& app, CommandResult& result);
void register_gpu_probe_command(CLI::App& app, CommandResult& result);
// The hidden `help-export`: prints the man page or a completion script rendered from `app`'s
// definitions (cli/help_export.hpp). Registered last, so that it sees every other command.
void register_help_export_command(CLI::App& app, CommandResult& result);

} // namespace llmrepro::cli
