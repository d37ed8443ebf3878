#include "store/output_file.hpp"

#include <fmt/core.h>

#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <random>
#include <streambuf>

#include "store/database_lock.hpp"

namespace llmrepro::store {

using core::ErrorCode;
using core::Result;

namespace {

// A stream buffer over a file descriptor, in large writes; it remembers the first failure.
class FdBuffer final : public std::streambuf {
public:
  explicit FdBuffer(int fd) : m_fd(fd), m_buffer(std::size_t{1} << 20) {
    setp(m_buffer.data(), m_buffer.data() + m_buffer.size());
  }
  // The errno of the first failed write, 0 when every write succeeded.
  int error() const { return m_error; }

protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }

private:
  bool drain() {
    const char* data = pbase();
    std::size_t left = static_cast<std::size_t>(pptr() - pbase());
    while (left > 0 && m_error == 0) {
      const ssize_t written = ::write(m_fd, data, left);
      if (written < 0) {
        if (errno != EINTR) m_error = errno;
        continue;
      }
      data += written;
      left -= static_cast<std::size_t>(written);
    }
    setp(m_buffer.data(), m_buffer.data() + m_buffer.size());
    return m_error == 0;
  }

  int m_fd;
  std::vector<char> m_buffer;
  int m_error = 0;
};

// Runs `write` into `fd`; the errno of a failed write, 0 on success.
int write_into(int fd, const std::function<void(std::ostream&)>& write) {
  FdBuffer buffer(fd);
  std::ostream out(&buffer);
  write(out);
  out.flush();
  if (buffer.error() != 0) return buffer.error();
  return out ? 0 : EIO;
}

std::string parent_of(const std::string& path) {
  const std::string parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? std::string(".") : parent;
}

std::optional<std::string> real_path(const std::string& path) {
  char buffer[PATH_MAX];
  if (::realpath(path.c_str(), buffer) == nullptr) return std::nullopt;
  return std::string(buffer);
}

// A path as the checks compare it: absolute with every symbolic link resolved (of the file where
// it exists, else of its directory), and the file's identity where it exists.
struct Resolved {
  std::string path;
  bool exists = false;
  struct stat status {};
};

Result<Resolved> resolve(const NamedPath& named, bool output) {
  const auto refuse = [&](const std::string& what) {
    return core::make_error(ErrorCode::usage,
                            fmt::format("{} '{}' {}", named.flag, named.path, what));
  };
  Resolved resolved;
  struct stat link {};
  const bool present = ::lstat(named.path.c_str(), &link) == 0;
  if (present && ::stat(named.path.c_str(), &resolved.status) != 0)
    return refuse("is a symbolic link to a missing file: name the file itself");
  if (present) {
    resolved.exists = true;
    auto real = real_path(named.path);
    if (!real) return refuse(std::string("cannot be resolved: ") + std::strerror(errno));
    resolved.path = *real;
    if (!output) return resolved;
    const mode_t mode = resolved.status.st_mode;
    if (S_ISDIR(mode)) return refuse("is a directory: name a file");
    if (S_ISSOCK(mode) || S_ISBLK(mode))
      return refuse(std::string("is a ") + (S_ISSOCK(mode) ? "socket" : "block device") +
                    ": name a regular file, a character device such as /dev/null, or - for "
                    "standard output");
    if (S_ISCHR(mode) || S_ISFIFO(mode)) {
      if (::access(resolved.path.c_str(), W_OK) != 0) return refuse("is not writable");
      return resolved;
    }
  } else {
    const std::filesystem::path given(named.path);
    if (!given.has_filename()) return refuse("names a directory: name a file");
    const std::string parent = parent_of(named.path);
    auto real = real_path(parent);
    if (!real) {
      if (!output)
        return Resolved{std::filesystem::absolute(given).lexically_normal().string(), false, {}};
      return refuse(fmt::format("is in a directory that does not exist ('{}')", parent));
    }
    resolved.path = (std::filesystem::path(*real) / given.filename()).string();
    if (!output) return resolved;
  }
  // A regular file is replaced through a temporary beside it: its directory must take one.
  const std::string directory = parent_of(resolved.path);
  struct stat directory_status {};
  if (::stat(directory.c_str(), &directory_status) != 0 || !S_ISDIR(directory_status.st_mode))
    return refuse(fmt::format("is in '{}', which is not a directory", directory));
  if (::access(directory.c_str(), W_OK | X_OK) != 0)
    return refuse(fmt::format("is in a directory that is not writable ('{}')", directory));
  return resolved;
}

bool same_file(const Resolved& a, const Resolved& b) {
  if (a.path == b.path) return true;
  return a.exists && b.exists && a.status.st_dev == b.status.st_dev &&
         a.status.st_ino == b.status.st_ino;
}

// An input as the messages name it: "--suite 's.jsonl'", "the -wal file of --db 'a.db'".
struct Input {
  std::string what;
  Resolved resolved;
};

} // namespace

