#!/usr/bin/python3
"""Scenario: --rate caps requests per second. Twenty requests at --rate 10, with four allowed in
flight, arrive no faster than ten a second: the last arrives at least 1.9 s after the first, and
no two arrive closer than the interval allows beyond scheduling jitter; the report stores the
rate. Without --rate the same audit finishes well under that. A negative rate is refused."""

import e2e_harness as h
import standard_audit as std


class Rate(h.E2ETestCase):
    def audit(self, endpoint, tag, *extra):
        suite = self.write_suite("suite.jsonl", [{"id": "capital", "prompt": std.PROMPTS[0][1]}])
        report = self.path(f"{tag}.json")
        run = self.run_llmrepro(["audit", "--suite", suite, "--endpoint", endpoint.url, "--api",
                                 "openai-completions", "--runs", "20", "--concurrency", "4",
                                 "--db", self.path(f"{tag}.db"), "--json", report, *extra])
        return run, report

    def test_rate_caps_requests_per_second(self):
        endpoint = self.start_endpoint({"model": std.MODEL, "prompts": {
            std.PROMPTS[0][1]: [std.variant(std.CAPITAL)]}}, dialect="openai-completions")
        run, report_path = self.audit(endpoint, "capped", "--rate", "10")
        self.assert_exit(run, 0)
        times = [p["t"] for p in endpoint.posts()]
        self.assertEqual(len(times), 20)
        # Starts are spaced 0.1 s apart; the first arrival also waits for the connection, so the
        # spacing is measured from the second.
        self.assertGreaterEqual(times[-1] - times[1], 1.8 - 0.01, times)
        self.assertGreaterEqual(run.elapsed, 1.9)
        gaps = [b - a for a, b in zip(times, times[1:])]
        self.assertGreaterEqual(min(gaps), 0.05, gaps)
        report = self.load_report(report_path)
        self.assertEqual(report["config"]["rate_limit"], 10.0)
        self.assertEqual(report["summary"]["requests"], 20)

        first = len(endpoint.posts())
        run, report_path = self.audit(endpoint, "free")
        self.assert_exit(run, 0)
        times = [p["t"] for p in endpoint.posts()[first:]]
        self.assertEqual(len(times), 20)
        self.assertLess(times[-1] - times[0], 1.0, times)
        self.assertEqual(self.load_report(report_path)["config"]["rate_limit"], 0.0)

        run, _ = self.audit(endpoint, "negative", "--rate", "-1")
        self.assert_exit(run, 2)
        self.assertIn("--rate", run.stderr)


if __name__ == "__main__":
    h.main()
