#!/usr/bin/python3
"""Scenario: bad input ends with exit 2 and a message that says what and where, before any
request reaches the endpoint (not even --api auto's detection probes): a malformed suite line
(named by file, line and field), a missing suite file, an unknown --api, non-numeric --runs,
a bad concurrency list, too many candidates; NaN, infinite and out-of-range values of every
numeric flag, a concurrency level listed twice, a stability gate over one completion per prompt,
and --fail-on disagree with one endpoint. None of them creates the database."""

import os
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
        """An audit of `suite`; `extra` options (name, value pairs) replace the defaults of the
        same name."""
        options = {"--runs": "1", "--concurrency": "1"}
        for name, value in zip(extra[::2], extra[1::2]):
            options[name] = value
        args = ["audit", "--suite", suite, "--endpoint", self.endpoint.url, "--api", "auto",
                "--db", self.path("audit.db")]
        for name, value in options.items():
            args += [name] if value is None else [name, value]  # None: "--flag=value" alone
        return self.run_llmrepro(args, timeout=30)

    def assert_rejected(self, run, *needles):
        self.assert_exit(run, 2)
        for needle in needles:
            self.assertRegex(run.stderr, needle, run.describe())
        self.assertEqual(self.endpoint.requests(), [], "no request before the input is valid")
        self.assertFalse(os.path.exists(self.path("audit.db")),
                         "no database before the input is valid\n" + run.describe())

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

    def test_non_finite_and_out_of_range_numbers(self):
        # `--flag=value`, so that "-inf" is read as the flag's value and not as an option.
        unit = ["nan", "inf", "-inf", "-0.1", "1.5"]
        cases = {
            "--fragile-gap": ["nan", "inf", "-inf", "0", "-0.1"],
            "--fragile-window": ["0", "-3"],
            "--max-unstable-rate": unit,
            "--min-tara": unit,
            "--max-failed-rate": unit,
            "--max-logprob-drift": ["nan", "inf", "-inf", "-0.1"],
            "--max-unique": ["0", "-1"],
            "--rate": ["nan", "inf", "-inf", "-1"],
            "--timeout": ["nan", "inf", "-inf", "0", "-5"],
            "--semantic-threshold": ["nan", "inf", "-inf", "1.5", "-1.5"],
        }
        for flag, values in cases.items():
            for value in values:
                with self.subTest(flag=flag, value=value):
                    run = self.audit(self.suite, f"{flag}={value}", None)
                    self.assert_rejected(run, re.escape(flag))

    def test_concurrency_level_listed_twice(self):
        for levels, level in (("1,1", 1), ("1,8,1", 1), ("2,8,8", 8)):
            with self.subTest(levels=levels):
                run = self.audit(self.suite, "--runs", "3", "--concurrency", levels)
                self.assert_rejected(run, re.escape(f"--concurrency lists level {level} twice"))

    def test_stability_gate_over_one_completion_per_prompt(self):
        message = re.escape("one completion per prompt cannot show instability: --runs 1 at one "
                            "concurrency level; raise --runs or add a level")
        for gate in (["--fail-on", "unstable"], ["--fail-on", "fragile,unstable"],
                     ["--max-unique", "1"], ["--max-unstable-rate", "0.5"],
                     ["--max-logprob-drift", "0"]):
            with self.subTest(gate=gate):
                run = self.audit(self.suite, "--runs", "1", "--concurrency", "4", *gate)
                self.assert_rejected(run, message)

    def test_fail_on_values(self):
        for value, needles in (("disagree", ["--fail-on disagree", "two endpoints"]),
                               ("unstable,disagree", ["--fail-on disagree", "two endpoints"]),
                               ("bogus", ["--fail-on", "bogus"]),
                               ("unstable,unstable", ["--fail-on", "unstable"])):
            with self.subTest(fail_on=value):
                run = self.audit(self.suite, "--runs", "3", "--fail-on", value)
                self.assert_rejected(run, *needles)
        with self.subTest(case="disagree with two --endpoint passes the check"):
            # The check counts endpoints, it does not forbid the value: with two endpoints the
            # audit runs (and the endpoint answers both).
            run = self.run_llmrepro(["audit", "--suite", self.suite, "--endpoint",
                                     self.endpoint.url, "--endpoint", self.endpoint.url,
                                     "--api", "openai-chat", "--runs", "2", "--concurrency", "1",
                                     "--fail-on", "disagree", "--db", self.path("two.db")],
                                    timeout=60)
            self.assertNotEqual(run.returncode, 2, run.describe())


if __name__ == "__main__":
    h.main()
