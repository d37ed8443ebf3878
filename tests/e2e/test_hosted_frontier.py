#!/usr/bin/python3
"""Scenario: hosted frontier models as they answered in 2026, each shaped after the provider's
documented refusals (tests/data/formats/README.md, "Provider refusals of request parameters"):
- Anthropic's newest models (Messages API) refuse any `temperature` with a 400: the capability
  preflight names the refusal, the audit sends no temperature, runs in distribution mode, and
  --fail-on shift fails on the one prompt whose answers moved between levels (exactly, from the
  script: Fisher's test of 8 of 8 against 0 of 8, Holm over the two tests that can reject).
- OpenAI's GPT-5 answers 400 to any temperature but 1 and honours a seed: refused, then the same
  seed twice answers alike ("seed honoured"), and every prompt's answers hold.
- A local server that accepts a seed and ignores it (LM Studio), audited with --temperature
  default: "seed not honoured", and no request names a temperature.
- A router that drops temperature 0 silently: the preflight's answer chose a token 2.2 nats below
  its top candidate, so temperature 0 is "ignored" and the audit judges distributions.
- --no-preflight sends nothing before the plan.
- Two sampling endpoints audited on one plan (--compare): each prompt's answers on endpoint 1
  against endpoint 0's, every level pooled, by the same test in the same Holm family as the level
  tests; --fail-on shift fails on the one prompt whose answers moved (exactly: Fisher's test of 0
  of 16 against 16 of 16, Holm over the seven tests that can reject), passes without the flag,
  and finds nothing where the two endpoints answer alike."""

from fractions import Fraction
from math import comb

import json

import e2e_harness as h

PREFLIGHT = "Write one sentence about the sea."
RUNS = 8
LEVELS = (1, 4)


def tokens(*words):
    return [[w, -0.1, [[w, -0.1], ["x", -3.0]]] for w in words]


def entry(*words):
    return {"tokens": tokens(*words), "finish_reason": "stop"}


def script(**extra):
    return dict({
        "model": "frontier-model",
        "prompts": {
            PREFLIGHT: [entry("The", " sea", " is", " wide.")],
            "Name the capital of France.": [entry("Paris"), entry("Paris"), entry("Paris"),
                                            entry("Lyon")],
            # Alone at c=1; beside the other requests in flight at c=4 (held 50 ms so that they
            # overlap): an answer that moves with the batch.
            "Pick a colour.": {"entries": [entry("red")], "busy": [entry("blue")],
                               "hold_ms": 50},
            "Say hello.": [entry("Hello")],
        }}, **extra)


def suite():
    return [{"id": pid, "messages": [{"role": "user", "content": text}]}
            for pid, text in (("capital", "Name the capital of France."),
                              ("colour", "Pick a colour."), ("hello", "Say hello."))]


def compared_script(hello="Hello", capital=("Paris", "Paris", "Paris", "Lyon")):
    """An endpoint that samples: its entries cycle in arrival order, so each level's and each
    endpoint's answer counts follow from the script whatever order the requests come in."""
    return {"model": "frontier-model",
            "prompts": {PREFLIGHT: [entry("The", " sea", " is", " wide.")],
                        "Name the capital of France.": [entry(word) for word in capital],
                        "Pick a colour.": [entry("red"), entry("blue")],
                        "Say hello.": [entry(hello)]}}


def fisher_p(a_count, a_runs, b_count, b_runs):
    """Two-sided Fisher exact test, exactly: the tables with the margins seen that are at most as
    likely as the one seen."""
    hits, total = a_count + b_count, a_runs + b_runs
    def chance(k):
        return Fraction(comb(a_runs, k) * comb(b_runs, hits - k), comb(total, hits))
    seen = chance(a_count)
    return sum(chance(k) for k in range(max(0, hits - b_runs), min(a_runs, hits) + 1)
               if chance(k) <= seen)


