#!/usr/bin/python3
"""Scenario: `llmrepro audit --profile deterministic` against the embedded reference engine. With
--engine-batch-invariant every prompt is bit-identical on every level and probe kind (cold and
warm prefix cache, filler traffic across 256 tokens, greedy and sampled: the engine samples the
mixed-sampling probe's fillers at temperature 1) and the audit passes; the default engine
fails, and the report names the first level above 1 where the claim broke and what broke there.
--max-concurrency caps the profile's levels, and --resume compares it with the stored ones; a bad
--max-concurrency, an unknown --profile and --concurrency or --probe beside the profile exit 2
before any request."""

import html
import os

import e2e_harness as h
import standard_audit as std

PROMPTS = 3
PROFILE = ["--profile", "deterministic", "--max-concurrency", "16", "--runs", "2",
           "--max-tokens", "16"]


def demo_suite():
    """The first PROMPTS prompts of the engine demo suite, unchanged."""
    path = os.path.join(h.ARGS.source_dir, "examples", "suites", "engine-demo.jsonl")
    with open(path, encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    return lines[:PROMPTS]


class ProfileDeterministic(h.E2ETestCase):
    def audit(self, tag, *extra):
        suite = self.write_suite(f"{tag}.jsonl", demo_suite())
        return self.audit_reports(suite, [], extra=(*PROFILE, *extra), tag=tag, timeout=120)

    def assert_line_everywhere(self, run, report, paths):
        """The determinism line is stated by the terminal, the Markdown and the HTML."""
        line = report["summary"]["determinism"]["line"]
        self.assertIn(line, run.stdout)
        with open(paths["markdown"], encoding="utf-8") as f:
            self.assertIn(line, html.unescape(f.read()))
        with open(paths["html"], encoding="utf-8") as f:
            found, text = h.ElementText.of(f.read(), "determinism")
        self.assertEqual((found, text), (1, line))

    def assert_profile_plan(self, report):
        config = report["config"]
        self.assertEqual(config["profile"], "deterministic")
        self.assertEqual(config["concurrency"], [1, 2, 8, 9, 16])
        self.assertEqual(config["probes"], ["sweep", "mixed", "mixed-sampling", "prefix"])
        self.assertEqual(config["gates"]["max_unique"], 1)
        self.assertEqual(config["gates"]["max_logprob_drift"], 0)
        probes = {probe["probe"]: probe for probe in report["probes"]}
        self.assertGreater(probes["mixed"]["activity"]["filler_sent"], 0)
        # The engine samples the mixed-sampling probe's fillers rather than refusing them.
        sampled = probes["mixed-sampling"]["activity"]
        self.assertGreater(sampled["filler_sent"], 0)
        self.assertEqual(sampled["filler_failed"], 0)
        self.assertEqual([level["refused"] for level in sampled["filler_levels"]], [0] * 5)
        self.assertGreater(probes["prefix"]["activity"]["flushes_sent"], 0)
        self.assertEqual(probes["prefix"]["activity"]["flush_route"], "/flush_cache")

    def test_batch_invariant_engine_passes(self):
        run, report, paths = self.audit("invariant", "--engine-batch-invariant")
        self.assert_exit(run, 0)
        self.assert_profile_plan(report)
        determinism = report["summary"]["determinism"]
        self.assertTrue(determinism["held"], determinism)
        self.assertIsNone(determinism["first_break"])
        self.assertEqual(determinism["line"], "determinism claim held on every level and probe")
        cells = [(c["probe"], c["level"], c["shape"]) for c in determinism["cells"]]
        self.assertEqual(cells, [("sweep", 1, "batch"), ("sweep", 2, "batch"),
                                 ("sweep", 8, "batch"), ("sweep", 9, "batch"),
                                 ("sweep", 16, "batch"), ("prefix", 1, "cold"),
                                 ("prefix", 1, "warm"), ("mixed", 1, "batch"),
                                 ("mixed", 2, "batch"), ("mixed", 8, "batch"),
                                 ("mixed", 9, "batch"), ("mixed", 16, "batch"),
                                 ("mixed-sampling", 1, "batch"), ("mixed-sampling", 2, "batch"),
                                 ("mixed-sampling", 8, "batch"), ("mixed-sampling", 9, "batch"),
                                 ("mixed-sampling", 16, "batch")])
        for cell in determinism["cells"]:
            self.assertEqual(cell["prompts"], PROMPTS, cell)
            self.assertEqual((cell["token_breaks"], cell["logprob_breaks"], cell["max_drift"]),
                             (0, 0, 0), cell)
            self.assertGreater(cell["positions_compared"], 0, cell)
        for prompt in report["prompts"]:
            self.assertEqual(prompt["tier"], "bitwise", prompt["id"])
        self.assertEqual(report["summary"]["bitwise_stable_prompts"], PROMPTS)
        for probe in report["probes"]:
            self.assertEqual(probe["summary"]["unstable_prompts"], 0, probe["probe"])
            self.assertEqual(probe["summary"]["stable_prompts"], PROMPTS, probe["probe"])
        gate = report["summary"]["verdict"]["gates"][0]
        self.assertEqual((gate["name"], gate["passed"], gate["figure"]), ("determinism", True, 0))
        self.assert_line_everywhere(run, report, paths)

        # --resume runs the stored profile; --max-concurrency is compared as the levels it implies.
        run = self.run_llmrepro(["audit", "--resume", "--db", paths["db"],
                                 "--max-concurrency", "8"])
        self.assert_exit(run, 2)
        self.assertIn("--max-concurrency 1,2,8,9,16 (stored) vs 1,2,8 (given)", run.stderr)
        again = self.path("resumed.json")
        run = self.run_llmrepro(["audit", "--resume", "--db", paths["db"],
                                 "--engine-batch-invariant", "--json", again], timeout=60)
        self.assert_exit(run, 0)
        resumed = self.load_report(again)
        self.assertEqual(resumed["summary"]["determinism"], determinism)
        self.assertEqual(resumed["summary"]["requests"], report["summary"]["requests"])

    def test_default_engine_fails_and_names_a_level(self):
        run, report, paths = self.audit("default")
        self.assert_exit(run, 1)
        self.assert_profile_plan(report)
        determinism = report["summary"]["determinism"]
        self.assertFalse(determinism["held"])
        found = determinism["first_break"]
        self.assertIsNotNone(found)
        # At c=1 the sweep runs one request at a time: the same batch history, the same bits.
        self.assertEqual(determinism["cells"][0]["level"], 1)
        self.assertTrue(determinism["cells"][0]["held"], determinism["cells"][0])
        self.assertEqual(found["probe"], "sweep")
        self.assertIn(found["level"], [2, 8, 9, 16])
        self.assertIn(found["what"], ["tokens", "logprobs"])
        self.assertGreater(found["drift"] if found["what"] == "logprobs" else 1, 0)
        cell = next(c for c in determinism["cells"]
                    if (c["probe"], c["level"]) == ("sweep", found["level"]))
        self.assertFalse(cell["held"])
        for earlier in determinism["cells"]:
            if earlier["probe"] == "sweep" and earlier["level"] < found["level"]:
                self.assertTrue(earlier["held"], earlier)
        verdict = report["summary"]["verdict"]
        self.assertTrue(verdict["headline"].startswith("FAIL: "))
        self.assertIn(f"determinism claim broken at c={found['level']} (sweep)",
                      verdict["headline"])
        gate = verdict["gates"][0]
        self.assertEqual(gate["name"], "determinism")
        self.assertFalse(gate["passed"])
        self.assertEqual(gate["scope"], {"endpoint": 0, "probe": "sweep",
                                         "level": found["level"]})
        self.assert_line_everywhere(run, report, paths)

    def test_bad_flags_exit_2_before_any_request(self):
        endpoint = self.start_endpoint(std.script())
        suite = self.write_suite("bad.jsonl", [{"id": "a", "prompt": "Say hello."}])
        cases = [
            (["--profile", "deterministic", "--max-concurrency", "0"],
             "--max-concurrency must be at least 1"),
            (["--profile", "deterministic", "--max-concurrency", "-4"],
             "--max-concurrency must be at least 1"),
            (["--profile", "strict"], "unknown --profile 'strict'"),
            (["--profile", "deterministic", "--concurrency", "1,8"],
             "--concurrency conflicts with --profile deterministic"),
            (["--profile", "deterministic", "--probe", "sweep"],
             "--probe conflicts with --profile deterministic"),
            (["--max-concurrency", "16"], "--max-concurrency caps the levels of --profile"),
            (["--profile", "deterministic", "--temperature", "default"],
             "--profile deterministic checks greedy decoding: it cannot run with --temperature "
             "default"),
            (["--temperature", "0.7"], "--temperature must be 0 or default (got '0.7')"),
        ]
        for flags, message in cases:
            with self.subTest(flags=flags):
                db = self.path("bad.db")
                run = self.run_llmrepro(["audit", "--suite", suite, "--endpoint", endpoint.url,
                                         "--api", "auto", "--db", db, *flags], timeout=30)
                self.assert_exit(run, 2)
                self.assertIn(message, run.stderr, run.describe())
                self.assertEqual(endpoint.requests(), [], "no request before the flags are valid")
                self.assertFalse(os.path.exists(db))


if __name__ == "__main__":
    h.main()
