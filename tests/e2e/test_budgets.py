#!/usr/bin/python3
"""Scenario: budgets (--max-requests, --max-tokens-total, --max-cost), --dry-run and --stop-after
against the scripted endpoint. The standard suite (4 prompts; 2 text, 2 chat) runs 5 times at
levels 1,2,4: 60 planned requests. A budget is never exceeded, in flight included (level 4); the
run that it stops ends with exit 3 and one error naming the budget, the figures and the
undecided prompts; --resume with a larger budget sends only the rest; --dry-run sends nothing
and writes nothing; --stop-after W caps every request's max_tokens at W."""

import json
import os

import e2e_harness as h
import standard_audit as std

PLANNED = len(std.PROMPTS) * std.RUNS * len(std.LEVELS)  # 60
MAX_TOKENS = 8
# The scripted endpoint reports 12 prompt tokens and at most 6 completion tokens per answer.
ENDPOINT_USAGE_MAX = 12 + 6


def prompt_bound(text, chat):
    """docs/design.md "Budgets": UTF-8 bytes + 64 per message + 64; a chat message's role too."""
    size = len(text.encode("utf-8")) + (len("user") if chat else 0)
    return size + 64 + 64


BOUND_OF = {text: prompt_bound(text, chat) + MAX_TOKENS for _, text, chat in std.PROMPTS}


