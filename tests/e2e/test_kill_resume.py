#!/usr/bin/python3
"""Scenario: kill -9 in the middle of an audit, then the same command with --resume. The
database the crash left opens; the resumed audit sends only the requests that were not
recorded, and ends complete with every planned request recorded exactly once, with its tokens
(no request lost, none duplicated, no orphan token rows). Under --max-requests, kill -9 at
several moments and --resume each time: the endpoint's own log never shows more requests than
the budget, because every attempt is charged in the database before it is sent."""

import time

import e2e_harness as h
import standard_audit as std
import token_blob

LEVELS = "1,2"
RUNS = 5
PLANNED = 4 * RUNS * 2
DELAY_MS = 120


def slow_script():
    """Each prompt always gets the same completion, slowly, so a kill lands mid-audit."""
    tokens = {"Name the capital of France.": std.CAPITAL,
              "Where was Feynman born?": std.FEYNMAN_X,
              "List three primes.": std.PRIMES_P,
              "Say hello.": std.HELLO}
    return {"model": std.MODEL,
            "prompts": {text: [dict(std.variant(t), delay_ms=DELAY_MS)]
                        for text, t in tokens.items()}}


class KillResume(h.E2ETestCase):
    def test_kill_then_resume_records_each_request_once(self):
        endpoint = self.start_endpoint(slow_script())
        suite = self.write_suite("suite.jsonl", std.suite())
        db, report_path = self.path("audit.db"), self.path("report.json")
        args = ["audit", "--suite", suite, "--endpoint", endpoint.url, "--api", "openai-chat",
                "--model", std.MODEL, "--runs", str(RUNS), "--concurrency", LEVELS,
                "--db", db, "--json", report_path]
        process = self.start_llmrepro(args)
        deadline = time.monotonic() + 30
        while h.recorded_rows(db) < 8:
            self.assertIsNone(process.poll(), "the audit ended before it could be killed")
            self.assertLess(time.monotonic(), deadline, "no requests recorded within 30 s")
            time.sleep(0.05)
        h.kill(process)
        time.sleep(0.5)  # let the endpoint log requests that were on the wire at the kill
        at_kill = h.recorded_rows(db)
        posts_at_kill = len(endpoint.posts())
        self.assertGreaterEqual(at_kill, 8)
        self.assertLess(at_kill, PLANNED, "killed mid-audit")

        run = self.run_llmrepro(args + ["--resume"])
        self.assert_exit(run, 0)
        report = self.load_report(report_path)
        self.assertEqual(report["audit"]["status"], "complete")
        self.assertEqual((report["audit"]["planned_requests"], report["audit"]["recorded_requests"]),
                         (PLANNED, PLANNED))
        summary = report["summary"]
        self.assertEqual((summary["requests"], summary["failed_requests"], summary["tarr"]),
                         (PLANNED, 0, 1.0))
        self.assertEqual([lv["runs"] for lv in summary["by_concurrency"]], [4 * RUNS, 4 * RUNS])
        self.assertEqual(len(endpoint.posts()) - posts_at_kill, PLANNED - at_kill,
                         "the resumed audit sent exactly the missing requests")

        conn = h.open_db(db)
        self.addCleanup(conn.close)
        keys = conn.execute("SELECT endpoint_index, prompt_index, concurrency, probe, repeat, "
                            "COUNT(*) FROM requests GROUP BY 1, 2, 3, 4, 5").fetchall()
        self.assertEqual(len(keys), PLANNED)
        self.assertEqual({k[5] for k in keys}, {1})
        self.assertEqual(sorted({(k[1], k[2], k[4]) for k in keys}),
                         sorted((p, c, r) for p in range(4) for c in (1, 2) for r in range(RUNS)))
        self.assertEqual(conn.execute("SELECT COUNT(*) FROM requests WHERE ok = 1").fetchone()[0],
                         PLANNED)
        lengths = {0: len(std.CAPITAL), 1: len(std.FEYNMAN_X), 2: len(std.PRIMES_P),
                   3: len(std.HELLO)}
        want_tokens = sum(lengths[k[1]] for k in keys)
        self.assertEqual(token_blob.token_count(conn), want_tokens)
        orphans = conn.execute("SELECT COUNT(*) FROM packed_tokens WHERE request_id NOT IN "
                               "(SELECT id FROM requests)").fetchone()[0]
        self.assertEqual(orphans, 0)


    def test_budget_holds_across_kills(self):
        # 4 prompts x 10 runs at levels 1 and 4: 80 planned; the budget stops it at 30.
        budget, runs, levels = 30, 10, "1,4"
        for kills in ([3], [6, 14], [2, 9, 20]):
            with self.subTest(kills=kills):
                endpoint = self.start_endpoint(slow_script(), name=f"endpoint{len(kills)}")
                suite = self.write_suite("suite.jsonl", std.suite())
                db = self.path(f"budget{len(kills)}.db")
                args = ["audit", "--suite", suite, "--endpoint", endpoint.url, "--api",
                        "openai-chat", "--model", std.MODEL, "--runs", str(runs),
                        "--concurrency", levels, "--db", db, "--max-requests", str(budget),
                        "--quiet"]
                for index, rows in enumerate(kills):
                    process = self.start_llmrepro(args + (["--resume"] if index else []))
                    deadline = time.monotonic() + 30
                    while h.recorded_rows(db) < rows:
                        self.assertIsNone(process.poll(), "the audit ended before the kill")
                        self.assertLess(time.monotonic(), deadline)
                        time.sleep(0.02)
                    h.kill(process)
                    time.sleep(0.3)  # requests on the wire at the kill reach the log
                run = self.run_llmrepro(args + ["--resume"])
                self.assert_exit(run, 3)
                self.assertIn(f"budget --max-requests {budget} reached", run.stderr)
                sent = len(endpoint.posts())
                self.assertLessEqual(sent, budget, "kill -9 and --resume stay within the budget")
                # Each kill may strand at most the 4 requests in flight, counted but never sent.
                self.assertGreaterEqual(sent, budget - 4 * len(kills))
                self.assertLessEqual(h.recorded_rows(db), sent)


if __name__ == "__main__":
    h.main()
