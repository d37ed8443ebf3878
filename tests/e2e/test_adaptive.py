#!/usr/bin/python3
"""Scenario: --adaptive against the scripted endpoint (docs/design.md "Adaptive runs").

Five prompts, levels 1 and 2, --runs 10 (100 requests for a fixed audit), 3 initial runs and
--adaptive-epsilon 0.3 (a handful of prompts cannot show 0.01: the design's "What it costs"):
- robust-a/b/c: always the same 4 tokens, every gap 5 nats;
- flipper: completions A and B alternate, swapping their top two at token 2 (gap 0.02);
- rare: 8 tokens, always A' for its first 7 requests and B' for the 8th (the same swap at
  token 5).
Look 1 (after 30 requests): flipper is unstable; the robust prompts' bound, ½ · 4 · (1 − α^(1/N))
at the noisier level with α = 0.05 / (2 levels · 1 · 2), is below 0.3; rare's, from the samples
of flipper's swap that exceed its 0.02 gap, is not. Round 2 gives rare one run at each level (one
run per undecided prompt per level, though level 2 then sees no batch): its 8th request is B', so
look 2 stops it unstable, after 32 requests. The bound is recomputed here from the records,
independently of the tool.

Those audits run under --adaptive-assume greedy-shared-noise: flipper's swaps are noise on one
prompt alone, which the default checks find louder than the shared noise the tighter bound
assumes. Without the flag (test_the_default_checks_the_noise_model) the audit says so, and the
robust prompts' bounds rest on their own runs.

The drift gate (--max-logprob-drift) uses a second script: five steady prompts whose 7th request
(round 2's level-1 run) moves its logprobs by 0.01 nats, tokens and gaps unchanged.
"""

import json
import math
import os
import sqlite3

import e2e_harness as h
import token_blob

MODEL = "scripted-model"
# Look 1 at c=2: flipper's swaps, 2 of its runs there, where the shared noise predicts 0.0423.
CONTRADICTED_REASON = "the noise model is contradicted at c=2"
CONTRADICTED_NOTE = ("adaptive: the noise model is contradicted at c=2 from look 1 (2 runs "
                     "departed from their reference where the noise predicts 0.0423 (Poisson p < "
                     "0.0125)); bounds rest on each prompt's own runs")
LEVELS = [1, 2]
RUNS = 10
EPSILON = 0.3
SEED = 11


def token(text, logprob, runner_up, runner_logprob):
    return [text, logprob, [[text, logprob], [runner_up, runner_logprob]]]


ROBUST = [token(f" w{i}", -0.01, f" v{i}", -5.01) for i in range(4)]
FLIP_A = [token(" The", -0.01, " A", -5.01), token(" sky", -0.01, " sea", -5.01),
          token(" is", -0.69, " was", -0.71), token(" blue", -0.01, " red", -5.01)]
FLIP_B = FLIP_A[:2] + [token(" was", -0.69, " is", -0.71), token(" grey", -0.01, " red", -5.01)]
RARE_A = [token(f" r{i}", -0.01, f" s{i}", -5.01) for i in range(5)] + [
    token(" yes", -0.69, " no", -0.71), token(" r6", -0.01, " s6", -5.01),
    token(" r7", -0.01, " s7", -5.01)]
RARE_B = RARE_A[:5] + [token(" no", -0.69, " yes", -0.71), token(" q6", -0.01, " s6", -5.01)]

PROMPTS = {"robust-a": [ROBUST], "robust-b": [ROBUST], "robust-c": [ROBUST],
           "flipper": [FLIP_A, FLIP_B], "rare": [RARE_A] * 7 + [RARE_B]}
TEXTS = {"".join(t[0] for t in tokens): tokens for entries in PROMPTS.values()
         for tokens in entries}


def script():
    return {"model": MODEL,
            "prompts": {f"Prompt {name}": [{"tokens": tokens, "finish_reason": "length"}
                                           for tokens in entries]
                        for name, entries in PROMPTS.items()}}


