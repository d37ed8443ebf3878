#!/usr/bin/python3
"""Scenario: nothing listens on the endpoint's port. The audit ends with exit 3 within a few
seconds, naming the endpoint, whether the dialect is given or must be detected."""

import e2e_harness as h
import standard_audit as std


class Unreachable(h.E2ETestCase):
    def test_connection_refused_exits_3_quickly(self):
        suite = self.write_suite("suite.jsonl", std.suite())
        port = h.free_port()
        for api in ("openai-chat", "auto"):
            with self.subTest(api=api):
                run = self.run_llmrepro(["audit", "--suite", suite,
                                         "--endpoint", f"http://127.0.0.1:{port}", "--api", api,
                                         "--runs", "5", "--concurrency", "1,8",
                                         "--db", self.path(f"{api}.db"),
                                         "--json", self.path(f"{api}.json")], timeout=60)
                self.assert_exit(run, 3)
                self.assertLess(run.elapsed, 10.0, run.describe())
                self.assertIn(f"127.0.0.1:{port}", run.stderr, run.describe())


if __name__ == "__main__":
    h.main()
