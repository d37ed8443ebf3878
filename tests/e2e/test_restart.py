#!/usr/bin/python3
"""Scenario: the restart probe against a real `llmrepro serve` that its restart command really
stops and starts again on a fixed loopback port. A command that works gives a tested restart cell
(held: the reference engine runs with --batch-invariant) with one restart per round, the requests answered
by the new process; a command that exits 3 and one that hangs past --restart-timeout give the
named error on every request of their rounds and a cell "not tested", never "held". The command
carries a fake secret that must appear nowhere: database, stdout, stderr or any report."""

import os
import time

import e2e_harness as h

PROMPTS = [{"id": "capital", "prompt": "The capital of France is"}]
SECRET = "sk-test-123"

RESTART_SCRIPT = """#!/bin/sh
# Stops the server named by the pidfile and starts a new one on the same port.
# The old server is gone once /proc says so or shows it a zombie (its parent shell has exited
# and whoever adopted it may be slow to reap it).
if [ -f "$DIR/serve.pid" ]; then
  pid=$(cat "$DIR/serve.pid")
  kill "$pid" 2>/dev/null
  while [ -d "/proc/$pid" ] && [ "$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null)" != Z ]; do
    sleep 0.02
  done
fi
nohup "$BIN" serve --batch-invariant --port "$PORT" >>"$DIR/serve.log" 2>&1 &
echo $! > "$DIR/serve.pid"
echo restarted >> "$DIR/restarts.log"
exit 0
"""


