// The files a command writes (reports, the merged database) checked before anything is sent or
// read, and written so that no input is ever replaced: docs/design.md "Output files".
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace llmrepro::store {

// A path a command names, with the flag (or argument) that named it, for messages.
struct NamedPath {
  std::string flag; // "--json", "--db", "output"
  std::string path;
};

// The audit database at `path` and the files SQLite and the writer lock keep beside it: the
// database, its -wal and -shm, and the lock file (DatabaseLock).
std::vector<std::string> database_files(const std::string& path);

// Checks, before any request, every output a command will write. ErrorCode::usage naming the
// path and what is wrong when: two outputs name one file; an output names one of `inputs` (for
// an audit database: its -wal, -shm and lock file too); its directory is missing or not
// writable; it is a directory, a socket or a block device; or it is a symbolic link that names
// nothing. Paths are compared resolved (symbolic links followed, "./a.db" and "a.db" alike) and,
// where both exist, by device and inode (hard links). "-" (standard output) names no file; two
// outputs on "-" are refused. `databases` are the inputs that are audit databases.
core::Result<void> check_output_paths(const std::vector<NamedPath>& outputs,
                                      const std::vector<NamedPath>& inputs,
                                      const std::vector<NamedPath>& databases = {});

// Writes the file at `path` whole or not at all. "-": standard output. A character device or a
// FIFO (/dev/null, a pipe): written in place, never replaced. A regular file, or a missing one:
// written into a temporary created exclusively (O_CREAT|O_EXCL|O_NOFOLLOW, a random name) beside
// it, synced, renamed over it, and the directory synced; an existing file keeps its permissions.
// A symbolic link is followed: the file it names is replaced and the link stays.
// ErrorCode::environment when it cannot be written.
core::Result<void> write_output_file(const std::string& path,
                                     const std::function<void(std::ostream&)>& write);

} // namespace llmrepro::store
