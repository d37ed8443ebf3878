#!/usr/bin/python3
"""Scenario: the probe kinds and the endpoint comparison against the scripted endpoint, where
every number follows from the script.
- prefix: the endpoint offers only vLLM's /reset_prefix_cache, so the tool's lookup tries
  /flush_cache (404) then /reset_prefix_cache (200) before the first cold trial and uses the
  latter before each later one; each prompt answers W after a priming request (warm) and C right
  after a flush (cold), C diverging from W at token 1. With 2 prompts x 2 runs: 4 cold trials,
  4 primes, 4 flushes received, 5 sent, 1 failed; every prompt drifts warm against cold, while
  the sweep at c=1 (never after a flush) is stable.
- mixed: each prompt answers A when no other request is open during its 150 ms hold and
  cycles B, A when one is (filler drift); fillers take 300 ms. With 3 runs, the sweep at c=1 is
  stable and the mixed probe gives B, A, B per prompt: 2 of 2 prompts unstable, 4 distinct
  completions; the fillers the tool counts are exactly those the endpoint answered.
- compare: two scripted endpoints agree on one prompt and differ at token 2 on the other.
`llmrepro report` on each database reproduces the probe kinds, activity and comparison, and the
HTML and Markdown reports carry their sections."""

import json

import e2e_harness as h


def tok(text, lp=-0.1, alt="zz", alt_lp=-3.0):
    return [text, lp, [[text, lp], [alt, alt_lp]]]


WARM = {"tokens": [tok(" The"), tok(" warm"), tok(" answer")]}
COLD = {"tokens": [tok(" The"), tok(" cold"), tok(" answer")]}
A = {"tokens": [tok(" Quiet"), tok(" room"), tok(" here")]}
B = {"tokens": [tok(" Quiet"), tok(" busy"), tok(" hall")]}
OK = {"tokens": [tok(" ok")]}
SLOW_FILLER = {"tokens": [tok(" filler")], "delay_ms": 300}

PROMPTS = [{"id": "alpha", "prompt": "Alpha question one?"},
           {"id": "beta", "prompt": "Beta question two?"}]


def flushes(endpoint):
    return [r for r in endpoint.posts() if r.get("outcome") == "flush"]


