#!/usr/bin/python3
"""Scenario: faults are retried with backoff and then succeed or are recorded as failed, and the
audit goes on: HTTP 500, 429 with Retry-After: 1 (honoured), a connection closed mid-response,
a truncated body, malformed JSON, a request timeout, a 500 on every attempt (recorded failed
after --retries), and a completion without logprobs (audited on text, flagged). The request
counts of the report and of the endpoint's log are exact; streamed bodies too, and a truncated
stream is caught in every streaming dialect. One run per prompt cannot show instability, so each
audit ends in verdict "error" (exit 3), and the request that failed after its retries fails the
failure gate, named by its reason."""

import json

import e2e_harness as h
import standard_audit as std

X = std.variant(std.FEYNMAN_X)
RETRIES = 2

# id -> (script entries, POSTs the endpoint must see, recorded as failed?)
CASES = {
    "e500": ([{"fault": "500"}, X], 2, False),
    "e429": ([{"fault": "429", "retry_after": 1}, X], 2, False),
    "close": ([{"fault": "close", "tokens": std.FEYNMAN_X}, X], 2, False),
    "truncate": ([{"fault": "truncate", "tokens": std.FEYNMAN_X}, X], 2, False),
    "malformed": ([{"fault": "malformed"}, X], 2, False),
    "timeout": ([dict(X, delay_ms=4000), X], 2, False),
    "always500": ([{"fault": "500"}], RETRIES + 1, True),
    "nologprobs": ([{"fault": "no_logprobs", "tokens": std.FEYNMAN_X}], 1, False),
}


def prompt_text(pid):
    return f"Fault case {pid}: where was Feynman born?"


class Faults(h.E2ETestCase):
    def run_cases(self, stream, tag):
        script = {"model": std.MODEL,
                  "prompts": {prompt_text(pid): entries for pid, (entries, _, _) in CASES.items()}}
        endpoint = self.start_endpoint(script, "openai-chat", name=tag)
        suite = self.write_suite(f"{tag}.jsonl", [{"id": pid, "prompt": prompt_text(pid)}
                                                  for pid in CASES])
        report_path = self.path(f"{tag}.json")
        args = ["audit", "--suite", suite, "--endpoint", endpoint.url, "--api", "openai-chat",
                "--model", std.MODEL, "--runs", "1", "--concurrency", "1", "--timeout", "1.5",
                "--retries", str(RETRIES), "--db", self.path(f"{tag}.db"), "--json", report_path]
        run = self.run_llmrepro(args + (["--stream"] if stream else []))
        self.assert_exit(run, 3)
        report = self.load_report(report_path)
        summary = report["summary"]
        verdict = summary["verdict"]
        self.assertEqual(verdict["status"], "error")
        self.assertEqual(verdict["errors"], ["no prompt has two successful completions to compare"])
        failed_gate = next(g for g in verdict["gates"] if g["name"] == "max_failed_rate")
        self.assertFalse(failed_gate["passed"])
        self.assertEqual(failed_gate["figure"], 1 / len(CASES))
        self.assertEqual(len(summary["failure_reasons"]), 1)
        self.assertEqual(summary["failure_reasons"][0]["count"], 1)
        self.assertIn("500", summary["failure_reasons"][0]["reason"])
        self.assertEqual((summary["prompts"], summary["requests"], summary["failed_requests"],
                          summary["prompts_without_logprobs"]), (len(CASES), len(CASES), 1, 1))
        self.assertEqual(report["audit"]["status"], "complete")
        posts = endpoint.posts()
        by_prompt = {pid: [p for p in posts if p["prompt"] == prompt_text(pid)] for pid in CASES}
        for pid, (_, want_posts, failed) in CASES.items():
            with self.subTest(case=pid):
                self.assertEqual(len(by_prompt[pid]), want_posts, "requests the endpoint saw")
                prompt = next(p for p in report["prompts"] if p["id"] == pid)
                self.assertEqual((prompt["runs"], prompt["failed"]),
                                 (0, 1) if failed else (1, 0))
                if not failed:
                    self.assertEqual(prompt["completions"][0]["text"], std.text_of(std.FEYNMAN_X))
                self.assertEqual(prompt["has_logprobs"], pid not in ("nologprobs", "always500"))
        # Retry-After: 1 was honoured between the 429 and the retry.
        waited = by_prompt["e429"][1]["t"] - by_prompt["e429"][0]["t"]
        self.assertGreaterEqual(waited, 1.0, "Retry-After: 1 honoured")
        self.assertGreaterEqual(run.elapsed, 1.0)
        errors = report["errors"]
        self.assertEqual([(e["prompt"], e["concurrency"], e["repeat"], e["http_status"],
                           e["attempts"]) for e in errors], [("always500", 1, 0, 500, RETRIES + 1)])
        self.assertIn("500", errors[0]["error"])
        return report

    def test_faults_non_streaming(self):
        self.run_cases(False, "plain")

    def test_faults_streaming(self):
        self.run_cases(True, "stream")

    def test_truncated_stream_in_each_dialect(self):
        pid = "cut"
        script = {"model": std.MODEL,
                  "prompts": {prompt_text(pid): [{"fault": "truncate", "tokens": std.FEYNMAN_X}, X]}}
        suite = self.write_suite("cut.jsonl", [{"id": pid, "prompt": prompt_text(pid)}])
        for dialect, api in [("openai-completions", "openai-completions"), ("vllm", "openai-chat"),
                             ("llamacpp", "llamacpp"), ("sglang", "sglang"),
                             ("ollama", "ollama"), ("tgi", "tgi"),
                             ("openai-responses", "openai-responses"), ("gemini", "gemini")]:
            with self.subTest(dialect=dialect):
                endpoint = self.start_endpoint(script, dialect, name=dialect)
                report_path = self.path(f"cut-{dialect}.json")
                run = self.run_llmrepro(["audit", "--suite", suite, "--endpoint", endpoint.url,
                                         "--api", api, "--model", std.MODEL, "--runs", "1",
                                         "--concurrency", "1", "--retries", "1", "--stream",
                                         "--db", self.path(f"cut-{dialect}.db"),
                                         "--json", report_path])
                self.assert_exit(run, 3)  # one run: nothing to compare
                self.assertEqual(self.load_report(report_path)["summary"]["verdict"]["errors"],
                                 ["no prompt has two successful completions to compare"])
                report = self.load_report(report_path)
                self.assertEqual(len(endpoint.posts()), 2, "the truncated stream was retried")
                self.assertEqual((report["summary"]["requests"],
                                  report["summary"]["failed_requests"]), (1, 0))
                self.assertEqual(report["prompts"][0]["completions"][0]["text"],
                                 std.text_of(std.FEYNMAN_X))
                self.assertEqual(json.loads(endpoint.posts()[0]["body"]).get("stream", True), True)


if __name__ == "__main__":
    h.main()
