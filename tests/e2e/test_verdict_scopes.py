#!/usr/bin/python3
"""Scenario: every gate is judged in every scope (issue "A verdict a CI can trust"), and a pass
without a stability gate says so. Every run writes every report format and the exit code,
terminal, JSON, HTML, JUnit and Markdown must state the same verdict.
- probe kinds: with --probe sweep,long the sweep is stable and the long probe (the prompt behind
  a "Context: ..." preamble, which the script tells apart by the "\n\n" before the question)
  answers A, B: --fail-on unstable fails on the long probe's scope alone.
- endpoints: with --compare, a second endpoint that answers every prompt differently fails
  --fail-on disagree; a second endpoint that is unstable fails --fail-on unstable in its scope.
- levels: a prompt answers X whenever it is alone (c=1) and Y whenever another request is open
  (c=2): each level is stable on its own, yet the prompt is unstable and level 2 differs from
  the serial level, so --fail-on unstable fails.
- no stability gate: an unstable suite audited without --fail-on unstable, --max-unique or
  --max-unstable-rate exits 0 with "NO STABILITY GATE: 1 of 2 prompts unstable", never "PASS";
  --fail-on fragile alone is no stability gate; --max-unique 2 is, and passes as "PASS: ".
"""

import e2e_harness as h


def tok(text, lp=-0.1, alt="zz", alt_lp=-3.0):
    return [text, lp, [[text, lp], [alt, alt_lp]]]


def completion(*words):
    return {"tokens": [tok(w) for w in words], "finish_reason": "stop"}


A = completion(" Quiet", " room", " here")
B = completion(" Quiet", " busy", " hall")
C = completion(" Other", " words", " entirely")
S = completion(" Same", " words")
PROMPTS = [{"id": "alpha", "prompt": "Alpha question one?"},
           {"id": "beta", "prompt": "Beta question two?"}]
NO_SCOPE = {"endpoint": None, "probe": None, "level": None}


def scope(endpoint, probe):
    return {"endpoint": endpoint, "probe": probe, "level": None}