def suite():
    return [{"id": name, "prompt": f"Prompt {name}"} for name in PROMPTS]


STEADY = [token(f" w{i}", -0.01, f" v{i}", -5.01) for i in range(4)]
DRIFTED = [token(f" w{i}", -0.02, f" v{i}", -5.02) for i in range(4)]
STEADY_PROMPTS = [f"steady-{i}" for i in range(5)]


def steady_script():
    """Five prompts that never change a token; the 7th request of each drifts by 0.01 nats."""
    entries = [{"tokens": STEADY, "finish_reason": "length"}] * 6 + [
        {"tokens": DRIFTED, "finish_reason": "length"}]
    return {"model": MODEL, "prompts": {f"Prompt {name}": entries for name in STEADY_PROMPTS}}


def gap(entry):
    return entry[2][0][1] - entry[2][1][1]


def noise_samples(reference, run):
    """docs/design.md "Noise and the flip probability": per position while earlier tokens agree,
    |Δgap| for the same token, gap + gap for a swapped top two; the comparison ends there."""
    samples = []
    for ref, other in zip(reference, run):
        if ref[0] == other[0]:
            samples.append(abs(gap(other) - gap(ref)))
            continue
        samples.append(gap(other) + gap(ref))
        break
    return samples


def chernoff_upper(k, n, alpha):
    """The largest p with n · KL(k/n ‖ p) <= ln(1/alpha); 1 − alpha^(1/n) for k = 0."""
    if k == 0:
        return 1.0 - alpha ** (1.0 / n)
    q, budget = k / n, math.log(1.0 / alpha) / n
    low, high = q, 1.0
    for _ in range(200):
        middle = (low + high) / 2
        kl = q * math.log(q / middle) + (1 - q) * math.log((1 - q) / (1 - middle))
        low, high = (middle, high) if kl <= budget else (low, middle)
    return high


