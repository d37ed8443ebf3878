#include <doctest/doctest.h>

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "probes/restart_command.hpp"

using llmrepro::probes::CommandOutcome;
using llmrepro::probes::describe_failure;
using llmrepro::probes::escape_output;
using llmrepro::probes::run_restart_command;

TEST_CASE("run_restart_command") {
  SUBCASE("exit 0: ok, its output kept") {
    const CommandOutcome outcome = run_restart_command("echo restarted", 10);
    CHECK(outcome.ok());
    CHECK(outcome.exit_code == 0);
    CHECK(outcome.output == "restarted");
  }
  SUBCASE("a non-zero exit: its code and its output, stdout and stderr together") {
    const CommandOutcome outcome = run_restart_command("echo one; echo two >&2; exit 3", 10);
    CHECK_FALSE(outcome.ok());
    CHECK(outcome.exited);
    CHECK(outcome.exit_code == 3);
    CHECK(outcome.output == "one | two");
    CHECK(describe_failure(outcome, 10) == "restart command exited 3: one | two");
  }
  SUBCASE("past the timeout the whole process group is killed") {
    char dir_template[] = "/tmp/llmrepro-restart-XXXXXX";
    REQUIRE(::mkdtemp(dir_template) != nullptr);
    const std::string pidfile = std::string(dir_template) + "/child.pid";
    // A child of the command's shell that would outlive it if only the shell were killed.
    const CommandOutcome outcome =
        run_restart_command("sleep 30 & echo $! > " + pidfile + "; wait", 0.5);
    CHECK(outcome.timed_out);
    CHECK_FALSE(outcome.ok());
    CHECK(outcome.elapsed_s < 5);
    CHECK(describe_failure(outcome, 0.5) ==
          "restart command did not finish within 0.5 s (its process group was killed)");
    std::ifstream in(pidfile);
    int child = 0;
    in >> child;
    REQUIRE(child > 0);
    // Killed with the group: gone, or a zombie until whoever adopted it reaps it.
    const auto running = [child] {
      std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
      std::string pid, name, state;
      if (!(stat >> pid >> name >> state)) return false;
      return state != "Z";
    };
    bool gone = false;
    for (int i = 0; i < 100 && !gone; ++i) {
      gone = !running();
      if (!gone) ::usleep(20000);
    }
    CHECK(gone);
    std::remove(pidfile.c_str());
    ::rmdir(dir_template);
  }
  SUBCASE("a process it leaves running keeps writing: its output is drained, never cut off") {
    // The restarted server, started in the background, holds the pipe after the command exits.
    // Closing our end would kill it at its next write (SIGPIPE); an unread pipe would block it.
    char dir_template[] = "/tmp/llmrepro-restart-XXXXXX";
    REQUIRE(::mkdtemp(dir_template) != nullptr);
    const std::string done = std::string(dir_template) + "/done";
    const CommandOutcome outcome = run_restart_command(
        "echo started; (sleep 1; head -c 200000 /dev/zero; echo wrote > " + done + ") &", 10);
    CHECK(outcome.ok());
    CHECK(outcome.output == "started");
    CHECK(outcome.elapsed_s < 1);
    bool written = false;
    for (int i = 0; i < 250 && !written; ++i) {
      written = std::ifstream(done).good();
      if (!written) ::usleep(20000);
    }
    CHECK(written);
    std::remove(done.c_str());
    ::rmdir(dir_template);
  }
  SUBCASE("output past the cap is dropped; control bytes escaped") {
    const CommandOutcome outcome = run_restart_command(
        "head -c 10000 /dev/zero | tr '\\0' a; printf '\\033x'; exit 1", 10, 16);
    CHECK(outcome.exit_code == 1);
    CHECK(outcome.output == std::string(16, 'a'));
    CHECK(escape_output("a\x1b[1m\nb\t\n") == "a\\x1B[1m | b");
  }
  SUBCASE("the description never names the command") {
    const std::string command = "LLMREPRO_TEST_SECRET=sk-test-123 sh -c 'exit 4'";
    const CommandOutcome outcome = run_restart_command(command, 10);
    CHECK(outcome.exit_code == 4);
    const std::string text = describe_failure(outcome, 10);
    CHECK(text == "restart command exited 4");
    CHECK(text.find("sk-test-123") == std::string::npos);
  }
}
