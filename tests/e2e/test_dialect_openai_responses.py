#!/usr/bin/python3
"""Scenario: the standard scripted audit against OpenAI's Responses API (/v1/responses), streamed
(typed `event:` lines, delta logprobs without bytes, ending with response.completed or, at the
token limit, response.incomplete) and not, with --api openai-responses: every number of the JSON
report is exactly what the script implies (see standard_audit.py), and every request asked for
temperature 0, two candidates through `include`, the output token limit, no seed and no storing.
Text prompts go as an `input` string, chat prompts as `input` messages."""

import json

import e2e_harness as h
import standard_audit as std

CHAT_PROMPTS = {text for _, text, chat in std.PROMPTS if chat}


class OpenaiResponsesDialect(h.E2ETestCase):
    def check_inputs(self, endpoint):
        for item in endpoint.posts():
            body = json.loads(item["body"])
            if item["prompt"] in CHAT_PROMPTS:
                self.assertEqual(body["input"], [{"role": "user", "content": item["prompt"]}])
            else:
                self.assertEqual(body["input"], item["prompt"])

    def test_non_streaming(self):
        report, endpoint, _ = std.run_standard(self, "openai-responses", "openai-responses",
                                               stream=False)
        self.check_inputs(endpoint)
        finishes = {p["id"]: [c["finish_reasons"] for c in p["completions"]]
                    for p in report["prompts"]}
        # status "incomplete" (max_output_tokens) reads as length, "completed" as stop.
        self.assertEqual(finishes["capital"], [{"length": 15}])
        self.assertEqual(finishes["primes"], [{"length": 9}, {"stop": 6}])

    def test_streaming(self):
        report, endpoint, _ = std.run_standard(self, "openai-responses", "openai-responses",
                                               stream=True)
        self.check_inputs(endpoint)
        finishes = {p["id"]: [c["finish_reasons"] for c in p["completions"]]
                    for p in report["prompts"]}
        self.assertEqual(finishes["hello"], [{"stop": 15}])
        self.assertEqual(finishes["primes"], [{"length": 9}, {"stop": 6}])


if __name__ == "__main__":
    h.main()
