#!/usr/bin/python3
"""Scenario: what every request used, summed per concurrency level and over the audit, and its
cost once priced. The scripted endpoint reports the prompt's tokens of each answer (its
"prompt_tokens" entry key) and, where the dialect says, the reasoning's; two prompts, two runs at
each of two levels:
- alpha: 3 answer tokens after 4 reasoning tokens, a prompt of 11 tokens;
- beta: 2 answer tokens, a prompt of 7 tokens.
So each level has 4 successful requests of 2 * 11 + 2 * 7 = 36 prompt tokens and
2 * (4 + 3) + 2 * 2 = 18 generated tokens, 2 * 4 = 8 of them reasoning where the dialect reports
it (openai-chat's completion_tokens_details in a whole answer, Gemini's thoughtsTokenCount, whole
and streamed); OpenAI's streamed usage chunk and Ollama report no reasoning count. `llmrepro report --price input=2,output=8`
prices the stored usage at 2 and 8 per million tokens; a bad --price exits 2 naming it before the
database is read."""

import e2e_harness as h

LEVELS = [1, 2]
RUNS = 2
MODEL = "scripted-model"
REASONING = [["<think>", -0.1, []], ["Hm", -0.2, []], ["</think>", -0.1, []],
             ["\n\n", -0.05, []]]
ALPHA = [[" One", -0.01, [[" One", -0.01], [" Two", -3.0]]],
         [" two", -0.02, [[" two", -0.02], [" three", -3.0]]],
         [".", -0.03, [[".", -0.03], ["!", -3.0]]]]
BETA = [[" Yes", -0.01, [[" Yes", -0.01], [" No", -4.0]]],
        [".", -0.02, [[".", -0.02], ["!", -4.0]]]]
PROMPTS = {"alpha": "Count to two.", "beta": "Say yes."}

PER_LEVEL = {"requests": 4, "requests_with_prompt_usage": 4, "prompt_tokens": 36,
             "completion_tokens": 18}
PRICE_IN, PRICE_OUT = 2.0, 8.0


def script():
    return {"model": MODEL, "prompts": {
        PROMPTS["alpha"]: [{"tokens": ALPHA, "reasoning": REASONING, "prompt_tokens": 11,
                            "finish_reason": "stop"}],
        PROMPTS["beta"]: [{"tokens": BETA, "prompt_tokens": 7, "finish_reason": "stop"}]}}


def expected_usage(levels, reasoning_per_level, cost=None, cache_state=False):
    """cache_state: every request said how many prompt tokens its cache served (0: none warm)."""
    usage = {key: value * levels for key, value in PER_LEVEL.items()}
    usage["reasoning_tokens"] = reasoning_per_level * levels
    usage["requests_with_cache_state"] = usage["requests"] if cache_state else 0
    usage["warm_requests"] = 0
    usage["cost"] = cost
    return usage


def expected_cost(levels):
    usage = expected_usage(levels, 0)
    return (usage["prompt_tokens"] * PRICE_IN + usage["completion_tokens"] * PRICE_OUT) / 1e6


