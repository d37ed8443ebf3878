// The audit's claim_files pass: its outputs checked and its database locked before anything is
// sent (cli/audit_passes.hpp).
#include "cli/audit_passes.hpp"
#include "cli/report_outputs.hpp"
#include "store/database_lock.hpp"
#include "store/output_file.hpp"

namespace llmrepro::cli {

core::Result<void> claim_files(AuditRun& run) {
  const AuditOptions& options = run.options;
  // The database is written too: its directory must exist and take files.
  LLMREPRO_TRY(store::check_output_paths({{"--db", options.db}}, {}));
  LLMREPRO_TRY(store::check_output_paths(named_outputs(options.outputs),
                                         {{"--suite", options.suite}}, {{"--db", options.db}}));
  auto lock = store::DatabaseLock::acquire(options.db, "llmrepro audit");
  if (!lock) return lock.error();
  run.lock.emplace(std::move(*lock));
  return {};
}

} // namespace llmrepro::cli
