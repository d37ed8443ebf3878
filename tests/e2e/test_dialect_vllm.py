#!/usr/bin/python3
"""Scenario: the standard scripted audit against a vLLM server (--api openai-chat), streamed
and not: vLLM lists the sampled token first among the candidates, streams several tokens per
chunk with the fingerprint on the last one, clamps -inf to -9999.0 and, with
return_tokens_as_token_ids, names tokens "token_id:N". Every report number is exact."""

import json

import e2e_harness as h
import standard_audit as std
from scripted_endpoint import token_id


def token_ids_script():
    """The standard script in token_id:N form, with one candidate below vLLM's -9999.0 floor
    (capital, index 0: its gap grows but stays far from the minimum)."""
    script = std.script()
    script["token_ids"] = True
    capital = json.loads(json.dumps(std.CAPITAL))
    capital[0][2][1][1] = -12000.0
    script["prompts"]["Name the capital of France."] = [std.variant(capital)]
    return script


class VllmDialect(h.E2ETestCase):
    def test_non_streaming(self):
        std.run_standard(self, "vllm", "openai-chat", stream=False)

    def test_streaming(self):
        std.run_standard(self, "vllm", "openai-chat", stream=True)

    def test_token_ids_and_logprob_floor(self):
        for stream in (False, True):
            with self.subTest(stream=stream):
                report, _, _ = std.run_standard(
                    self, "vllm", "openai-chat", stream, token_ids_script(),
                    token_view=lambda t: f"token_id:{token_id(t)}", tag=f"ids-{stream}")
                capital = report["prompts"][0]["completions"][0]
                self.assertEqual(capital["text"], std.text_of(std.CAPITAL))
                first = capital["tokens"][0]
                self.assertEqual(first["token"], f"token_id:{token_id(' Paris')}")
                self.assertEqual([c["token"] for c in first["top"]],
                                 [f"token_id:{token_id(' Paris')}", f"token_id:{token_id(' The')}"])
                self.assertEqual(first["top"][0]["logprob"], -0.01)
                # -9999.0 stands for -inf; the report keeps it, or writes null for a non-finite value.
                self.assertIn(first["top"][1]["logprob"], (-9999.0, None))


if __name__ == "__main__":
    h.main()
