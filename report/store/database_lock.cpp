#include "report/store/database_lock.hpp"

#include <fmt/core.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

namespace llmrepro::store {

using core::ErrorCode;
using core::Result;

std::string DatabaseLock::lock_path(const std::string& database) {
  // Resolved where the database exists, so that a link to it and the file itself share a lock.
  char buffer[PATH_MAX];
  if (::realpath(database.c_str(), buffer) != nullptr) return std::string(buffer) + ".lock";
  return database + ".lock";
}

Result<DatabaseLock> DatabaseLock::acquire(const std::string& database, const std::string& command,
                                           const std::string& flag) {
  const std::string path = lock_path(database);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0)
    return core::make_error(ErrorCode::environment,
                            fmt::format("cannot create the lock file '{}' of '{}': {}", path,
                                        database, std::strerror(errno)));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    // The holder wrote who it is just after it took the lock.
    char buffer[256] = {};
    const ssize_t got = ::pread(fd, buffer, sizeof buffer - 1, 0);
    ::close(fd);
    if (error != EWOULDBLOCK)
      return core::make_error(
          ErrorCode::environment,
          fmt::format("cannot lock '{}' ('{}'): {}", database, path, std::strerror(error)));
    std::string holder = got > 0 ? std::string(buffer, static_cast<std::size_t>(got)) : "";
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\0')) holder.pop_back();
    const auto space = holder.find(' ');
    const std::string who =
        space == std::string::npos
            ? std::string("another process")
            : fmt::format("pid {} ({})", holder.substr(0, space), holder.substr(space + 1));
    return core::make_error(ErrorCode::usage,
                            fmt::format("'{}' is being written by {}; wait for it or choose "
                                        "another {}",
                                        database, who, flag));
  }
  const std::string holder = fmt::format("{} {}\n", ::getpid(), command);
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, holder.data(), holder.size(), 0) != static_cast<ssize_t>(holder.size())) {
    const int error = errno;
    ::close(fd);
    return core::make_error(
        ErrorCode::environment,
        fmt::format("cannot write the lock file '{}': {}", path, std::strerror(error)));
  }
  return DatabaseLock(fd);
}

DatabaseLock::DatabaseLock(DatabaseLock&& other) noexcept : m_fd(std::exchange(other.m_fd, -1)) {}

DatabaseLock& DatabaseLock::operator=(DatabaseLock&& other) noexcept {
  if (this != &other) {
    if (m_fd >= 0) ::close(m_fd);
    m_fd = std::exchange(other.m_fd, -1);
  }
  return *this;
}

DatabaseLock::~DatabaseLock() {
  if (m_fd >= 0) ::close(m_fd);
}

} // namespace llmrepro::store
