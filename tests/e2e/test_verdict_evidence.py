#!/usr/bin/python3
"""Scenario: what the report says about each prompt's evidence follows from the script (issue "A
verdict a CI can trust"); every run's outputs state one verdict.
- non-greedy: a sampled token ranked below another candidate, and one absent from its
  candidates, counted over the distinct completions, with a warning;
- length divergence: A = [a, b, c] against B = [a, b] (either one the reference) diverges at 2
  of kind "length" with no gap, beside a token divergence at 2 with its gap;
- finish reasons, models and fingerprints are counted per distinct completion.
"""

import e2e_harness as h


def tok(text, lp=-0.1, alt="zz", alt_lp=-3.0):
    return [text, lp, [[text, lp], [alt, alt_lp]]]


def completion(tokens, finish="stop"):
    return {"tokens": tokens, "finish_reason": finish}


BELOW = [" x", -0.9, [[" y", -0.5], [" x", -0.9]]]  # sampled, but ranked second
ABSENT = [" z", -1.0, [[" p", -0.2], [" q", -0.3]]]  # sampled, not among the candidates

TOK_A, TOK_B, TOK_C, TOK_D = tok(" a"), tok(" b"), tok(" c", -0.4, " d", -0.7), tok(" d", -0.7)


class VerdictEvidence(h.E2ETestCase):
    def audit(self, script, prompts, tag, *extra):
        endpoint = self.start_endpoint(script, name=tag)
        suite = self.write_suite(f"{tag}.jsonl", prompts)
        run, report, paths = self.audit_reports(
            suite, ["--endpoint", endpoint.url],
            ["--concurrency", "1", "--fragile-window", "5", *extra], tag=tag)
        return run, report, {p["id"]: p for p in report["prompts"]}, endpoint

    def test_non_greedy_tokens(self):
        script = {"prompts": {
            "Greedy question?": [completion([tok(" a"), tok(" b")])],
            "Below question?": [completion([tok(" a"), BELOW, ABSENT])],
            "Twice question?": [completion([BELOW, tok(" b")]), completion([BELOW, tok(" c")])]}}
        prompts = [{"id": "greedy", "prompt": "Greedy question?"},
                   {"id": "below", "prompt": "Below question?"},
                   {"id": "twice", "prompt": "Twice question?"}]
        run, report, by_id, _ = self.audit(script, prompts, "greedy", "--runs", "2")
        self.assertEqual(run.returncode, 0, run.describe())
        self.assertEqual({i: p["non_greedy_tokens"] for i, p in by_id.items()},
                         {"greedy": 0, "below": 2, "twice": 2})
        self.assertEqual({i: p["status"] for i, p in by_id.items()},
                         {"greedy": "stable", "below": "stable", "twice": "unstable"})
        self.assertEqual(report["summary"]["non_greedy_prompts"], 2)
        self.assertEqual(len(report["warnings"]), 1, report["warnings"])
        self.assertIn("2", report["warnings"][0])
        self.assertEqual(report["summary"]["verdict"]["headline"],
                         "NO STABILITY GATE: 1 of 3 prompts unstable")

    def test_length_divergence(self):
        abc, ab, abd = ([TOK_A, TOK_B, TOK_C], [TOK_A, TOK_B], [TOK_A, TOK_B, TOK_D])
        script = {"prompts": {
            "Longer question?": [completion(abc), completion(ab), completion(abc)],
            "Shorter question?": [completion(ab), completion(abc), completion(ab)],
            "Token question?": [completion(abc), completion(abd), completion(abc)]}}
        prompts = [{"id": "longer", "prompt": "Longer question?"},
                   {"id": "shorter", "prompt": "Shorter question?"},
                   {"id": "token", "prompt": "Token question?"}]
        run, report, by_id, _ = self.audit(script, prompts, "length", "--runs", "3",
                                           "--fail-on", "unstable")
        self.assertEqual(run.returncode, 1, run.describe())
        fields = ("status", "unique_completions", "first_divergence", "divergence_unit",
                  "divergence_kind", "gap_at_divergence")
        got = {i: tuple(p[k] for k in fields) for i, p in by_id.items()}
        self.assertEqual(got, {
            "longer": ("unstable", 2, 2, "token", "length", None),
            "shorter": ("unstable", 2, 2, "token", "length", None),
            "token": ("unstable", 2, 2, "token", "token", -0.4 - -0.7)})
        self.assertEqual([(c["text"], c["count"], c["reference"], c["divergence"],
                           c["divergence_kind"]) for c in by_id["longer"]["completions"]],
                         [(" a b c", 2, True, None, None), (" a b", 1, False, 2, "length")])
        self.assertEqual([(c["text"], c["count"], c["reference"], c["divergence"],
                           c["divergence_kind"]) for c in by_id["shorter"]["completions"]],
                         [(" a b", 2, True, None, None), (" a b c", 1, False, 2, "length")])
        self.assertEqual([(c["divergence"], c["divergence_kind"])
                          for c in by_id["token"]["completions"]], [(None, None), (2, "token")])
        self.assertEqual([[c["token"], c["logprob"]]
                          for c in by_id["token"]["candidates_at_divergence"]],
                         [[" c", -0.4], [" d", -0.7]])
        self.assertEqual(report["summary"]["unstable_prompts"], 3)

    def test_finish_reasons_models_fingerprints_per_completion(self):
        x, y = [tok(" one"), tok(" two")], [tok(" one"), tok(" three")]
        script = {"model": "served-model", "fingerprint": "fp-one", "prompts": {
            "Finish question?": [completion(x, "stop"), completion(x, "length"),
                                 completion(y, "length"), dict(completion(x, "stop"),
                                                               fingerprint="fp-two")]}}
        prompts = [{"id": "finish", "prompt": "Finish question?"}]
        run, report, by_id, _ = self.audit(script, prompts, "finish", "--runs", "4")
        self.assertEqual(run.returncode, 0, run.describe())
        completions = by_id["finish"]["completions"]
        self.assertEqual([(c["text"], c["count"], c["finish_reasons"], c["models"],
                           c["fingerprints"]) for c in completions],
                         [(" one two", 3, {"stop": 2, "length": 1}, {"served-model": 3},
                           {"fp-one": 2, "fp-two": 1}),
                          (" one three", 1, {"length": 1}, {"served-model": 1}, {"fp-one": 1})])
        endpoint = report["endpoints"][0]
        self.assertEqual((endpoint["models_seen"], endpoint["fingerprints_seen"]),
                         ({"served-model": 4}, {"fp-one": 3, "fp-two": 1}))
        # Two fingerprints answered: a warning, and only that one.
        self.assertEqual(len(report["warnings"]), 1, report["warnings"])
        self.assertIn("fp-two", report["warnings"][0])


if __name__ == "__main__":
    h.main()
