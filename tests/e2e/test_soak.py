#!/usr/bin/python3
"""Scenario (soak): an audit of 2000 requests against the scripted endpoint with faults mixed in
(connections dropped mid-response, 429s, 500s, slow answers, answers slower than the timeout)
finishes with every request accounted for: one database row per planned request, successes and
failures adding up to the plan, every POST the endpoint saw matching an attempt the database
recorded (a connection the endpoint's listen queue refused is an attempt it never logs), and the
prompts that always fail recorded as failed after their last retry. Those failures fail the
failure gate (--max-failed-rate, default 0): exit 1, with the gate's figure exactly the failed
share the database holds, and --quiet still printing why."""

import e2e_harness as h
import standard_audit as std
import token_blob

X = std.variant(std.FEYNMAN_X)
RETRIES = 2
TIMEOUT_S = 1.0
RUNS = 20
LEVELS = (8, 32)
# Every fault is followed by enough successes that, even interleaved with the prompt's other
# requests, most retries succeed; which requests end up failed may vary, the accounting may not.
MIXED = [X, {"fault": "close", "tokens": std.FEYNMAN_X}, X, X, {"fault": "429"}, X,
         dict(X, delay_ms=150), X, {"fault": "500"}, X, X,
         dict(X, delay_ms=1500), X, X, X, X]
MIXED_PROMPTS = 48
DOOMED_PROMPTS = 2  # every attempt is a 500: recorded failed after RETRIES + 1 attempts


def prompt_text(index):
    return f"Soak prompt {index}: where was Feynman born?"


class Soak(h.E2ETestCase):
    def test_every_request_is_accounted_for(self):
        total_prompts = MIXED_PROMPTS + DOOMED_PROMPTS
        prompts = {prompt_text(i): MIXED for i in range(MIXED_PROMPTS)}
        prompts.update({prompt_text(MIXED_PROMPTS + i): [{"fault": "500"}]
                        for i in range(DOOMED_PROMPTS)})
        endpoint = self.start_endpoint({"model": std.MODEL, "prompts": prompts}, "openai-chat")
        suite = self.write_suite("soak.jsonl", [{"id": f"p{i}", "prompt": prompt_text(i)}
                                                for i in range(total_prompts)])
        db = self.path("soak.db")
        report_path = self.path("soak.json")
        run = self.run_llmrepro(
            ["audit", "--suite", suite, "--endpoint", endpoint.url, "--api", "openai-chat",
             "--model", std.MODEL, "--runs", str(RUNS),
             "--concurrency", ",".join(str(level) for level in LEVELS),
             "--timeout", str(TIMEOUT_S), "--retries", str(RETRIES), "--db", db,
             "--json", report_path, "--quiet"], timeout=150)
        self.assert_exit(run, 1)
        self.assertTrue(run.stderr.startswith("llmrepro: FAIL: 1 of 1 gates failed: "), run.stderr)

        planned = total_prompts * RUNS * len(LEVELS)
        self.assertEqual(planned, 2000)
        with h.open_db(db) as connection:
            rows, failed, attempts = connection.execute(
                "SELECT COUNT(*), SUM(ok = 0), SUM(attempts) FROM requests").fetchone()
            distinct = connection.execute(
                "SELECT COUNT(*) FROM (SELECT DISTINCT prompt_index, concurrency, repeat"
                " FROM requests)").fetchone()[0]
            doomed = connection.execute(
                "SELECT COUNT(*), MIN(attempts), MAX(attempts), SUM(ok) FROM requests"
                " WHERE prompt_index >= ?", (MIXED_PROMPTS,)).fetchone()
            bad_failures = connection.execute(
                "SELECT COUNT(*) FROM requests WHERE ok = 0 AND attempts != ?",
                (RETRIES + 1,)).fetchone()[0]
            stored = token_blob.tokens_by_request(connection)
            empty_successes = sum(
                1 for request_id, completion_tokens in connection.execute(
                    "SELECT id, completion_tokens FROM requests WHERE ok = 1")
                if completion_tokens != len(stored.get(request_id, [])))
        self.assertEqual((rows, distinct), (planned, planned), "one row per planned request")
        doomed_requests = DOOMED_PROMPTS * RUNS * len(LEVELS)
        self.assertEqual(doomed, (doomed_requests, RETRIES + 1, RETRIES + 1, 0))
        self.assertGreaterEqual(failed, doomed_requests)
        self.assertEqual(bad_failures, 0, "a failure is recorded only after its last attempt")
        self.assertEqual(empty_successes, 0, "every success stores all its tokens")
        # Every POST the endpoint received is an attempt the database accounts for (not the
        # converse: under load the endpoint's small listen queue refuses some connections, and
        # those attempts never reach its log).
        posts = len(endpoint.posts())
        self.assertLessEqual(posts, attempts)
        self.assertGreaterEqual(posts, rows - failed, "each success was answered by the endpoint")
        self.assertGreater(attempts, planned, "faults were injected and retried")

        report = self.load_report(report_path)
        verdict = report["summary"]["verdict"]
        self.assertEqual(verdict["status"], "fail")
        gate = next(g for g in verdict["gates"] if g["name"] == "max_failed_rate")
        self.assertEqual((gate["passed"], gate["figure"]), (False, failed / planned))
        self.assertEqual(sum(r["count"] for r in report["summary"]["failure_reasons"]), failed)
        summary = report["summary"]
        self.assertEqual((summary["requests"], summary["failed_requests"]), (planned, failed))
        self.assertEqual(report["audit"]["status"], "complete")


if __name__ == "__main__":
    h.main()
