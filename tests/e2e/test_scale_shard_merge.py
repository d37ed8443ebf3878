#!/usr/bin/python3
"""Scenario: --shard i/n and `llmrepro merge`. The standard scripted audit runs once unsharded
and once as three shards (shard 2/3 against a second endpoint, as a fleet would); each shard
sends only its own prompts; the merged database's JSON report equals the unsharded one once
ids, times and speeds are removed, and `llmrepro report` on the merged database says the same.
Merging refuses overlapping shards and shards of a different configuration (naming the flag
and both values; --stop-after included) or suite; a merge missing a shard is partial."""

import json
import os
import shutil

import e2e_harness as h
import standard_audit as std
import token_blob

# Keys whose values are clocks, speeds or names of one run, not results; "activity" counts what
# the run that just ended sent besides the audited requests, which no stored audit carries.
# "positions_compared": for an unstable prompt it depends on which repeat drew which completion,
# which the scripted endpoint decides by arrival order (check_report asserts the stable prompts');
# so do the noise samples the flips give and everything read from them ("noise", "p_flip",
# "flip_calibration").
VOLATILE = {"id", "started", "finished", "tokens_per_second", "mean_latency_ms",
            "median_latency_ms", "p95_latency_ms", "url",
            "activity", "positions_compared", "noise", "p_flip", "flip_calibration"}


