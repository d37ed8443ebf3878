// The helpers every command prints through (cli/commands.hpp): errors with their exit codes,
// stderr with the run's secrets redacted, the audit database opened with its upgrade notice, and
// the tool's identity.
#include <cstdio>

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