def running(pid):
    """Whether `pid` runs: gone or a zombie (adopted by a parent slow to reap it) is not."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


class Restart(h.E2ETestCase):
    def setUp(self):
        super().setUp()
        self.port = h.free_port()
        script = self.path("restart.sh")
        with open(script, "w", encoding="utf-8") as f:
            f.write(RESTART_SCRIPT)
        os.chmod(script, 0o755)
        self.env = {"DIR": self.tmp, "BIN": h.ARGS.binary, "PORT": str(self.port)}
        self.addCleanup(self.stop_server)
        # The first server, started as the command starts it.
        self.assertEqual(h.subprocess.run(["sh", script], env=self.audit_env(self.env)).returncode,
                         0)

    def stop_server(self):
        pidfile = self.path("serve.pid")
        if os.path.exists(pidfile):
            with open(pidfile, encoding="utf-8") as f:
                pid = int(f.read())
            try:
                os.kill(pid, 15)
            except ProcessLookupError:
                pass

    def pid(self):
        with open(self.path("serve.pid"), encoding="utf-8") as f:
            return int(f.read())

    def audit(self, command, tag, extra=()):
        suite = self.write_suite("suite.jsonl", PROMPTS)
        paths = self.report_paths(tag)
        run = self.run_llmrepro(
            ["audit", "--suite", suite, "--endpoint", f"http://127.0.0.1:{self.port}",
             "--api", "openai-chat", "--runs", "2", "--max-tokens", "4", "--profile",
             "deterministic", "--max-concurrency", "1", "--restart-cmd", command,
             "--db", paths["db"], *h.report_args(paths), *extra],
            env=self.env, timeout=120)
        return run, paths

    def assert_secret_nowhere(self, run, paths):
        self.assertNotIn(SECRET, run.stdout)
        self.assertNotIn(SECRET, run.stderr)
        for name, path in paths.items():
            if os.path.exists(path):
                with open(path, "rb") as f:
                    self.assertNotIn(SECRET.encode(), f.read(), name)

    def restart_cell(self, report):
        cells = [c for c in report["summary"]["determinism"]["cells"] if c["shape"] == "restart"]
        self.assertEqual(len(cells), 1, report["summary"]["determinism"]["cells"])
        return cells[0]

    def test_working_restart_command(self):
        first_pid = self.pid()
        run, paths = self.audit(f"LLMREPRO_TEST_SECRET={SECRET} ./restart.sh", "ok")
        self.assert_exit(run, 0)
        # Exit code, terminal, Markdown, HTML and JUnit state the JSON verdict.
        report = self.assert_verdict_agrees(run, paths)
        restart = next(p for p in report["probes"] if p["probe"] == "restart")
        self.assertEqual(restart["summary"]["requests"], 4)
        self.assertEqual(restart["summary"]["failed_requests"], 0)
        self.assertEqual(restart["activity"]["restarts_run"], 2)
        self.assertEqual(restart["activity"]["restarts_failed"], 0)
        self.assertEqual([(p["id"], p["first_runs"], p["later_runs"])
                          for p in restart["restart"]["prompts"]], [("capital", 2, 2)])
        cell = self.restart_cell(report)
        self.assertTrue(cell["tested"])
        self.assertTrue(cell["held"])
        self.assertIn("; restart;", report["summary"]["determinism"]["coverage"])
        # Two restarts after the first start: the server that answered is neither of the old.
        with open(self.path("restarts.log"), encoding="utf-8") as f:
            self.assertEqual(f.read().count("restarted"), 3)
        self.assertNotEqual(self.pid(), first_pid)
        self.assertFalse(running(first_pid), "the first server still runs")
        self.assert_secret_nowhere(run, paths)

    def test_failing_and_hanging_commands(self):
        for command, extra, error in (
                # Its output echoes the secret: the error names the output, redacted.
                (f"LLMREPRO_TEST_SECRET={SECRET} sh -c 'echo broken $LLMREPRO_TEST_SECRET; "
                 "exit 3'", (), "restart command exited 3: broken [redacted]"),
                (f"LLMREPRO_TEST_SECRET={SECRET} sleep 30", ("--restart-timeout", "2"),
                 "restart command did not finish within 2 s (its process group was killed)")):
            with self.subTest(error=error):
                start = time.monotonic()
                run, paths = self.audit(command, "fail" + str(len(extra)), extra)
                # No round restarted: the deterministic profile's claim is not judged (exit 3),
                # never held.
                self.assert_exit(run, 3)
                self.assertIn("not judged: determinism claim not checked after a restart: no "
                              "round restarted and became ready (2 of 2 restarts failed)",
                              run.stdout)
                self.assertLess(time.monotonic() - start, 60)
                report = self.assert_verdict_agrees(run, paths)
                restart = next(p for p in report["probes"] if p["probe"] == "restart")
                self.assertEqual(restart["activity"]["restarts_run"], 2)
                self.assertEqual(restart["activity"]["restarts_failed"], 2)
                self.assertEqual(restart["summary"]["failed_requests"], 4)
                cell = self.restart_cell(report)
                self.assertFalse(cell["tested"])
                self.assertFalse(cell["held"])
                self.assertEqual(cell["untested_reason"],
                                 "no round restarted and became ready (2 of 2 restarts failed)")
                with h.open_db(paths["db"]) as con:
                    errors = {row[0] for row in con.execute(
                        "SELECT error FROM requests WHERE probe = 'restart'")}
                self.assertEqual(errors, {error})
                self.assert_secret_nowhere(run, paths)

    def test_restart_probe_needs_the_command(self):
        suite = self.write_suite("suite.jsonl", PROMPTS)
        run = self.run_llmrepro(["audit", "--suite", suite, "--endpoint",
                                 f"http://127.0.0.1:{self.port}", "--probe", "restart",
                                 "--db", self.path("x.db")])
        self.assert_exit(run, 2)
        self.assertIn("--probe restart needs --restart-cmd", run.stderr)
        self.assertFalse(os.path.exists(self.path("x.db")))
        run = self.run_llmrepro(["audit", "--suite", suite, "--restart-cmd", "true",
                                 "--db", self.path("y.db")])
        self.assert_exit(run, 2)
        self.assertIn("the embedded engine (no --endpoint) cannot be restarted", run.stderr)


if __name__ == "__main__":
    h.main()
