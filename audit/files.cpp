// The audit's claim_files pass: its outputs checked and its database locked before anything is
// sent (audit/run.hpp).
#include "audit/run.hpp"
#include "store/database_lock.hpp"
#include "store/output_file.hpp"

namespace llmrepro::audit {

core::Result<void> claim_files(AuditRun& run) {
  const AuditRequest& options = run.request;
  // The database is written too: its directory must exist and take files.
  LLMREPRO_TRY(store::check_output_paths({{"--db", options.db}}, {}));
  LLMREPRO_TRY(store::check_output_paths(options.report_paths, {{"--suite", options.suite}},
                                         {{"--db", options.db}}));
  auto lock = store::DatabaseLock::acquire(options.db, "llmrepro audit");
  if (!lock) return lock.error();
  run.lock.emplace(std::move(*lock));
  return {};
}

} // namespace llmrepro::audit
