#!/usr/bin/python3
"""Scenario: what counts as the same completion, and who produced it (issue "A verdict a CI can
trust"). Two completions are the same only if their token sequences and their texts are equal.
- byte fragments: "─" (e2 94 80) and "│" (e2 94 82) each come as two tokens whose strings are
  both U+FFFD. Where the endpoint sends the real bytes (the OpenAI and vLLM shapes, llama.cpp,
  Ollama; streamed, where the character arrives with its last fragment, and not) the tokens read
  "bytes:\\xe2" and "bytes:\\x94\\x80" / "bytes:\\x94\\x82"; where it cannot (TGI) the token
  strings are equal and only the texts differ. Either way: 2 distinct completions, unstable.
- a stream chunk whose logprobs are null: its text arrives, its token does not, so the tokens no
  longer concatenate to the text (token_text_mismatch) and two completions with equal tokens
  but different texts are still two.
- text mode: a completion without tokens makes the prompt compared by characters
  (divergence_unit "char"), its fragility unknown; an empty completion is an empty token
  sequence, not text mode.
- a load balancer: the endpoint answers as model m-a / m-b (fingerprints fp-a / fp-b)
  alternately: models_seen and fingerprints_seen count them exactly, each distinct completion
  says who produced it, and a warning reaches the terminal, HTML and Markdown.
"""

import e2e_harness as h


def tok(text, lp=-0.1, alt="zz", alt_lp=-3.0):
    return [text, lp, [[text, lp], [alt, alt_lp]]]


FFFD = "\ufffd"


def fragment(byte_values, lp=-0.1):
    """A byte-fragment token: its string U+FFFD, its candidates U+FFFD (its bytes) and "zz"."""
    return [FFFD, lp, [[FFFD, lp], ["zz", -3.0]], byte_values]


HBAR = {"tokens": [fragment([0xE2]), fragment([0x94, 0x80])], "finish_reason": "stop"}  # "─"
VBAR = {"tokens": [fragment([0xE2]), fragment([0x94, 0x82])], "finish_reason": "stop"}  # "│"


