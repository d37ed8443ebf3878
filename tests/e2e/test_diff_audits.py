#!/usr/bin/python3
"""Scenario: `llmrepro diff A.db B.db` on real audits of scripted endpoints.

Ten prompts q0..q9, each checked with `expect: contains "good"`, 10 runs at concurrency 1 and
4 (20 runs per prompt). Endpoint A always answers X (" The answer is good"). Endpoint B answers
q0..q6 with the cycle Y, Z, Y, W, X (Y 8 times, Z, W and X 4 times each: agreement 8/20, 4
distinct, 4 of 20 pass) and q7..q9 with X, like A. Then:
- identical scripts on both sides (the standard audit, itself unstable): exit 0, verdict
  no_change, every delta 0, every p 1, nothing beyond noise;
- A against the degraded B: exit 1, verdict regression, q0..q6 named as regressions beyond
  noise in the Markdown on stdout and in the JSON, q7..q9 within noise; TARr 100% -> 30% by
  McNemar's exact test on 7 discordant prompts (p = 2 * 0.5^7), the means exact;
- B against A (the same change undone): exit 0, verdict improvement;
- every JSON diff validates against schemas/llmrepro.diff.v1.schema.json.
Failures are lost evidence (exit 3, verdict lost_evidence, the audit and its counts named):
(these audits run 10 runs at concurrency 4 alone, 100 requests each, --retries 0)
- B's q0..q6 answer a 500 to 4 of every 5 requests: the 2 of 10 that survive agree, so B
  looks stable everywhere (TARr 30% -> 100%), yet 56 of 100 requests failed;
- B's q0..q8 fail every request: 9 prompts dead in B only, 90 of 100 requests failed;
- both audits ERROR (every request of every prompt failed): each named as ERROR.
A regression confined to 5 of 40 prompts (10/10 identical -> 6, 7, 6, 7, 6 of 10) is found:
pooled_agreement (the exact stratified test, a prompt a stratum) calls it a regression, exit 1;
no single prompt's test can reach significance at 10 runs, and none is called one.
Audits of different plans are refused (exit 2, every differing flag named with both values, no
output written): the same endpoint with --runs 3 against --runs 12, fixed against --adaptive.
The diff HTML is rendered in a real browser by tests/browser/test_browser_reports.py.
"""

import json
import math
import os

import e2e_harness as h
import standard_audit as std

PROMPTS = [f"q{i}" for i in range(10)]
DEGRADED = PROMPTS[:7]
RUNS = 10
LEVELS = [1, 4]
LOST_LEVELS = [4]  # the lost-evidence audits: one level is enough, and quicker


def completion(third, fourth, gap=1.5):
    return {"tokens": [[" The", -0.01, [[" The", -0.01], [" A", -4.0]]],
                       [" answer", -0.02, [[" answer", -0.02], [" reply", -3.0]]],
                       [third, -0.3, [[third, -0.3], [" x", -0.3 - gap]]],
                       [fourth, -0.1, [[fourth, -0.1], [" y", -2.0]]]],
            "finish_reason": "length"}


X = completion(" is", " good")
Y = completion(" was", " bad")
Z = completion(" was", " odd")
W = completion(" is", " fine")


def prompt_text(pid):
    return f"Question {pid}: is it good?"


def script(degraded):
    prompts = {}
    for pid in PROMPTS:
        prompts[prompt_text(pid)] = [Y, Z, Y, W, X] if degraded and pid in DEGRADED else [X]
    return {"model": "scripted-model", "prompts": prompts}


def suite():
    return [{"id": pid, "prompt": prompt_text(pid), "expect": {"type": "contains", "value": "good"}}
            for pid in PROMPTS]


def fisher_one_sided(a_ok, a_n, b_ok, b_n):
    """Fisher's exact test, one-sided: P(B has at most b_ok successes | the margins)."""
    total_ok, n = a_ok + b_ok, a_n + b_n
    return sum(math.comb(b_n, y) * math.comb(a_n, total_ok - y) / math.comb(n, total_ok)
               for y in range(max(0, total_ok - a_n), b_ok + 1))


