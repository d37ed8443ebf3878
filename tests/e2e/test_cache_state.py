#!/usr/bin/python3
"""Scenario: cache state on record, against a scripted llama.cpp endpoint.

- Serial runs that the server says it served partly from its prompt cache (timings.cache_n 40,
  as llama-server reports the prompt tokens it reused; tools/server/server-common.cpp) and whose
  logprobs move by 0.001 nats, beside cold ones (cache_n 0): each request's cached prompt tokens
  are stored in requests.usage_cached_prompt_tokens, and every report says how many serial runs
  were warm and that the serial noise is cache state, not batching. Under --api auto the
  server's /props is fetched once, by detection, and reused for its description.
- Cold trials that carry "cache_prompt": false and still report cache_n > 0 (a server ignoring
  the switch) are no confirmed cold trials: --profile deterministic reports the cold cell "not
  checked ... cold mode not confirmed: 4 of 4 cold trials reused the cache", and the verdict is an
  error (exit 3), never a pass or a failure of the claim.
- vLLM, whose answers say nothing of its cache: after its /reset_prefix_cache answers, each cold
  trial's cached prompt tokens are the growth of vllm:prefix_cache_hits_total on /metrics across
  it (summed over the engines' label sets). A reset that empties the cache gives 0 for every cold
  trial and a tested cold cell; one that does not gives 160 and "cold mode not confirmed"."""

import html
import json

import e2e_harness as h


def tok(text, lp=-0.1, alt="zz", alt_lp=-3.0):
    return [text, lp, [[text, lp], [alt, alt_lp]]]


ANSWER = [tok(" The"), tok(" same"), tok(" answer")]
COLD = {"tokens": ANSWER, "cached_tokens": 0}
WARM = {"tokens": ANSWER, "cached_tokens": 40, "logprob_shift": 0.001}
PROMPTS = [{"id": "alpha", "prompt": "Alpha question one?"},
           {"id": "beta", "prompt": "Beta question two?"}]
LINE = ("c=1: 2 of 4 runs warm (prefix cache), so its noise is cache state (warm and cold "
        "prefills), not batching: one request at a time shares no batch")


