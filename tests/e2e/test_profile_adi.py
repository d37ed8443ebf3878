#!/usr/bin/python3
"""Scenario: `llmrepro audit --profile adi` runs the agent-determinism leaderboard's protocol
against a scripted endpoint: per prompt 3 serial requests spaced by --serial-spacing (checked on
the endpoint's own clock), then a burst of 10 concurrent requests per prompt with nothing else
in flight (each answer takes 250 ms, so the endpoint sees all ten at once and the next prompt's
burst only after). The script makes one prompt's burst part from its serial answers at byte 13,
another's serial answers part at byte 2 under a changed system_fingerprint, and keeps a third
the same: every figure of the profile (divergence counts, byte and character first divergence,
modal share, fingerprint drift) is checked exactly in the JSON, and its lines in the terminal,
the Markdown and the HTML. Flags that would change the protocol, and --serial-spacing without
the profile, exit 2 before any request."""

import html
import xml.etree.ElementTree as ET

import e2e_harness as h
import standard_audit as std

DELAY_MS = 250
SPACING_S = 0.8
CAPITAL = "Name the capital of France."
FEYNMAN = "Where was Feynman born?"
PRIMES = "List three primes."


def entry(tokens, fingerprint=None):
    answer = dict(std.variant(tokens), delay_ms=DELAY_MS)
    if fingerprint:
        answer["fingerprint"] = fingerprint
    return answer


def script():
    """Answers in arrival order: the three serial requests come first, then the burst."""
    x, y = entry(std.FEYNMAN_X), entry(std.FEYNMAN_Y)
    p, q = entry(std.PRIMES_P), entry(std.PRIMES_Q, fingerprint="fp_changed")
    return {"model": std.MODEL, "prompts": {
        CAPITAL: [entry(std.CAPITAL)],
        FEYNMAN: [x, x, x] + [y] * 10,
        PRIMES: [p, p, q] + [p] * 10,
    }}


def suite():
    return [{"id": "capital", "prompt": CAPITAL}, {"id": "feynman", "prompt": FEYNMAN},
            {"id": "primes", "prompt": PRIMES}]


