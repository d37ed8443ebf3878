#!/usr/bin/python3
"""Scenario: at each concurrency level exactly c requests are in flight. Every answer takes
150 ms, so the endpoint sees the overlap: at level 1 never more than one request at once, at
level 4 four (never five), and the levels run one after the other."""

import e2e_harness as h
import standard_audit as std

RUNS = 4
DELAY_MS = 150


class Concurrency(h.E2ETestCase):
    def test_exactly_c_in_flight(self):
        tokens = {"Name the capital of France.": std.CAPITAL, "Say hello.": std.HELLO,
                  "Where was Feynman born?": std.FEYNMAN_X, "List three primes.": std.PRIMES_P}
        script = {"model": std.MODEL,
                  "prompts": {text: [dict(std.variant(t), delay_ms=DELAY_MS)]
                              for text, t in tokens.items()}}
        endpoint = self.start_endpoint(script)
        suite = self.write_suite("suite.jsonl", std.suite())
        report_path = self.path("report.json")
        run = self.run_llmrepro(["audit", "--suite", suite, "--endpoint", endpoint.url,
                                 "--api", "openai-chat", "--runs", str(RUNS),
                                 "--concurrency", "1,4", "--db", self.path("audit.db"),
                                 "--json", report_path])
        self.assert_exit(run, 0)
        report = self.load_report(report_path)
        self.assertEqual([(lv["concurrency"], lv["runs"]) for lv in report["summary"]["by_concurrency"]],
                         [(1, 4 * RUNS), (4, 4 * RUNS)])
        posts = endpoint.posts()
        self.assertEqual(len(posts), 2 * 4 * RUNS)
        level1, level4 = posts[:4 * RUNS], posts[4 * RUNS:]
        self.assertEqual(max(p["in_flight"] for p in level1), 1, "level 1 is serial")
        self.assertEqual(max(p["in_flight"] for p in level4), 4, "level 4 keeps four in flight")
        # Each level sends every prompt RUNS times, mixed together.
        for level in (level1, level4):
            self.assertEqual(sorted(p["prompt"] for p in level),
                             sorted(text for text in tokens for _ in range(RUNS)))


if __name__ == "__main__":
    h.main()