class Adaptive(h.E2ETestCase):
    def audit(self, endpoint, *extra, tag="audit", resume=False, suite=None, assume=True):
        paths = self.report_paths(tag)
        args = ["audit", "--endpoint", endpoint.url, "--api", "openai-chat", "--model", MODEL,
                "--db", paths["db"], "--json", paths["json"], "--max-tokens", "8", *extra]
        if resume:
            args.append("--resume")
        else:
            # The scripts below are laid out for three initial runs (the default is two).
            args += ["--suite", suite or self.suite, "--runs", str(RUNS), "--concurrency",
                     ",".join(map(str, LEVELS)), "--seed", str(SEED), "--adaptive",
                     "--adaptive-initial", "3", "--adaptive-epsilon", str(EPSILON),
                     # The scripts count the plan's requests alone.
                     "--no-preflight"]
            if assume:
                args += ["--adaptive-assume", "greedy-shared-noise"]
        run = self.run_llmrepro(args)
        report = self.load_report(paths["json"]) if os.path.exists(paths["json"]) else None
        return run, report, paths

    def setUp(self):
        super().setUp()
        self.suite = self.write_suite("suite.jsonl", suite())

    def look_one_bounds(self, db):
        """Each stable prompt's bound at look 1, from the records of the initial runs."""
        conn = sqlite3.connect(db)
        # A text that is its tokens' texts is stored as NULL and read back from them.
        texts = token_blob.request_texts(conn)
        rows = [(prompt, level, repeat, texts[request_id]) for prompt, level, repeat, request_id in
                conn.execute("SELECT p.id, r.concurrency, r.repeat, r.id FROM requests r JOIN "
                             "prompts p ON p.idx = r.prompt_index WHERE r.ok = 1 AND "
                             "r.repeat < 3")]
        runs = {}
        for prompt, level, repeat, text in rows:
            runs.setdefault(prompt, {}).setdefault(level, {})[repeat] = TEXTS[text]
        samples = {level: [] for level in LEVELS}
        for prompt, by_level in runs.items():
            reference = by_level[1][0]
            for level, by_repeat in by_level.items():
                for repeat, tokens in by_repeat.items():
                    if level == 1 and repeat == 0:
                        continue
                    samples[level] += noise_samples(reference, tokens)
        alpha = 0.05 / (len(LEVELS) * 1 * 2)
        bounds = {}
        for prompt, by_level in runs.items():
            reference = by_level[1][0]
            min_gap = min(gap(t) for t in reference)
            bounds[prompt] = max(
                min(1.0, 0.5 * len(reference) *
                    chernoff_upper(sum(1 for s in samples[level] if s > min_gap),
                                   len(samples[level]), alpha))
                for level in LEVELS)
        return bounds

    def test_robust_prompts_stop_early_and_flips_are_found(self):
        endpoint = self.start_endpoint(script())
        run, report, paths = self.audit(endpoint)
        self.assert_exit(run, 0)
        adaptive = report["adaptive"]
        stops = {p["id"]: (p["stop"], p["look"], p["runs"]) for p in adaptive["prompts"]}
        self.assertEqual(stops, {"robust-a": ("robust", 1, 6), "robust-b": ("robust", 1, 6),
                                 "robust-c": ("robust", 1, 6), "flipper": ("unstable", 1, 6),
                                 "rare": ("unstable", 2, 8)})
        rare = next(p for p in adaptive["prompts"] if p["id"] == "rare")
        self.assertEqual(rare["runs_by_concurrency"], {"1": 4, "2": 4})
        self.assertEqual(adaptive["looks"], 2)
        self.assertTrue(adaptive["finished"])
        self.assertEqual(adaptive["planned_requests"], 32)
        self.assertEqual(adaptive["fixed_plan_requests"], 100)
        self.assertEqual(adaptive["stops"], {"unstable": 2, "robust": 3, "max_runs": 0,
                                             "budget": 0, "undecided": 0})
        self.assertEqual(len(endpoint.posts()), 32)
        self.assertEqual(report["summary"]["requests"], 32)
        self.assertEqual(report["audit"]["status"], "complete")
        # The bounds the tool stored, against this file's own computation from the records.
        bounds = self.look_one_bounds(paths["db"])
        for prompt in ("robust-a", "robust-b", "robust-c"):
            stored = next(p for p in adaptive["prompts"] if p["id"] == prompt)
            self.assertEqual(stored["bound_basis"], "noise")
            self.assertAlmostEqual(stored["p_flip_bound"], bounds[prompt], places=12)
            self.assertLess(stored["p_flip_bound"], EPSILON)
        self.assertGreaterEqual(bounds["rare"], EPSILON)
        self.assertIn("adaptive: 32 of 100 requests (32.0%) over 2 looks; stopped: 2 unstable, "
                      "3 robust, 0 at --runs 10", run.stdout + run.stderr)
        self.assertTrue(adaptive["guarantee"].startswith(
            "each of the 3 prompts stopped as robust has, with 95% confidence"))
        self.assertIn("3 from the level's noise, under the assumption --adaptive-assume "
                      "greedy-shared-noise", adaptive["guarantee"])
        assumed = ("adaptive: assumed (--adaptive-assume greedy-shared-noise) that the endpoint "
                   "decodes greedily and its noise is shared across prompts; bounds from the "
                   "noise rest on that, unchecked")
        self.assertEqual(adaptive["notes"], [assumed])
        self.assertEqual(adaptive["assumption"], "greedy-shared-noise")
        self.assertEqual(report["config"]["adaptive_assume"], "greedy-shared-noise")
        self.assertIn(assumed, run.stdout + run.stderr)
        # `report` shows the stored decisions; the Markdown lists each prompt's runs.
        markdown, html = self.path("again.md"), self.path("again.html")
        again = self.run_llmrepro(["report", "--db", paths["db"], "--markdown", markdown,
                                   "--html", html])
        self.assert_exit(again, 0)
        with open(html, encoding="utf-8") as f:
            self.assertIn(f'<p class="adaptive-note">{assumed}</p>', f.read())
        with open(markdown, encoding="utf-8") as f:
            text = f.read()
        self.assertIn("| rare | 8 | unstable |", text)
        self.assertIn("| robust-a | 6 | robust |", text)
        self.assertIn(assumed, text)

    def test_the_default_checks_the_noise_model(self):
        endpoint = self.start_endpoint(script())
        run, report, _ = self.audit(endpoint, assume=False)
        self.assert_exit(run, 0)
        adaptive = report["adaptive"]
        self.assertEqual(adaptive["assumption"], "none")
        stops = {p["id"]: p["stop"] for p in adaptive["prompts"]}
        # Nothing is robust on the noise: the robust prompts' own 19 agreeing runs cannot show
        # 0.3 at the last look's α, so they run to --runs.
        self.assertEqual(stops, {"robust-a": "max_runs", "robust-b": "max_runs",
                                 "robust-c": "max_runs", "flipper": "unstable",
                                 "rare": "unstable"})
        robust_a = next(p for p in adaptive["prompts"] if p["id"] == "robust-a")
        self.assertEqual(robust_a["bound_basis"], "runs")
        self.assertEqual(robust_a["bound_basis_reason"], CONTRADICTED_REASON)
        self.assertEqual(adaptive["noise_model_contradicted"], {"2": {
            "look": 1, "reason": CONTRADICTED_NOTE.split(" (", 1)[1].rsplit("); bounds", 1)[0]}})
        self.assertEqual(adaptive["notes"], [CONTRADICTED_NOTE])
        self.assertIn(CONTRADICTED_NOTE, run.stdout + run.stderr)
        self.assertTrue(adaptive["guarantee"].startswith("no prompt was shown robust"))

    def test_drift_gate_fails_as_the_fixed_plan_does(self):
        steady_suite = self.write_suite(
            "steady.jsonl", [{"id": name, "prompt": f"Prompt {name}"} for name in STEADY_PROMPTS])
        endpoint = self.start_endpoint(steady_script(), name="fixed")
        fixed = self.run_llmrepro(
            ["audit", "--endpoint", endpoint.url, "--api", "openai-chat", "--model", MODEL,
             "--suite", steady_suite, "--runs", str(RUNS), "--concurrency",
             ",".join(map(str, LEVELS)), "--seed", str(SEED), "--max-tokens", "8",
             "--db", self.path("fixed.db"), "--max-logprob-drift", "0"])
        self.assert_exit(fixed, 1)
        self.assertIn("largest logprob drift 0.01 nats", fixed.stdout + fixed.stderr)

        # Every prompt's bound holds at look 1, but the gate has seen no drift yet: no prompt
        # stops there. Round 2's level-1 run drifts, each prompt's own runs then fail the gate,
        # and they stop robust at look 2: the verdict the fixed plan gives, for 40 requests.
        endpoint = self.start_endpoint(steady_script(), name="adaptive")
        run, report, paths = self.audit(endpoint, "--max-logprob-drift", "0", tag="drift",
                                        suite=steady_suite)
        self.assert_exit(run, 1)
        adaptive = report["adaptive"]
        self.assertEqual({p["id"]: (p["stop"], p["look"], p["runs"]) for p in adaptive["prompts"]},
                         {name: ("robust", 2, 8) for name in STEADY_PROMPTS})
        self.assertEqual(adaptive["max_logprob_drift"], 0)
        self.assertEqual(len(endpoint.posts()), 40)
        gate = next(g for g in report["summary"]["verdict"]["gates"]
                    if g["name"] == "max_logprob_drift")
        self.assertFalse(gate["passed"])
        self.assertAlmostEqual(gate["figure"], 0.01, places=9)
        # Re-judged at the limit it was sampled for, the gate is judged, and fails.
        again = self.run_llmrepro(["report", "--db", paths["db"], "--max-logprob-drift", "0"])
        self.assert_exit(again, 1)

    def test_report_does_not_pass_a_gate_the_stops_did_not_wait_for(self):
        steady_suite = self.write_suite(
            "steady.jsonl", [{"id": name, "prompt": f"Prompt {name}"} for name in STEADY_PROMPTS])
        endpoint = self.start_endpoint(steady_script())
        run, report, paths = self.audit(endpoint, suite=steady_suite)
        self.assert_exit(run, 0)
        self.assertEqual(report["adaptive"]["stops"]["robust"], 5)
        self.assertEqual(len(endpoint.posts()), 30)  # every prompt robust at look 1, no drift
        json_path = self.path("rejudged.json")
        again = self.run_llmrepro(["report", "--db", paths["db"], "--max-logprob-drift", "0",
                                   "--json", json_path])
        self.assert_exit(again, 3)
        line = ("--max-logprob-drift 0 was not sampled for (the adaptive audit's stops waited for "
                "no drift gate): 5 prompts stopped before --runs carry no evidence for it: "
                + ", ".join(STEADY_PROMPTS) + " (audit again with the gate, or without --adaptive)")
        verdict = self.load_report(json_path)["summary"]["verdict"]
        self.assertEqual(verdict["status"], "error")
        self.assertEqual(verdict["errors"], [line])
        gate = next(g for g in verdict["gates"] if g["name"] == "max_logprob_drift")
        self.assertFalse(gate["passed"])
        self.assertEqual(gate["message"], "not judged: " + line)
        self.assertIn(line, again.stdout + again.stderr)
        # A gate the stops did wait for is judged as at the audit.
        self.assert_exit(self.run_llmrepro(["report", "--db", paths["db"], "--max-unique", "1"]),
                         0)

    def test_max_unique_keeps_sampling_unstable_prompts(self):
        endpoint = self.start_endpoint(script())
        run, report, _ = self.audit(endpoint, "--max-unique", "2")
        # flipper has two completions, no more: under --max-unique 2 it samples to --runs.
        self.assert_exit(run, 0)
        stops = {p["id"]: (p["stop"], p["runs"]) for p in report["adaptive"]["prompts"]}
        self.assertEqual(stops["flipper"], ("max_runs", 20))
        self.assertEqual(stops["rare"], ("max_runs", 20))
        self.assertEqual(report["adaptive"]["max_unique"], 2)

    def test_budget_holds_then_resume_replays_the_same_decisions(self):
        endpoint = self.start_endpoint(script())
        # 31 requests: the initial 30 and rare's level-1 run of round 2.
        run, report, _ = self.audit(endpoint, "--max-requests", "31", tag="budget")
        self.assert_exit(run, 3)
        self.assertEqual(len(endpoint.posts()), 31)
        self.assertEqual(report["summary"]["requests"], 31)
        rare = next(p for p in report["adaptive"]["prompts"] if p["id"] == "rare")
        self.assertEqual(rare["stop"], "budget")
        errors = report["summary"]["verdict"]["errors"]
        self.assertIn("budget --max-requests 31 reached: 31 of 32 planned requests sent; "
                      "1 prompt undecided: rare", errors)

        # A different assumption does not replay the stored decisions.
        run, _, _ = self.audit(endpoint, "--adaptive", "--adaptive-assume", "none", tag="budget",
                               resume=True)
        self.assert_exit(run, 2)
        self.assertIn("--adaptive-assume greedy-shared-noise; its decisions replay only with the "
                      "same settings", run.stderr)
        self.assertEqual(len(endpoint.posts()), 31)
        run, resumed, _ = self.audit(endpoint, "--max-requests", "100", tag="budget",
                                     resume=True)
        self.assert_exit(run, 0)
        self.assertEqual(len(endpoint.posts()), 32, "only rare's last run was sent")
        fresh_endpoint = self.start_endpoint(script(), name="fresh")
        run, fresh, _ = self.audit(fresh_endpoint, tag="fresh")
        self.assert_exit(run, 0)
        self.assertEqual(resumed["adaptive"], fresh["adaptive"])

    def test_a_budget_inside_the_initial_runs_still_judges_what_it_paid_for(self):
        endpoint = self.start_endpoint(script())
        run, report, _ = self.audit(endpoint, "--max-requests", "29")
        self.assert_exit(run, 3)
        self.assertEqual(len(endpoint.posts()), 29)
        stops = {p["id"]: p["stop"] for p in report["adaptive"]["prompts"]}
        # flipper's three serial runs already differ: one last look names it; the rest of the
        # prompts are left to the budget unless their bound already held.
        self.assertEqual(stops["flipper"], "unstable")
        self.assertEqual(report["adaptive"]["looks"], 1)
        self.assertTrue(report["adaptive"]["finished"])
        self.assertNotIn("max_runs", stops.values())

    def test_dry_run_and_bad_input(self):
        endpoint = self.start_endpoint(script())
        run, _, paths = self.audit(endpoint, "--dry-run")
        self.assert_exit(run, 0)
        self.assertIn("total: 100 requests", run.stdout)
        self.assertIn("--adaptive: 30 requests (3 runs of every prompt at each level) before "
                      "the first look", run.stdout)
        self.assertFalse(os.path.exists(paths["db"]))
        base = ["audit", "--endpoint", endpoint.url, "--api", "openai-chat", "--suite",
                self.suite, "--db", self.path("bad.db")]
        for extra, message in [
                (["--adaptive-epsilon", "0.1"], "--adaptive-epsilon sets how --adaptive decides"),
                (["--adaptive", "--runs", "2"], "give --runs above it"),
                (["--adaptive", "--adaptive-epsilon", "1.5"], "--adaptive-epsilon must be a "
                 "probability in (0, 1)"),
                (["--adaptive", "--adaptive-initial", "1"], "--adaptive-initial must be at least 2"),
                (["--adaptive-assume", "none"], "--adaptive-assume sets how --adaptive decides"),
                (["--adaptive", "--adaptive-assume", "greedy"], "--adaptive-assume must be "
                 "'none' or 'greedy-shared-noise' (got 'greedy')"),
                (["--adaptive", "--compare", endpoint.url], "audit one endpoint at a time"),
                (["--adaptive", "--probe", "sweep,prefix"], "runs the sweep probe alone")]:
            run = self.run_llmrepro(base + extra)
            self.assert_exit(run, 2)
            self.assertIn(message, run.stderr)
        self.assertEqual(endpoint.posts(), [])

    def test_shards_merge_their_decisions(self):
        endpoint = self.start_endpoint(script())
        databases = []
        for shard in ("1/2", "2/2"):
            run, _, paths = self.audit(endpoint, "--shard", shard, tag=f"shard{shard[0]}")
            self.assertIn(run.returncode, (0, 1), run.describe())
            databases.append(paths["db"])
        merged_json = self.path("merged.json")
        run = self.run_llmrepro(["merge", self.path("merged.db"), *databases, "--json",
                                 merged_json])
        self.assert_exit(run, 0)
        merged = self.load_report(merged_json)["adaptive"]
        self.assertEqual([p["id"] for p in merged["prompts"]], list(PROMPTS))
        shards = [self.load_report(self.path(f"shard{i}.json"))["adaptive"] for i in (1, 2)]
        self.assertEqual(merged["planned_requests"],
                         sum(s["planned_requests"] for s in shards))
        self.assertEqual(merged["planned_requests"], len(endpoint.posts()))


if __name__ == "__main__":
    h.main()
