#!/usr/bin/python3
"""Scenario: every probe kind against the embedded reference engine. --probe
sweep,mixed,prefix,long with 2 prompts, 2 runs and levels 1,4 records 8 sweep, 8 mixed, 8 long
and 8 prefix requests (the prefix probe is serial: 2 prompts x 2 runs x warm and cold at level
1). The top-level summary is the sweep's alone; each probe kind has its own summary; the
prefix probe primed 4 warm trials and flushed the engine's prefix cache through its
/flush_cache before each of the 4 cold trials (found on the first try); the mixed probe sent
filler that is counted and never recorded; `report` on the database shows the same activity."""

import e2e_harness as h

PROMPTS = [{"id": "capital", "prompt": "The capital of France is"},
           {"id": "story", "prompt": "Once upon a time there was a"}]


class ProbeKinds(h.E2ETestCase):
    def test_probe_kinds(self):
        suite = self.write_suite("suite.jsonl", PROMPTS)
        report_path = self.path("report.json")
        db = self.path("audit.db")
        run = self.run_llmrepro(["audit", "--suite", suite, "--runs", "2", "--concurrency", "1,4",
                                 "--max-tokens", "8", "--probe", "sweep,mixed,prefix,long",
                                 "--engine-prefix-cache", "--db", db, "--json", report_path],
                                timeout=150)
        self.assert_exit(run, 0)
        report = self.load_report(report_path)

        self.assertEqual(report["probe"], "sweep")
        self.assertEqual(report["summary"]["requests"], 8)
        self.assertEqual([p["probe"] for p in report["probes"]], ["sweep", "mixed", "prefix", "long"])
        by_probe = {p["probe"]: p for p in report["probes"]}
        for name in ("sweep", "mixed", "prefix", "long"):
            self.assertEqual(by_probe[name]["summary"]["requests"], 8, name)
            self.assertEqual(by_probe[name]["summary"]["failed_requests"], 0, name)
        self.assertEqual([l["concurrency"] for l in by_probe["sweep"]["summary"]["by_concurrency"]], [1, 4])
        self.assertEqual([l["concurrency"] for l in by_probe["prefix"]["summary"]["by_concurrency"]], [1])

        prefix = by_probe["prefix"]
        self.assertEqual(prefix["activity"], {"primes_sent": 4, "primes_failed": 0,
                                              "flushes_sent": 4, "flushes_failed": 0,
                                              "flush_route": "/flush_cache",
                                              "cold_mode": "flush", "prefix_words": 160})
        self.assertEqual([(p["id"], p["cold_runs"], p["warm_runs"]) for p in prefix["prefix"]["prompts"]],
                         [("capital", 2, 2), ("story", 2, 2)])
        self.assertEqual(prefix["prefix"]["drift_prompts"],
                         sum(1 for p in prefix["prefix"]["prompts"] if p["drift"]))

        mixed = by_probe["mixed"]["activity"]
        self.assertGreaterEqual(mixed["filler_sent"], 1)
        self.assertEqual(mixed["filler_failed"], 0)
        self.assertIsNone(by_probe["sweep"]["prefix"])
        self.assertIsNone(report["comparison"])

        with h.open_db(db) as con:
            rows = con.execute("SELECT probe, COUNT(*) FROM requests GROUP BY probe ORDER BY probe").fetchall()
        # Filler and priming requests are never recorded.
        self.assertEqual(rows, [("long", 8), ("mixed", 8), ("prefix", 8), ("sweep", 8)])
        self.assertIn("(flushed via /flush_cache)", run.stdout)
        again_path = self.path("again.json")
        self.assert_exit(self.run_llmrepro(["report", "--db", db, "--json", again_path, "--quiet"]), 0)
        self.assertEqual(self.load_report(again_path)["probes"], report["probes"])

    def test_unknown_probe_is_a_usage_error(self):
        suite = self.write_suite("suite.jsonl", PROMPTS)
        run = self.run_llmrepro(["audit", "--suite", suite, "--probe", "sweep,wide",
                                 "--db", self.path("x.db")])
        self.assert_exit(run, 2)
        self.assertIn("unknown probe kind 'wide'", run.stderr)


if __name__ == "__main__":
    h.main()
