// The restart probe's command (--restart-cmd): a shell command line run with `sh -c` in a process
// group of its own, waited for within a timeout, its output kept (capped) for an error message.
// The command's text may hold secrets: nothing here ever puts it into a description.
#pragma once

#include <cstddef>
#include <string>

namespace llmrepro::probes {

// What running the restart command once gave.
struct CommandOutcome {
  bool exited = false;    // it exited by itself within the timeout
  int exit_code = -1;     // its exit status where it exited; 128 + signal where a signal ended it
  bool timed_out = false; // the timeout passed: its whole process group was killed
  std::string output;     // stdout and stderr together, at most the cap, escaped (escape_output)
  double elapsed_s = 0;   // from its start until it ended or was killed
  bool ok() const { return exited && exit_code == 0; }
};

// The most bytes of the command's output kept.
inline constexpr std::size_t k_restart_output_cap = 4096;

// Runs `command` with `sh -c` in a new process group, stdin from /dev/null, stdout and stderr
// captured together, and waits at most `timeout_s` seconds for it to exit; past that the group is
// sent SIGKILL (the command and everything it started that kept the group) and reaped. Output past
// `output_cap` bytes is read and dropped, so a chatty command never blocks on a full pipe.
CommandOutcome run_restart_command(const std::string& command, double timeout_s,
                                   std::size_t output_cap = k_restart_output_cap);

// `output` printable: control bytes other than newline and tab as \xNN, trailing whitespace
// dropped, newlines as " | " so that the message stays one line.
std::string escape_output(const std::string& output);

// A failed outcome in words, never naming the command itself: "restart command exited 3: <output>",
// "restart command did not finish within 2 s (its process group was killed): <output>".
std::string describe_failure(const CommandOutcome& outcome, double timeout_s);

} // namespace llmrepro::probes