def stratified_one_sided(strata):
    """P(sum of B's successes <= observed | each stratum's margins), by convolution."""
    dist = {0: 1.0}
    observed = 0
    for a_ok, a_n, b_ok, b_n in strata:
        ok = a_ok + b_ok
        terms = {y: math.comb(b_n, y) * math.comb(a_n, ok - y) / math.comb(a_n + b_n, ok)
                 for y in range(max(0, ok - a_n), min(ok, b_n) + 1)}
        nxt = {}
        for total, prob in dist.items():
            for y, q in terms.items():
                nxt[total + y] = nxt.get(total + y, 0.0) + prob * q
        dist = nxt
        observed += b_ok
    return sum(prob for total, prob in dist.items() if total <= observed)


def fisher_two_sided(a_ok, a_n, b_ok, b_n):
    """Fisher's exact test of a 2x2 table, two-sided (tables no more likely than the observed)."""
    total_ok, n = a_ok + b_ok, a_n + b_n

    def prob(k):
        return math.comb(a_n, k) * math.comb(b_n, total_ok - k) / math.comb(n, total_ok)

    observed = prob(a_ok)
    low, high = max(0, total_ok - b_n), min(a_n, total_ok)
    return min(1.0, sum(prob(k) for k in range(low, high + 1) if prob(k) <= observed * (1 + 1e-7)))


