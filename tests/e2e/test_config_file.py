#!/usr/bin/python3
"""Scenario: `llmrepro audit --config FILE`. A file using every kind of value (strings, numbers,
booleans, arrays, group tables, "_" for "-") plans exactly the audit its flags plan, and a flag on
the command line wins over it. A bad file (unknown key, wrong type, a value a flag's validator
refuses, a value the audit's rules refuse, a credential header, a URL with a password, a TOML
syntax error) exits 2 with FILE:LINE and the key on stderr, before any request reaches the
scripted endpoint (not even --api auto's detection) and before the database is created.
`llmrepro report --config` takes its --db, reports and gates from a file too."""

import os
import re

import e2e_harness as h
import standard_audit as std

GOOD = {"id": "capital", "prompt": "Name the capital of France."}


class ConfigFile(h.E2ETestCase):
    def setUp(self):
        super().setUp()
        self.suite = self.write_suite("suite.jsonl", [GOOD, {"id": "b", "prompt": "Say hi."}])

    def write_config(self, text):
        path = self.path("ci.toml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def test_config_plans_the_audit_of_its_flags(self):
        config = self.write_config(
            f'suite = "{self.suite}"\n'
            "max_tokens = 12\n"
            "stream = true\n"
            "[plan]\n"
            "runs = 3\n"
            "concurrency = [1, 2, 4]\n"
            "[probes]\n"
            'probe = ["sweep", "mixed"]\n'
            "[budgets]\n"
            "max-requests = 1000\n")
        flags = ["--suite", self.suite, "--max-tokens", "12", "--stream", "--runs", "3",
                 "--concurrency", "1,2,4", "--probe", "sweep,mixed", "--max-requests", "1000"]
        from_flags = self.run_llmrepro(["audit", "--dry-run"] + flags)
        from_file = self.run_llmrepro(["audit", "--dry-run", "--config", config])
        self.assert_exit(from_flags, 0)
        self.assert_exit(from_file, 0)
        self.assertIn("total: 36 requests", from_flags.stdout)  # 2 prompts, 3 runs, 3 levels, 2 probes
        self.assertEqual(from_file.stdout, from_flags.stdout)
        # The command line wins: --runs 1 and one level make a sixth of the requests.
        override = self.run_llmrepro(["audit", "--dry-run", "--config", config, "--runs", "1",
                                      "--concurrency", "1", "--max-requests", "1000"])
        self.assert_exit(override, 0)
        self.assertIn("total: 4 requests", override.stdout)

    def test_report_reads_its_flags_from_a_config(self):
        db = self.path("audit.db")
        run = self.run_llmrepro(["audit", "--suite", self.suite, "--runs", "2", "--concurrency",
                                 "1", "--max-tokens", "4", "--db", db, "--quiet"])
        self.assert_exit(run, 0)
        config = self.write_config(f'db = "{db}"\njson = "{self.path("report.json")}"\n'
                                   '[judging-and-gates]\nmax_unique = 1\n')
        report = self.run_llmrepro(["report", "--config", config, "--quiet"])
        self.assert_exit(report, 0)  # one level, serial: the engine repeats itself
        summary = self.load_report(self.path("report.json"))
        self.assertEqual(summary["summary"]["prompts"], 2)
        self.assertEqual(summary["config"]["gates"]["max_unique"], 1)
        # --db is still required: from the command line or the file.
        missing = self.run_llmrepro(["report", "--config", self.write_config("quiet = true\n")])
        self.assert_exit(missing, 2)
        self.assertIn("--db is required", missing.stderr)

    def test_bad_config_exits_2_before_any_request(self):
        endpoint = self.start_endpoint(std.script())
        db = self.path("audit.db")
        head = (f'suite = "{self.suite}"\nendpoint = "{endpoint.url}"\napi = "auto"\n'
                f'db = "{db}"\nconcurrency = [1]\n')
        cases = [
            ("unknown key", "runz = 3\n", r":6: runz: unknown key"),
            ("wrong type", "[plan]\nruns = \"3\"\n", r":7: plan\.runs: expected an integer"),
            ("validator", "max_response_bytes = 10\n",
             r":6: max_response_bytes: --max-response-bytes: Value 10 not in range"),
            ("choices", 'probe = ["sweep", "wide"]\n', r":6: probe: 'wide' is not one of"),
            ("audit rule", "runs = 0\n", r"--runs must be at least 1 \(got 0\) \(--runs from .*ci\.toml:6\)"),
            ("credential header", 'header = ["Authorization: Bearer sk-test-123456"]\n',
             r":6: header: holds a credential header; .*api-key-env"),
            ("url credentials", 'compare = ["http://user:hunter22@127.0.0.1:9/v1"]\n',
             r":6: compare: holds a URL with credentials; .*api-key-env"),
            ("syntax", "runs = = 3\n", r"ci\.toml:6: "),
        ]
        for name, tail, needle in cases:
            with self.subTest(case=name):
                config = self.write_config(head + tail)
                run = self.run_llmrepro(["audit", "--config", config], timeout=30)
                self.assert_exit(run, 2)
                self.assertIn(config, run.stderr, run.describe())
                self.assertRegex(run.stderr, needle, run.describe())
                self.assertNotIn("sk-test-123456", run.stderr)
                self.assertNotIn("hunter22", run.stderr)
                self.assertEqual(endpoint.requests(), [], "no request before the file is valid")
                self.assertFalse(os.path.exists(db), "no database\n" + run.describe())


if __name__ == "__main__":
    h.main()
