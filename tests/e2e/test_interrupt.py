#!/usr/bin/python3
"""Scenario: Ctrl-C in the middle of an audit. The first SIGINT lets the requests in flight
finish and be recorded, then the audit exits 130 with a consistent database marked partial and
a message naming --resume; the JSON report written on the way out says partial too. Resuming
completes the audit with every planned request recorded once."""

import signal
import time

import e2e_harness as h
import standard_audit as std
from test_kill_resume import LEVELS, PLANNED, RUNS, slow_script


class Interrupt(h.E2ETestCase):
    def test_sigint_leaves_a_partial_audit_that_resumes(self):
        endpoint = self.start_endpoint(slow_script())
        suite = self.write_suite("suite.jsonl", std.suite())
        db, report_path = self.path("audit.db"), self.path("report.json")
        args = ["audit", "--suite", suite, "--endpoint", endpoint.url, "--api", "openai-chat",
                "--model", std.MODEL, "--runs", str(RUNS), "--concurrency", LEVELS,
                "--db", db, "--json", report_path]
        process = self.start_llmrepro(args)
        deadline = time.monotonic() + 30
        while h.recorded_rows(db) < 6:
            self.assertIsNone(process.poll(), "the audit ended before it could be interrupted")
            self.assertLess(time.monotonic(), deadline, "no requests recorded within 30 s")
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
        self.assertEqual(process.returncode, 130, stderr)
        self.assertIn("--resume", stderr)

        report = self.load_report(report_path)
        self.assertEqual(report["audit"]["status"], "partial")
        recorded = report["audit"]["recorded_requests"]
        self.assertLess(recorded, PLANNED)
        # Every request that reached the endpoint before the interrupt was recorded: none was
        # abandoned in flight.
        self.assertEqual(recorded, len(endpoint.posts()))
        self.assertEqual(h.recorded_rows(db), recorded)

        run = self.run_llmrepro(args + ["--resume"])
        self.assert_exit(run, 0)
        report = self.load_report(report_path)
        self.assertEqual(report["audit"]["status"], "complete")
        self.assertEqual(report["audit"]["recorded_requests"], PLANNED)
        self.assertEqual(len(endpoint.posts()), PLANNED)


if __name__ == "__main__":
    h.main()
