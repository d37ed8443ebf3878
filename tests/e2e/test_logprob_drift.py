#!/usr/bin/python3
"""Scenario: logprob drift without a token change. Three prompts always give the same tokens;
while another request is open ("busy"), every other answer moves the chosen token's logprob
(and its own candidate's) by SHIFT = 2**-10 nats, so the top-1/top-2 gap moves by SHIFT too.
Serially (c=1) nothing moves; at c=4 each prompt's two runs are busy and one of them is
shifted. Every number is dyadic, so the measured drift equals the scripted one exactly.

Asserted: every prompt is stable and of tier `token`, its drift is SHIFT over 3 * 3 positions
(three runs against the serial reference, three tokens each), the level drift is 0 at c=1 and
SHIFT at c=4 (one run against the level's reference per prompt: 3 positions, 9 over the
prompts); summary.bitwise_stable_prompts 0, summary.max_logprob_drift SHIFT; --max-logprob-drift
0 exits 1 naming that gate, --max-logprob-drift 2 * SHIFT exits 0, and the tokens-only gates
(--max-unique 1, --fail-on unstable) pass. The terminal, Markdown and HTML say the same.
Control: the same script without the shift gives tier `bitwise` everywhere, and
--max-logprob-drift 0 passes. Two more scripts: one where only the runner-up's logprob moves
(drift SHIFT, --max-logprob-drift 0 fails), and one whose busy runs move +SHIFT and -SHIFT (the
drift over every pair of runs is 2 * SHIFT, where the reference alone read SHIFT)."""

import e2e_harness as h

SHIFT = 2.0 ** -10  # 0.0009765625 nats
RUNS = 2
LEVELS = (1, 4)
TOKENS = 3
PROMPTS = [{"id": f"p{i}", "prompt": f"Question number {i}?"} for i in range(3)]


def completion(words, shift=None):
    """Tokens with dyadic logprobs: the chosen one at -0.5, its rival at -1.25 (gap 0.75)."""
    tokens = [[w, -0.5, [[w, -0.5], [" else", -1.25]]] for w in words]
    entry = {"tokens": tokens, "finish_reason": "length"}
    if shift is not None:
        entry["logprob_shift"] = shift
    return entry


def rival_moved(words):
    """The same tokens and chosen logprobs; only the runner-up is SHIFT lower (the gap moves)."""
    return {"tokens": [[w, -0.5, [[w, -0.5], [" else", -1.25 - SHIFT]]] for w in words],
            "finish_reason": "length"}


def script(shift, busy_of=None):
    """busy_of(words) gives the busy answers; by default unshifted, then shifted by `shift`."""
    prompts = {}
    for i, prompt in enumerate(PROMPTS):
        words = [f" w{i}a", f" w{i}b", f" w{i}c"]
        # Busy answers alternate: unshifted, then shifted; the tokens never change.
        busy = [completion(words), completion(words, shift)] if shift else [completion(words)]
        if busy_of is not None:
            busy = busy_of(words)
        prompts[prompt["prompt"]] = {"entries": [completion(words)], "busy": busy,
                                     "hold_ms": 300}
    return {"prompts": prompts}


def drift(max_abs, positions):
    return {"max_abs": max_abs, "max_abs_gap": max_abs, "positions_compared": positions}


