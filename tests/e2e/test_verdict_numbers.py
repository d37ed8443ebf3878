#!/usr/bin/python3
"""Scenario: numbers in the wild (issue "A verdict a CI can trust"). Endpoints send NaN,
Infinity, -Infinity, 1e400, -1e400 and null log probabilities in 200 responses (written raw by
the scripted endpoint). None of them fails or retries a request: each is counted by kind,
-Infinity and -1e400 are read as the floor -9999, and NaN, Infinity, 1e400 and null leave the
gap at their position unknown. In every dialect, streamed and not, 2 prompts x 2 runs x levels
1,2 send exactly 8 requests and record 8 successful completions:
- nums: always the same six tokens; per completion NaN 2, Infinity 2, -Infinity 1, overflow 3,
  null 2. Known gaps (against the floor) are 9998.9 and 9998.8; the other four are unknown, so
  its fragility is unknown and its min_gap is 9998.8 at token 3;
- div: X (nums' first token, whose gap is unknown, then " r") and Y (" b", " s") alternate, so
  it diverges at token 0 where the gap is unknown: gap_at_divergence null; X's NaNs count
  twice per X.
"""

import e2e_harness as h

# The sampled token's logprob is its own candidate's (as every server, vLLM included, sends).
T0 = ["a", "NaN", [["a", "NaN"], ["b", -1.0]]]              # nan 2: gap unknown
T1 = ["c", -0.1, [["c", -0.1], ["d", "-Infinity"]]]         # -inf 1: gap -0.1 - -9999
T2 = ["e", "Infinity", [["e", "Infinity"], ["f", -0.5]]]    # inf 2: gap unknown
T3 = ["g", -0.2, [["g", -0.2], ["h", "-1e400"]]]            # overflow 1: gap -0.2 - -9999
T4 = ["i", None, [["i", None], ["j", -0.3]]]                # null 2: gap unknown
T5 = ["k", "1e400", [["k", "1e400"], ["l", -0.5]]]          # overflow 2: gap unknown
NUMS = {"tokens": [T0, T1, T2, T3, T4, T5], "finish_reason": "stop"}
X = {"tokens": [T0, ["r", -0.1, [["r", -0.1], ["s", -2.0]]]], "finish_reason": "stop"}
Y = {"tokens": [["b", -1.0, [["b", -1.0], ["a", -1.5]]],
                ["s", -0.1, [["s", -0.1], ["r", -2.0]]]], "finish_reason": "stop"}
NUMS_EACH = {"nan": 2, "infinity": 2, "negative_infinity": 1, "overflow": 3, "null": 2}
X_EACH = {"nan": 2, "infinity": 0, "negative_infinity": 0, "overflow": 0, "null": 0}
PROMPTS = [{"id": "nums", "prompt": "Numbers question?"},
           {"id": "div", "prompt": "Diverge question?"}]
RUNS, LEVELS = 2, [1, 2]
FLOOR = -9999.0


def times(numbers, n):
    return {k: v * n for k, v in numbers.items()}


class VerdictNumbers(h.E2ETestCase):
    def check(self, dialect, api, stream):
        tag = f"{dialect}-{'stream' if stream else 'whole'}"
        endpoint = self.start_endpoint({"model": "served-model", "prompts": {
            "Numbers question?": [NUMS], "Diverge question?": [X, Y]}}, dialect, name=tag)
        suite = self.write_suite(f"{tag}.jsonl", PROMPTS)
        run, report, _ = self.audit_reports(
            suite, ["--endpoint", endpoint.url],
            ["--model", "served-model", "--runs", str(RUNS), "--concurrency", "1,2",
             "--fragile-window", "6", "--retries", "2", "--timeout", "10"]
            + (["--stream"] if stream else []), tag=tag, api=api)
        self.assertNotEqual(run.returncode, 3, run.describe())
        self.assertEqual(run.returncode, 0, run.describe())
        n = RUNS * len(LEVELS)
        self.assertEqual(len(endpoint.posts()), 2 * n, "no request was retried")
        summary = report["summary"]
        self.assertEqual((summary["requests"], summary["failed_requests"],
                          summary["failure_reasons"]), (2 * n, 0, []))
        nums_total, div_total = times(NUMS_EACH, n), times(X_EACH, n // 2)
        self.assertEqual(summary["numbers"], {k: nums_total[k] + div_total[k] for k in NUMS_EACH})
        by_id = {p["id"]: p for p in report["prompts"]}
        nums, div = by_id["nums"], by_id["div"]
        self.assertEqual(nums["numbers"], nums_total)
        self.assertEqual(div["numbers"], div_total)
        self.assertEqual((nums["status"], nums["runs"], nums["failed"], nums["unique_completions"],
                          nums["has_logprobs"]), ("stable", n, 0, 1, True))
        self.assertEqual((nums["min_gap"], nums["min_gap_position"], nums["fragile"]),
                         (-0.2 - FLOOR, 3, None))
        self.assertTrue(nums["fragility_reason"])
        self.assertEqual((div["status"], div["unique_completions"], div["first_divergence"],
                          div["divergence_kind"], div["gap_at_divergence"]),
                         ("unstable", 2, 0, "token", None))
        # The reference's tokens as read: -Infinity and -1e400 at the floor, the rest unknown.
        tokens = nums["completions"][0]["tokens"]
        self.assertEqual([t["token"] for t in tokens], ["a", "c", "e", "g", "i", "k"])
        self.assertEqual([t["logprob"] for t in tokens], [None, -0.1, None, -0.2, None, None])
        self.assertEqual([sorted((c["token"], c["logprob"]) for c in t["top"]
                                 if c["logprob"] is not None) for t in tokens],
                         [[("b", -1.0)], [("c", -0.1), ("d", FLOOR)], [("f", -0.5)],
                          [("g", -0.2), ("h", FLOOR)], [("j", -0.3)], [("l", -0.5)]])
        self.assertEqual([len(t["top"]) for t in tokens], [2] * 6)
        # div's reference X has an unknown gap at token 0 and none below tau: unknown too.
        self.assertEqual((div["fragile"], summary["fragility_unknown_prompts"]), (None, 2))
        self.assertEqual(summary["verdict"]["headline"],
                         "NO STABILITY GATE: 1 of 2 prompts unstable")
        self.assertEqual(sum("not finite" in w or "NaN" in w for w in report["warnings"]), 1,
                         report["warnings"])

    def test_numbers_in_every_dialect(self):
        dialects = [("openai-chat", "openai-chat"), ("openai-completions", "openai-completions"),
                    ("vllm", "openai-chat"), ("llamacpp", "llamacpp"), ("sglang", "sglang"),
                    ("ollama", "ollama"), ("tgi", "tgi"),
                    ("openai-responses", "openai-responses"), ("gemini", "gemini")]
        for (dialect, api), stream in [(d, s) for d in dialects for s in (False, True)]:
            with self.subTest(dialect=dialect, stream=stream):
                self.check(dialect, api, stream)


if __name__ == "__main__":
    h.main()
