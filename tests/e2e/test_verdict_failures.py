#!/usr/bin/python3
"""Scenario: failed requests and missing evidence never pass (issue "A verdict a CI can trust").
Every run writes every report format, and the exit code, terminal, JSON, HTML, JUnit and
Markdown must state the same verdict (e2e_harness.assert_verdict_agrees).
- Every request fails: 404 (the model does not exist) and 401 (a bad key) are not retried, 503
  is retried once (--retries 1). No prompt has two successful completions, so the verdict is
  error (exit 3) even with every stability gate asked for; max_failed_rate is listed failed with
  the reasons grouped; under --quiet stderr still gets the headline.
- Some requests fail: one prompt answers G, 500, G with --retries 0, so 1 of 6 requests fails:
  that prompt is inconclusive (never stable), the failure gate fails (exit 1) and
  --max-failed-rate 0.5 lets it pass while the prompt stays inconclusive.
- An unreachable endpoint (exit 3) and an interrupted audit (exit 130) are errors, not passes.
"""

import re
import signal
import time

import e2e_harness as h


def tok(text, lp=-0.1, alt="zz", alt_lp=-3.0):
    return [text, lp, [[text, lp], [alt, alt_lp]]]


GOOD = {"tokens": [tok(" The"), tok(" answer"), tok(" holds")], "finish_reason": "stop"}
PROMPTS = [{"id": "alpha", "prompt": "Alpha question one?"},
           {"id": "beta", "prompt": "Beta question two?"}]
ALL_GATES = ["--fail-on", "unstable", "--max-unstable-rate", "0", "--max-unique", "1"]


def failed_rate_gate(test, verdict):
    gates = [g for g in verdict["gates"] if g["name"] == "max_failed_rate"]
    test.assertEqual(len(gates), 1, verdict)
    gate = gates[0]
    test.assertEqual((gate["flag"], gate["scope"]),
                     ("--max-failed-rate", {"endpoint": None, "probe": None, "level": None}))
    return gate