class VerdictIdentity(h.E2ETestCase):
    def audit(self, script, prompts, tag, *extra, dialect="openai-chat", api="openai-chat"):
        endpoint = self.start_endpoint(script, dialect, name=tag)
        suite = self.write_suite(f"{tag}.jsonl", prompts)
        run, report, _ = self.audit_reports(
            suite, ["--endpoint", endpoint.url],
            ["--concurrency", "1", "--runs", "4", *extra], tag=tag, api=api)
        return run, report, {p["id"]: p for p in report["prompts"]}

    def check_bytes_sent(self, script, prompts, dialect, api, stream):
        tag = f"bytes-{dialect}-{stream}"
        run, report, by_id = self.audit(script, prompts, tag, "--fail-on", "unstable",
                                        *(["--stream"] if stream else []), dialect=dialect,
                                        api=api)
        self.assertEqual(run.returncode, 1, run.describe())
        line = by_id["line"]
        self.assertEqual((line["status"], line["unique_completions"], line["first_divergence"],
                          line["divergence_kind"], line["token_text_mismatch"]),
                         ("unstable", 2, 1, "token", 0))
        self.assertEqual([(c["text"], c["count"], [t["token"] for t in c["tokens"]])
                          for c in line["completions"]],
                         [("\u2500", 2, ["bytes:\\xe2", "bytes:\\x94\\x80"]),
                          ("\u2502", 2, ["bytes:\\xe2", "bytes:\\x94\\x82"])])
        # The candidate with the sampled token's bytes is the sampled token: greedy.
        self.assertEqual(line["non_greedy_tokens"], 0)
        self.assertEqual(report["warnings"], [])

    def test_byte_fragments_with_and_without_bytes(self):
        script = {"prompts": {"Draw a line.": [HBAR, VBAR]}}
        prompts = [{"id": "line", "prompt": "Draw a line."}]
        for dialect, api, stream in [("openai-chat", "openai-chat", False),
                                     ("openai-chat", "openai-chat", True),
                                     ("vllm", "openai-chat", True),
                                     ("llamacpp", "llamacpp", False),
                                     ("ollama", "ollama", True)]:
            with self.subTest(dialect=f"{dialect} (bytes sent)", stream=stream):
                self.check_bytes_sent(script, prompts, dialect, api, stream)
        with self.subTest(dialect="tgi (token strings only)"):
            run, report, by_id = self.audit(script, prompts, "tgi", "--fail-on", "unstable",
                                            dialect="tgi", api="tgi")
            self.assertEqual(run.returncode, 1, run.describe())
            line = by_id["line"]
            self.assertEqual((line["status"], line["unique_completions"], line["divergence_unit"],
                              line["token_text_mismatch"]), ("unstable", 2, "token", 4))
            self.assertIsNotNone(line["first_divergence"])
            self.assertEqual([(c["text"], c["count"], [t["token"] for t in c["tokens"]])
                              for c in line["completions"]],
                             [("\u2500", 2, [FFFD, FFFD]), ("\u2502", 2, [FFFD, FFFD])])
            self.assertEqual(report["summary"]["token_text_mismatch_prompts"], 1)
            self.assertEqual(len(report["warnings"]), 1, report["warnings"])

    def test_stream_chunk_without_logprobs(self):
        # Both drop chunk 1's logprobs: tokens [" a", " c"] for both, texts " a b c" and " a B c".
        lower = {"tokens": [tok(" a"), tok(" b"), tok(" c")], "drop_logprobs_chunks": [1],
                 "finish_reason": "stop"}
        upper = {"tokens": [tok(" a"), tok(" B"), tok(" c")], "drop_logprobs_chunks": [1],
                 "finish_reason": "stop"}
        script = {"prompts": {"Spell it.": [lower, upper], "Same again.": [lower]}}
        prompts = [{"id": "spell", "prompt": "Spell it."}, {"id": "same", "prompt": "Same again."}]
        run, report, by_id = self.audit(script, prompts, "drop", "--stream",
                                        "--fail-on", "unstable")
        self.assertEqual(run.returncode, 1, run.describe())
        spell, same = by_id["spell"], by_id["same"]
        self.assertEqual((spell["status"], spell["unique_completions"],
                          spell["token_text_mismatch"]), ("unstable", 2, 4))
        self.assertEqual([(c["text"], c["count"], [t["token"] for t in c["tokens"]])
                          for c in spell["completions"]],
                         [(" a b c", 2, [" a", " c"]), (" a B c", 2, [" a", " c"])])
        self.assertEqual((same["status"], same["unique_completions"], same["token_text_mismatch"]),
                         ("stable", 1, 4))
        summary = report["summary"]
        self.assertEqual((summary["token_text_mismatch_prompts"], summary["unstable_prompts"]),
                         (2, 1))
        self.assertEqual(len(report["warnings"]), 1, report["warnings"])

    def test_text_mode_and_empty_completion(self):
        paris = [tok(" Paris"), tok(","), tok(" of"), tok(" course")]
        bang = [tok(" Paris"), tok("!"), tok(" of"), tok(" course")]
        script = {"prompts": {
            "Capital?": [{"tokens": paris}, {"fault": "no_logprobs", "tokens": bang}],
            "Nothing?": [{"tokens": [], "finish_reason": "stop"}, {"tokens": [tok(" Something")]}]}}
        prompts = [{"id": "capital", "prompt": "Capital?"}, {"id": "nothing", "prompt": "Nothing?"}]
        run, report, by_id = self.audit(script, prompts, "text")
        self.assertEqual(run.returncode, 0, run.describe())
        capital, nothing = by_id["capital"], by_id["nothing"]
        self.assertEqual((capital["status"], capital["unique_completions"],
                          capital["divergence_unit"], capital["first_divergence"],
                          capital["divergence_kind"], capital["has_logprobs"], capital["fragile"],
                          capital["gap_at_divergence"]),
                         ("unstable", 2, "char", len(" Paris"), "token", False, None, None))
        self.assertTrue(capital["fragility_reason"])
        self.assertEqual((nothing["status"], nothing["unique_completions"],
                          nothing["divergence_unit"], nothing["first_divergence"],
                          nothing["divergence_kind"], nothing["gap_at_divergence"]),
                         ("unstable", 2, "token", 0, "length", None))
        self.assertEqual([(c["text"], c["count"], c["reference"], len(c["tokens"]))
                          for c in nothing["completions"]],
                         [("", 2, True, 0), (" Something", 2, False, 1)])
        self.assertEqual(report["summary"]["verdict"]["headline"],
                         "NO STABILITY GATE: 2 of 2 prompts unstable")

    def test_load_balancer(self):
        same = [tok(" Same"), tok(" answer")]
        other = [tok(" Other"), tok(" answer")]

        def behind(model, tokens):
            return {"tokens": tokens, "model": model, "fingerprint": f"fp-{model[-1]}",
                    "finish_reason": "stop"}

        script = {"model": "m-a", "prompts": {
            "Balanced?": [behind("m-a", same), behind("m-b", same)],
            "Split?": [behind("m-a", same), behind("m-b", other)]}}
        prompts = [{"id": "balanced", "prompt": "Balanced?"}, {"id": "split", "prompt": "Split?"}]
        run, report, by_id = self.audit(script, prompts, "balancer")
        self.assertEqual(run.returncode, 0, run.describe())
        endpoint = report["endpoints"][0]
        self.assertEqual((endpoint["models_seen"], endpoint["fingerprints_seen"]),
                         ({"m-a": 4, "m-b": 4}, {"fp-a": 4, "fp-b": 4}))
        self.assertEqual([(c["text"], c["models"], c["fingerprints"])
                          for c in by_id["balanced"]["completions"]],
                         [(" Same answer", {"m-a": 2, "m-b": 2}, {"fp-a": 2, "fp-b": 2})])
        self.assertEqual([(c["text"], c["models"], c["fingerprints"])
                          for c in by_id["split"]["completions"]],
                         [(" Same answer", {"m-a": 2}, {"fp-a": 2}),
                          (" Other answer", {"m-b": 2}, {"fp-b": 2})])
        self.assertEqual((by_id["balanced"]["status"], by_id["split"]["status"]),
                         ("stable", "unstable"))
        warnings = report["warnings"]
        self.assertEqual(len(warnings), 2, warnings)
        self.assertTrue(all("m-a" in w and "m-b" in w for w in warnings[:1]), warnings)
        self.assertTrue(any("fp-a" in w and "fp-b" in w for w in warnings), warnings)
        # assert_verdict_agrees has checked each warning in the terminal, HTML and Markdown.
        self.assertEqual(sum(line.startswith("warning: ") for line in run.stdout.splitlines()), 2)


if __name__ == "__main__":
    h.main()