class HostedFrontier(h.E2ETestCase):
    def audit(self, dialect, script_value, tag, extra=(), api=None, env=None, url=None):
        endpoint = self.start_endpoint(script_value, dialect, name=tag)
        suite_path = self.write_suite(f"{tag}-suite.jsonl", suite())
        args = ["--endpoint", url or endpoint.url, "--model", "frontier-model",
                "--runs", str(RUNS), "--concurrency", ",".join(map(str, LEVELS)),
                "--timeout", "20", "--retries", "1", *extra]
        if env is None:
            run, report, paths = self.audit_reports(suite_path, args, tag=tag, api=api or dialect)
        else:
            paths = self.report_paths(tag)
            run = self.run_llmrepro(["audit", "--suite", suite_path, *args, "--api",
                                     api or dialect, "--db", paths["db"],
                                     *h.report_args(paths)], env=env)
            report = self.assert_verdict_agrees(run, paths)
        return endpoint, run, report, paths

    def bodies(self, endpoint):
        return [json.loads(p["body"]) for p in endpoint.posts(preflight=True)]

    def test_anthropic_refuses_temperature(self):
        endpoint, run, report, paths = self.audit(
            "anthropic", script(refuse_params={"temperature": "anthropic_deprecated"}),
            "anthropic", extra=["--fail-on", "shift", "--min-modal-share", "0.5"])
        self.assert_exit(run, 1)
        posts = endpoint.posts(preflight=True)
        self.assertEqual(len(endpoint.preflight_posts()), 3)
        # One refused preflight request, two more without temperature, then the plan.
        self.assertEqual([p["outcome"] for p in posts[:3]], ["refused", "completion",
                                                             "completion"])
        self.assertEqual(len(posts), 3 + 3 * RUNS * len(LEVELS))
        bodies = self.bodies(endpoint)
        self.assertEqual(bodies[0]["temperature"], 0.0)
        for body in bodies[1:]:
            self.assertNotIn("temperature", body)
        self.assertIn("llmrepro: temperature 0 refused: audited at the provider's default at "
                      f"{endpoint.url}: HTTP 400: `temperature` is deprecated for this model.",
                      run.stderr)
        found = report["endpoints"][0]["capabilities"]
        self.assertEqual(found["requests"], 3)
        self.assertEqual(found["requested_temperature"], "0")
        self.assertEqual(found["temperature_in_effect"], "default")
        self.assertEqual(found["temperature"]["outcome"], "refused")
        self.assertEqual(found["logprobs"]["outcome"], "not sent")
        self.assertEqual(found["seed"]["outcome"], "not sent")
        self.assertEqual(found["model"], "frontier-model")

        prompts = {p["id"]: p for p in report["prompts"]}
        capital = prompts["capital"]
        self.assertEqual(capital["modal"]["answer"], "Paris")
        self.assertEqual((capital["modal"]["count"], capital["modal"]["runs"]), (12, 16))
        self.assertFalse(capital["shifted"])
        colour = prompts["colour"]
        shift = colour["by_concurrency"][1]["distribution"]["shift"]
        self.assertEqual((shift["serial_count"], shift["count"]), (0, 8))  # "blue" sorts first
        self.assertAlmostEqual(shift["p"], 2 / 12870, places=9)
        self.assertAlmostEqual(shift["p_adjusted"], 4 / 12870, places=9)
        self.assertTrue(colour["shifted"])
        dist = report["summary"]["distribution"]
        self.assertEqual((dist["shifted_prompts"], dist["shift_tests"]), (1, 2))
        self.assertEqual(dist["min_modal_share"], 0.5)
        gates = {g["name"]: g for g in report["summary"]["verdict"]["gates"]}
        self.assertFalse(gates["fail_on_shift"]["passed"])
        self.assertIn("most of all colour at c=4", gates["fail_on_shift"]["message"])
        self.assertTrue(gates["min_modal_share"]["passed"])
        with open(paths["markdown"], encoding="utf-8") as f:
            markdown = f.read()
        self.assertIn("temperature 0 refused: audited at the provider's default", markdown)
        self.assertIn("### Answer distributions", markdown)
        self.assertIn("| colour | 2 | blue | 0.50 [0.28, 0.72] of 16 | c=4 (p 0.00031) |",
                      markdown)

    def test_openai_default_temperature_only_with_an_honoured_seed(self):
        endpoint, run, report, _ = self.audit(
            "openai-chat", script(refuse_params={"temperature": "openai_default_only"},
                                  seeded=True),
            "openai", extra=["--fail-on", "shift", "--seed", "7"])
        self.assert_exit(run, 0)
        found = report["endpoints"][0]["capabilities"]
        self.assertEqual(found["temperature"]["outcome"], "refused")
        self.assertIn("Only the default (1) value is supported", found["temperature"]["detail"])
        self.assertEqual(found["seed"]["outcome"], "honoured")
        self.assertEqual(found["seed"]["detail"],
                         "two sampled requests with seed 7 answered alike")
        self.assertEqual(found["logprobs"]["outcome"], "accepted")
        self.assertEqual(found["logprobs"]["candidates_returned"], 2)
        for body in self.bodies(endpoint)[1:]:
            self.assertNotIn("temperature", body)
            self.assertEqual(body["seed"], 7)
        # An honoured seed answers every run alike: nothing shifts, every modal share is 1.
        self.assertEqual(report["summary"]["distribution"]["shifted_prompts"], 0)
        self.assertEqual(report["summary"]["distribution"]["min_modal_share"], 1.0)

    def test_a_seed_accepted_and_ignored(self):
        lm_studio = script()
        lm_studio["prompts"][PREFLIGHT] = [entry("Waves", "."), entry("Salt", ".")]
        endpoint, run, report, _ = self.audit("openai-chat", lm_studio, "lmstudio",
                                              extra=["--temperature", "default"])
        self.assert_exit(run, 0)
        found = report["endpoints"][0]["capabilities"]
        self.assertEqual(found["requests"], 2)
        self.assertEqual(found["requested_temperature"], "default")
        self.assertEqual(found["temperature"]["outcome"], "not sent")
        self.assertEqual(found["seed"]["outcome"], "not honoured")
        self.assertEqual(report["config"]["temperature"], "default")
        for body in self.bodies(endpoint):
            self.assertNotIn("temperature", body)
        self.assertIn("NO STABILITY GATE: 1 of 3 prompts with answers that shifted between levels",
                      report["summary"]["verdict"]["headline"])

    def test_a_router_that_ignores_temperature_zero(self):
        router = script()
        # The chosen token sits 2.2 nats below its position's top candidate: sampled.
        router["prompts"][PREFLIGHT] = [{"tokens": [["Foam", -2.5, [["The", -0.3],
                                                                      ["Foam", -2.5]]]],
                                         "finish_reason": "stop"}]
        _, run, report, _ = self.audit("openai-chat", router, "router",
                                       extra=["--fail-on", "unstable"])
        found = report["endpoints"][0]["capabilities"]
        self.assertEqual(found["temperature"]["outcome"], "ignored")
        self.assertEqual(found["temperature_in_effect"], "default")
        self.assertIn("chose a token 2.20 nats below the top candidate", found["temperature"]["detail"])
        self.assertIn("llmrepro: temperature 0 ignored: audited at the provider's default",
                      run.stderr)
        self.assertIn("--fail-on unstable fails on any two distinct completions", run.stderr)

    def test_diff_between_two_sampled_audits(self):
        # Audit B's "Say hello." answers "Bye" 16 times of 16 where A's said "Hello": beyond
        # chance (Fisher 2 / C(32, 16)), a regression; the other prompts answer as before.
        changed = script()
        changed["prompts"]["Say hello."] = [entry("Bye")]
        _, _, _, a = self.audit("openai-chat", script(), "diff-a", extra=["--temperature", "default"])
        _, _, _, b = self.audit("openai-chat", changed, "diff-b", extra=["--temperature", "default"])
        out = self.path("diff.json")
        run = self.run_llmrepro(["diff", a["db"], b["db"], "--json", out, "--markdown",
                                 self.path("diff.md")])
        self.assert_exit(run, 1)
        with open(out, encoding="utf-8") as f:
            diff = json.load(f)
        prompts = {p["id"]: p for p in diff["prompts"]}
        self.assertTrue(prompts["hello"]["answers_shifted"])
        self.assertAlmostEqual(prompts["hello"]["answer_shift_p"], 2 / 601080390, places=15)
        self.assertTrue(prompts["hello"]["regression"])
        self.assertFalse(prompts["capital"]["answers_shifted"])
        with open(self.path("diff.md"), encoding="utf-8") as f:
            self.assertIn("**Answers shifted:** hello (p", f.read())

    def compared(self, tag, other, extra=()):
        first = self.start_endpoint(compared_script(), name=f"{tag}-0")
        second = self.start_endpoint(other, name=f"{tag}-1")
        suite_path = self.write_suite(f"{tag}-suite.jsonl", suite())
        args = ["--endpoint", first.url, "--compare", second.url, "--model", "frontier-model",
                "--runs", str(RUNS), "--concurrency", ",".join(map(str, LEVELS)),
                "--timeout", "20", "--retries", "1", "--temperature", "default"]
        return self.audit_reports(suite_path, args, extra=extra, tag=tag)

    def test_shift_between_endpoints(self):
        # Endpoint 1 answers "Bye" 16 times of 16 where endpoint 0 said "Hello", and "Paris" 8
        # times of 16 where endpoint 0 said it 12 times; "Pick a colour." alike on both.
        shifted = compared_script(hello="Bye", capital=("Paris", "Lyon"))
        run, report, paths = self.compared("endpoints", shifted, extra=["--fail-on", "shift"])
        self.assert_exit(run, 1)
        comparison = report["comparison"]
        # The family: the level tests of capital and colour on each endpoint (hello's one answer
        # per endpoint can never reject), and the endpoint tests of all three prompts.
        self.assertEqual((comparison["shifted_prompts"], comparison["shift_tests"]), (1, 7))
        dist = report["summary"]["distribution"]
        self.assertEqual((dist["shifted_prompts"], dist["shift_tests"]), (0, 7))
        rows = {p["id"]: p for p in comparison["prompts"]}
        hello = rows["hello"]["endpoints"][0]["shift"]
        # "Bye" and "Hello" tie at 16 over both endpoints; "Bye" sorts first.
        self.assertEqual((hello["answer"], hello["base_count"], hello["base_answers"],
                          hello["count"], hello["answers"]), ("Bye", 0, 16, 16, 16))
        p_hello = fisher_p(0, 16, 16, 16)
        self.assertEqual(p_hello, Fraction(2, comb(32, 16)))
        self.assertAlmostEqual(hello["p"], float(p_hello), places=15)
        self.assertAlmostEqual(hello["p_adjusted"], float(7 * p_hello), places=15)
        self.assertEqual(hello["distance"], 1.0)
        self.assertTrue(hello["shifted"])
        self.assertTrue(rows["hello"]["shifted"])
        capital = rows["capital"]["endpoints"][0]["shift"]
        self.assertEqual((capital["answer"], capital["base_count"], capital["count"]),
                         ("Paris", 12, 8))
        p_capital = fisher_p(12, 16, 8, 16)
        self.assertEqual(p_capital, Fraction(84787, 310155))
        self.assertAlmostEqual(capital["p"], float(p_capital), places=12)
        self.assertEqual(capital["p_adjusted"], 1.0)  # Holm: 6 x 0.27, capped
        self.assertFalse(capital["shifted"])
        colour = rows["colour"]["endpoints"][0]["shift"]
        self.assertEqual((colour["p"], colour["p_adjusted"], colour["shifted"]), (1.0, 1.0, False))
        gates = [g for g in report["summary"]["verdict"]["gates"] if g["flag"] == "--fail-on shift"]
        self.assertEqual([(g["name"], g["scope"]["endpoint"], g["passed"]) for g in gates],
                         [("fail_on_shift", 0, True), ("fail_on_shift", 1, True),
                          ("fail_on_endpoint_shift", 1, False)])
        self.assertEqual(gates[2]["message"],
                         "endpoint 1: 1 of 3 prompts with an answer distribution that shifted "
                         "from endpoint 0's (7 tests, family-wise 0.050), most of all hello "
                         "(--fail-on shift)")
        # Every output shows the test beside the level tests.
        line = ("3 prompts: 1 with one answer, lowest modal share 0.50 (colour); 0 shifted "
                "between levels, 1 between endpoints (Holm over 7 tests, family-wise 0.05)")
        self.assertIn(line, run.stdout)
        self.assertRegex(run.stdout, r"hello +1 distinct, modal 1\.00 \[0\.81, 1\.00\] of 16, "
                                     r"shifted –, vs endpoint 0: endpoint 1 \(p 2\.3e-08\)")
        with open(paths["markdown"], encoding="utf-8") as f:
            markdown = f.read()
        self.assertIn("| prompt | distinct answers | modal answer | modal share [95%] | shifted at "
                      "| shifted from endpoint 0 |", markdown)
        self.assertIn("| hello | 1 | Hello | 1.00 [0.81, 1.00] of 16 | – | endpoint 1 "
                      "(p 2.3e-08) |", markdown)
        self.assertIn("| capital | 2 | Paris | 0.75 [0.51, 0.90] of 16 | – | – |",
                      markdown)
        with open(paths["html"], encoding="utf-8") as f:
            document = f.read()
        found, text = h.ElementText.of(document, "distribution")
        self.assertEqual(found, 1)
        self.assertIn(line, text)
        self.assertIn("shifted from endpoint 0", text)
        self.assertIn('<span class="tag fail">endpoint 1 (p 2.3e-08)</span>', document)
        junit = h.ElementTree.parse(paths["junit"]).getroot()
        cases = {(c.get("classname"), c.get("name")): c for c in junit.iter("testcase")}
        gate_case = cases[("llmrepro.gate", "--fail-on shift (endpoint 1 vs endpoint 0)")]
        self.assertEqual(gate_case.find("failure").get("message"), gates[2]["message"])
        failure = cases[("llmrepro.audit.endpoint-1.sweep", "hello")].find("failure")
        self.assertEqual(failure.get("type"), "answer_distribution_shifted_from_endpoint_0")
        self.assertEqual(failure.get("message"),
                         "its answer distribution shifted from endpoint 0's (p 2.3e-08) "
                         "(--fail-on shift)")
        self.assertIsNone(cases[("llmrepro.audit.endpoint-1.sweep", "capital")].find("failure"))

        # The same audit without the gate: nothing fails, and the headline says what moved.
        run, report, _ = self.compared("ungated", shifted)
        self.assert_exit(run, 0)
        self.assertEqual(report["summary"]["verdict"]["headline"],
                         "NO STABILITY GATE: 0 of 3 prompts with answers that shifted between "
                         "levels, 1 of 3 between endpoints, lowest modal share 0.500")
        self.assertEqual(report["comparison"]["shifted_prompts"], 1)

    def test_no_shift_between_endpoints_that_answer_alike(self):
        run, report, _ = self.compared("alike", compared_script(), extra=["--fail-on", "shift"])
        self.assert_exit(run, 0)
        comparison = report["comparison"]
        self.assertEqual((comparison["shifted_prompts"], comparison["shift_tests"]), (0, 6))
        for row in comparison["prompts"]:
            shift = row["endpoints"][0]["shift"]
            self.assertFalse(shift["shifted"], row)
            self.assertEqual(shift["p"], 1.0, row)
            self.assertEqual(shift["distance"], 0.0, row)
        gates = [g for g in report["summary"]["verdict"]["gates"] if g["flag"] == "--fail-on shift"]
        self.assertEqual([(g["name"], g["passed"]) for g in gates],
                         [("fail_on_shift", True), ("fail_on_shift", True),
                          ("fail_on_endpoint_shift", True)])

    def test_no_preflight(self):
        endpoint, run, report, _ = self.audit("openai-chat", script(), "none",
                                              extra=["--no-preflight"])
        self.assertEqual(len(endpoint.posts()), 3 * RUNS * len(LEVELS))
        self.assertIsNone(report["endpoints"][0]["capabilities"])
        self.assertNotIn("preflight", run.stderr)


if __name__ == "__main__":
    h.main()