def stable(value):
    if isinstance(value, dict):
        return {k: stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [stable(v) for v in value]
    return value


class ShardMerge(h.E2ETestCase):
    def audit(self, endpoint, tag, *extra):
        db, report = self.path(f"{tag}.db"), self.path(f"{tag}.json")
        run = self.run_llmrepro(std.audit_args(self.suite, endpoint.url, "openai-chat", db, report,
                                               False) + list(extra))
        self.assert_exit(run, 0)
        return db, self.load_report(report)

    def merge(self, out, *inputs, code=0):
        report = self.path(out + ".json")
        run = self.run_llmrepro(["merge", self.path(out), *inputs, "--json", report])
        self.assert_exit(run, code)
        return run, report

    def test_shards_merge_to_the_unsharded_report(self):
        endpoint = self.start_endpoint(std.script())
        fleet = self.start_endpoint(std.script(), name="second")
        self.suite = self.write_suite("suite.jsonl", std.suite())
        _, whole = self.audit(endpoint, "whole")
        self.assertEqual(whole["config"]["shard"], "1/1")

        shards = []
        for i in (1, 2, 3):
            before = len(endpoint.posts()) + len(fleet.posts())
            db, report = self.audit(fleet if i == 2 else endpoint, f"shard{i}", "--shard", f"{i}/3")
            self.assertEqual(report["config"]["shard"], f"{i}/3")  # as given
            owned = [p["id"] for n, p in enumerate(std.suite()) if n % 3 == i - 1]
            self.assertEqual(sorted(p["id"] for p in report["prompts"]), sorted(owned))
            sent = len(endpoint.posts()) + len(fleet.posts()) - before
            self.assertEqual(sent, len(owned) * std.RUNS * len(std.LEVELS))
            self.assertEqual(report["audit"]["status"], "complete")
            shards.append(db)

        run, merged_path = self.merge("merged.db", shards[2], shards[0], shards[1])
        merged = self.load_report(merged_path)
        self.assertEqual(merged["audit"]["status"], "complete")
        self.assertEqual(merged["config"]["shard"], "1/1")
        self.assertEqual(merged["endpoints"][0]["url"], f"{endpoint.url}, {fleet.url}")
        self.assertEqual(json.dumps(stable(merged), sort_keys=True, indent=1),
                         json.dumps(stable(whole), sort_keys=True, indent=1))
        std.check_report(self, merged, "openai-chat")

        rerendered = self.path("rerendered.json")
        self.assert_exit(self.run_llmrepro(["report", "--db", self.path("merged.db"), "--json",
                                            rerendered]), 0)
        self.assertEqual(stable(self.load_report(rerendered)), stable(merged))

        with self.subTest(case="a shard of schema version 1 is upgraded and merges the same"):
            old = self.path("shard2-v1.db")
            shutil.copy(shards[1], old)
            self.assertFalse(os.path.exists(shards[1] + "-wal"))  # checkpointed when it closed
            rows = token_blob.downgrade_to_version_1(old)
            # Shard 2 holds feynman alone: 15 requests, its script's five answers served 3 times.
            self.assertEqual(rows, 3 * (4 * len(std.FEYNMAN_X) + len(std.FEYNMAN_Y)))
            run, path = self.merge("merged-v1.db", shards[0], old, shards[2])
            self.assertIn(f"llmrepro: upgraded audit database '{old}' in place from schema "
                          f"version 1 to 3 ({rows} token rows packed)\n", run.stderr)
            self.assertEqual(stable(self.load_report(path)), stable(merged))

        with self.subTest(case="missing shard: partial"):
            # A merge missing a shard cannot be judged: exit 3, verdict error.
            _, path = self.merge("partial.db", shards[0], shards[2], code=3)
            report = self.load_report(path)
            self.assertEqual(report["audit"]["status"], "partial")
            self.assertEqual(report["summary"]["verdict"]["status"], "error")
            self.assertEqual(report["summary"]["verdict"]["errors"],
                             [f"incomplete: {3 * std.RUNS * len(std.LEVELS)} of "
                              f"{4 * std.RUNS * len(std.LEVELS)} planned requests recorded"])
            runs = {p["id"]: p["runs"] for p in report["prompts"]}
            full = std.RUNS * len(std.LEVELS)
            self.assertEqual(runs, {"capital": full, "primes": full, "hello": full})
            self.assertEqual(report["audit"]["recorded_requests"], 3 * full)
            self.assertEqual(report["audit"]["planned_requests"], 4 * full)
        with self.subTest(case="overlap refused"):
            run, _ = self.merge("overlap.db", shards[0], shards[1], shards[1], code=2)
            self.assertIn("shard 2/3 is given twice", run.stderr)
        with self.subTest(case="other configuration refused"):
            other, _ = self.audit(endpoint, "other", "--shard", "2/3", "--max-tokens", "64")
            run, _ = self.merge("mixed.db", shards[0], other, code=2)
            self.assertIn("shard 2/3 (", run.stderr)
            self.assertIn("differ in --max-tokens: 64 vs 128: they are not shards of one audit",
                          run.stderr)
        with self.subTest(case="other --stop-after refused"):
            capped, _ = self.audit(endpoint, "capped", "--shard", "2/3", "--stop-after", "4")
            run, _ = self.merge("capped-merge.db", shards[0], capped, code=2)
            self.assertIn("differ in --stop-after: 4 vs none: they are not shards of one audit",
                          run.stderr)
            self.assertFalse(os.path.exists(self.path("capped-merge.db")))
        with self.subTest(case="other suite refused"):
            self.suite = self.write_suite("suite2.jsonl", std.suite()[:3])
            other, _ = self.audit(endpoint, "short", "--shard", "2/3")
            run, _ = self.merge("suites.db", shards[0], other, code=2)
            self.assertIn("ran different suites", run.stderr)
        with self.subTest(case="existing output refused"):
            run, _ = self.merge("merged.db", *shards, code=2)
            self.assertIn("already exists", run.stderr)
        with self.subTest(case="bad --shard"):
            sent = len(endpoint.posts())
            for bad in ("0/3", "4/3", "1/0", "x/2", "1/2/3", "2"):
                run = self.run_llmrepro(["audit", "--suite", self.suite, "--endpoint", endpoint.url,
                                         "--api", "openai-chat", "--shard", bad,
                                         "--db", self.path("bad.db")])
                self.assert_exit(run, 2)
                self.assertIn("--shard", run.stderr)
            self.assertEqual(len(endpoint.posts()), sent)


if __name__ == "__main__":
    h.main()
