#!/usr/bin/python3
"""Scenario: `llmrepro gpu-probe` on the CPU backend, as CI runs it. The JSON validates against
schemas/llmrepro.gpu-probe.v1.schema.json; the self-test is bit-exact; the batch-invariant
variants never change an output while the shape-dependent ones do; the flip experiment ends in a
recommendation; the HTML is self-contained with its chart; and `--backend cuda` without a visible
device is an environment error (exit 3), not a crash."""

import json
import os

import jsonschema

import e2e_harness as h


class GpuProbe(h.E2ETestCase):
    def test_cpu_backend(self):
        report_path = self.path("probe.json")
        html_path = self.path("probe.html")
        run = self.run_llmrepro(["gpu-probe", "--backend", "cpu", "--quick", "--json", report_path,
                                 "--html", html_path], timeout=120)
        self.assert_exit(run, 0)
        self.assertIn("backend cpu", run.stdout)
        with open(report_path, encoding="utf-8") as f:
            report = json.load(f)
        with open(os.path.join(h.ARGS.source_dir, "schemas", "llmrepro.gpu-probe.v1.schema.json"),
                  encoding="utf-8") as f:
            jsonschema.Draft202012Validator(json.load(f)).validate(report)
        self.assertEqual(report["backend"], "cpu")
        experiments = {e["id"]: e for e in report["experiments"]}
        self.assertEqual(sorted(experiments), ["E0", "E1", "E2", "E3", "E4", "E5", "E6", "E7"])
        # E0: the self-test is bit-exact.
        self.assertTrue(all(row["changed_frac"] == 0.0 for row in experiments["E0"]["rows"]))
        # E1: the fixed order is batch-invariant, the heuristic is not.
        fixed = [r for r in experiments["E1"]["rows"] if r["variant"] == "fixed_order"]
        heuristic = [r for r in experiments["E1"]["rows"] if r["variant"] == "heuristic_split_k"]
        self.assertTrue(fixed and all(r["changed_frac"] == 0.0 for r in fixed))
        self.assertTrue(any(r["changed_frac"] > 0.0 for r in heuristic))
        self.assertTrue(all(r["max_ulp"] <= 1.0 for r in heuristic))
        # E3: atomics vary run to run in fp32; serial does not.
        digests = {r["variant"]: r["measures"].get("distinct_digests_fp32") for r in experiments["E3"]["rows"]}
        self.assertGreater(digests["atomic_fp32"], 1)
        self.assertEqual(digests["serial_semaphore"], 1)
        self.assertEqual(digests["two_pass_workspace"], 1)
        # SHA-256 digests of repeatable outputs: serial and two-pass combine in the same K order,
        # so their outputs (and digests) are identical; rows that check no repeats carry none.
        sha = {r["variant"]: r.get("sha256") for r in experiments["E3"]["rows"]}
        self.assertRegex(sha["serial_semaphore"], "^[0-9a-f]{64}$")
        self.assertEqual(sha["serial_semaphore"], sha["two_pass_workspace"])
        repeats = [r for r in experiments["E0"]["rows"] if r["variant"] == "fixed_order_repeats"]
        self.assertRegex(repeats[0]["sha256"], "^[0-9a-f]{64}$")
        self.assertNotIn("sha256", experiments["E1"]["rows"][0])
        for experiment in ("E2", "E4", "E5", "E6"):
            self.assertEqual(experiments[experiment]["held"]["computed_on"], "cpu")
        self.assertEqual(report["recommendation"]["default_tau"], 0.05)
        self.assertTrue(report["recommendation"]["text"])
        with open(html_path, encoding="utf-8") as f:
            html = f.read()
        self.assertIn("<svg", html)
        self.assertNotIn("<script src", html)
        self.assertNotIn("<link", html)

    def test_render_saved_result(self):
        # What a GPU machine without our packages hands back: the JSON alone, rendered here.
        saved = self.path("saved.json")
        run = self.run_llmrepro(["gpu-probe", "--backend", "cpu", "--quick", "--json", saved],
                                timeout=120)
        self.assert_exit(run, 0)
        again, html_path = self.path("again.json"), self.path("again.html")
        rendered = self.run_llmrepro(["gpu-probe", "--from", saved, "--json", again,
                                      "--html", html_path], timeout=60)
        self.assert_exit(rendered, 0)
        self.assertEqual(rendered.stdout, run.stdout)
        with open(saved, encoding="utf-8") as a, open(again, encoding="utf-8") as b:
            self.assertEqual(json.load(a), json.load(b))
        with open(html_path, encoding="utf-8") as f:
            self.assertIn("<svg", f.read())
        broken = self.path("broken.json")
        with open(broken, "w", encoding="utf-8") as f:
            f.write('{"schema": "llmrepro.gpu-probe.v1", "experiments": [')
        bad = self.run_llmrepro(["gpu-probe", "--from", broken], timeout=60)
        self.assert_exit(bad, 2)
        self.assertIn("probe result '" + broken + "'", bad.stderr)
        missing = self.run_llmrepro(["gpu-probe", "--from", self.path("none.json")], timeout=60)
        self.assert_exit(missing, 2)
        self.assertIn("cannot read probe result", missing.stderr)

    def test_cuda_without_device(self):
        run = self.run_llmrepro(["gpu-probe", "--backend", "cuda", "--quick"], timeout=60)
        self.assert_exit(run, 3)
        self.assertIn("llmrepro", run.stderr)


if __name__ == "__main__":
    h.main()
