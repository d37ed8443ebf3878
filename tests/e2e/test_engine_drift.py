#!/usr/bin/python3
"""Scenario: the reference engine drifts the way a GPU server does. `llmrepro serve` runs as a
separate process and `llmrepro audit --endpoint` drives it; the embedded default is driven too.
At concurrency 1 every prompt gives one completion, adaptive or not; with --batch-invariant
every prompt gives one completion at concurrency 16 too."""

import os
import time
import urllib.request

import e2e_harness as h

DEMO_PROMPTS = 16
RUNS = 3
MAX_TOKENS = 48


def demo_suite():
    """The first DEMO_PROMPTS prompts of the example suite, unchanged."""
    path = os.path.join(h.ARGS.source_dir, "examples", "suites", "engine-demo.jsonl")
    with open(path, encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    return lines[:DEMO_PROMPTS]


def level(report, concurrency):
    for entry in report["summary"]["by_concurrency"]:
        if entry["concurrency"] == concurrency:
            return entry
    raise AssertionError(f"no level c={concurrency} in the report")


class EngineDrift(h.E2ETestCase):
    def start_serve(self, *flags):
        """Starts `llmrepro serve` on a free port and waits until /health answers."""
        port = h.free_port()
        process = self.start_llmrepro(["serve", "--port", str(port), "--max-num-seqs", "16",
                                       *flags])
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                self.fail(f"llmrepro serve exited {process.returncode}: {process.stderr.read()}")
            try:
                with urllib.request.urlopen(url + "/health", timeout=2) as response:
                    if response.status == 200:
                        return url
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.fail("llmrepro serve did not answer /health within 30 s")
            time.sleep(0.05)

    def audit(self, suite_lines, levels, endpoint=None, name="audit", runs=RUNS,
              max_tokens=MAX_TOKENS):
        suite = self.write_suite(f"{name}.jsonl", suite_lines)
        report_path = self.path(f"{name}.json")
        args = ["audit", "--suite", suite, "--runs", str(runs), "--concurrency", levels,
                "--max-tokens", str(max_tokens), "--db", self.path(f"{name}.db"),
                "--json", report_path, "--fail-on", "none"]
        if endpoint is not None:
            args += ["--endpoint", endpoint, "--api", "openai-completions"]
        run = self.run_llmrepro(args, timeout=120)
        self.assert_exit(run, 0)
        return run, self.load_report(report_path)

    def test_serve_adaptive_repeats_at_concurrency_1(self):
        url = self.start_serve()
        _, report = self.audit(demo_suite(), "1", endpoint=url)
        self.assertEqual(report["summary"]["failed_requests"], 0)
        self.assertEqual(level(report, 1)["unstable_prompts"], 0,
                         "at concurrency 1 the batch history repeats, so do the bits")

    def test_serve_batch_invariant_never_drifts(self):
        url = self.start_serve("--batch-invariant")
        _, report = self.audit(demo_suite(), "1,16", endpoint=url)
        self.assertEqual(report["summary"]["failed_requests"], 0)
        self.assertEqual(report["summary"]["unstable_prompts"], 0)
        for entry in report["summary"]["by_concurrency"]:
            self.assertEqual(entry["unstable_prompts"], 0, f"c={entry['concurrency']}")
            self.assertEqual(entry["unique_completions"], DEMO_PROMPTS, f"c={entry['concurrency']}")
            # Every margin repeats bit for bit: the noise is zero, so nothing can flip.
            self.assertGreater(entry["noise"]["positions"], 0, f"c={entry['concurrency']}")
            self.assertEqual(entry["noise"]["nonzero"], 0, f"c={entry['concurrency']}")
        self.assertEqual({p["p_flip"] for p in report["prompts"]}, {0.0})
        self.assertEqual(report["summary"]["flip_calibration"]["recommended_tau"], 0.0)

    def test_prefix_cache_drifts_at_concurrency_1(self):
        # Serial requests, seeded order: the cache history is the same every time, so this is
        # exact. The first prompt behind each shared preamble prefills it cold; later ones reuse
        # keys and values computed in a step of another shape.
        path = os.path.join(h.ARGS.source_dir, "examples", "suites", "prefix-demo.jsonl")
        with open(path, encoding="utf-8") as f:
            lines = [line.strip() for line in f if line.strip() and not line.startswith("#")]
        cold = self.start_serve()
        _, cold_report = self.audit(lines, "1", endpoint=cold, name="cold", runs=5,
                                    max_tokens=80)
        self.assertEqual(cold_report["summary"]["unstable_prompts"], 0)
        warm = self.start_serve("--prefix-cache")
        _, warm_report = self.audit(lines, "1", endpoint=warm, name="warm", runs=5,
                                    max_tokens=80)
        self.assertEqual(warm_report["summary"]["failed_requests"], 0)
        self.assertGreaterEqual(warm_report["summary"]["unstable_prompts"], 1,
                                "prefix-cache reuse changes some completions at concurrency 1")

    def test_embedded_default(self):
        run, report = self.audit(demo_suite(), "1,16", name="embedded")
        self.assertIn("embedded reference engine", run.stderr)
        self.assertEqual(report["summary"]["failed_requests"], 0)
        self.assertEqual(level(report, 1)["unstable_prompts"], 0)


if __name__ == "__main__":
    h.main()
