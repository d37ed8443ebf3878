#!/usr/bin/python3
"""Scenario: semantic agreement (--embeddings). `llmrepro serve` provides /v1/embeddings; an audit
of the embedded engine under batching embeds each prompt's distinct completions there and stores,
per prompt, the pairwise cosine similarity's mean, standard deviation and minimum. The stored
numbers equal those computed here from the same server's embeddings of the report's completion
texts; a prompt with one distinct completion has no pairs (mean 1, std 0); the terminal line
gives the share of prompts at or above the threshold; `merge` carries the stored numbers over. An unreachable embeddings server is an
endpoint error (exit 3) and a malformed URL a usage error (exit 2)."""

import itertools
import math
import os
import time

import e2e_harness as h

PROMPTS = 12  # examples/suites/prefix-demo.jsonl
THRESHOLD = 0.95


class Embeddings(h.E2ETestCase):
    def start_serve(self, *flags):
        port = h.free_port()
        self.start_llmrepro(["serve", "--port", str(port), *flags])
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while True:
            try:
                h.post_json(url + "/v1/embeddings", {"input": ["the weather"]})
                return url
            except OSError:
                if time.monotonic() > deadline:
                    self.fail("llmrepro serve did not answer within 20 s")
                time.sleep(0.1)

    def test_semantic_agreement_is_measured_and_stored(self):
        # Prefix-cache reuse at concurrency 1 makes some prompts unstable, deterministically
        # (serial requests in a seeded order), so there are distinct completions to compare.
        serve = self.start_serve("--prefix-cache")
        with open(os.path.join(h.ARGS.source_dir, "examples", "suites", "prefix-demo.jsonl"),
                  encoding="utf-8") as f:
            lines = [line for line in f if line.strip() and not line.startswith("#")]
        suite = self.write_suite("suite.jsonl", [line.strip() for line in lines])
        db, report_path = self.path("audit.db"), self.path("report.json")
        run = self.run_llmrepro(["audit", "--suite", suite, "--runs", "5", "--concurrency", "1",
                                 "--max-tokens", "80", "--endpoint", serve, "--api",
                                 "openai-completions", "--db", db, "--json", report_path,
                                 "--embeddings", serve, "--embeddings-model", "llmrepro-tiny",
                                 "--semantic-threshold", str(THRESHOLD)], timeout=170)
        self.assert_exit(run, 0)
        report = self.load_report(report_path)

        conn = h.open_db(db)
        try:
            model, threshold = conn.execute("SELECT model, threshold FROM semantic").fetchone()
            rows = {r[0]: r[1:] for r in conn.execute(
                "SELECT prompt_index, distinct_count, pairs, mean, std, min FROM semantic_prompts")}
        finally:
            conn.close()
        self.assertEqual((model, threshold), ("llmrepro-tiny", THRESHOLD))
        self.assertEqual(sorted(rows), list(range(PROMPTS)))

        agreeing = 0
        for index, prompt in enumerate(report["prompts"]):
            texts = [c["text"] for c in prompt["completions"]]
            distinct, pairs, mean, std, low = rows[index]
            self.assertEqual(distinct, prompt["unique_completions"], prompt["id"])
            self.assertEqual(pairs, distinct * (distinct - 1) // 2)
            vectors = [d["embedding"] for d in sorted(
                h.post_json(serve + "/v1/embeddings", {"input": texts})["data"],
                key=lambda d: d["index"])]
            sims = [h.cosine(a, b) for a, b in itertools.combinations(vectors, 2)]
            if sims:
                want_mean = sum(sims) / len(sims)
                want_std = math.sqrt(sum((s - want_mean) ** 2 for s in sims) / len(sims))
                want_min = min(sims)
            else:
                want_mean, want_std, want_min = 1.0, 0.0, 1.0
            self.assertAlmostEqual(mean, want_mean, places=12, msg=prompt["id"])
            self.assertAlmostEqual(std, want_std, places=12, msg=prompt["id"])
            self.assertAlmostEqual(low, want_min, places=12, msg=prompt["id"])
            agreeing += low >= THRESHOLD
        share = 100.0 * agreeing / PROMPTS
        self.assertIn(f"semantic agreement: {share:.1f}% of {PROMPTS} prompts", run.stdout)
        self.assertGreater(report["summary"]["unstable_prompts"], 0,
                           "batching should make some prompt unstable, or nothing is compared")

        with self.subTest(case="merge keeps the stored semantic agreement"):
            merged = self.path("merged.db")
            self.assert_exit(self.run_llmrepro(["merge", merged, db, "--quiet"]), 0)
            conn = h.open_db(merged)
            try:
                self.assertEqual(conn.execute("SELECT model, threshold FROM semantic").fetchone(),
                                 ("llmrepro-tiny", THRESHOLD))
                merged_rows = {r[0]: r[1:] for r in conn.execute(
                    "SELECT prompt_index, distinct_count, pairs, mean, std, min "
                    "FROM semantic_prompts")}
            finally:
                conn.close()
            self.assertEqual(merged_rows, rows)
        with self.subTest(case="unreachable embeddings server"):
            run = self.run_llmrepro(["audit", "--suite", suite, "--runs", "1", "--concurrency", "1",
                                     "--db", self.path("down.db"),
                                     "--embeddings", f"http://127.0.0.1:{h.free_port()}"])
            self.assert_exit(run, 3)
            self.assertIn("embeddings endpoint", run.stderr)
        with self.subTest(case="malformed URL"):
            run = self.run_llmrepro(["audit", "--suite", suite, "--db", self.path("bad.db"),
                                     "--embeddings", "ftp:/nowhere"])
            self.assert_exit(run, 2)
            self.assertIn("--embeddings", run.stderr)


if __name__ == "__main__":
    h.main()