class VerdictScopes(h.E2ETestCase):
    def gates(self, report, name):
        return [g for g in report["summary"]["verdict"]["gates"] if g["name"] == name]

    def test_long_probe_unstable(self):
        prompt = PROMPTS[0]["prompt"]
        # The long probe sends "Context: <words>\n\nAlpha question one?": the longer key
        # matches it, the plain one the sweep.
        endpoint = self.start_endpoint({"prompts": {prompt: [A], "\n\n" + prompt: [A, B]}})
        suite = self.write_suite("suite.jsonl", PROMPTS[:1])
        run, report, _ = self.audit_reports(
            suite, ["--endpoint", endpoint.url],
            ["--probe", "sweep,long", "--runs", "2", "--concurrency", "1",
             "--fail-on", "unstable"])
        self.assertEqual(run.returncode, 1, run.describe())
        posts = endpoint.posts()
        self.assertEqual(sorted(p["prompt"] for p in posts), sorted([prompt, "\n\n" + prompt] * 2))
        by_probe = {p["probe"]: p for p in report["probes"]}
        self.assertEqual((by_probe["sweep"]["summary"]["unstable_prompts"],
                          by_probe["long"]["summary"]["unstable_prompts"]), (0, 1))
        self.assertEqual(report["summary"]["unstable_prompts"], 0, "the top level is the sweep's")
        gates = self.gates(report, "fail_on_unstable")
        self.assertEqual([(g["scope"], g["passed"], g["figure"]) for g in gates],
                         [(scope(0, "sweep"), True, 0), (scope(0, "long"), False, 1)])
        verdict = report["summary"]["verdict"]
        self.assertEqual(verdict["status"], "fail")
        self.assertEqual([g["scope"] for g in verdict["gates"] if not g["passed"]],
                         [scope(0, "long")])
        self.assertIn("long", gates[1]["message"])

    def test_compare_disagree_and_unstable_second_endpoint(self):
        suite = self.write_suite("suite.jsonl", PROMPTS)
        first = self.start_endpoint({"prompts": {p["prompt"]: [A] for p in PROMPTS}},
                                    name="first")
        other = self.start_endpoint({"prompts": {p["prompt"]: [C] for p in PROMPTS}},
                                    name="other")
        unstable = self.start_endpoint({"prompts": {PROMPTS[0]["prompt"]: [A],
                                                    PROMPTS[1]["prompt"]: [A, B]}},
                                       name="unstable")
        base = ["--runs", "2", "--concurrency", "1"]
        with self.subTest(case="--fail-on disagree"):
            run, report, _ = self.audit_reports(
                suite, ["--endpoint", first.url, "--compare", other.url],
                base + ["--fail-on", "disagree"], tag="disagree")
            self.assertEqual(run.returncode, 1, run.describe())
            self.assertEqual(report["comparison"]["agreeing_prompts"], 0)
            self.assertEqual([(e["url"], e["summary"]["unstable_prompts"])
                              for e in report["comparison"]["endpoints"]],
                             [(first.url, 0), (other.url, 0)])
            gates = self.gates(report, "fail_on_disagree")
            self.assertEqual(len(gates), 1, report["summary"]["verdict"])
            gate = gates[0]
            self.assertEqual((gate["passed"], gate["figure"], gate["limit"]), (False, 2, 0))
            # The failing gate names the endpoint that disagrees with endpoint 0.
            self.assertEqual(gate["scope"]["endpoint"], 1, gate)
            self.assertIn("endpoint 1", gate["message"])
            self.assertEqual(report["summary"]["verdict"]["status"], "fail")
        with self.subTest(case="--fail-on unstable, the second endpoint unstable"):
            run, report, _ = self.audit_reports(
                suite, ["--endpoint", first.url, "--compare", unstable.url],
                base + ["--fail-on", "unstable"], tag="unstable")
            self.assertEqual(run.returncode, 1, run.describe())
            self.assertEqual(report["summary"]["unstable_prompts"], 0, "endpoint 0 is stable")
            gates = self.gates(report, "fail_on_unstable")
            self.assertEqual([(g["scope"], g["passed"], g["figure"]) for g in gates],
                             [(scope(0, "sweep"), True, 0), (scope(1, "sweep"), False, 1)])
            self.assertIn("endpoint 1", gates[1]["message"])
        with self.subTest(case="--fail-on unstable,disagree, all agree"):
            run, report, _ = self.audit_reports(
                suite, ["--endpoint", first.url, "--compare", first.url],
                base + ["--fail-on", "unstable,disagree"], tag="agree")
            self.assertEqual(run.returncode, 0, run.describe())
            verdict = report["summary"]["verdict"]
            self.assertEqual(sorted((g["name"], g["scope"]["endpoint"]) for g in verdict["gates"]
                                    if g["name"] != "fail_on_disagree"),
                             [("fail_on_unstable", 0), ("fail_on_unstable", 1),
                              ("max_failed_rate", None)])
            self.assertEqual(len(self.gates(report, "fail_on_disagree")), 1)
            self.assertEqual(verdict["headline"], f"PASS: {len(verdict['gates'])} gates passed")

    def test_second_endpoint_without_evidence(self):
        # Endpoint 0 answers everything; endpoint 1 says 404 to every request: its scope has no
        # prompt with two successful completions, so the audit cannot be judged.
        suite = self.write_suite("suite.jsonl", PROMPTS)
        first = self.start_endpoint({"prompts": {p["prompt"]: [A] for p in PROMPTS}},
                                    name="first")
        missing = self.start_endpoint({"prompts": {p["prompt"]: [{"fault": "404"}]
                                                   for p in PROMPTS}}, name="missing")
        run, report, _ = self.audit_reports(
            suite, ["--endpoint", first.url, "--compare", missing.url],
            ["--runs", "2", "--concurrency", "1", "--fail-on", "unstable",
             "--max-failed-rate", "0.5"])
        self.assertEqual(run.returncode, 3, run.describe())
        self.assertEqual(len(missing.posts()), 4)
        verdict = report["summary"]["verdict"]
        self.assertEqual(verdict["status"], "error")
        self.assertTrue(any("endpoint 1" in e for e in verdict["errors"]), verdict["errors"])
        self.assertEqual(report["summary"]["failed_requests"], 0, "endpoint 0's summary")
        gate = self.gates(report, "max_failed_rate")[0]
        # Over every endpoint: 4 of 8 requests failed.
        self.assertEqual((gate["figure"], gate["limit"], gate["passed"], gate["scope"]),
                         (0.5, 0.5, True, NO_SCOPE))
        self.assertTrue(gate["message"].startswith("4 of 8 requests failed after their retries "
                                                   "(4 x HTTP 404"), gate["message"])

    def test_drift_between_levels(self):
        drift = {"id": "drift", "prompt": "Drift question?"}
        steady = {"id": "steady", "prompt": "Steady question?"}
        x, y = completion(" Serial", " answer"), completion(" Batched", " answer")
        endpoint = self.start_endpoint({"prompts": {
            drift["prompt"]: {"entries": [x], "busy": [y], "hold_ms": 500},
            steady["prompt"]: [S]}})
        suite = self.write_suite("suite.jsonl", [drift, steady])
        run, report, _ = self.audit_reports(
            suite, ["--endpoint", endpoint.url],
            ["--runs", "2", "--concurrency", "1,2", "--fail-on", "unstable"])
        self.assertEqual(run.returncode, 1, run.describe())
        variants = [(p["in_flight"] > 0, p["variant"]) for p in endpoint.posts()
                    if p["prompt"] == drift["prompt"]]
        self.assertEqual([v for _, v in variants], ["entries", "entries", "busy", "busy"],
                         "the script's premise: alone at c=1, overlapped at c=2")
        summary = report["summary"]
        self.assertEqual([(lv["concurrency"], lv["unstable_prompts"], lv["unique_completions"],
                           lv["differs_from_serial_prompts"])
                          for lv in summary["by_concurrency"]], [(1, 0, 2, 0), (2, 0, 2, 1)])
        self.assertEqual((summary["unstable_prompts"], summary["stable_prompts"]), (1, 1))
        prompt = {p["id"]: p for p in report["prompts"]}["drift"]
        self.assertEqual((prompt["status"], prompt["unique_completions"],
                          prompt["first_divergence"], prompt["divergence_kind"]),
                         ("unstable", 2, 0, "token"))
        self.assertEqual([(lv["concurrency"], lv["status"], lv["unique_completions"],
                           lv["differs_from_serial"]) for lv in prompt["by_concurrency"]],
                         [(1, "stable", 1, False), (2, "stable", 1, True)])
        self.assertEqual([(c["text"], c["count_by_concurrency"]) for c in prompt["completions"]],
                         [(" Serial answer", {"1": 2}), (" Batched answer", {"2": 2})])
        gates = self.gates(report, "fail_on_unstable")
        self.assertEqual([(g["passed"], g["figure"]) for g in gates], [(False, 1)])

    def test_no_stability_gate(self):
        endpoint = self.start_endpoint({"prompts": {PROMPTS[0]["prompt"]: [A],
                                                    PROMPTS[1]["prompt"]: [A, B]}})
        suite = self.write_suite("suite.jsonl", PROMPTS)
        base = ["--endpoint", endpoint.url]
        args = ["--runs", "2", "--concurrency", "1"]
        for tag, gates in (("none", []), ("fragile", ["--fail-on", "fragile"]),
                           ("tara", ["--min-tara", "0"])):
            with self.subTest(gates=gates):
                run, report, _ = self.audit_reports(suite, base, args + gates, tag=tag)
                self.assertEqual(run.returncode, 0, run.describe())
                verdict = report["summary"]["verdict"]
                self.assertEqual((verdict["status"], verdict["stability_gated"],
                                  verdict["headline"]),
                                 ("pass", False, "NO STABILITY GATE: 1 of 2 prompts unstable"))
                self.assertNotIn("PASS", run.stdout)
                self.assertEqual(report["summary"]["fragile_prompts"], 0)
        with self.subTest(gates="--max-unique 2"):
            run, report, _ = self.audit_reports(suite, base, args + ["--max-unique", "2"],
                                                tag="unique")
            self.assertEqual(run.returncode, 0, run.describe())
            verdict = report["summary"]["verdict"]
            self.assertEqual((verdict["status"], verdict["stability_gated"]), ("pass", True))
            self.assertTrue(verdict["headline"].startswith("PASS: "))
            self.assertIn(verdict["headline"], run.stdout)
        with self.subTest(gates="--max-unique 1"):
            run, report, _ = self.audit_reports(suite, base, args + ["--max-unique", "1"],
                                                tag="unique1")
            self.assertEqual(run.returncode, 1, run.describe())
            gate = self.gates(report, "max_unique")[0]
            self.assertEqual((gate["passed"], gate["figure"], gate["limit"], gate["scope"]),
                             (False, 2, 1, scope(0, "sweep")))


if __name__ == "__main__":
    h.main()
