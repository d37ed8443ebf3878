#include "probes/restart_command.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

namespace llmrepro::probes {
namespace {

using Steady = std::chrono::steady_clock;

double since(Steady::time_point start) {
  return std::chrono::duration<double>(Steady::now() - start).count();
}

// Reads what the pipe holds now into `out`, up to `cap` bytes kept; false at end of file.
bool drain(int fd, std::string& out, std::size_t cap) {
  char buffer[4096];
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got == 0) return false;
    if (got < 0) return errno == EAGAIN || errno == EINTR;
    const auto size = static_cast<std::size_t>(got);
    if (out.size() < cap) out.append(buffer, std::min(size, cap - out.size()));
  }
}

std::string seconds_text(double s) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", s);
  return buffer;
}

} // namespace

CommandOutcome run_restart_command(const std::string& command, double timeout_s,
                                   std::size_t output_cap) {
  CommandOutcome outcome;
  int fds[2];
  if (::pipe(fds) != 0) {
    outcome.output = "cannot create a pipe";
    return outcome;
  }
  const Steady::time_point start = Steady::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    outcome.output = "cannot fork";
    return outcome;
  }
  if (pid == 0) {
    // The child: its own process group, so that a timeout kills everything it started.
    ::setpgid(0, 0);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::setpgid(pid, pid); // also here, so that the group exists before any kill below
  ::close(fds[1]);
  ::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  bool open = true;
  int status = 0;
  bool reaped = false;
  while (!reaped) {
    const double left = timeout_s - since(start);
    if (left <= 0) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      outcome.timed_out = true;
      break;
    }
    if (open) {
      pollfd watch{fds[0], POLLIN, 0};
      const int wait_ms = static_cast<int>(std::ceil(std::min(left, 0.05) * 1000));
      if (::poll(&watch, 1, wait_ms) > 0) open = drain(fds[0], outcome.output, output_cap);
    } else {
      ::usleep(10000);
    }
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) reaped = true;
  }
  // What the command wrote before it ended. A process it left running (the restarted server,
  // started in the background) may still hold the pipe: closing our end would kill it with
  // SIGPIPE at its next log line, and leaving the pipe unread would block it once the pipe is
  // full, so a detached thread reads and drops what it writes until it closes the pipe.
  if (open) open = drain(fds[0], outcome.output, output_cap);
  if (open) {
    const int fd = fds[0];
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    std::thread([fd] {
      char sink[4096];
      for (;;) {
        const ssize_t got = ::read(fd, sink, sizeof sink);
        if (got == 0 || (got < 0 && errno != EINTR)) break;
      }
      ::close(fd);
    }).detach();
  } else {
    ::close(fds[0]);
  }
  outcome.elapsed_s = since(start);
  if (!outcome.timed_out) {
    outcome.exited = true;
    outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  outcome.output = escape_output(outcome.output);
  return outcome;
}

std::string escape_output(const std::string& output) {
  std::string out;
  for (const char c : output) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += " | ";
    } else if (c == '\t' || (byte >= 0x20 && byte != 0x7f)) {
      out += c;
    } else {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\x%02X", byte);
      out += buffer;
    }
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '|' || out.back() == '\t'))
    out.pop_back();
  return out;
}

std::string describe_failure(const CommandOutcome& outcome, double timeout_s) {
  std::string text = outcome.timed_out
                         ? "restart command did not finish within " + seconds_text(timeout_s) +
                               " s (its process group was killed)"
                         : "restart command exited " + std::to_string(outcome.exit_code);
  if (!outcome.output.empty()) text += ": " + outcome.output;
  return text;
}

} // namespace llmrepro::probes