class UsageCost(h.E2ETestCase):
    def audit(self, dialect, api, stream, tag, extra=(), env=None):
        endpoint = self.start_endpoint(script(), dialect, name=tag)
        suite = self.write_suite(f"{tag}-suite.jsonl",
                                 [{"id": pid, "prompt": text} for pid, text in PROMPTS.items()])
        db, report_path = self.path(f"{tag}.db"), self.path(f"{tag}.json")
        args = ["audit", "--suite", suite, "--endpoint", endpoint.url, "--api", api,
                "--model", MODEL, "--runs", str(RUNS),
                "--concurrency", ",".join(map(str, LEVELS)), "--seed", "3", "--db", db,
                "--json", report_path, *(["--stream"] if stream else []), *extra]
        run = self.run_llmrepro(args, env=env)
        self.assert_exit(run, 0)
        return self.load_report(report_path), db

    def check_usage(self, report, reasoning_per_level, cache_state=False):
        summary = report["summary"]
        self.assertEqual(summary["usage"], expected_usage(len(LEVELS), reasoning_per_level,
                                                          cache_state=cache_state))
        for level in summary["by_concurrency"]:
            self.assertEqual(level["usage"],
                             expected_usage(1, reasoning_per_level, cache_state=cache_state),
                             f"c={level['concurrency']}")
        self.assertEqual([level["concurrency"] for level in summary["by_concurrency"]], LEVELS)
        # Each probe's and each endpoint's brief summary carries the same accounting.
        self.assertEqual(report["probes"][0]["summary"]["usage"], summary["usage"])
        self.assertIsNone(report["config"]["price"])

    def test_openai_chat_whole_and_streamed_then_priced(self):
        # The streamed usage chunk (as tests/data/formats/openai_chat_completion_stream_chunks.json)
        # carries no completion_tokens_details: the reasoning's count is unknown there.
        streamed, _ = self.audit("openai-chat", "openai-chat", True, "chat-stream")
        self.check_usage(streamed, 0)
        report, db = self.audit("openai-chat", "openai-chat", False, "chat")
        # The whole answer's usage.prompt_tokens_details.cached_tokens is 0: known, none warm.
        self.check_usage(report, 8, cache_state=True)
        priced_path = self.path("priced.json")
        run = self.run_llmrepro(["report", "--db", db, "--price", "input=2,output=8",
                                 "--json", priced_path])
        self.assert_exit(run, 0)
        priced = self.load_report(priced_path)
        self.assertEqual(priced["config"]["price"], "input=2,output=8")
        self.assertEqual(priced["summary"]["usage"],
                         expected_usage(len(LEVELS), 8, expected_cost(len(LEVELS)), True))
        for level in priced["summary"]["by_concurrency"]:
            self.assertEqual(level["usage"], expected_usage(1, 8, expected_cost(1), True))
        self.assertEqual(priced["probes"][0]["summary"]["usage"], priced["summary"]["usage"])
        self.assertEqual(expected_cost(len(LEVELS)), 0.000432)
        self.assertIn("\nusage      tokens in 72 \u00b7 out 36 (16 reasoning) \u00b7 cost 0.000432\n"
                      "           c=1 tokens in 36 \u00b7 out 18 (8 reasoning) \u00b7 cost 0.000216\n"
                      "           c=2 tokens in 36 \u00b7 out 18 (8 reasoning) \u00b7 cost 0.000216\n",
                      run.stdout)
        # Without --price the stored audit has no price again: the database kept its own.
        again_path = self.path("again.json")
        self.assert_exit(self.run_llmrepro(["report", "--db", db, "--json", again_path]), 0)
        self.assertIsNone(self.load_report(again_path)["summary"]["usage"]["cost"])

    def test_ollama(self):
        report, _ = self.audit("ollama", "ollama", False, "ollama")
        self.check_usage(report, 0)

    def test_gemini_whole_and_streamed(self):
        for stream in (False, True):
            with self.subTest(stream=stream):
                report, _ = self.audit("gemini", "gemini", stream,
                                       "gemini-stream" if stream else "gemini",
                                       extra=["--api-key-env", "GEMINI_API_KEY"],
                                       env={"GEMINI_API_KEY": "gm-key-0123456789"})
                self.check_usage(report, 8)

    def test_bad_price_exits_2_naming_it(self):
        for bad in ("input=2", "input=-1,output=8", "input=x,output=8", "output=8,output=9"):
            with self.subTest(price=bad):
                run = self.run_llmrepro(["report", "--db", self.path("absent.db"),
                                         "--price", bad])
                self.assert_exit(run, 2)
                self.assertIn("--price", run.stderr)
                self.assertNotIn("absent.db", run.stderr)


if __name__ == "__main__":
    h.main()