class VerdictFailures(h.E2ETestCase):
    def test_every_request_fails(self):
        # (fault, POSTs per request, reason the tool groups by, extra flags)
        cases = [("404", 1, "HTTP 404", []), ("401", 1, "HTTP 401", ["--quiet"]),
                 ("503", 2, "HTTP 503", [])]
        suite = self.write_suite("suite.jsonl", PROMPTS)
        for fault, attempts, reason, extra in cases:
            with self.subTest(fault=fault):
                endpoint = self.start_endpoint(
                    {"model": "served-model",
                     "prompts": {p["prompt"]: [{"fault": fault}] for p in PROMPTS}},
                    name=f"e{fault}")
                run, report, _ = self.audit_reports(
                    suite, ["--endpoint", endpoint.url],
                    ["--model", "absent-model", "--runs", "2", "--concurrency", "1",
                     "--retries", "1", "--timeout", "5", *ALL_GATES, *extra], tag=f"e{fault}")
                self.assertEqual(run.returncode, 3, run.describe())
                self.assertEqual(len(endpoint.posts()), 4 * attempts, "requests the endpoint saw")
                summary = report["summary"]
                verdict = summary["verdict"]
                self.assertEqual(verdict["status"], "error")
                self.assertTrue(verdict["stability_gated"])
                self.assertTrue(any("two successful completions" in e for e in verdict["errors"]),
                                verdict["errors"])
                self.assertEqual((summary["requests"], summary["failed_requests"],
                                  summary["stable_prompts"], summary["unstable_prompts"],
                                  summary["inconclusive_prompts"]), (4, 4, 0, 0, 2))
                self.assertEqual([p["status"] for p in report["prompts"]],
                                 ["inconclusive", "inconclusive"])
                reasons = summary["failure_reasons"]
                self.assertEqual(len(reasons), 1, reasons)
                self.assertEqual(reasons[0]["count"], 4)
                self.assertIn(reason, reasons[0]["reason"])
                gate = failed_rate_gate(self, verdict)
                self.assertEqual((gate["passed"], gate["figure"], gate["limit"]),
                                 (False, 1.0, 0.0))
                self.assertEqual(gate["message"],
                                 f"4 of 4 requests failed after their retries "
                                 f"(4 x {reasons[0]['reason']}), limit 0.000 (--max-failed-rate)")
                names = {g["name"] for g in verdict["gates"]}
                self.assertLessEqual({"max_failed_rate", "fail_on_unstable", "max_unique",
                                      "max_unstable_rate"}, names)
                self.assertEqual([e["http_status"] for e in report["errors"]],
                                 [int(fault)] * 4)

    def test_some_requests_fail(self):
        flaky = {"id": "flaky", "prompt": "Flaky question three?"}
        endpoint = self.start_endpoint({"prompts": {
            PROMPTS[0]["prompt"]: [GOOD],
            flaky["prompt"]: [GOOD, {"fault": "500"}, GOOD]}})
        suite = self.write_suite("suite.jsonl", [PROMPTS[0], flaky])
        common = ["--endpoint", endpoint.url]
        base = ["--runs", "3", "--concurrency", "1", "--retries", "0", "--timeout", "5"]

        def check_evidence(report):
            summary = report["summary"]
            self.assertEqual((summary["requests"], summary["failed_requests"],
                              summary["stable_prompts"], summary["unstable_prompts"],
                              summary["inconclusive_prompts"], summary["tarr"]),
                             (6, 1, 1, 0, 1, 0.5))
            by_id = {p["id"]: p for p in report["prompts"]}
            self.assertEqual((by_id["flaky"]["status"], by_id["flaky"]["runs"],
                              by_id["flaky"]["failed"], by_id["flaky"]["unique_completions"]),
                             ("inconclusive", 2, 1, 1))
            self.assertEqual(by_id["alpha"]["status"], "stable")
            self.assertEqual([(lv["concurrency"], lv["status"])
                              for lv in by_id["flaky"]["by_concurrency"]], [(1, "inconclusive")])
            self.assertEqual([(lv["concurrency"], lv["inconclusive_prompts"],
                               lv["unstable_prompts"], lv["failed"])
                              for lv in summary["by_concurrency"]], [(1, 1, 0, 1)])
            reasons = summary["failure_reasons"]
            self.assertEqual([r["count"] for r in reasons], [1])
            self.assertIn("HTTP 500", reasons[0]["reason"])
            return summary["verdict"], reasons[0]["reason"]

        with self.subTest(case="default limit 0"):
            run, report, _ = self.audit_reports(suite, common, base + ["--fail-on", "unstable"],
                                                tag="strict")
            self.assertEqual(run.returncode, 1, run.describe())
            verdict, reason = check_evidence(report)
            self.assertEqual(verdict["status"], "fail")
            gate = failed_rate_gate(self, verdict)
            self.assertEqual((gate["passed"], gate["figure"], gate["limit"]), (False, 1 / 6, 0.0))
            self.assertEqual(gate["message"], f"1 of 6 requests failed after their retries "
                                              f"(1 x {reason}), limit 0.000 (--max-failed-rate)")
            self.assertEqual([g["name"] for g in verdict["gates"] if not g["passed"]],
                             ["max_failed_rate"])
            self.assertIn(gate["message"], verdict["headline"])
        with self.subTest(case="--max-failed-rate 0.5"):
            run, report, _ = self.audit_reports(
                suite, common, base + ["--fail-on", "unstable", "--max-failed-rate", "0.5"],
                tag="lenient")
            self.assertEqual(run.returncode, 0, run.describe())
            verdict, reason = check_evidence(report)
            self.assertEqual((verdict["status"], verdict["stability_gated"]), ("pass", True))
            gate = failed_rate_gate(self, verdict)
            self.assertEqual((gate["passed"], gate["figure"], gate["limit"]), (True, 1 / 6, 0.5))
            self.assertEqual(gate["message"], f"1 of 6 requests failed after their retries "
                                              f"(1 x {reason}), limit 0.500 (--max-failed-rate)")
        with self.subTest(case="--max-failed-rate 0.5, no stability gate"):
            run, report, _ = self.audit_reports(suite, common, base + ["--max-failed-rate", "0.5"],
                                                tag="ungated")
            self.assertEqual(run.returncode, 0, run.describe())
            verdict, _ = check_evidence(report)
            self.assertEqual((verdict["status"], verdict["stability_gated"], verdict["headline"]),
                             ("pass", False,
                              "NO STABILITY GATE: 0 of 1 prompts unstable, 1 inconclusive"))
        with self.subTest(case="--quiet"):
            run, report, _ = self.audit_reports(suite, common,
                                                base + ["--fail-on", "unstable", "--quiet"],
                                                tag="quiet")
            self.assertEqual(run.returncode, 1, run.describe())
            self.assertEqual(report["summary"]["verdict"]["status"], "fail")
        self.assertEqual(len(endpoint.posts()), 24, "no retries with --retries 0")

    def test_inconclusive_prompts_are_not_judged(self):
        # stable, unstable (A, B, A) and inconclusive (G, 500, G): 1 of 2 judged prompts unstable.
        other = {"tokens": [tok(" Another"), tok(" answer")], "finish_reason": "stop"}
        prompts = PROMPTS + [{"id": "flaky", "prompt": "Flaky question three?"}]
        endpoint = self.start_endpoint({"prompts": {
            PROMPTS[0]["prompt"]: [GOOD], PROMPTS[1]["prompt"]: [GOOD, other, GOOD],
            prompts[2]["prompt"]: [GOOD, {"fault": "500"}, GOOD]}})
        suite = self.write_suite("suite.jsonl", prompts)
        base = ["--runs", "3", "--concurrency", "1", "--retries", "0", "--max-failed-rate", "0.5"]
        for limit, code in (("0.5", 0), ("0.4", 1)):
            with self.subTest(max_unstable_rate=limit):
                run, report, _ = self.audit_reports(
                    suite, ["--endpoint", endpoint.url], base + ["--max-unstable-rate", limit],
                    tag=f"rate{limit}")
                self.assertEqual(run.returncode, code, run.describe())
                summary = report["summary"]
                self.assertEqual((summary["stable_prompts"], summary["unstable_prompts"],
                                  summary["inconclusive_prompts"]), (1, 1, 1))
                gates = [g for g in summary["verdict"]["gates"]
                         if g["name"] == "max_unstable_rate"]
                self.assertEqual([(g["figure"], g["limit"], g["passed"]) for g in gates],
                                 [(0.5, float(limit), code == 0)])

    def test_unreachable_endpoint_is_an_error(self):
        suite = self.write_suite("suite.jsonl", PROMPTS)
        port = h.free_port()
        run, report, paths = self.audit_reports(
            suite, ["--endpoint", f"http://127.0.0.1:{port}"],
            ["--runs", "2", "--concurrency", "1", "--retries", "1", "--timeout", "2"],
            tag="unreachable", timeout=60)
        self.assertEqual(run.returncode, 3, run.describe())
        verdict = report["summary"]["verdict"]
        self.assertEqual(verdict["status"], "error")
        self.assertTrue(verdict["errors"])
        self.assertIn(f"127.0.0.1:{port}", run.stderr)
        self.assertLess(report["audit"]["recorded_requests"], report["audit"]["planned_requests"])

    def test_interrupted_audit_is_an_error(self):
        slow = dict(GOOD, delay_ms=150)
        endpoint = self.start_endpoint({"prompts": {p["prompt"]: [slow] for p in PROMPTS}})
        suite = self.write_suite("suite.jsonl", PROMPTS)
        paths = self.report_paths("interrupted")
        args = ["audit", "--suite", suite, "--endpoint", endpoint.url, "--api", "openai-chat",
                "--runs", "10", "--concurrency", "1", "--fail-on", "unstable",
                "--db", paths["db"], *h.report_args(paths)]
        start = time.monotonic()
        process = self.start_llmrepro(args)
        deadline = time.monotonic() + 30
        while h.recorded_rows(paths["db"]) < 2:
            self.assertIsNone(process.poll(), "the audit ended before it could be interrupted")
            self.assertLess(time.monotonic(), deadline, "no requests recorded within 30 s")
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=30)
        run = h.Run(args, process.returncode, stdout, stderr, time.monotonic() - start)
        self.assertEqual(run.returncode, 130, run.describe())
        report = self.assert_verdict_agrees(run, paths)
        self.assert_report_reproduces(paths, report)
        verdict = report["summary"]["verdict"]
        self.assertEqual(verdict["status"], "error")
        self.assertEqual(report["audit"]["status"], "partial")
        self.assertTrue(any(re.search(r"interrupt", e) for e in verdict["errors"]),
                        verdict["errors"])


if __name__ == "__main__":
    h.main()
