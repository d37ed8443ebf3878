// One writer per audit database: the advisory lock every command that writes a database (audit,
// --resume, --overwrite, merge) holds for its whole run. docs/design.md "The writer lock".
#pragma once

#include <optional>
#include <string>

#include "core/budget.hpp"
#include "core/result.hpp"

namespace llmrepro::store {

class DatabaseLock {
public:
  // The lock file of the database at `database`: "<database>.lock" beside it. It is created on
  // first use and never removed (removing it would let two writers lock two different files).
  static std::string lock_path(const std::string& database);

  // Takes the lock of the database at `database` without waiting, and writes into the lock file
  // who holds it (this process's id and `command`, e.g. "llmrepro audit"). ErrorCode::usage when
  // another process holds it: "'a.db' is being written by pid 1234 (llmrepro audit); wait for it
  // or choose another --db" (`flag` names the option, "--db" or "the merge output").
  // ErrorCode::environment when the lock file cannot be created. The lock is an flock(2) on the
  // lock file: the kernel drops it when the process ends, kill -9 included.
  static core::Result<DatabaseLock> acquire(const std::string& database, const std::string& command,
                                            const std::string& flag = "--db");

  // Writes the budgets' live charge of audit `audit_id` into the lock file (one pwrite of a
  // fixed-size line after the holder's, "charge ID REQUESTS PROMPT COMPLETION"): what a budgeted
  // run journals before each send. A write that returns has reached the kernel, so it survives
  // the process's crash, as a commit in the database's WAL mode does, at the cost of a system call
  // instead of a transaction. ErrorCode::environment when the write fails.
  core::Result<void> write_charge(const std::string& audit_id, const core::BudgetCharge& charge);

  // The charge the last holder wrote for `audit_id`; empty when it wrote none, or one for another
  // audit (the file outlives an --overwrite).
  std::optional<core::BudgetCharge> read_charge(const std::string& audit_id) const;

  DatabaseLock(DatabaseLock&& other) noexcept;
  DatabaseLock& operator=(DatabaseLock&& other) noexcept;
  DatabaseLock(const DatabaseLock&) = delete;
  DatabaseLock& operator=(const DatabaseLock&) = delete;
  // Releases the lock.
  ~DatabaseLock();

private:
  explicit DatabaseLock(int fd) : m_fd(fd) {}
  int m_fd = -1;
};

} // namespace llmrepro::store
