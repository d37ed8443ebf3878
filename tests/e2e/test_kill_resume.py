#!/usr/bin/python3
"""Scenario: kill -9 in the middle of an audit, then the same command with --resume. The
database the crash left opens; the resumed audit sends only the requests that were not
recorded, and ends complete with every planned request recorded exactly once, with its tokens
(no request lost, none duplicated, no orphan token rows)."""

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


def recorded_rows(db):
    try:
        conn = h.open_db(db)
        try:
            return conn.execute("SELECT COUNT(*) FROM requests").fetchone()[0]
        finally:
            conn.close()
    except h.sqlite3.Error:
        return 0  # not created yet, or its schema not committed yet


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
        while recorded_rows(db) < 8:
            self.assertIsNone(process.poll(), "the audit ended before it could be killed")
            self.assertLess(time.monotonic(), deadline, "no requests recorded within 30 s")
            time.sleep(0.05)
        h.kill(process)
        time.sleep(0.5)  # let the endpoint log requests that were on the wire at the kill
        at_kill = recorded_rows(db)
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


if __name__ == "__main__":
    h.main()