class Budgets(h.E2ETestCase):
    def audit(self, endpoint, *extra, db="audit.db", resume=False, levels=std.LEVELS,
              runs=std.RUNS):
        report = self.path("report.json")
        args = ["audit", "--endpoint", endpoint.url, "--api", "openai-chat", "--model", std.MODEL,
                "--db", self.path(db), "--json", report, "--max-tokens", str(MAX_TOKENS), *extra]
        if resume:
            args.append("--resume")
        else:
            args += ["--suite", self.suite, "--runs", str(runs), "--concurrency",
                     ",".join(map(str, levels)), "--seed", str(std.SEED)]
            # The plan's arithmetic alone; test_the_preflight_is_charged counts the preflight.
            if "--preflight" not in extra:
                args.append("--no-preflight")
            else:
                args.remove("--preflight")
        run = self.run_llmrepro(args)
        return run, (self.load_report(report) if os.path.exists(report) else None)

    def test_the_preflight_is_charged(self):
        # Two preflight requests fit --max-requests 10 (its five at most are reserved first),
        # and the plan gets what is left.
        endpoint = self.start_endpoint(std.script(), name="charged")
        run, report = self.audit(endpoint, "--preflight", "--max-requests", "10")
        self.assertEqual(len(endpoint.preflight_posts()), 2, run.describe())
        self.assertEqual(len(endpoint.posts()), 8, run.describe())
        self.assertEqual(report["endpoints"][0]["capabilities"]["requests"], 2)
        # Four do not leave room for five: no preflight, and the plan gets all four.
        small = self.start_endpoint(std.script(), name="small")
        run, _ = self.audit(small, "--preflight", "--max-requests", "4", db="small.db")
        self.assertEqual(small.preflight_posts(), [])
        self.assertEqual(len(small.posts()), 4, run.describe())
        self.assertIn(f"llmrepro: no capability preflight at {small.url}: its 5 requests at most "
                      "do not fit the budget", run.stderr)

    def setUp(self):
        super().setUp()
        self.suite = self.write_suite("suite.jsonl", std.suite())

    def reported(self, db):
        """The JSON `llmrepro report` renders from the stored audit."""
        path = self.path("reported.json")
        run = self.run_llmrepro(["report", "--db", self.path(db), "--json", path, "--quiet"])
        self.assertIn(run.returncode, (0, 1, 3), run.describe())
        return self.load_report(path)

    def undecided(self, report):
        return [p["id"] for p in report["prompts"]
                if p["status"] != "unstable" and p["runs"] < std.RUNS * len(std.LEVELS)]

    def test_max_requests_exact_then_resume_sends_the_rest(self):
        endpoint = self.start_endpoint(std.script())
        run, report = self.audit(endpoint, "--max-requests", "10")
        self.assert_exit(run, 3)
        self.assertEqual(len(endpoint.posts()), 10)
        self.assertEqual(report["summary"]["verdict"]["status"], "error")
        undecided = self.undecided(report)
        self.assertTrue(undecided)
        expected = (f"budget --max-requests 10 reached: 10 of {PLANNED} planned requests sent; "
                    f"{len(undecided)} prompt{'s' if len(undecided) != 1 else ''} undecided: "
                    + ", ".join(undecided))
        self.assertIn(expected, report["summary"]["verdict"]["errors"])
        self.assertIn(expected, run.stderr + run.stdout)
        self.assertEqual(report["config"]["max_requests"], 10)
        # `report` judges the stored audit as the run did: the budget's line is stored with it.
        self.assertEqual(self.reported(db="audit.db")["summary"]["verdict"],
                         report["summary"]["verdict"])

        # The whole audit counts: 10 spent, 50 more allowed, exactly the rest is sent.
        run, report = self.audit(endpoint, "--max-requests", str(PLANNED), resume=True)
        self.assertNotEqual(run.returncode, 3, run.describe())
        self.assertEqual(len(endpoint.posts()), PLANNED)
        self.assertEqual(report["summary"]["requests"], PLANNED)
        self.assertEqual(report["config"]["max_requests"], PLANNED)
        # The run that completed it cleared the stored stop.
        again = self.reported(db="audit.db")["summary"]["verdict"]
        self.assertEqual(again, report["summary"]["verdict"])
        self.assertFalse(any(e.startswith("budget ") for e in again["errors"]))

    def test_max_requests_at_level_4_counts_the_requests_in_flight(self):
        endpoint = self.start_endpoint(std.script())
        run, _ = self.audit(endpoint, "--max-requests", "7", levels=[4])
        self.assert_exit(run, 3)
        posts = endpoint.posts()
        self.assertEqual(len(posts), 7)

    def test_fillers_and_primes_count(self):
        endpoint = self.start_endpoint(std.script())
        budget = 25
        run, report = self.audit(endpoint, "--max-requests", str(budget), "--probe",
                                 "mixed,prefix", levels=[2], runs=2)
        self.assert_exit(run, 3)
        # Every generation request counts: audited, fillers and primes; cache flushes do not.
        generations = [p for p in endpoint.posts()
                       if "flush" not in p["path"] and "reset_prefix" not in p["path"]]
        self.assertLessEqual(len(generations), budget)
        self.assertGreater(len(generations), budget - 3, "only the last reservations are left")
        self.assertTrue(any(e.startswith(f"budget --max-requests {budget} reached")
                            for e in report["summary"]["verdict"]["errors"]))

    def spent_tokens(self, report):
        """Prompt + completion tokens the endpoint reported over the recorded requests."""
        usage = report["summary"]["usage"]
        self.assertEqual(usage["requests_with_prompt_usage"], usage["requests"])
        return usage["prompt_tokens"] + usage["completion_tokens"]

    def test_max_tokens_total_never_exceeded(self):
        endpoint = self.start_endpoint(std.script())
        # The whole plan would use 331 tokens (240 prompt + 91 completion, as reported): 300 stops
        # it. A prompt's first request is reserved at its byte bound, later ones at the prompt
        # tokens its first answer reported.
        budget = 300
        run, report = self.audit(endpoint, "--max-tokens-total", str(budget), levels=[4])
        self.assert_exit(run, 3)
        posts = endpoint.posts()
        self.assertGreater(len(posts), 0)
        self.assertLess(len(posts), PLANNED // 3, "the budget stopped the run")
        self.assertLessEqual(len(posts) * ENDPOINT_USAGE_MAX, budget)
        self.assertLessEqual(self.spent_tokens(report), budget)
        self.assertTrue(any(e.startswith(f"budget --max-tokens-total {budget} reached: "
                                         f"{len(posts)} of {PLANNED // 3} planned requests sent")
                            for e in report["summary"]["verdict"]["errors"]), report["summary"])

    def test_max_cost_never_exceeded(self):
        endpoint = self.start_endpoint(std.script())
        # 1,000 per million tokens: 0.3 is 300 tokens at most, fewer than the plan's 331.
        run, report = self.audit(endpoint, "--price", "input=1000,output=1000",
                                 "--max-cost", "0.3", levels=[2])
        self.assert_exit(run, 3)
        posts = endpoint.posts()
        self.assertGreater(len(posts), 0)
        self.assertLess(len(posts), PLANNED // 3)
        self.assertLessEqual(self.spent_tokens(report) * 1000 / 1e6, 0.3)
        self.assertLessEqual(report["summary"]["usage"]["cost"], 0.3)
        self.assertEqual(report["config"]["price"], "input=1000,output=1000")
        self.assertEqual(report["config"]["max_cost"], 0.3)
        self.assertTrue(any(e.startswith("budget --max-cost 0.3 reached")
                            for e in report["summary"]["verdict"]["errors"]))

    def test_dry_run_sends_nothing_and_prints_the_bounds(self):
        endpoint = self.start_endpoint(std.script())
        run, report = self.audit(endpoint, "--dry-run", "--price", "input=1,output=2")
        self.assert_exit(run, 0)
        self.assertEqual(endpoint.requests(), [])
        self.assertFalse(os.path.exists(self.path("audit.db")))
        self.assertIsNone(report)
        # Per round of the 4 prompts: 155 + 151 + 150 + 142 = 598 prompt tokens, 4 x 8 completion.
        self.assertEqual(sum(BOUND_OF.values()), 598 + 32)
        lines = run.stdout.splitlines()
        for level in std.LEVELS:
            self.assertIn(f"       0  sweep   {level:>5}        20       0  {5 * 630:>11}", lines)
        # Three waves of 5 rounds: 3 x 5 x 598 prompt, 60 x 8 completion.
        self.assertIn("total: 60 requests (60 audited, 0 primes), at most 9450 tokens "
                      "(8970 prompt + 480 completion)", lines)
        # 8970 x 1 + 480 x 2 per million.
        self.assertIn("cost bound: 0.009930 at --price input=1,output=2", lines)

    def test_dry_run_over_budget_says_so_and_exits_1(self):
        endpoint = self.start_endpoint(std.script())
        # The cost bound is 0.009930 (above); a budget just below it fails the dry run, with one
        # line naming both figures; one at the bound passes.
        run, _ = self.audit(endpoint, "--dry-run", "--price", "input=1,output=2",
                            "--max-cost", "0.0099")
        self.assert_exit(run, 1)
        self.assertEqual(endpoint.requests(), [])
        self.assertFalse(os.path.exists(self.path("audit.db")))
        over = [line for line in run.stdout.splitlines() if line.startswith("over budget")]
        self.assertEqual(over, ["over budget: the cost bound 0.009930 is above --max-cost 0.0099"])
        run, _ = self.audit(endpoint, "--dry-run", "--price", "input=1,output=2",
                            "--max-cost", "0.00993")
        self.assert_exit(run, 0)
        self.assertNotIn("over budget", run.stdout)
        # The request count and the token bound likewise: 60 requests, 9450 tokens.
        run, _ = self.audit(endpoint, "--dry-run", "--max-requests", "59",
                            "--max-tokens-total", "9449")
        self.assert_exit(run, 1)
        over = [line for line in run.stdout.splitlines() if line.startswith("over budget")]
        self.assertEqual(over, ["over budget: the plan's 60 requests are more than "
                                "--max-requests 59",
                                "over budget: the token bound 9450 is above --max-tokens-total "
                                "9449"])
        run, _ = self.audit(endpoint, "--dry-run", "--max-requests", "60",
                            "--max-tokens-total", "9450")
        self.assert_exit(run, 0)
        self.assertEqual(endpoint.requests(), [])

    def test_dry_run_with_api_auto_detects_nothing(self):
        endpoint = self.start_endpoint(std.script())
        run = self.run_llmrepro(["audit", "--suite", self.suite, "--endpoint", endpoint.url,
                                 "--db", self.path("auto.db"), "--dry-run"])
        self.assert_exit(run, 0)
        self.assertEqual(endpoint.requests(), [])
        self.assertIn(f"endpoint 0: {endpoint.url} (--api auto: the dialect is decided when the "
                      "audit runs)", run.stdout)
        self.assertFalse(os.path.exists(self.path("auto.db")))

    def test_stop_after_caps_every_request(self):
        endpoint = self.start_endpoint(std.script())
        suite = self.write_suite("own.jsonl", [dict(std.suite()[0], max_tokens=50)]
                                 + std.suite()[1:])
        report_path = self.path("capped.json")
        md_path = self.path("capped.md")
        run = self.run_llmrepro(["audit", "--suite", suite, "--endpoint", endpoint.url,
                                 "--api", "openai-chat", "--model", std.MODEL, "--runs", "2",
                                 "--concurrency", "1,2", "--stop-after", "3",
                                 "--db", self.path("capped.db"), "--json", report_path,
                                 "--markdown", md_path])
        posts = endpoint.posts()
        self.assertEqual(len(posts), 4 * 2 * 2)
        self.assertEqual({json.loads(p["body"])["max_tokens"] for p in posts}, {3})
        line = "completions capped at 3 tokens (--stop-after): divergence beyond token 3 is not seen"
        self.assertIn(line, run.stdout + run.stderr)
        with open(md_path, encoding="utf-8") as f:
            self.assertIn(line, f.read())
        self.assertEqual(self.load_report(report_path)["config"]["stop_after"], 3)

    def test_bad_budget_flags_exit_2_before_any_request(self):
        endpoint = self.start_endpoint(std.script())
        cases = [
            (["--max-requests", "0"], "--max-requests must be at least 1 (got 0)"),
            (["--max-tokens-total", "-5"], "--max-tokens-total must be at least 1 (got -5)"),
            (["--max-cost", "1"], "--max-cost needs --price"),
            (["--price", "input=1,output=1", "--max-cost", "0"], "--max-cost"),
            (["--price", "input=1,output=1", "--max-cost", "nan"], "--max-cost"),
            (["--stop-after", "0"], "--stop-after must be at least 1 (got 0)"),
            (["--price", "input=1"], "--price"),
        ]
        for flags, message in cases:
            with self.subTest(flags=flags):
                db = self.path("bad.db")
                run = self.run_llmrepro(["audit", "--suite", self.suite, "--endpoint",
                                         endpoint.url, "--api", "openai-chat", "--db", db,
                                         *flags])
                self.assert_exit(run, 2)
                self.assertIn(message, run.stderr)
                self.assertFalse(os.path.exists(db))
        self.assertEqual(endpoint.requests(), [])


if __name__ == "__main__":
    h.main()