class CacheState(h.E2ETestCase):
    def test_warm_serial_runs_are_counted_and_named(self):
        endpoint = self.start_endpoint({"build_info": "b1-scripted",
                                        "prompts": {PROMPTS[0]["prompt"]: [COLD, WARM]}},
                                       "llamacpp")
        suite = self.write_suite("warm.jsonl", PROMPTS[:1])
        run, report, paths = self.audit_reports(
            suite, ["--endpoint", endpoint.url], api="auto", tag="warm",
            extra=["--runs", "4", "--concurrency", "1", "--max-tokens", "8", "--fail-on", "none"])
        self.assert_exit(run, 0)
        self.assertIn("--api auto chose llamacpp", run.stderr)
        gets = [r["path"] for r in endpoint.requests("GET")]
        self.assertEqual(gets.count("/props"), 1, gets)
        self.assertEqual(report["endpoints"][0]["server"]["version"], "b1-scripted")
        conn = h.open_db(paths["db"])
        try:
            cached = [row[0] for row in conn.execute(
                "SELECT usage_cached_prompt_tokens FROM requests ORDER BY id")]
        finally:
            conn.close()
        self.assertEqual(cached, [0, 40, 0, 40])
        serial = report["summary"]["by_concurrency"][0]
        self.assertEqual((serial["usage"]["requests_with_cache_state"],
                          serial["usage"]["warm_requests"]), (4, 2))
        self.assertGreater(serial["noise"]["nonzero"], 0)
        self.assertEqual(report["summary"]["cache_state"], LINE)
        self.assertIn("cache      " + LINE, run.stdout)
        with open(paths["markdown"], encoding="utf-8") as f:
            self.assertIn(f"| prompt cache | {LINE} |", html.unescape(f.read()))
        with open(paths["html"], encoding="utf-8") as f:
            self.assertEqual(h.ElementText.of(f.read(), "cache-state"), (1, LINE))

    def test_cold_trials_that_reused_the_cache_are_not_confirmed(self):
        # The cold trials ask for "cache_prompt": false; this server answers them from its cache.
        reused = dict(COLD, cached_tokens=30)
        endpoint = self.start_endpoint(
            {"fallback": [{"tokens": [tok(" ok")]}],
             "prompts": {p["prompt"]: {"entries": [COLD], "cold": [reused]} for p in PROMPTS}},
            "llamacpp")
        suite = self.write_suite("cold.jsonl", PROMPTS)
        run, report, _ = self.audit_reports(
            suite, ["--endpoint", endpoint.url], api="llamacpp", tag="cold",
            extra=["--profile", "deterministic", "--max-concurrency", "1", "--runs", "2",
                   "--max-tokens", "8"])
        trials = [json.loads(r["body"]) for r in endpoint.posts()
                  if r.get("variant") == "cold"]
        self.assertEqual(len(trials), 4)
        self.assertTrue(all(t["cache_prompt"] is False for t in trials))
        determinism = report["summary"]["determinism"]
        line = ("determinism claim not checked on a cold prefix cache: cold mode not confirmed: 4 "
                "of 4 cold trials reused the cache; every other level and probe held")
        self.assertEqual(determinism["line"], line)
        cold = next(c for c in determinism["cells"] if c["shape"] == "cold")
        self.assertEqual((cold["tested"], cold["untested_reason"]),
                         (False, "cold mode not confirmed: 4 of 4 cold trials reused the cache"))
        verdict = report["summary"]["verdict"]
        self.assertEqual(verdict["status"], "error")
        self.assertEqual(verdict["headline"],
                         "ERROR: the audit could not be judged: " + line +
                         " (--profile deterministic)")
        self.assert_exit(run, 3)

    def vllm_audit(self, hits, tag):
        endpoint = self.start_endpoint(
            {"flush_routes": ["/reset_prefix_cache"], "metrics_hits": hits,
             "fallback": [{"tokens": [tok(" ok")]}],
             "prompts": {p["prompt"]: [{"tokens": ANSWER}] for p in PROMPTS}},
            dialect="vllm", name=tag)
        suite = self.write_suite(f"{tag}.jsonl", PROMPTS)
        run, report, paths = self.audit_reports(
            suite, ["--endpoint", endpoint.url], api="openai-chat", tag=tag,
            extra=["--profile", "deterministic", "--max-concurrency", "1", "--runs", "2",
                   "--max-tokens", "8"])
        conn = h.open_db(paths["db"])
        try:
            trials = [row for row in conn.execute(
                "SELECT repeat, usage_cached_prompt_tokens FROM requests WHERE probe = 'prefix' "
                "ORDER BY repeat, prompt_index")]
        finally:
            conn.close()
        cold = [cached for repeat, cached in trials if repeat % 2 == 0]
        warm = [cached for repeat, cached in trials if repeat % 2 == 1]
        gets = [r["path"] for r in endpoint.requests("GET")]
        return run, report, cold, warm, gets

    def test_vllm_cold_trials_confirmed_by_its_metrics(self):
        run, report, cold, warm, gets = self.vllm_audit({"cold": 0, "warm": 160}, "vllm-cold")
        self.assertEqual(cold, [0, 0, 0, 0])
        self.assertEqual(warm, [None] * 4, "warm trials are not read")
        self.assertEqual(gets.count("/metrics"), 8, "before and after each cold trial")
        cell = next(c for c in report["summary"]["determinism"]["cells"] if c["shape"] == "cold")
        self.assertEqual((cell["tested"], cell["held"]), (True, True))
        self.assert_exit(run, 0)

    def test_vllm_reset_that_keeps_the_cache_is_not_confirmed(self):
        run, report, cold, _, _ = self.vllm_audit({"cold": 160, "warm": 160}, "vllm-warm")
        self.assertEqual(cold, [160, 160, 160, 160])
        cell = next(c for c in report["summary"]["determinism"]["cells"] if c["shape"] == "cold")
        self.assertEqual((cell["tested"], cell["untested_reason"]),
                         (False, "cold mode not confirmed: 4 of 4 cold trials reused the cache"))
        self.assert_exit(run, 3)


if __name__ == "__main__":
    h.main()
