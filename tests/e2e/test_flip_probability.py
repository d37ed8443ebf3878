#!/usr/bin/python3
"""Scenario: the endpoint's own noise and the flip probability, every number from the script.

Two prompts, two runs at concurrency 1 and 4. Serially (never busy) each prompt answers the same
tokens with the same numbers. At c=4 every request overlaps another (busy), and each prompt
cycles two answers:
- steady (gaps 1 and 0.5): the same answer, then the same tokens with the first logprob 0.25
  lower (the margin moves by 0.25);
- tied (gaps 0.125 and 2): the same answer, then its first two candidates swapped (a flip: the
  margin moved by 0.125 + 0.125).
Against each prompt's reference run (c=1, repeat 0) the noise samples are: c=1 four zeros; c=4
steady 0, 0, 0.25, 0 and tied 0, 0, 0.25 (the swap, then the contexts part): 7 samples, 2 of
them 0.25. So p_flip(tied, c=4) = ½ · 2/7 = 1/7, p_flip(tied) = 1 − (6/7)² = 13/49 (one chance at
c=1, whose noise is zero, two at c=4), and steady's 0. With τ = 0.25 the gap rule calls tied
fragile and steady not: Brier 0 and AUC 1; p_flip's Brier is (36/49)² / 2 with AUC 1, and the
τ the noise implies is 0.25. The same exact case is a unit test (test_flip_probability.cpp);
here it runs through the dialect, the database, `report` and every renderer."""

import math
import random

import e2e_harness as h


def tok(text, lp, alt, alt_lp):
    return [text, lp, [[text, lp], [alt, alt_lp]]]


STEADY = {"tokens": [tok(" a", 0.0, " x", -1.0), tok(" b", -0.25, " y", -0.75)]}
STEADY_MOVED = {"tokens": [tok(" a", -0.25, " x", -1.0), tok(" b", -0.25, " y", -0.75)]}
TIED = {"tokens": [tok(" yes", -0.5, " no", -0.625), tok(".", 0.0, "!", -2.0)]}
FLIPPED = {"tokens": [tok(" no", -0.5, " yes", -0.625), tok("!", 0.0, ".", -2.0)]}

PROMPTS = [{"id": "steady", "prompt": "Steady question?"},
           {"id": "tied", "prompt": "Tied question?"}]
SCRIPT = {"prompts": {
    PROMPTS[0]["prompt"]: {"entries": [STEADY], "busy": [STEADY, STEADY_MOVED], "hold_ms": 250},
    PROMPTS[1]["prompt"]: {"entries": [TIED], "busy": [TIED, FLIPPED], "hold_ms": 250}}}

P_TIED_C4 = 1.0 / 7.0
P_TIED = 13.0 / 49.0
BRIER = (36.0 / 49.0) ** 2 / 2.0


def zero_noise(positions):
    return {"positions": positions, "nonzero": 0, "left_out": 0, "median": 0.0, "p90": 0.0, "p99": 0.0,
            "max": 0.0, "decades": decades([positions, 0, 0, 0, 0, 0, 0, 0, 0])}


def decades(counts):
    uppers = [0, 1e-06, 1e-05, 0.0001, 0.001, 0.01, 0.1, 1.0, None]
    return [{"upper": u, "count": c} for u, c in zip(uppers, counts)]