std::vector<std::string> database_files(const std::string& path) {
  return {path, path + "-wal", path + "-shm", DatabaseLock::lock_path(path)};
}

Result<void> check_output_paths(const std::vector<NamedPath>& outputs,
                                const std::vector<NamedPath>& inputs,
                                const std::vector<NamedPath>& databases) {
  std::vector<Input> known;
  for (const NamedPath& input : inputs) {
    if (input.path.empty() || input.path == "-") continue;
    Input entry{fmt::format("the file named by {} '{}'", input.flag, input.path), {}};
    LLMREPRO_TRY_ASSIGN(entry.resolved, resolve(input, false));
    known.push_back(std::move(entry));
  }
  for (const NamedPath& database : databases) {
    if (database.path.empty()) continue;
    const auto files = database_files(database.path);
    static constexpr const char* k_kinds[] = {"", "the -wal file of ", "the -shm file of ",
                                              "the lock file of "};
    for (std::size_t i = 0; i < files.size(); ++i) {
      Input entry{
          fmt::format("{}the audit database {} '{}'", k_kinds[i], database.flag, database.path),
          {}};
      LLMREPRO_TRY_ASSIGN(entry.resolved, resolve({database.flag, files[i]}, false));
      known.push_back(std::move(entry));
    }
  }
  bool standard_output = false;
  std::string standard_output_flag;
  for (const NamedPath& output : outputs) {
    if (output.path.empty()) continue;
    if (output.path == "-") {
      if (standard_output)
        return core::make_error(ErrorCode::usage,
                                fmt::format("{} and {} both write to standard output (-): name a "
                                            "file for one of them",
                                            standard_output_flag, output.flag));
      standard_output = true;
      standard_output_flag = output.flag;
      continue;
    }
    Resolved resolved;
    LLMREPRO_TRY_ASSIGN(resolved, resolve(output, true));
    for (const Input& input : known)
      if (same_file(resolved, input.resolved))
        return core::make_error(
            ErrorCode::usage,
            fmt::format("{} '{}' is {}: writing it would replace it; choose another path",
                        output.flag, output.path, input.what));
    known.push_back(
        {fmt::format("also the output of {} '{}'", output.flag, output.path), std::move(resolved)});
  }
  return {};
}

Result<void> write_output_file(const std::string& path,
                               const std::function<void(std::ostream&)>& write) {
  const auto failed = [&](int error) {
    return core::make_error(ErrorCode::environment,
                            fmt::format("cannot write '{}': {}", path, std::strerror(error)));
  };
  if (path == "-") {
    std::cout.flush();
    const int error = write_into(STDOUT_FILENO, write);
    return error == 0 ? Result<void>{} : failed(error);
  }
  struct stat status {};
  const bool exists = ::stat(path.c_str(), &status) == 0;
  if (exists && (S_ISCHR(status.st_mode) || S_ISFIFO(status.st_mode))) {
    // A device or a pipe is written in place: renaming over it would replace the node.
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return failed(errno);
    const int error = write_into(fd, write);
    ::close(fd);
    return error == 0 ? Result<void>{} : failed(error);
  }
  if (exists && !S_ISREG(status.st_mode))
    return core::make_error(ErrorCode::environment,
                            fmt::format("cannot write '{}': not a regular file", path));
  // A symbolic link is followed: the file it names is replaced, in that file's directory.
  std::string target = path;
  if (exists) {
    auto real = real_path(path);
    if (!real) return failed(errno);
    target = *real;
  }
  const std::filesystem::path target_path(target);
  const std::string directory = parent_of(target);
  std::random_device random;
  std::string temporary;
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    const std::uint64_t tag = (std::uint64_t{random()} << 32) ^ random();
    temporary = (std::filesystem::path(directory) /
                 fmt::format(".{}.{:016x}.tmp", target_path.filename().string(), tag))
                    .string();
    fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) return failed(errno);
  }
  if (fd < 0) return failed(EEXIST);
  if (exists) (void)::fchmod(fd, status.st_mode & 07777);
  int error = write_into(fd, write);
  if (error == 0 && ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && ::rename(temporary.c_str(), target.c_str()) != 0) error = errno;
  if (error != 0) {
    ::unlink(temporary.c_str());
    return failed(error);
  }
  // The rename is durable once the directory is.
  if (const int directory_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      directory_fd >= 0) {
    (void)::fsync(directory_fd);
    ::close(directory_fd);
  }
  return {};
}

} // namespace llmrepro::store
