#!/usr/bin/python3
"""Scenario: the standard scripted audit against the Gemini API
(/v1beta/models/{model}:generateContent), streamed (:streamGenerateContent?alt=sse, CRLF-framed
whole responses, two tokens a chunk, no [DONE]) and not, with --api gemini: every number of the
JSON report is exactly what the script implies (see standard_audit.py), every request asked for
temperature 0, responseLogprobs with two candidates, the output token limit and the seed, and
the API key went only in the x-goog-api-key header. Text prompts go as one user turn, chat
prompts as `contents` turns; MAX_TOKENS reads as length, STOP as stop."""

import json

import e2e_harness as h
import standard_audit as std

CHAT_PROMPTS = {text for _, text, chat in std.PROMPTS if chat}
KEY = "gm-secret-key-0123456789"


class GeminiDialect(h.E2ETestCase):
    def check_inputs_and_key(self, endpoint):
        for item in endpoint.posts():
            body = json.loads(item["body"])
            self.assertEqual(body["contents"],
                             [{"role": "user", "parts": [{"text": item["prompt"]}]}])
            headers = {name.lower(): value for name, value in item["headers"]}
            self.assertEqual(headers.get("x-goog-api-key"), KEY)
            self.assertNotIn("authorization", headers)
            self.assertNotIn(KEY, item["path"])

    def run_gemini(self, stream):
        return std.run_standard(self, "gemini", "gemini", stream=stream,
                                extra_args=["--api-key-env", "GEMINI_API_KEY"],
                                env={"GEMINI_API_KEY": KEY})

    def test_non_streaming(self):
        report, endpoint, _ = self.run_gemini(stream=False)
        self.check_inputs_and_key(endpoint)
        finishes = {p["id"]: [c["finish_reasons"] for c in p["completions"]]
                    for p in report["prompts"]}
        self.assertEqual(finishes["capital"], [{"length": 15}])
        self.assertEqual(finishes["primes"], [{"length": 9}, {"stop": 6}])

    def test_streaming(self):
        report, endpoint, _ = self.run_gemini(stream=True)
        self.check_inputs_and_key(endpoint)
        finishes = {p["id"]: [c["finish_reasons"] for c in p["completions"]]
                    for p in report["prompts"]}
        self.assertEqual(finishes["hello"], [{"stop": 15}])
        self.assertEqual(finishes["primes"], [{"length": 9}, {"stop": 6}])

    def test_model_required(self):
        suite = self.write_suite("suite.jsonl", std.suite())
        run = self.run_llmrepro(["audit", "--suite", suite, "--endpoint", "http://127.0.0.1:9",
                                 "--api", "gemini", "--db", self.path("m.db")])
        self.assert_exit(run, 2)
        self.assertIn("--api gemini needs --model", run.stderr)


if __name__ == "__main__":
    h.main()