class FlipProbability(h.E2ETestCase):
    def audit(self, extra, tag="audit"):
        endpoint = self.start_endpoint(SCRIPT)
        suite = self.write_suite("suite.jsonl", PROMPTS)
        run, report, paths = self.audit_reports(
            suite, ["--endpoint", endpoint.url],
            ["--runs", "2", "--concurrency", "1,4", "--max-tokens", "4", "--timeout", "20",
             "--retries", "0", *extra], tag=tag)
        return endpoint, run, report, paths

    def test_noise_and_p_flip_follow_the_script(self):
        _, run, report, paths = self.audit(["--fragile-gap", "0.25"])
        self.assert_exit(run, 0)
        summary = report["summary"]
        self.assertEqual([lv["concurrency"] for lv in summary["by_concurrency"]], [1, 4])
        self.assertEqual(summary["by_concurrency"][0]["noise"], zero_noise(4))
        self.assertEqual(summary["by_concurrency"][1]["noise"],
                         {"positions": 7, "nonzero": 2, "left_out": 0, "median": 0.0, "p90": 0.25, "p99": 0.25,
                          "max": 0.25, "decades": decades([5, 0, 0, 0, 0, 0, 0, 2, 0])})

        prompts = {p["id"]: p for p in report["prompts"]}
        steady, tied = prompts["steady"], prompts["tied"]
        self.assertEqual((steady["status"], tied["status"]), ("stable", "unstable"))
        self.assertEqual(steady["p_flip"], 0.0)
        self.assertEqual([lv["p_flip"] for lv in steady["by_concurrency"]], [0.0, 0.0])
        self.assertAlmostEqual(tied["p_flip"], P_TIED, places=12)
        self.assertEqual(tied["by_concurrency"][0]["p_flip"], 0.0)
        self.assertAlmostEqual(tied["by_concurrency"][1]["p_flip"], P_TIED_C4, places=12)
        self.assertEqual((steady["fragile_by_gap"], tied["fragile_by_gap"]), (False, True))
        self.assertEqual((steady["fragile"], tied["fragile"]), (False, True))

        calibration = summary["flip_calibration"]
        self.assertEqual((calibration["prompts"], calibration["unstable"]), (2, 1))
        self.assertEqual(calibration["gap_rule"], {"brier": 0.0, "auc": 1.0})
        self.assertAlmostEqual(calibration["p_flip"]["brier"], BRIER, places=12)
        self.assertEqual(calibration["p_flip"]["auc"], 1.0)
        self.assertEqual(calibration["recommended_tau"], 0.25)
        filled = [(b["lower"], b["prompts"], b["unstable"]) for b in calibration["reliability"]
                  if b["prompts"] > 0]
        self.assertEqual(filled, [(0.0, 1, 0), (0.2, 1, 1)])

        line = ("flip model p_flip Brier 0.270 AUC 1.00 · gap rule (τ 0.25) Brier 0.000 AUC 1.00 "
                "(2 prompts, 1 unstable) · noise implies τ 0.25")
        self.assertIn(line + "\n", run.stdout)
        self.assertIn("noise      c=1 zero (4 positions)\n", run.stdout)
        self.assertIn("           c=4 median 0, p99 0.25, max 0.25 (7 positions, 2 moved)\n",
                      run.stdout)
        with open(paths["markdown"], encoding="utf-8") as f:
            markdown = f.read()
        self.assertIn("| flip predictors | " + line[len("flip model "):] + " |", markdown)
        self.assertIn("| noise at c=4 | median 0, p99 0.25, max 0.25 (7 positions, 2 moved) |",
                      markdown)
        with open(paths["html"], encoding="utf-8") as f:
            html = f.read()
        self.assertIn('<section class="panel" id="noise">', html)
        self.assertRegex(html, r'<tr data-problem="1" data-id="tied">.*<td class="num" '
                               r'data-sort="0\.2653061224\d*">0\.265</td>')

    def test_floored_runner_up_is_left_out_and_counted(self):
        """One busy run of "steady" reports its first runner-up as -Infinity (the logprob floor).
        Its 9999-nats "gap" is no margin: that position gives no noise sample and is counted, so
        the c=4 noise stays zero and nothing can flip (p_flip 0, τ 0) instead of a 9998-nats
        sample lifting every prompt's p_flip and the recommended τ to 1e+04."""
        floored = {"tokens": [tok(" a", 0.0, " x", "-Infinity"), tok(" b", -0.25, " y", -0.75)]}
        script = {"prompts": {PROMPTS[0]["prompt"]: {"entries": [STEADY],
                                                     "busy": [STEADY, floored], "hold_ms": 250}}}
        endpoint = self.start_endpoint(script)
        suite = self.write_suite("floored.jsonl", PROMPTS[:1])
        run, report, _ = self.audit_reports(
            suite, ["--endpoint", endpoint.url],
            ["--runs", "2", "--concurrency", "1,4", "--max-tokens", "4", "--timeout", "20",
             "--retries", "0"], tag="floored")
        self.assert_exit(run, 0)
        levels = report["summary"]["by_concurrency"]
        self.assertEqual(levels[0]["noise"], zero_noise(2))
        busy = dict(zero_noise(3), left_out=1)
        self.assertEqual(levels[1]["noise"], busy)
        prompt = report["prompts"][0]
        self.assertEqual((prompt["status"], prompt["p_flip"]), ("stable", 0.0))
        self.assertEqual(report["summary"]["flip_calibration"]["recommended_tau"], 0.0)
        self.assertIn("           c=4 zero (3 positions, 1 left out: runner-up missing or at the "
                      "floor)\n", run.stdout)
        self.assertNotIn("1e+04", run.stdout)

    def test_fragile_p_flags_by_probability_and_report_rejudges(self):
        _, run, report, paths = self.audit(["--fragile-p", "0.25", "--fail-on", "fragile"])
        self.assert_exit(run, 1)
        self.assertEqual(report["config"]["fragile_p"], 0.25)
        prompts = {p["id"]: p for p in report["prompts"]}
        # τ = 0.05: the gap rule calls neither fragile; p_flip (13/49 ≥ 0.25) calls tied fragile.
        self.assertEqual([(p["id"], p["fragile"], p["fragile_by_gap"]) for p in report["prompts"]],
                         [("steady", False, False), ("tied", True, False)])
        self.assertEqual(report["summary"]["fragile_prompts"], 1)
        self.assertEqual(report["summary"]["predictor"]["true_positive"], 1)
        self.assertEqual(report["summary"]["predictor"]["true_negative"], 1)
        failed = [g for g in report["summary"]["verdict"]["gates"] if not g["passed"]]
        self.assertEqual([g["flag"] for g in failed], ["--fail-on fragile"])
        self.assertTrue(prompts["tied"]["fragile"])

        # Re-judged from the database without the endpoint: 0.3 is above 13/49.
        again = self.path("again.json")
        rejudge = self.run_llmrepro(["report", "--db", paths["db"], "--fragile-p", "0.3",
                                     "--json", again, "--quiet"])
        self.assert_exit(rejudge, 0)
        rejudged = self.load_report(again)
        self.assertEqual(rejudged["summary"]["fragile_prompts"], 0)
        self.assertEqual(rejudged["config"]["fragile_p"], 0.3)

    def test_bad_fragile_p_is_refused_before_any_request(self):
        endpoint = self.start_endpoint(SCRIPT)
        suite = self.write_suite("suite.jsonl", PROMPTS)
        for value in ("0", "1.5", "nan", "-0.1"):
            run = self.run_llmrepro(["audit", "--suite", suite, "--endpoint", endpoint.url,
                                     "--db", self.path(f"bad-{value}.db"), "--fragile-p", value])
            self.assert_exit(run, 2)
            self.assertIn("--fragile-p", run.stderr)
        self.assertEqual(endpoint.posts(), [])

    def test_p_flip_is_calibrated_in_gaussian_noise(self):
        """The noise model's own world through the whole tool: every run's margin at a position is
        the prompt's true gap (uniform on [0, 0.5)) plus Gaussian noise of σ 0.1 shared by every
        prompt, drawn here with a fixed seed and served in order; 1000 prompts, 5 runs. Grouped by
        p_flip, every reliability bin of 50 prompts or more is within 3 binomial standard errors
        of its mean prediction. Runs multiplied as independent of the reference they are all
        measured against failed five bins here (0.855 predicted against 0.651 observed)."""
        rng = random.Random(20261202)
        prompts, script = [], {"prompts": {}}
        for i in range(1000):
            text = f"Gaussian question {i}?"
            gaps = [0.5 * rng.random() for _ in range(2)]
            prompts.append({"id": f"g{i}", "prompt": text})
            script["prompts"][text] = [gaussian_run(gaps, rng) for _ in range(5)]
        endpoint = self.start_endpoint(script)
        suite = self.write_suite("gaussian.jsonl", prompts)
        out = self.path("gaussian.json")
        run = self.run_llmrepro(["audit", "--suite", suite, "--endpoint", endpoint.url,
                                 "--db", self.path("gaussian.db"), "--json", out, "--quiet",
                                 "--runs", "5", "--concurrency", "16", "--max-tokens", "4",
                                 "--timeout", "20", "--retries", "0"], timeout=120)
        self.assert_exit(run, 0)
        calibration = self.load_report(out)["summary"]["flip_calibration"]
        self.assertEqual(calibration["prompts"], 1000)
        checked = 0
        for b in calibration["reliability"]:
            if b["prompts"] < 50:
                continue
            checked += 1
            predicted, observed = b["mean_predicted"], b["unstable"] / b["prompts"]
            error = math.sqrt(predicted * (1.0 - predicted) / b["prompts"])
            with self.subTest(lower=b["lower"], prompts=b["prompts"], predicted=predicted,
                              observed=observed):
                self.assertLessEqual(abs(observed - predicted), 3.0 * error)
        self.assertGreaterEqual(checked, 6)


def gaussian_run(gaps, rng):
    """One run: at each position the true top two swap where the noise pushes the margin below 0,
    and the runner-up trails the chosen token by the observed margin."""
    tokens = []
    for (top, other), gap in zip(((" a", " b"), (" c", " d")), gaps):
        margin = gap + rng.gauss(0.0, 0.1)
        chosen, runner_up = (top, other) if margin >= 0 else (other, top)
        tokens.append(tok(chosen, -0.25, runner_up, -0.25 - abs(margin)))
    return {"tokens": tokens, "finish_reason": "length"}


if __name__ == "__main__":
    h.main()