class LogprobDrift(h.E2ETestCase):
    def audit(self, shift, gates, tag, busy_of=None):
        endpoint = self.start_endpoint(script(shift, busy_of), name=tag)
        suite = self.write_suite(f"{tag}.jsonl", PROMPTS)
        run, report, paths = self.audit_reports(
            suite, ["--endpoint", endpoint.url],
            ["--runs", str(RUNS), "--concurrency", ",".join(map(str, LEVELS)),
             "--max-tokens", str(TOKENS), *gates], tag=tag)
        return run, report, paths, endpoint

    def check_premise(self, endpoint):
        """Alone at c=1, overlapped at c=4: two busy answers per prompt, cursor 0 then 1."""
        for prompt in PROMPTS:
            variants = [(p["variant"], p["entry"]) for p in endpoint.posts()
                        if p["prompt"] == prompt["prompt"]]
            self.assertEqual(variants, [("entries", 0)] * RUNS + [("busy", 0), ("busy", 1)],
                             "the script's premise: alone serially, overlapped at c=4")

    def test_token_tier(self):
        run, report, paths, endpoint = self.audit(SHIFT, [], "shifted")
        self.assert_exit(run, 0)
        self.check_premise(endpoint)
        summary = report["summary"]
        self.assertEqual((summary["stable_prompts"], summary["unstable_prompts"],
                          summary["inconclusive_prompts"], summary["bitwise_stable_prompts"]),
                         (3, 0, 0, 0))
        self.assertEqual(summary["max_logprob_drift"], SHIFT)
        # Three runs against the serial reference of the lowest repeat, three tokens each.
        others = RUNS * len(LEVELS) - 1
        for prompt in report["prompts"]:
            with self.subTest(prompt=prompt["id"]):
                self.assertEqual((prompt["status"], prompt["tier"], prompt["unique_completions"]),
                                 ("stable", "token", 1))
                self.assertEqual(prompt["logprob_drift"], drift(SHIFT, others * TOKENS))
                self.assertEqual([(lv["concurrency"], lv["logprob_drift"])
                                  for lv in prompt["by_concurrency"]],
                                 [(1, drift(0.0, (RUNS - 1) * TOKENS)),
                                  (4, drift(SHIFT, (RUNS - 1) * TOKENS))])
        self.assertEqual([(lv["concurrency"], lv["logprob_drift"])
                          for lv in summary["by_concurrency"]],
                         [(1, drift(0.0, len(PROMPTS) * (RUNS - 1) * TOKENS)),
                          (4, drift(SHIFT, len(PROMPTS) * (RUNS - 1) * TOKENS))])

        # The human-readable reports: the tier counts, the largest drift and each level's.
        shown = f"{SHIFT:.3g}"  # 0.000977, as the reports round it
        self.assertEqual(shown, "0.000977")
        self.assertIn("tiers      bitwise 0   token 3   unstable 0   inconclusive 0   "
                      f"max logprob drift {shown} nats\n", run.stdout)
        self.assertIn("  c=1      unstable 0   inconclusive 0   (serial)   "
                      "drift 0 nats over 9 positions\n", run.stdout)
        self.assertIn("  c=4      unstable 0   inconclusive 0   differs from serial 0   "
                      f"drift {shown} nats over 9 positions\n", run.stdout)
        with open(paths["markdown"], encoding="utf-8") as f:
            markdown = f.read()
        self.assertIn("| stability tiers | bitwise 0 \u00b7 token 3 \u00b7 unstable 0 \u00b7 "
                      "inconclusive 0 |\n", markdown)
        self.assertIn(f"| max logprob drift | {shown} nats |\n", markdown)
        self.assertIn("| c=1 | 0 | 0 | serial | 0 nats over 9 positions |\n", markdown)
        self.assertIn(f"| c=4 | 0 | 0 | 0 | {shown} nats over 9 positions |\n", markdown)
        with open(paths["html"], encoding="utf-8") as f:
            html = f.read()
        self.assertEqual(h.ElementText.of(html, "tiers"),
                         (1, "stability tiers: bitwise 0 \u00b7 token 3 \u00b7 unstable 0 \u00b7 "
                          f"inconclusive 0 \u00b7 max logprob drift {shown} nats"))
        self.assertEqual(html.count('<td class="tier">token</td>'), 3)
        self.assertEqual(html.count(f'<td class="num" data-sort="{SHIFT}">{shown}</td>'), 3)
        self.assertEqual(html.count(f'tier <b class="tier-token">token</b> \u00b7 logprob drift '
                                    f'{shown} nats over 9 positions'), 3)

    def test_gates(self):
        cases = [(["--max-logprob-drift", "0"], 1), (["--max-logprob-drift", str(2 * SHIFT)], 0),
                 (["--max-unique", "1"], 0), (["--fail-on", "unstable"], 0)]
        for i, (gates, code) in enumerate(cases):
            with self.subTest(gates=gates):
                run, report, _, endpoint = self.audit(SHIFT, gates, f"gate{i}")
                self.assert_exit(run, code)
                self.check_premise(endpoint)
                verdict = report["summary"]["verdict"]
                self.assertEqual(verdict["status"], "fail" if code else "pass")
                failed = [g["flag"] for g in verdict["gates"] if not g["passed"]]
                self.assertEqual(failed, ["--max-logprob-drift"] if code else [], verdict)
                self.assertTrue(verdict["gates"], verdict)

    def test_runner_up_alone_is_drift(self):
        """Only the runner-up's logprob moves (by SHIFT) in one busy run: the chosen logprobs
        are identical, the gap moves, and --max-logprob-drift 0 fails on it."""
        run, report, _, endpoint = self.audit(
            None, ["--max-logprob-drift", "0"], "rival",
            busy_of=lambda words: [completion(words), rival_moved(words)])
        self.assert_exit(run, 1)
        self.check_premise(endpoint)
        summary = report["summary"]
        self.assertEqual((summary["max_logprob_drift"], summary["bitwise_stable_prompts"]),
                         (SHIFT, 0))
        others = RUNS * len(LEVELS) - 1
        self.assertEqual([p["logprob_drift"] for p in report["prompts"]],
                         [drift(SHIFT, others * TOKENS)] * len(PROMPTS))
        failed = [g["flag"] for g in summary["verdict"]["gates"] if not g["passed"]]
        self.assertEqual(failed, ["--max-logprob-drift"])

    def test_drift_spans_every_pair_of_runs(self):
        """The busy runs move +SHIFT and -SHIFT from the serial reference: each is SHIFT from
        it, 2 * SHIFT from the other. The prompt's drift is 2 * SHIFT, so a gate at 1.5 * SHIFT
        fails (against the reference alone it read SHIFT and passed)."""
        run, report, _, endpoint = self.audit(
            None, ["--max-logprob-drift", str(1.5 * SHIFT)], "pairs",
            busy_of=lambda words: [completion(words, SHIFT), completion(words, -SHIFT)])
        self.assert_exit(run, 1)
        self.check_premise(endpoint)
        summary = report["summary"]
        self.assertEqual(summary["max_logprob_drift"], 2 * SHIFT)
        others = RUNS * len(LEVELS) - 1
        for prompt in report["prompts"]:
            with self.subTest(prompt=prompt["id"]):
                self.assertEqual(prompt["logprob_drift"], drift(2 * SHIFT, others * TOKENS))
                self.assertEqual([lv["logprob_drift"] for lv in prompt["by_concurrency"]],
                                 [drift(0.0, (RUNS - 1) * TOKENS),
                                  drift(2 * SHIFT, (RUNS - 1) * TOKENS)])
        failed = [g["flag"] for g in summary["verdict"]["gates"] if not g["passed"]]
        self.assertEqual(failed, ["--max-logprob-drift"])

    def test_control_bitwise(self):
        run, report, paths, endpoint = self.audit(None, ["--max-logprob-drift", "0"], "control")
        self.assert_exit(run, 0)
        summary = report["summary"]
        self.assertEqual((summary["bitwise_stable_prompts"], summary["max_logprob_drift"]),
                         (3, 0.0))
        self.assertEqual([p["tier"] for p in report["prompts"]], ["bitwise"] * 3)
        self.assertEqual([p["logprob_drift"] for p in report["prompts"]],
                         [drift(0.0, (RUNS * len(LEVELS) - 1) * TOKENS)] * 3)
        self.assertIn("tiers      bitwise 3   token 0   unstable 0   inconclusive 0   "
                      "max logprob drift 0 nats\n", run.stdout)


if __name__ == "__main__":
    h.main()
