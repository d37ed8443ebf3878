#!/usr/bin/python3
"""Scenario: the figures the reference engine must show, measured the way a user measures them:
the whole demo suite (48 prompts), 5 runs at concurrency 1 and 16, against the embedded default
(max-num-seqs 16). At concurrency 1 every prompt gives one completion; within the concurrency-16
level between 20% and 80% of the prompts are unstable, diverging at a spread of positions rather
than all at the first token; the fragility flag catches most of them (recall >= 0.7). The audit
measures the engine's noise itself: zero at concurrency 1 (every margin repeats bit for bit),
nonzero at 16; p_flip ranks the prompts that flipped above those that did not (AUC >= 0.6;
0.73-0.81 measured) and scores better than the fixed gap rule (a lower Brier score)."""

import os

import e2e_harness as h

PROMPTS = 48
RUNS = 5


def level(report, concurrency):
    for entry in report["summary"]["by_concurrency"]:
        if entry["concurrency"] == concurrency:
            return entry
    raise AssertionError(f"no level c={concurrency} in the report")


class EngineBehaviour(h.E2ETestCase):
    def test_drift_at_concurrency_16(self):
        suite = os.path.join(h.ARGS.source_dir, "examples", "suites", "engine-demo.jsonl")
        report_path = self.path("demo.json")
        run = self.run_llmrepro(["audit", "--suite", suite, "--runs", str(RUNS),
                                 "--concurrency", "1,16", "--db", self.path("demo.db"),
                                 "--json", report_path], timeout=170)
        self.assert_exit(run, 0)
        report = self.load_report(report_path)
        summary = report["summary"]
        self.assertEqual((summary["prompts"], summary["failed_requests"]), (PROMPTS, 0))
        self.assertEqual(level(report, 1)["unstable_prompts"], 0)
        self.assertEqual(level(report, 1)["unique_completions"], PROMPTS)
        unstable_16 = level(report, 16)["unstable_prompts"]
        self.assertGreaterEqual(unstable_16, 0.2 * PROMPTS, f"{unstable_16} unstable at c=16")
        self.assertLessEqual(unstable_16, 0.8 * PROMPTS, f"{unstable_16} unstable at c=16")
        positions = [p["first_divergence"] for p in report["prompts"] if p["unstable"]]
        self.assertGreaterEqual(len(set(positions)), 4, f"divergence positions {positions}")
        self.assertGreater(max(positions), 0, "divergences are not all at the first token")
        self.assertGreaterEqual(summary["predictor"]["recall"], 0.7, summary["predictor"])

        serial, batched = level(report, 1)["noise"], level(report, 16)["noise"]
        self.assertGreater(serial["positions"], 0, serial)
        self.assertEqual((serial["nonzero"], serial["max"]), (0, 0.0), serial)
        self.assertGreater(batched["nonzero"], 0, batched)
        self.assertGreater(batched["max"], 0.0, batched)
        calibration = summary["flip_calibration"]
        self.assertEqual(calibration["prompts"], PROMPTS, calibration)
        self.assertGreaterEqual(calibration["p_flip"]["auc"], 0.6, calibration)
        self.assertLess(calibration["p_flip"]["brier"], calibration["gap_rule"]["brier"],
                        calibration)
        self.assertGreater(calibration["recommended_tau"], 0.0, calibration)


if __name__ == "__main__":
    h.main()
