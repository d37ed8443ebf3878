#!/usr/bin/python3
"""Scenario: fragility that cannot be computed is unknown, never "not fragile" (issue "A verdict
a CI can trust"). With --fragile-window 3, --top-logprobs 2, 2 runs at c=1:
- solid: every gap 2.9: stable, not fragile (a true negative);
- tied: unstable at token 2, whose gap 0.01 < tau, with null top_logprobs at token 1: a known
  gap below tau makes it fragile despite the unknown one (a true positive);
- single: one candidate per token, unstable: fragility unknown (it would have been a false
  negative);
- empty: empty top_logprobs everywhere, stable: unknown;
- nulltop: top_logprobs null at token 1 only, the other gaps large, stable: unknown.
fragile_prompts 1, fragility_unknown_prompts 3, the predictor counts only solid and tied, a
warning says fewer candidates came back than asked for, and --fail-on fragile fails on the
fragile prompt and on unknown fragility alone.
"""

import e2e_harness as h


def tok(text, lp=-0.1, alt="zz", alt_lp=-3.0):
    return [text, lp, [[text, lp], [alt, alt_lp]]]


def one(text, lp=-0.1):
    return [text, lp, [[text, lp]]]


def completion(tokens):
    return {"tokens": tokens, "finish_reason": "stop"}


SOLID = completion([tok(" a"), tok(" b"), tok(" c")])
TIED_X = completion([tok(" d"), [" e", -0.2, None], [" f", -0.50, [[" f", -0.50], [" g", -0.51]]]])
TIED_Y = completion([tok(" d"), [" e", -0.2, None], [" g", -0.50, [[" g", -0.50], [" f", -0.51]]]])
SINGLE_X = completion([one(" h"), one(" i"), one(" j")])
SINGLE_Y = completion([one(" h"), one(" k"), one(" j")])
EMPTY = completion([[" l", -0.1, []], [" m", -0.1, []], [" n", -0.1, []]])
NULLTOP = completion([tok(" o"), [" p", -0.1, None], tok(" q")])

PROMPTS = {"solid": ("Solid question?", [SOLID]),
           "tied": ("Tied question?", [TIED_X, TIED_Y]),
           "single": ("Single question?", [SINGLE_X, SINGLE_Y]),
           "empty": ("Empty question?", [EMPTY]),
           "nulltop": ("Null top question?", [NULLTOP])}


class VerdictFragility(h.E2ETestCase):
    def setUp(self):
        super().setUp()
        self.endpoint = self.start_endpoint(
            {"prompts": {text: entries for text, entries in PROMPTS.values()}})

    def audit(self, ids, tag, *gates):
        suite = self.write_suite(f"{tag}.jsonl", [{"id": i, "prompt": PROMPTS[i][0]} for i in ids])
        return self.audit_reports(suite, ["--endpoint", self.endpoint.url],
                                  ["--runs", "2", "--concurrency", "1", "--fragile-window", "3",
                                   "--top-logprobs", "2", *gates], tag=tag)

    def test_unknown_fragility(self):
        run, report, _ = self.audit(list(PROMPTS), "all", "--fail-on", "fragile")
        self.assertEqual(run.returncode, 1, run.describe())
        by_id = {p["id"]: p for p in report["prompts"]}
        self.assertEqual({i: (p["status"], p["fragile"]) for i, p in by_id.items()},
                         {"solid": ("stable", False), "tied": ("unstable", True),
                          "single": ("unstable", None), "empty": ("stable", None),
                          "nulltop": ("stable", None)})
        for pid in ("single", "empty", "nulltop"):
            with self.subTest(prompt=pid):
                reason = by_id[pid]["fragility_reason"]
                self.assertIsInstance(reason, str)
                self.assertTrue(reason.strip(), "an unknown fragility says why")
        for pid in ("solid", "tied"):
            self.assertIsNone(by_id[pid]["fragility_reason"], pid)
        self.assertEqual((by_id["tied"]["min_gap"], by_id["tied"]["min_gap_position"]),
                         (-0.50 - -0.51, 2))
        self.assertEqual((by_id["tied"]["first_divergence"], by_id["tied"]["gap_at_divergence"]),
                         (2, -0.50 - -0.51))
        self.assertEqual((by_id["solid"]["min_gap"], by_id["solid"]["min_gap_position"]),
                         (-0.1 - -3.0, 0))
        self.assertEqual({i: p["min_candidates"] for i, p in by_id.items()},
                         {"solid": 2, "tied": 0, "single": 1, "empty": 0, "nulltop": 0})
        self.assertEqual({i: p["non_greedy_tokens"] for i, p in by_id.items()},
                         {i: 0 for i in PROMPTS})
        summary = report["summary"]
        self.assertEqual((summary["fragile_prompts"], summary["fragility_unknown_prompts"],
                          summary["unstable_prompts"], summary["stable_prompts"],
                          summary["min_candidates"], summary["non_greedy_prompts"]),
                         (1, 3, 2, 3, 0, 0))
        self.assertEqual(summary["predictor"],
                         {"true_positive": 1, "false_positive": 0, "false_negative": 0,
                          "true_negative": 1, "precision": 1.0, "recall": 1.0})
        self.assertEqual(len(report["warnings"]), 1, report["warnings"])
        self.assertIn("candidates", report["warnings"][0])
        gates = [g for g in summary["verdict"]["gates"] if g["name"] == "fail_on_fragile"]
        self.assertEqual([(g["passed"], g["figure"], g["scope"]) for g in gates],
                         [(False, 4, {"endpoint": 0, "probe": "sweep", "level": None})])

    def test_unknown_fragility_alone_fails_fail_on_fragile(self):
        run, report, _ = self.audit(["solid", "empty", "nulltop"], "unknown", "--fail-on",
                                    "fragile")
        self.assertEqual(run.returncode, 1, run.describe())
        summary = report["summary"]
        self.assertEqual((summary["fragile_prompts"], summary["fragility_unknown_prompts"]), (0, 2))
        self.assertEqual(summary["predictor"],
                         {"true_positive": 0, "false_positive": 0, "false_negative": 0,
                          "true_negative": 1, "precision": None, "recall": None})
        gates = [g for g in summary["verdict"]["gates"] if not g["passed"]]
        self.assertEqual([(g["name"], g["figure"]) for g in gates], [("fail_on_fragile", 2)])
        # Without the unknown prompts the same gate passes.
        run, report, _ = self.audit(["solid"], "known", "--fail-on", "fragile")
        self.assertEqual(run.returncode, 0, run.describe())
        self.assertEqual(report["warnings"], [])


if __name__ == "__main__":
    h.main()
