#!/usr/bin/python3
"""Scenario: cache state on record, against a scripted llama.cpp endpoint.

- Serial runs that the server says it served partly from its prompt cache (timings.cache_n 40,
  as llama-server reports the prompt tokens it reused; tools/server/server-common.cpp) and whose
  logprobs move by 0.001 nats, beside cold ones (cache_n 0): each request's cached prompt tokens
  are stored in requests.usage_cached_prompt_tokens, and every report says how many serial runs
  were warm and that the serial noise is cache state, not batching. Under --api auto the
  server's /props is fetched once, by detection, and reused for its description."""

import html

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


if __name__ == "__main__":
    h.main()