class DiffAudits(h.E2ETestCase):
    def audit(self, tag, script_obj, prompts, runs, levels, exit_code=0, extra=()):
        endpoint = self.start_endpoint(script_obj, name=tag)
        suite_path = self.write_suite(f"{tag}-suite.jsonl", prompts)
        db = self.path(f"{tag}.db")
        run = self.run_llmrepro(["audit", "--suite", suite_path, "--endpoint", endpoint.url,
                                 "--api", "openai-chat", "--model", "scripted-model",
                                 "--runs", str(runs), "--concurrency", ",".join(map(str, levels)),
                                 "--fragile-window", "5", "--seed", "7", "--db", db,
                                 "--fail-on", "none", "--quiet", *extra])
        self.assert_exit(run, exit_code)
        return db

    def diff(self, a, b, tag):
        out = {"json": self.path(f"{tag}.json"), "html": self.path(f"{tag}.html"),
               "markdown": self.path(f"{tag}.md")}
        run = self.run_llmrepro(["diff", a, b, "--json", out["json"], "--html", out["html"],
                                 "--markdown", out["markdown"], "--seed", "3"])
        with open(out["json"], encoding="utf-8") as f:
            result = json.load(f)
        self.validate_diff(result)
        with open(out["markdown"], encoding="utf-8") as f:
            self.assertEqual(f.read(), run.stdout, "stdout is not the Markdown diff")
        return run, result

    def validate_diff(self, result):
        import jsonschema
        schema_path = os.path.join(h.ARGS.source_dir, "schemas", "llmrepro.diff.v1.schema.json")
        with open(schema_path, encoding="utf-8") as f:
            schema = json.load(f)
        jsonschema.Draft202012Validator.check_schema(schema)
        errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(result),
                        key=lambda e: list(e.absolute_path))
        self.assertEqual([], [f"{list(e.absolute_path)}: {e.message}" for e in errors[:10]],
                         "diff does not validate against the schema")

    def test_identical_scripts_are_within_noise(self):
        a = self.audit("a", std.script(), std.suite(), std.RUNS, std.LEVELS)
        b = self.audit("b", std.script(), std.suite(), std.RUNS, std.LEVELS)
        run, result = self.diff(a, b, "same")
        self.assert_exit(run, 0)
        self.assertEqual(result["verdict"],
                         {"status": "no_change", "regression": False, "improvement": False})
        self.assertEqual(result["paired_prompts"], 4)
        self.assertEqual((result["only_in_a"], result["only_in_b"]), ([], []))
        self.assertEqual([m["name"] for m in result["metrics"]],
                         ["tarr", "bitwise_rate", "fragile_rate", "fragility_known_rate",
                          "mean_unique_completions", "mean_agreement", "pooled_agreement",
                          "mean_logprob_drift"])
        for m in result["metrics"]:
            with self.subTest(metric=m["name"]):
                self.assertEqual((m["delta"], m["beyond_noise"]), (0, False))
                if m["test"] == "stratified_exact":
                    # One-sided: P(sum <= observed) at equal tables is at least a half.
                    self.assertGreaterEqual(m["p_value"], 0.5)
                else:
                    self.assertAlmostEqual(m["p_value"], 1.0, places=12)
        for p in result["prompts"]:
            with self.subTest(prompt=p["id"]):
                self.assertEqual(p["a"], p["b"])
                self.assertEqual((p["beyond_noise"], p["regression"], p["improvement"]),
                                 (False, False, False))
                # Equal tables: the one-sided p is P(B agrees as little or less), 1 where no
                # run disagreed; an unstable prompt's is in the family, BH over its two.
                a_ok, a_n = p["a"]["reference_count"], p["a"]["runs"]
                self.assertAlmostEqual(p["agreement_p"], fisher_one_sided(a_ok, a_n, a_ok, a_n),
                                       places=12)
                self.assertGreaterEqual(p["agreement_p_adjusted"], p["agreement_p"])
        changes = {p["id"]: p["agreement_change"] for p in result["prompts"]}
        self.assertEqual(changes, {"capital": "stable", "feynman": "unstable",
                                   "primes": "unstable", "hello": "stable"})
        self.assertTrue(run.stdout.startswith("## llmrepro diff: \u2705 no difference beyond noise"),
                        run.stdout)
        self.assertNotIn("Prompts that changed", run.stdout)

    def test_each_level_served_side_by_side(self):
        """B answers every request 60 ms late (A 5 ms): diff puts each level's throughput and latency of
        both audits side by side, B/A of each, in the JSON, the Markdown and the HTML."""
        def delayed(ms):
            script = std.script()
            for entries in script["prompts"].values():
                for entry in entries:
                    entry["delay_ms"] = ms
            return script

        slow = delayed(60)
        # A waits 5 ms, so that its latency is never below the clock's millisecond.
        a = self.audit("fast", delayed(5), std.suite(), std.RUNS, std.LEVELS)
        b = self.audit("slow", slow, std.suite(), std.RUNS, std.LEVELS)
        run, result = self.diff(a, b, "speeds")
        self.assert_exit(run, 0)
        self.assertEqual([s["concurrency"] for s in result["speeds"]], std.LEVELS)
        for s in result["speeds"]:
            with self.subTest(level=s["concurrency"]):
                # Every request of B took at least its 60 ms delay.
                self.assertGreaterEqual(s["b_mean_latency_ms"], 60)
                self.assertGreaterEqual(s["b_p95_latency_ms"], 60)
                self.assertAlmostEqual(s["latency_ratio"],
                                       s["b_mean_latency_ms"] / s["a_mean_latency_ms"])
                self.assertAlmostEqual(s["throughput_ratio"],
                                       s["b_tokens_per_second"] / s["a_tokens_per_second"])
        self.assertIn("| level | A tok/s | B tok/s | B/A | A latency ms (p95) | B latency ms (p95) "
                      "| B/A |", run.stdout)
        with open(self.path("speeds.html"), encoding="utf-8") as f:
            self.assertEqual(h.ElementText.of(f.read(), "speeds")[0], 1)

    def test_a_less_stable_b_is_a_regression(self):
        a = self.audit("a", script(False), suite(), RUNS, LEVELS)
        b = self.audit("b", script(True), suite(), RUNS, LEVELS)
        run, result = self.diff(a, b, "worse")
        self.assert_exit(run, 1)
        self.assertEqual(result["verdict"],
                         {"status": "regression", "regression": True, "improvement": False})
        self.assertEqual(result["paired_prompts"], 10)
        self.assertEqual((result["a"]["runs"], result["b"]["runs"]), (RUNS, RUNS))
        by_id = {p["id"]: p for p in result["prompts"]}
        self.assertEqual(list(by_id), PROMPTS)
        runs = RUNS * len(LEVELS)
        p_raw = fisher_one_sided(runs, runs, 8, runs)
        for pid in PROMPTS:
            p = by_id[pid]
            with self.subTest(prompt=pid):
                self.assertEqual((p["a"]["unique_completions"], p["a"]["reference_count"],
                                  p["a"]["pass"]), (1, runs, {"passed": runs, "runs": runs}))
                if pid in DEGRADED:
                    self.assertEqual((p["b"]["unique_completions"], p["b"]["reference_count"],
                                      p["b"]["agreement"], p["b"]["pass"], p["b"]["unstable"]),
                                     (4, 8, 0.4, {"passed": 4, "runs": runs}, True))
                    self.assertEqual((p["agreement_change"], p["beyond_noise"], p["regression"],
                                      p["improvement"]), ("newly unstable", True, True, False))
                    self.assertAlmostEqual(p["agreement_p"], p_raw, places=12)
                    # Tarone: q7..q9 agree everywhere, so cannot be significant and leave the
                    # family; BH over seven equal p values keeps each.
                    self.assertAlmostEqual(p["agreement_p_adjusted"], p_raw, places=12)
                    self.assertLess(p["agreement_p_adjusted"], 0.05)
                else:
                    self.assertEqual(p["a"], p["b"])
                    self.assertEqual((p["agreement_change"], p["beyond_noise"], p["regression"]),
                                     ("stable", False, False))
        metrics = {m["name"]: m for m in result["metrics"]}
        self.assertEqual(list(metrics), ["tarr", "bitwise_rate", "fragile_rate",
                                         "fragility_known_rate", "mean_unique_completions",
                                         "mean_agreement", "pooled_agreement",
                                         "mean_logprob_drift", "pass_rate"])
        # Tiers: A bitwise everywhere, B's degraded prompts unstable (named), its others bitwise.
        bitwise = metrics["bitwise_rate"]
        self.assertEqual((bitwise["a"], bitwise["b"], bitwise["only_a"], bitwise["regression"]),
                         (1.0, 0.3, 7, True))
        self.assertEqual({p["id"]: (p["tier_change"], p["tier_worsened"])
                          for p in result["prompts"]},
                         {pid: ("bitwise -> unstable", True) if pid in DEGRADED
                          else ("bitwise", False) for pid in PROMPTS})
        self.assertEqual([(metrics[n]["a"], metrics[n]["b"], metrics[n]["beyond_noise"])
                          for n in ("fragility_known_rate", "mean_logprob_drift")],
                         [(1.0, 1.0, False), (0.0, 0.0, False)])
        tarr = metrics["tarr"]
        self.assertEqual((tarr["a"], tarr["b"], tarr["test"], tarr["only_a"], tarr["only_b"],
                          tarr["regression"]), (1.0, 0.3, "mcnemar_exact", 7, 0, True))
        self.assertAlmostEqual(tarr["p_value"], 2 * 0.5 ** 7, places=12)
        self.assertAlmostEqual(tarr["delta"], -0.7, places=12)
        fragile = metrics["fragile_rate"]
        self.assertEqual((fragile["a"], fragile["b"], fragile["beyond_noise"]), (0.0, 0.0, False))
        for name, a_value, b_value in (("mean_unique_completions", 1.0, 3.1),
                                       ("mean_agreement", 1.0, 0.58), ("pass_rate", 1.0, 0.44)):
            m = metrics[name]
            with self.subTest(metric=name):
                self.assertEqual((m["test"], m["pairs"], m["a"]), ("paired_bootstrap", 10, a_value))
                self.assertAlmostEqual(m["b"], b_value, places=12)
                # Seven prompts all move the same way: the sign test gives 2 * 0.5^7.
                self.assertAlmostEqual(m["sign_test_p"], 2 * 0.5 ** 7, places=12)
                self.assertTrue(m["regression"], m)
        self.assertEqual(metrics["pass_rate"]["a_interval"][1], 1.0)
        # The verdict a reviewer reads first, and the prompts it blames.
        lines = run.stdout.splitlines()
        self.assertEqual(lines[0], "## llmrepro diff: \u274c regression beyond noise")
        self.assertIn("**Regressed:** tarr 100.0% \u2192 30.0%, bitwise_rate 100.0% \u2192 30.0%, "
                      "mean_unique_completions 1.00 "
                      "\u2192 3.10, mean_agreement 100.0% \u2192 58.0%, pooled_agreement 100.0% "
                      "\u2192 58.0%, pass_rate 100.0% \u2192 "
                      "44.0%; 7 prompts (q0, q1, q2, q3, q4, q5, q6)", lines)
        self.assertIn("| tarr | 100.0% | 30.0% | -70.0 pp | 0.016 | regression (beyond noise) |",
                      lines)
        self.assertIn("**Tiers worsened:** " + ", ".join(f"{pid} (bitwise -> unstable)"
                                                         for pid in DEGRADED), lines)
        named = [line.split("|")[1].strip() for line in lines
                 if line.endswith("| regression (beyond noise) |") and line.startswith("| q")]
        self.assertEqual(named, DEGRADED)

        run_back, back = self.diff(b, a, "better")
        self.assert_exit(run_back, 0)
        self.assertEqual(back["verdict"],
                         {"status": "improvement", "regression": False, "improvement": True})
        self.assertEqual([p["id"] for p in back["prompts"] if p["improvement"]], DEGRADED)

    def failing_script(self, failing, entries):
        base = script(True)
        for pid in failing:
            base["prompts"][prompt_text(pid)] = entries
        return base

    def assert_lost(self, run, result, lines):
        self.assert_exit(run, 3)
        self.assertEqual(result["verdict"],
                         {"status": "lost_evidence", "regression": False, "improvement": False})
        self.assertEqual(result["lost_evidence"], lines)
        for line in lines:
            self.assertIn(f"error: lost evidence: {line}", run.stderr)
            self.assertIn(f"**Lost evidence:** {line}", run.stdout)
        self.assertTrue(run.stdout.startswith("## llmrepro diff: \u26a0\ufe0f no finding: "
                                              "evidence was lost"), run.stdout)
        self.assertNotIn("beyond noise", run.stdout.replace("no difference beyond noise", ""))

    def test_failed_requests_are_lost_evidence_not_an_improvement(self):
        a = self.audit("a", script(True), suite(), RUNS, LOST_LEVELS)
        # 4 of 5 answers a 500: of each prompt's 10 requests, the 1st and 6th to arrive agree.
        b = self.audit("b", self.failing_script(DEGRADED, [Y] + [{"fault": "500"}] * 4), suite(),
                       RUNS, LOST_LEVELS, exit_code=1, extra=["--retries", "0"])
        run, result = self.diff(a, b, "failed")
        self.assertEqual((result["b"]["requests"], result["b"]["failed_requests"],
                          result["b"]["dead_prompts"], result["b"]["verdict"]),
                         (100, 56, 0, "fail"))
        self.assertEqual((result["a"]["failed_requests"], result["a"]["verdict"]), (0, "pass"))
        # What survives alone would read as TARr 30% -> 100%.
        tarr = {m["name"]: m for m in result["metrics"]}["tarr"]
        self.assertEqual((tarr["a"], tarr["b"]), (0.3, 1.0))
        b_id = result["b"]["audit_id"]
        self.assert_lost(run, result, [
            f"B ({b_id}): 56 of 100 requests failed (56.0%), above its --max-failed-rate 0; "
            "0 of 10 prompts have no successful run"])

    def test_prompts_dead_in_b_only_are_lost_evidence(self):
        a = self.audit("a", script(False), suite(), RUNS, LOST_LEVELS)
        b = self.audit("b", self.failing_script(PROMPTS[:9], [{"fault": "500"}]), suite(), RUNS,
                       LOST_LEVELS, exit_code=1, extra=["--retries", "0"])
        run, result = self.diff(a, b, "dead")
        b_id = result["b"]["audit_id"]
        self.assertEqual(result["paired_prompts"], 1)
        self.assert_lost(run, result, [
            f"B ({b_id}): 90 of 100 requests failed (90.0%), above its --max-failed-rate 0; "
            "9 of 10 prompts have no successful run",
            f"B ({b_id}): 9 prompts have no successful run where A has some: q0, q1, q2, q3, "
            "q4, ..."])

    def test_error_audits_are_lost_evidence(self):
        dead = self.failing_script(PROMPTS, [{"fault": "500"}])
        a = self.audit("a", dead, suite(), RUNS, LOST_LEVELS, exit_code=3,
                       extra=["--retries", "0"])
        b = self.audit("b", dead, suite(), RUNS, LOST_LEVELS, exit_code=3,
                       extra=["--retries", "0"])
        run, result = self.diff(a, b, "error")
        self.assertEqual((result["a"]["verdict"], result["b"]["verdict"]), ("error", "error"))
        lines = result["lost_evidence"]
        self.assertEqual(len(lines), 4, lines)
        for side, line in (("A", lines[0]), ("B", lines[2])):
            self.assertTrue(line.startswith(f"{side} ({result[side.lower()]['audit_id']}) is "
                                            "ERROR: "), line)
        self.assertEqual(lines[1], f"A ({result['a']['audit_id']}): 100 of 100 requests failed "
                                   "(100.0%), above its --max-failed-rate 0; 10 of 10 prompts "
                                   "have no successful run")
        self.assert_lost(run, result, lines)

    def assert_refused_plans(self, a, b, tag, named):
        out = self.path(f"{tag}.json")
        run = self.run_llmrepro(["diff", a, b, "--json", out])
        self.assert_exit(run, 2)
        self.assertIn("A and B were audited with different plans, so their figures are not "
                      f"comparable: {named}", run.stderr)
        self.assertFalse(os.path.exists(out), "a refused diff wrote its JSON")
        self.assertEqual(run.stdout, "")

    def test_different_runs_or_adaptive_are_refused(self):
        three = self.audit("r3", script(True), suite(), 3, LOST_LEVELS)
        twelve = self.audit("r12", script(True), suite(), 12, LOST_LEVELS)
        self.assert_refused_plans(three, twelve, "runs", "--runs 3 (A) vs 12 (B)")
        adaptive = self.audit("ad", script(True), suite(), 12, LOST_LEVELS, extra=["--adaptive"])
        self.assert_refused_plans(twelve, adaptive, "adaptive", "--adaptive off (A) vs on (B)")

    def test_a_regression_on_5_of_40_prompts_is_found(self):
        ids = [f"r{i}" for i in range(40)]
        agree = {ids[i * 8]: k for i, k in enumerate([6, 7, 6, 7, 6])}
        prompts = [{"id": pid, "prompt": prompt_text(pid)} for pid in ids]

        def cycle(pid, degraded):
            return [X] * agree[pid] + [Y] * (10 - agree[pid]) if degraded and pid in agree else [X]
        scripts = [{"model": "scripted-model",
                    "prompts": {prompt_text(pid): cycle(pid, degraded) for pid in ids}}
                   for degraded in (False, True)]
        a = self.audit("a40", scripts[0], prompts, RUNS, LOST_LEVELS)
        b = self.audit("b40", scripts[1], prompts, RUNS, LOST_LEVELS)
        run, result = self.diff(a, b, "few")
        self.assert_exit(run, 1)
        self.assertEqual(result["verdict"]["status"], "regression")
        pooled = {m["name"]: m for m in result["metrics"]}["pooled_agreement"]
        self.assertEqual((pooled["a"], pooled["test"], pooled["regression"]),
                         (1.0, "stratified_exact", True))
        self.assertAlmostEqual(pooled["b"], (400 - 18) / 400, places=12)
        self.assertAlmostEqual(pooled["p_value"], stratified_one_sided(
            [(10, 10, agree.get(pid, 10), 10) for pid in ids]), places=12)
        by_id = {p["id"]: p for p in result["prompts"]}
        for pid, k in agree.items():
            with self.subTest(prompt=pid):
                self.assertEqual(by_id[pid]["b"]["reference_count"], k)
                self.assertAlmostEqual(by_id[pid]["agreement_p"],
                                       fisher_one_sided(10, 10, k, 10), places=12)
                self.assertFalse(by_id[pid]["regression"])
        self.assertIn("pooled_agreement 100.0% \u2192 95.5%", run.stdout)

    def test_a_missing_database_is_an_input_error(self):
        run = self.run_llmrepro(["diff", self.path("none-a.db"), self.path("none-b.db")])
        self.assert_exit(run, 2)
        self.assertIn("none-a.db", run.stderr)


if __name__ == "__main__":
    h.main()
