#!/usr/bin/python3
"""Scenario: the same plan against two endpoints. The embedded reference engine (no prefix
cache) is endpoint 0 and `llmrepro serve --prefix-cache` is compared with it (--compare). Both
record the full plan; the report keeps endpoint 0's analysis at the top level and adds each
endpoint's summary with latency and tokens per second per level, and per prompt whether the
endpoints' reference completions agree."""

import time

import e2e_harness as h

PROMPTS = [{"id": "capital", "prompt": "The capital of France is"},
           {"id": "story", "prompt": "Once upon a time there was a"},
           {"id": "river", "prompt": "The river runs to the"}]


class CompareEndpoints(h.E2ETestCase):
    def test_compare(self):
        port = h.free_port()
        self.start_llmrepro(["serve", "--port", str(port), "--prefix-cache"])
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        import urllib.request
        while True:
            try:
                urllib.request.urlopen(url + "/v1/models", timeout=1).read()
                break
            except Exception:
                if time.monotonic() > deadline:
                    self.fail("llmrepro serve did not answer within 20 s")
                time.sleep(0.1)

        suite = self.write_suite("suite.jsonl", PROMPTS)
        report_path = self.path("report.json")
        db = self.path("audit.db")
        run = self.run_llmrepro(["audit", "--suite", suite, "--compare", url, "--api", "openai-chat",
                                 "--runs", "2", "--concurrency", "1,4", "--max-tokens", "8",
                                 "--db", db, "--json", report_path], timeout=150)
        self.assert_exit(run, 0)
        report = self.load_report(report_path)

        self.assertEqual(len(report["endpoints"]), 2)
        self.assertTrue(report["endpoints"][0]["embedded"])
        self.assertEqual(report["endpoints"][1]["url"], url)
        self.assertEqual(report["summary"]["requests"], 12)
        comparison = report["comparison"]
        self.assertEqual(comparison["probe"], "sweep")
        self.assertEqual([e["index"] for e in comparison["endpoints"]], [0, 1])
        for endpoint in comparison["endpoints"]:
            self.assertEqual(endpoint["summary"]["requests"], 12)
            self.assertEqual(endpoint["summary"]["failed_requests"], 0)
            levels = endpoint["summary"]["by_concurrency"]
            self.assertEqual([l["concurrency"] for l in levels], [1, 4])
            for level in levels:
                self.assertGreater(level["tokens_per_second"], 0)
                self.assertGreater(level["mean_latency_ms"], 0)
        self.assertEqual(comparison["endpoints"][0]["summary"]["unstable_prompts"],
                         report["summary"]["unstable_prompts"])
        self.assertEqual([p["id"] for p in comparison["prompts"]], ["capital", "story", "river"])
        for prompt in comparison["prompts"]:
            self.assertEqual(len(prompt["endpoints"]), 1)
            other = prompt["endpoints"][0]
            self.assertEqual(other["endpoint"], 1)
            self.assertTrue(other["has_reference"])
            self.assertEqual(prompt["all_agree"], other["agrees"])
            self.assertEqual(other["first_difference"] is None, other["agrees"])
        self.assertEqual(comparison["agreeing_prompts"],
                         sum(1 for p in comparison["prompts"] if p["all_agree"]))

        with h.open_db(db) as con:
            rows = con.execute("SELECT endpoint_index, COUNT(*) FROM requests "
                               "GROUP BY endpoint_index ORDER BY endpoint_index").fetchall()
        self.assertEqual(rows, [(0, 12), (1, 12)])
        self.assertIn("endpoints  2 agree on the reference completion", run.stdout)


if __name__ == "__main__":
    h.main()
