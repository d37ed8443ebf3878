#!/usr/bin/python3
"""Scenario: a response larger than the cap (16 MiB by default) is rejected while it arrives,
never buffered whole: the request is recorded as failed with a reason naming the limit, the
audit goes on, and the tool's peak memory stays far below the 200 MiB the endpoint offers. With one
run per prompt nothing can be compared, so the verdict is "error" (exit 3), with the failure gate
naming the oversize request."""

import resource

import e2e_harness as h
import standard_audit as std

OFFERED = 200 << 20


class Oversize(h.E2ETestCase):
    def test_oversize_response_rejected(self):
        script = {"model": std.MODEL, "prompts": {
            "Send too much.": [{"fault": "oversize", "oversize_bytes": OFFERED}],
            "Say hello.": [std.variant(std.HELLO, "stop")]}}
        endpoint = self.start_endpoint(script)
        suite = self.write_suite("suite.jsonl", [{"id": "big", "prompt": "Send too much."},
                                                 {"id": "hello", "prompt": "Say hello."}])
        report_path = self.path("report.json")
        run = self.run_llmrepro(["audit", "--suite", suite, "--endpoint", endpoint.url,
                                 "--api", "openai-chat", "--runs", "1", "--concurrency", "1",
                                 "--retries", "1", "--db", self.path("audit.db"),
                                 "--json", report_path])
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        self.assert_exit(run, 3)
        report = self.load_report(report_path)
        self.assertEqual(report["summary"]["verdict"]["status"], "error")
        self.assertEqual((report["summary"]["requests"], report["summary"]["failed_requests"]),
                         (2, 1))
        big = [p for p in endpoint.posts() if p["prompt"] == "Send too much."]
        errors = report["errors"]
        self.assertEqual([(e["prompt"], e["attempts"]) for e in errors], [("big", len(big))])
        self.assertIn(len(big), (1, 2), "at most --retries 1 retry")
        self.assertRegex(errors[0]["error"], r"(?i)16 ?MiB|16777216|cap|limit|too large|exceed")
        hello = next(p for p in report["prompts"] if p["id"] == "hello")
        self.assertEqual((hello["runs"], hello["failed"]), (1, 0))
        self.assertLess(peak_kib, 120 * 1024, "peak RSS of llmrepro (KiB): the body was buffered")


if __name__ == "__main__":
    h.main()
