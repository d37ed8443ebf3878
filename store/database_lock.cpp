#include "store/database_lock.hpp"

#include <fmt/core.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

namespace llmrepro::store {

using core::ErrorCode;
using core::Result;

namespace {

// Where the charge line starts: after the holder's line, which is shorter (a pid and a command).
constexpr off_t k_charge_offset = 256;
constexpr std::size_t k_charge_size = 192;

} // namespace

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
    holder = holder.substr(0, holder.find('\n'));
    while (!holder.empty() && (holder.back() == ' ' || holder.back() == '\0')) holder.pop_back();
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
  // The holder's line, padded over the previous one; the charge line after it is kept, since a
  // --resume reads what the killed run charged.
  std::string holder = fmt::format("{} {}", ::getpid(), command);
  holder.resize(static_cast<std::size_t>(k_charge_offset) - 1, ' ');
  holder.push_back('\n');
  if (::pwrite(fd, holder.data(), holder.size(), 0) != static_cast<ssize_t>(holder.size())) {
    const int error = errno;
    ::close(fd);
    return core::make_error(
        ErrorCode::environment,
        fmt::format("cannot write the lock file '{}': {}", path, std::strerror(error)));
  }
  return DatabaseLock(fd);
}

Result<void> DatabaseLock::write_charge(const std::string& audit_id,
                                        const core::BudgetCharge& charge) {
  std::string line = fmt::format("charge {} {} {} {}", audit_id, charge.requests,
                                 charge.prompt_tokens, charge.completion_tokens);
  if (line.size() >= k_charge_size)
    return core::make_error(ErrorCode::internal, "audit id too long for the lock file's charge");
  line.resize(k_charge_size - 1, ' ');
  line.push_back('\n');
  if (::pwrite(m_fd, line.data(), line.size(), k_charge_offset) !=
      static_cast<ssize_t>(line.size()))
    return core::make_error(ErrorCode::environment,
                            fmt::format("cannot write the budget's charge into the lock file: {}",
                                        std::strerror(errno)));
  return {};
}

std::optional<core::BudgetCharge> DatabaseLock::read_charge(const std::string& audit_id) const {
  char buffer[k_charge_size + 1] = {};
  const ssize_t got = ::pread(m_fd, buffer, k_charge_size, k_charge_offset);
  if (got <= 0) return std::nullopt;
  char id[k_charge_size] = {};
  core::BudgetCharge charge;
  if (std::sscanf(buffer, "charge %191s %ld %ld %ld", id, &charge.requests, &charge.prompt_tokens,
                  &charge.completion_tokens) != 4 ||
      audit_id != id)
    return std::nullopt;
  return charge;
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
