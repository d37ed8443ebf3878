#!/usr/bin/python3
"""Scenario: gates decide the exit code. Without a stability gate a passing audit says "NO
STABILITY GATE: 2 of 4 prompts unstable", never a bare PASS. On the standard audit (two unstable prompts, two
fragile, at most two distinct completions per prompt): --fail-on unstable and --fail-on
fragile exit 1, --fail-on none exits 0, --max-unique 1 exits 1 and --max-unique 2 exits 0;
the report's verdict and the terminal summary say the same. A stable suite passes
--fail-on unstable."""

import e2e_harness as h
import standard_audit as std


class Gates(h.E2ETestCase):
    def setUp(self):
        super().setUp()
        self.endpoint = self.start_endpoint(std.script())
        self.count = 0

    def audit(self, prompts, *gates):
        self.count += 1
        suite = self.write_suite(f"suite{self.count}.jsonl", prompts)
        report_path = self.path(f"report{self.count}.json")
        run = self.run_llmrepro(["audit", "--suite", suite, "--endpoint", self.endpoint.url,
                                 "--api", "openai-chat", "--runs", "5", "--concurrency", "1",
                                 "--fragile-window", "5",
                                 "--db", self.path(f"audit{self.count}.db"),
                                 "--json", report_path, *gates])
        return run, report_path

    def check(self, prompts, gates, code):
        run, report_path = self.audit(prompts, *gates)
        self.assert_exit(run, code)
        report = self.load_report(report_path)
        verdict = report["summary"]["verdict"]
        self.assertEqual(verdict["status"], "fail" if code == 1 else "pass")
        failed = [g for g in verdict["gates"] if not g["passed"]]
        self.assertEqual(len(failed) > 0, code == 1, verdict)
        # The headline the terminal leads with: a bare PASS only where a gate judged stability.
        stability = any(g in gates for g in ("unstable", "--max-unique", "--max-unstable-rate"))
        prefix = "FAIL: " if code == 1 else "PASS: " if stability else "NO STABILITY GATE: "
        self.assertTrue(verdict["headline"].startswith(prefix), verdict["headline"])
        self.assertIn(verdict["headline"], run.stdout)
        if not stability:
            self.assertNotIn("PASS", run.stdout)
        return report

    def test_gates(self):
        suite = std.suite()
        cases = [(["--fail-on", "unstable"], 1), (["--fail-on", "fragile"], 1),
                 (["--fail-on", "none"], 0), ([], 0), (["--max-unique", "1"], 1),
                 (["--max-unique", "2"], 0)]
        for gates, code in cases:
            with self.subTest(gates=gates):
                report = self.check(suite, gates, code)
                self.assertEqual((report["summary"]["unstable_prompts"],
                                  report["summary"]["fragile_prompts"]), (2, 2))
                if not gates:
                    self.assertEqual(report["summary"]["verdict"]["headline"],
                                     "NO STABILITY GATE: 2 of 4 prompts unstable")
        with self.subTest(case="stable suite"):
            stable = [p for p in suite if p["id"] == "capital"]
            report = self.check(stable, ["--fail-on", "unstable"], 0)
            self.assertEqual(report["summary"]["tarr"], 1.0)


if __name__ == "__main__":
    h.main()