class ProbeScripted(h.E2ETestCase):
    def audit(self, endpoint_args, extra, name="audit"):
        suite = self.write_suite("suite.jsonl", PROMPTS)
        db, report_path = self.path(f"{name}.db"), self.path(f"{name}.json")
        html, md = self.path(f"{name}.html"), self.path(f"{name}.md")
        run = self.run_llmrepro(["audit", "--suite", suite, *endpoint_args, "--api", "openai-chat",
                                 "--max-tokens", "8", "--timeout", "20", "--retries", "0",
                                 "--db", db, "--json", report_path, "--html", html,
                                 "--markdown", md, *extra], timeout=150)
        self.assert_exit(run, 0)
        report = self.load_report(report_path)
        again_path = self.path(f"{name}-again.json")
        again = self.run_llmrepro(["report", "--db", db, "--json", again_path, "--quiet"])
        self.assert_exit(again, 0)
        reproduced = self.load_report(again_path)
        for key in ("probe", "probes", "comparison", "semantic", "summary", "prompts"):
            self.assertEqual(reproduced[key], report[key], key)
        with open(html, encoding="utf-8") as f:
            html_text = f.read()
        with open(md, encoding="utf-8") as f:
            md_text = f.read()
        return run, report, html_text, md_text

    def test_prefix_flush_and_cold_drift(self):
        endpoint = self.start_endpoint({
            "flush_routes": ["/reset_prefix_cache"], "fallback": [OK],
            "prompts": {p["prompt"]: {"entries": [WARM], "cold": [COLD]} for p in PROMPTS}})
        run, report, html, md = self.audit(
            ["--endpoint", endpoint.url],
            ["--probe", "sweep,prefix", "--runs", "2", "--concurrency", "1"])
        by_probe = {p["probe"]: p for p in report["probes"]}
        self.assertEqual(by_probe["prefix"]["activity"],
                         {"primes_sent": 4, "primes_failed": 0, "flushes_sent": 5,
                          "flushes_failed": 1, "flush_route": "/reset_prefix_cache",
                          "cold_mode": "flush", "prefix_words": 160})
        self.assertEqual(len(flushes(endpoint)), 4)
        self.assertEqual([r["path"] for r in endpoint.posts() if r.get("outcome") == "not_found"],
                         ["/flush_cache"])
        self.assertEqual(sum(1 for r in endpoint.posts() if r.get("fallback")), 4)  # the primes
        self.assertEqual(by_probe["prefix"]["prefix"]["drift_prompts"], 2)
        self.assertEqual([(p["id"], p["cold_runs"], p["warm_runs"], p["cold_unique"],
                           p["warm_unique"], p["drift"], p["divergence"])
                          for p in by_probe["prefix"]["prefix"]["prompts"]],
                         [("alpha", 2, 2, 1, 1, True, 1), ("beta", 2, 2, 1, 1, True, 1)])
        self.assertEqual(by_probe["prefix"]["summary"]["unstable_prompts"], 2)
        self.assertEqual(by_probe["sweep"]["summary"]["unstable_prompts"], 0)
        self.assertEqual(report["summary"]["unstable_prompts"], 0)  # the sweep's, top level
        self.assertIn("flushed via /reset_prefix_cache", run.stdout)
        self.assertIn('id="probe-prefix"', html)
        self.assertIn("drift: <b>2</b> of 2 prompts answer differently warm", html)
        self.assertIn("cache flushed through <code>/reset_prefix_cache</code>", html)
        self.assertIn("Prefix cache (warm against cold, apart from batch drift): 2 of 2 prompts "
                      "drift; 4 flushes through /reset&#95;prefix&#95;cache.", md)
        self.assertIn("| prefix | 2 of 2 | 4 | 0.0% |", md)
        self.assertIn("| sweep | 0 of 2 | 2 | 100.0% |", md)

    def test_cold_trials_use_the_servers_own_cold_mode(self):
        script = {"flush_routes": ["/flush_cache", "/reset_prefix_cache"], "fallback": [OK],
                  "prompts": {p["prompt"]: {"entries": [WARM], "cold": [COLD]} for p in PROMPTS}}
        # llama.cpp: no flush route; each cold trial itself carries "cache_prompt": false.
        llama = self.start_endpoint(dict(script, flush_routes=[]), "llamacpp", name="llama")
        suite = self.write_suite("cold.jsonl", PROMPTS)
        run = self.run_llmrepro(["audit", "--suite", suite, "--endpoint", llama.url,
                                 "--api", "llamacpp", "--probe", "prefix", "--runs", "2",
                                 "--concurrency", "1", "--max-tokens", "8",
                                 "--db", self.path("llama.db"), "--json", self.path("llama.json")])
        self.assert_exit(run, 0)
        report = self.load_report(self.path("llama.json"))
        prefix = {p["probe"]: p for p in report["probes"]}["prefix"]
        self.assertEqual(prefix["activity"]["cold_mode"], "per_request")
        self.assertEqual(prefix["activity"]["flushes_sent"], 0)
        trials = [json.loads(r["body"]) for r in llama.posts()
                  if json.loads(r["body"])["prompt"].endswith(("one?", "two?"))]
        self.assertEqual(sorted(t.get("cache_prompt", True) for t in trials),
                         [False] * 4 + [True] * 4, "the even repeats are the cold trials")
        self.assertEqual(prefix["prefix"]["drift_prompts"], 2, "cold trials answered cold")
        self.assertIn("cold: prompt cache off per request", run.stdout)

        # vLLM's 200 {"success": false} is a refusal, not a flush: no cold mode.
        vllm = self.start_endpoint(dict(script, flush_refuses=True), name="vllm")
        run, report, html, md = self.audit(["--endpoint", vllm.url],
                                           ["--probe", "prefix", "--runs", "2", "--concurrency",
                                            "1"], name="vllm")
        prefix = {p["probe"]: p for p in report["probes"]}["prefix"]
        self.assertEqual((prefix["activity"]["flush_route"], prefix["activity"]["cold_mode"]),
                         (None, None))
        self.assertEqual(prefix["activity"]["flushes_failed"], 2)
        self.assertIn("no cold mode: no cache flush available", run.stdout)
        self.assertIn("no cold mode (no cache flush available): cold trials ran on whatever the "
                      "cache held, so the cold cell is not tested", html)

    def test_mixed_filler_drift(self):
        endpoint = self.start_endpoint({
            "fallback": [SLOW_FILLER],
            "prompts": {p["prompt"]: {"entries": [A], "busy": [B, A], "hold_ms": 150}
                        for p in PROMPTS}})
        run, report, html, md = self.audit(
            ["--endpoint", endpoint.url],
            ["--probe", "sweep,mixed", "--runs", "3", "--concurrency", "1"])
        by_probe = {p["probe"]: p for p in report["probes"]}
        self.assertEqual(by_probe["sweep"]["summary"]["unstable_prompts"], 0)
        mixed = by_probe["mixed"]
        self.assertEqual(mixed["summary"]["unstable_prompts"], 2)
        self.assertEqual([(p["id"], p["runs"], p["unique_completions"], p["first_divergence"])
                          for p in mixed["prompts"]], [("alpha", 3, 2, 1), ("beta", 3, 2, 1)])
        audited = [r for r in endpoint.posts() if r.get("outcome") == "completion"
                   and not r.get("fallback")]
        self.assertEqual(sorted(r["variant"] for r in audited), ["busy"] * 6 + ["entries"] * 6)
        fillers = sum(1 for r in endpoint.posts() if r.get("fallback"))
        self.assertEqual(mixed["activity"]["filler_failed"], 0)
        self.assertEqual(mixed["activity"]["filler_sent"], fillers)
        # One filler at a time (c=1), 300 ms each, beside 6 audited requests held 150 ms each.
        self.assertGreaterEqual(fillers, 3)
        self.assertIn('id="probe-mixed"', html)
        self.assertIn(f"Filler requests beside the audited ones: {fillers} sent, 0 failed", html)
        self.assertIn("| mixed | 2 of 2 | 4 | 0.0% |", md)
        self.assertIn("| sweep | 0 of 2 | 2 | 100.0% |", md)

    def test_compare_two_scripted_endpoints(self):
        same = {"tokens": [tok(" Same"), tok(" words")]}
        first = self.start_endpoint({"prompts": {
            PROMPTS[0]["prompt"]: [same], PROMPTS[1]["prompt"]: [A]}}, name="first")
        second = self.start_endpoint({"prompts": {
            PROMPTS[0]["prompt"]: [same],
            PROMPTS[1]["prompt"]: [{"tokens": [tok(" Quiet"), tok(" room"), tok(" there")]}]}},
            name="second")
        run, report, html, md = self.audit(
            ["--endpoint", first.url, "--endpoint", second.url],
            ["--runs", "2", "--concurrency", "1,2"])
        comparison = report["comparison"]
        self.assertEqual(comparison["agreeing_prompts"], 1)
        self.assertEqual([(p["id"], p["all_agree"], [(e["endpoint"], e["agrees"],
                                                      e["first_difference"])
                                                     for e in p["endpoints"]])
                          for p in comparison["prompts"]],
                         [("alpha", True, [(1, True, None)]), ("beta", False, [(1, False, 2)])])
        self.assertIn('id="comparison"', html)
        self.assertIn("<b>1</b> of 2 prompts give the same reference completion everywhere", html)
        self.assertIn("<td>differs from token 2</td>", html)
        self.assertIn("\n### Endpoints compared\n\n1 of 2 prompts give the same reference "
                      "completion on every endpoint (sweep probe).\n", md)
        self.assertIn("| beta | endpoint 1: from token 2 |", md)
        self.assertIn("endpoints  2 agree on the reference completion of 1 of 2 prompts",
                      run.stdout)


if __name__ == "__main__":
    h.main()
