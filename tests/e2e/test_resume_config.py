#!/usr/bin/python3
"""Scenario: what --resume and `llmrepro report` may change about a stored audit.

--resume runs the stored plan: a plan-defining flag that says otherwise (--runs, --concurrency,
another suite, another endpoint) exits 2 before any request, with one message naming each
differing flag with its stored and given values, and leaves the database as it was; so do the
embedded engine's flags given (--engine-*) and the --header names (stored without their
values; a database stored before them compares nothing of them). Judging
flags given on --resume replace the stored ones and are stored, so that a later `report` judges
the same way. `llmrepro report --db X` re-judges with the judging flags it is given (without
storing them and without contacting any endpoint): --fail-on, --max-unique, --fragile-gap and
--fragile-window change the verdict and the exit code; bad values exit 2 and write nothing.
Standard audit (standard_audit.py): feynman and primes are unstable, feynman and hello fragile
(with --fragile-window 5); capital's 0.001 gap at index 5 lies just outside that window."""

import json
import os
import re
import sqlite3

import e2e_harness as h
import standard_audit as std
import token_blob

RUNS = "5"
LEVELS = "1,2"


class ResumeConfig(h.E2ETestCase):
    def setUp(self):
        super().setUp()
        self.endpoint = self.start_endpoint(std.script())
        self.suite = self.write_suite("suite.jsonl", std.suite())
        self.db = self.path("audit.db")

    def audit_args(self, **replace):
        """The audit's command line; `replace` maps a flag (without dashes, _ for -) to a new
        value, or to None to leave the flag out."""
        options = {"suite": self.suite, "endpoint": self.endpoint.url, "api": "openai-chat",
                   "model": std.MODEL, "runs": RUNS, "concurrency": LEVELS,
                   "fragile_window": str(std.WINDOW), "seed": str(std.SEED)}
        options.update(replace)
        args = ["audit", "--db", self.db]
        for name, value in options.items():
            if value is not None:
                args += ["--" + name.replace("_", "-"), value]
        return args

    def first_audit(self):
        run = self.run_llmrepro(self.audit_args() + ["--json", self.path("first.json")])
        self.assert_exit(run, 0)
        report = self.load_report(self.path("first.json"))
        self.assertEqual(report["audit"]["status"], "complete")
        self.assertEqual(report["summary"]["verdict"]["status"], "pass")
        self.assertEqual(report["summary"]["unstable_prompts"], 2)
        return report

    def snapshot(self):
        """Everything the database records, to compare before and after a refused command."""
        conn = h.open_db(self.db)
        try:
            return {"requests": conn.execute("SELECT * FROM requests ORDER BY 1").fetchall(),
                    "tokens": token_blob.token_count(conn),
                    "audit": conn.execute("SELECT * FROM audit").fetchall(),
                    "endpoints": conn.execute("SELECT * FROM endpoints").fetchall(),
                    "prompts": conn.execute("SELECT * FROM prompts ORDER BY 1").fetchall()}
        finally:
            conn.close()

    def stored_gates(self):
        conn = h.open_db(self.db)
        try:
            return json.loads(conn.execute("SELECT config FROM audit").fetchone()[0])["gates"]
        finally:
            conn.close()

    def test_resume_with_another_plan_is_refused(self):
        self.first_audit()
        other = self.start_endpoint(std.script(), name="other")
        changed = [dict(p) for p in std.suite()]
        changed[1]["prompt"] = "Where was Dirac born?"
        other_suite = self.write_suite("other-suite.jsonl", changed)
        before = self.snapshot()
        posts = len(self.endpoint.requests())
        cases = {
            "runs": ({"runs": "3"}, [r"--runs 5 \(stored\) vs 3 \(given\)"]),
            "levels": ({"concurrency": "1,4"},
                       [r"--concurrency 1,2 \(stored\) vs 1,4 \(given\)"]),
            "suite": ({"suite": other_suite},
                      [r"--suite '[^']*suite\.jsonl' \(stored\) vs '[^']*other-suite\.jsonl' "
                       r"\(given\): prompt 2 'feynman' differs in its prompt"]),
            "endpoint": ({"endpoint": other.url},
                         [re.escape(f"--endpoint {self.endpoint.url} (stored) vs {other.url} "
                                    "(given)")]),
            "every field": ({"runs": "3", "concurrency": "1,4", "suite": other_suite,
                             "endpoint": other.url},
                            [r"--runs 5 \(stored\) vs 3", r"--concurrency 1,2 \(stored\) vs 1,4",
                             r"--suite '", re.escape(f"--endpoint {self.endpoint.url} (stored)")]),
        }
        for name, (replace, needles) in cases.items():
            with self.subTest(case=name):
                run = self.run_llmrepro(self.audit_args(**replace) + ["--resume"], timeout=30)
                self.assert_exit(run, 2)
                self.assertIn(f"--resume: the audit in '{self.db}' was planned with other "
                              "settings: ", run.stderr)
                self.assertIn("Resume with the stored settings, or start a new audit with "
                              "--overwrite", run.stderr)
                for needle in needles:
                    self.assertRegex(run.stderr, needle, run.describe())
                self.assertEqual(len(self.endpoint.requests()), posts, "no request was sent")
                self.assertEqual(other.requests(), [], "no request was sent")
                self.assertEqual(self.snapshot(), before, "the database is unchanged")
        with self.subTest(case="the stored settings resume"):
            run = self.run_llmrepro(self.audit_args() + ["--resume"])
            self.assert_exit(run, 0)
            self.assertEqual(self.snapshot()["requests"], before["requests"])
        with self.subTest(case="the stored endpoint when none is given"):
            run = self.run_llmrepro(self.audit_args(endpoint=None, suite=None) + ["--resume"])
            self.assert_exit(run, 0)
            self.assertEqual(other.requests(), [])
            self.assertEqual(self.snapshot()["requests"], before["requests"])

    def stored_config(self, db=None):
        conn = h.open_db(db or self.db)
        try:
            return json.loads(conn.execute("SELECT config FROM audit").fetchone()[0])
        finally:
            conn.close()

    def test_resume_compares_the_header_names(self):
        # The names are stored, never the values; --resume without the same names (given again,
        # in any order or case) exits 2 before any request, naming both.
        run = self.run_llmrepro(self.audit_args() + ["--header", "X-Org: acme-org-value",
                                                     "--header", "X-Team:  blue-team-value"])
        self.assert_exit(run, 0)
        config = self.stored_config()
        self.assertEqual(config["header_names"], ["X-Org", "X-Team"])
        self.assertIsNone(config["engine"])  # an HTTP endpoint: no engine settings
        with open(self.db, "rb") as f:
            data = f.read()
        self.assertNotIn(b"acme-org-value", data)
        self.assertNotIn(b"blue-team-value", data)
        before = self.snapshot()
        posts = len(self.endpoint.requests())
        for headers, given in (([], "none"), (["--header", "X-Org: v"], "X-Org"),
                               (["--header", "X-Org: v", "--header", "X-Other: w"],
                                "X-Org, X-Other")):
            with self.subTest(given=given):
                run = self.run_llmrepro(self.audit_args() + headers + ["--resume"], timeout=30)
                self.assert_exit(run, 2)
                self.assertIn(f"--header names X-Org, X-Team (stored) vs {given} (given)",
                              run.stderr)
                self.assertEqual(len(self.endpoint.requests()), posts, "no request was sent")
                self.assertEqual(self.snapshot(), before, "the database is unchanged")
        run = self.run_llmrepro(self.audit_args() + ["--header", "x-team: t", "--header",
                                                     "X-ORG: o", "--resume"])
        self.assert_exit(run, 0)
        # A database stored before the names were (no header_names key) compares nothing.
        conn = sqlite3.connect(self.db)
        try:
            config = json.loads(conn.execute("SELECT config FROM audit").fetchone()[0])
            del config["header_names"], config["engine"]
            conn.execute("UPDATE audit SET config = ?", (json.dumps(config),))
            conn.commit()
        finally:
            conn.close()
        run = self.run_llmrepro(self.audit_args() + ["--resume"])
        self.assert_exit(run, 0)

    def test_resume_compares_the_embedded_engines_flags(self):
        suite = self.write_suite("engine.jsonl", [{"id": "capital",
                                                   "prompt": "The capital of France is"}])
        db = self.path("engine.db")
        args = ["audit", "--suite", suite, "--runs", "2", "--concurrency", "1", "--max-tokens",
                "4", "--db", db]
        run = self.run_llmrepro(args + ["--engine-max-num-seqs", "4", "--engine-seed", "7"],
                                timeout=120)
        self.assert_exit(run, 0)
        self.assertEqual(self.stored_config(db)["engine"],
                         {"max_num_seqs": 4, "batch_invariant": False, "prefix_cache": False,
                          "seed": 7})
        cases = {
            "max-num-seqs": (["--engine-max-num-seqs", "8"],
                             ["--engine-max-num-seqs 4 (stored) vs 8 (given)"]),
            "batch-invariant and seed": (["--engine-batch-invariant", "--engine-seed", "0"],
                                         ["--engine-batch-invariant off (stored) vs on (given)",
                                          "--engine-seed 7 (stored) vs 0 (given)"]),
            "prefix-cache": (["--engine-prefix-cache"],
                             ["--engine-prefix-cache off (stored) vs on (given)"]),
        }
        for name, (flags, needles) in cases.items():
            with self.subTest(case=name):
                run = self.run_llmrepro(args + flags + ["--resume"], timeout=30)
                self.assert_exit(run, 2)
                self.assertIn("was planned with other settings: ", run.stderr)
                for needle in needles:
                    self.assertIn(needle, run.stderr)
        # Not given: the stored settings run; given as stored: nothing differs.
        run = self.run_llmrepro(args + ["--resume"], timeout=120)
        self.assert_exit(run, 0)
        run = self.run_llmrepro(args + ["--engine-max-num-seqs", "4", "--engine-seed", "7",
                                        "--resume"], timeout=120)
        self.assert_exit(run, 0)

    def test_gates_given_on_resume_are_stored(self):
        self.first_audit()
        before = self.snapshot()["requests"]
        posts = len(self.endpoint.posts())
        report_path = self.path("resumed.json")
        run = self.run_llmrepro(self.audit_args() + ["--resume", "--fail-on", "unstable",
                                                     "--json", report_path])
        self.assert_exit(run, 1)
        self.assertIn("FAIL", run.stdout)
        self.assertEqual(self.load_report(report_path)["summary"]["verdict"]["status"], "fail")
        self.assertEqual(len(self.endpoint.posts()), posts, "the audit was complete")
        self.assertEqual(self.snapshot()["requests"], before)
        self.assertEqual(self.stored_gates()["fail_on"], "unstable")

        with self.subTest(case="report keeps the stored gates"):
            run = self.run_llmrepro(["report", "--db", self.db, "--json", self.path("r1.json")])
            self.assert_exit(run, 1)
            self.assertEqual(self.load_report(self.path("r1.json"))["summary"]["verdict"]["status"],
                             "fail")
        with self.subTest(case="quiet still says why"):
            run = self.run_llmrepro(["report", "--db", self.db, "--quiet"])
            self.assert_exit(run, 1)
            self.assertEqual(run.stdout, "")
            self.assertRegex(run.stderr, r"^llmrepro: FAIL", run.describe())
        with self.subTest(case="report --fail-on none passes and stores nothing"):
            run = self.run_llmrepro(["report", "--db", self.db, "--fail-on", "none"])
            self.assert_exit(run, 0)
            self.assertEqual(self.stored_gates()["fail_on"], "unstable")
        with self.subTest(case="resume --fail-on none stores it back"):
            run = self.run_llmrepro(self.audit_args() + ["--resume", "--fail-on", "none"])
            self.assert_exit(run, 0)
            self.assertEqual(self.stored_gates()["fail_on"], "none")
            self.assert_exit(self.run_llmrepro(["report", "--db", self.db]), 0)
        with self.subTest(case="resume with a stability gate over one completion per prompt"):
            db = self.path("single.db")
            args = self.audit_args(runs="1", concurrency="1")
            args[args.index("--db") + 1] = db
            # One completion per prompt: no gate judges stability, so the audit runs (its
            # verdict is the lead's: nothing could be compared).
            first = self.run_llmrepro(args)
            self.assertNotEqual(first.returncode, 2, first.describe())
            stored = h.open_db(db)
            rows = stored.execute("SELECT COUNT(*) FROM requests").fetchone()[0]
            stored.close()
            run = self.run_llmrepro(args + ["--resume", "--max-unique", "1"])
            self.assert_exit(run, 2)
            self.assertIn("one completion per prompt cannot show instability", run.stderr)
            stored = h.open_db(db)
            self.assertEqual(stored.execute("SELECT COUNT(*) FROM requests").fetchone()[0], rows)
            self.assertEqual(json.loads(stored.execute("SELECT config FROM audit").fetchone()[0])
                             ["gates"]["max_unique"], None)
            stored.close()

    def test_report_rejudges_the_stored_audit(self):
        self.first_audit()
        before = self.snapshot()
        requests = len(self.endpoint.requests())
        cases = [([], 0),
                 (["--fail-on", "unstable"], 1),
                 (["--fail-on", "none"], 0),
                 (["--max-unique", "1"], 1),
                 (["--max-unique", "2"], 0),
                 (["--max-unstable-rate", "0.25"], 1),
                 (["--max-unstable-rate", "0.5"], 0),
                 (["--fail-on", "fragile"], 1),
                 # τ below every gap in the window: nothing is fragile.
                 (["--fail-on", "fragile", "--fragile-gap", "0.005"], 0),
                 # A window of 6 reaches capital's 0.001 gap at index 5.
                 (["--fail-on", "fragile", "--fragile-gap", "0.005", "--fragile-window", "6"], 1),
                 (["--max-failed-rate", "0.5"], 0)]
        for flags, code in cases:
            with self.subTest(flags=flags):
                report_path = self.path("report.json")
                if os.path.exists(report_path):
                    os.remove(report_path)
                run = self.run_llmrepro(["report", "--db", self.db, "--json", report_path, *flags])
                self.assert_exit(run, code)
                verdict = self.load_report(report_path)["summary"]["verdict"]
                self.assertEqual(verdict["status"], "fail" if code else "pass")
        self.assertEqual(len(self.endpoint.requests()), requests, "report contacts no endpoint")
        self.assertEqual(self.snapshot(), before, "report stores nothing")

        bad = [("--fail-on", "bogus"), ("--fail-on", "disagree"), ("--max-unique", "0"),
               ("--max-unstable-rate", "nan"), ("--min-tara", "2"), ("--max-failed-rate", "inf"),
               ("--max-failed-rate", "-inf"), ("--fragile-gap", "nan"), ("--fragile-gap", "0"),
               ("--fragile-window", "0")]
        for flag, value in bad:
            with self.subTest(flag=flag, value=value):
                report_path = self.path("bad.json")
                run = self.run_llmrepro(["report", "--db", self.db, "--json", report_path,
                                         f"{flag}={value}"])
                self.assert_exit(run, 2)
                self.assertIn(flag, run.stderr)
                self.assertFalse(os.path.exists(report_path), "no report written")
        self.assertEqual(self.snapshot(), before)


if __name__ == "__main__":
    h.main()
