#!/usr/bin/python3
"""Scenario: bad input ends with exit 2 and a message that says what and where, before any
request reaches the endpoint (not even --api auto's detection probes): a malformed suite line
(named by file, line and field), a missing suite file, an unknown --api, non-numeric --runs,
a bad concurrency list, too many candidates."""

import re

import e2e_harness as h
import standard_audit as std

GOOD = {"id": "capital", "prompt": "Name the capital of France."}


class BadInput(h.E2ETestCase):
    def setUp(self):
        super().setUp()
        self.endpoint = self.start_endpoint(std.script())
        self.suite = self.write_suite("good.jsonl", [GOOD])

    def audit(self, suite, *extra):
        """An audit of `suite`; `extra` options replace the defaults of the same name."""
        options = {"--runs": "1", "--concurrency": "1"}
        for name, value in zip(extra[::2], extra[1::2]):
            options[name] = value
        args = ["audit", "--suite", suite, "--endpoint", self.endpoint.url, "--api", "auto",
                "--db", self.path("audit.db")]
        for name, value in options.items():
            args += [name, value]
        return self.run_llmrepro(args, timeout=30)

    def assert_rejected(self, run, *needles):
        self.assert_exit(run, 2)
        for needle in needles:
            self.assertRegex(run.stderr, needle, run.describe())
        self.assertEqual(self.endpoint.requests(), [], "no request before the input is valid")

    def test_malformed_suite_lines(self):
        cases = [
            ("wrong_type.jsonl", [GOOD, {"id": "b", "prompt": 42}], 2, "prompt"),
            ("bad_json.jsonl", [GOOD, {"id": "b", "prompt": "ok"}, '{"id": "c", "prompt": "x"'],
             3, None),
            ("unknown_field.jsonl", [GOOD, {"id": "b", "prompt": "x", "max_token": 5}], 2,
             "max_token"),
            ("bad_max_tokens.jsonl", [{"id": "a", "prompt": "x", "max_tokens": -3}], 1,
             "max_tokens"),
            ("no_prompt.jsonl", [GOOD, {"id": "b", "prompt": "x"}, {"id": "c"}], 3, "prompt|messages"),
            ("duplicate_id.jsonl", [GOOD, GOOD], 2, "id"),
        ]
        for name, lines, line, field in cases:
            with self.subTest(suite=name):
                run = self.audit(self.write_suite(name, lines))
                needles = [re.escape(name) + rf":{line}\b"] + ([field] if field else [])
                self.assert_rejected(run, *needles)

    def test_missing_suite_file(self):
        missing = self.path("no-such-suite.jsonl")
        self.assert_rejected(self.audit(missing), re.escape("no-such-suite.jsonl"))

    def test_unknown_api(self):
        run = self.run_llmrepro(["audit", "--suite", self.suite, "--endpoint", self.endpoint.url,
                                 "--api", "bogus-api", "--db", self.path("audit.db")], timeout=30)
        self.assert_rejected(run, "bogus-api", "--api")

    def test_non_numeric_runs(self):
        self.assert_rejected(self.audit(self.suite, "--runs", "five"), "--runs", "five")

    def test_bad_option_values(self):
        cases = [(["--concurrency", "1,x"], "--concurrency"),
                 (["--concurrency", "0"], "--concurrency"),
                 (["--top-logprobs", "21"], "--top-logprobs"),
                 (["--runs", "0"], "--runs")]
        for extra, needle in cases:
            with self.subTest(args=extra):
                self.assert_rejected(self.audit(self.suite, *extra), needle)


if __name__ == "__main__":
    h.main()