class ProfileAdi(h.E2ETestCase):
    def test_protocol_and_figures(self):
        endpoint = self.start_endpoint(script())
        suite_path = self.write_suite("suite.jsonl", suite())
        run, report, paths = self.audit_reports(
            suite_path, ["--endpoint", endpoint.url, "--model", std.MODEL],
            extra=("--profile", "adi", "--serial-spacing", str(SPACING_S), "--max-tokens", "8"),
            timeout=120)
        self.assert_exit(run, 0)
        config = report["config"]
        self.assertEqual((config["profile"], config["concurrency"], config["runs"],
                          config["serial_runs"], config["serial_spacing_s"], config["probes"]),
                         ("adi", [1, 10], 10, 3, SPACING_S, ["sweep"]))

        posts = endpoint.posts()
        self.assertEqual(len(posts), 3 * 3 + 3 * 10)
        serial, burst = posts[:9], posts[9:]
        self.assertEqual(max(p["in_flight"] for p in serial), 1, "serial requests one at a time")
        # Rounds: each prompt once per round, its requests at least the spacing apart.
        for rnd in range(3):
            self.assertEqual(sorted(p["prompt"] for p in serial[3 * rnd:3 * rnd + 3]),
                             sorted([CAPITAL, FEYNMAN, PRIMES]))
        for text in (CAPITAL, FEYNMAN, PRIMES):
            times = [p["t"] for p in serial if p["prompt"] == text]
            gaps = [b - a for a, b in zip(times, times[1:])]
            self.assertEqual(len(gaps), 2)
            for gap in gaps:
                self.assertGreaterEqual(gap, SPACING_S - 0.02, f"{text}: serial gaps {gaps}")
        # Bursts: a prompt's ten requests together, alone, all ten in flight at once.
        for b in range(3):
            group = burst[10 * b:10 * b + 10]
            self.assertEqual(len({p["prompt"] for p in group}), 1, [p["prompt"] for p in burst])
            self.assertEqual(group[0]["in_flight"], 1, "the previous burst has ended")
            self.assertEqual(max(p["in_flight"] for p in group), 10,
                             [(round(p["t"] - burst[0]["t"], 3), p["in_flight"]) for p in burst])
        self.assertEqual(len({p["prompt"] for p in burst}), 3)

        adi = report["summary"]["adi"]
        self.assertEqual(len(adi), 1)
        figures = {k: v for k, v in adi[0].items() if k != "lines"}
        self.assertAlmostEqual(figures.pop("mean_modal_share"), (13 + 10 + 12) / 39)
        self.assertAlmostEqual(figures.pop("min_modal_share"), 10 / 13)
        self.assertEqual(figures, {
            "burst": 10, "serial_runs": 3, "serial_spacing_s": SPACING_S, "cases": 3,
            "diverged": 2, "burst_diverged": 0, "serial_diverged": 1,
            "burst_differs_from_serial": 1, "text_diverged": 2,
            # " He was born " (13 bytes) then "in" / "on"; " 2" (2 bytes) then "," / " and".
            "min_divergence_bytes": 2, "median_divergence_bytes": 7.5,
            "min_divergence_characters": 2, "median_divergence_characters": 7.5,
            "fingerprints": 2, "fingerprint_drift_cases": 1,
            "diverged_with_fingerprint_drift": 1})
        prompts = {p["id"]: p for p in report["prompts"]}
        self.assertIsNone(prompts["capital"]["text_divergence"])
        self.assertEqual(prompts["feynman"]["text_divergence"], {"bytes": 13, "characters": 13})
        self.assertEqual(prompts["primes"]["text_divergence"], {"bytes": 2, "characters": 2})
        self.assertEqual([p["fingerprints"] for p in report["prompts"]], [1, 1, 2])
        self.assertAlmostEqual(prompts["feynman"]["modal_completion_share"], 10 / 13)
        levels = {lv["concurrency"]: lv for lv in prompts["primes"]["by_concurrency"]}
        self.assertEqual(levels[1]["text_divergence"], {"bytes": 2, "characters": 2})
        self.assertIsNone(levels[10]["text_divergence"])

        lines = adi[0]["lines"]
        self.assertEqual(lines[0], "3 cases, each a burst of 10 concurrent requests and 3 serial "
                                   "requests 0.8 s apart (--serial-spacing; the leaderboard's "
                                   "protocol waits 60 s)")
        self.assertEqual(lines[2], "first divergence over the 2 cases whose texts part: byte 7.5 "
                                   "(median; least 2), character 7.5 (median; least 2)")
        with open(paths["markdown"], encoding="utf-8") as f:
            markdown = f.read()
        with open(paths["html"], encoding="utf-8") as f:
            page = f.read()
        found, adi_text = h.ElementText.of(page, "adi")
        self.assertEqual(found, 1)
        junit = ET.parse(paths["junit"]).getroot()
        self.assertEqual([p.get("value") for p in junit.iter("property") if p.get("name") == "adi"],
                         lines)
        for line in lines:
            self.assertIn(line, run.stdout)
            self.assertIn(line, html.unescape(markdown))
            self.assertIn(line, adi_text)

    def test_dry_run_names_the_protocol(self):
        suite_path = self.write_suite("suite.jsonl", suite())
        run = self.run_llmrepro(["audit", "--suite", suite_path, "--endpoint",
                                 "http://127.0.0.1:9", "--profile", "adi", "--dry-run"])
        self.assert_exit(run, 0)
        self.assertIn("level 1 in 3 rounds, each prompt's requests at least 60 s apart",
                      run.stdout)
        self.assertIn("level 10 in bursts: each prompt's 10 requests at once", run.stdout)
        self.assertIn("total: 39 requests", run.stdout)

    def test_flags_that_change_the_protocol_are_refused(self):
        endpoint = self.start_endpoint(script())
        suite_path = self.write_suite("suite.jsonl", suite())
        base = ["audit", "--suite", suite_path, "--endpoint", endpoint.url,
                "--db", self.path("refused.db")]
        for flags, words in (
                (["--profile", "adi", "--concurrency", "1,4"],
                 "--concurrency conflicts with --profile adi"),
                (["--profile", "adi", "--runs", "3"], "--runs conflicts with --profile adi"),
                (["--profile", "adi", "--probe", "sweep,mixed"],
                 "--probe conflicts with --profile adi"),
                (["--profile", "adi", "--adaptive"], "--adaptive conflicts with --profile adi"),
                (["--serial-spacing", "1"], "--serial-spacing spaces the serial requests of "
                                            "--profile adi"),
                (["--profile", "adi", "--serial-spacing", "-1"],
                 "--serial-spacing must be a number of seconds from 0 to 86400 (got -1)")):
            run = self.run_llmrepro(base + flags)
            self.assert_exit(run, 2)
            self.assertIn(words, run.stderr)
        self.assertEqual(endpoint.requests("POST"), [], "nothing sent")


if __name__ == "__main__":
    h.main()
