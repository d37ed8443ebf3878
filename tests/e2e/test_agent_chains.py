#!/usr/bin/python3
"""Scenario: agent chains against a scripted endpoint that calls tools (OpenAI's chat shape and
Anthropic's Messages API, streamed and not). Suite lines carry `tools` (OpenAI's function
schema) and `tool_results` (the stub registry); the tool answers each call from it, sends the
conversation again, and compares the runs' tool-call sequences under --compare-on tool_calls:
- "weather" calls get_weather(Paris) at step 0, gets "18C, sunny" back and answers: one sequence
  over every run, stable;
- "trip" calls search(Rome) in two runs of three and search(Milan) in the third, a call the
  registry does not hold: that run's tool answers with an error result, and the prompt's runs
  part at step 0, field arguments.q;
- a suite with tools sent to a dialect without them is refused before any completion request."""

import json

import e2e_harness as h

WEATHER = "What is the weather in Paris?"
TRIP = "Plan a trip to Italy."
TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "search", "description": "Searches the web.",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}},
]
RUNS = 3


def call(name, **arguments):
    return {"tokens": [], "tool_calls": [{"name": name, "arguments": arguments}]}


def text(words):
    return {"tokens": [[w, -0.1, [[w, -0.1], ["x", -3.0]]] for w in words],
            "finish_reason": "stop"}


def script():
    return {"model": "agent-model", "prompts": {
        WEATHER: {"steps": [[call("get_weather", city="Paris")],
                            [text(["It is", " 18C", " and sunny."])]]},
        TRIP: {"steps": [[call("search", q="Rome"), call("search", q="Rome"),
                          call("search", q="Milan")],
                         [text(["Go to", " Rome."])]]},
    }}


def suite():
    return [
        {"id": "weather", "messages": [{"role": "user", "content": WEATHER}], "tools": TOOLS,
         "tool_results": [{"name": "get_weather", "arguments": {"city": "Paris"},
                           "result": "18C, sunny"}]},
        {"id": "trip", "messages": [{"role": "user", "content": TRIP}], "tools": TOOLS,
         "tool_results": [{"name": "search", "arguments": {"q": "Rome"},
                           "result": {"hits": ["Colosseum"]}}],
         "max_steps": 3},
    ]


class AgentChains(h.E2ETestCase):
    def audit(self, dialect, tag, stream=False):
        endpoint = self.start_endpoint(script(), dialect, name=tag)
        suite_path = self.write_suite(f"{tag}.jsonl", suite())
        extra = ["--endpoint", endpoint.url, "--model", "agent-model", "--runs", str(RUNS),
                 "--concurrency", "1", "--compare-on", "tool_calls", "--fail-on", "unstable",
                 "--timeout", "20", "--retries", "0"] + (["--stream"] if stream else [])
        run, report, _ = self.audit_reports(suite_path, extra, tag=tag, api=dialect)
        return endpoint, run, report

    def test_chains(self):
        for dialect, stream in (("openai-chat", False), ("openai-chat", True),
                                ("anthropic", False), ("anthropic", True)):
            with self.subTest(dialect=dialect, stream=stream):
                endpoint, run, report = self.audit(dialect, f"{dialect}-{stream}", stream)
                self.assert_exit(run, 1)  # trip's runs part: --fail-on unstable
                posts = endpoint.posts()
                # Two requests a run, each chain: the call, then the answer to its result.
                self.assertEqual(len(posts), 2 * 2 * RUNS)
                self.assertEqual(sorted(p["step"] for p in posts), [0] * 6 + [1] * 6)
                for item in posts:
                    self.assertIsNotNone(item["tools"], "every step offers the tools")
                weather = [p for p in posts if p["prompt"] == WEATHER and p["step"] == 1]
                self.assertEqual([r["content"] for p in weather for r in p["tool_results"]],
                                 ["18C, sunny"] * RUNS)
                trip = [p["tool_results"][0]["content"] for p in posts
                        if p["prompt"] == TRIP and p["step"] == 1]
                self.assertEqual(sorted(trip), sorted(
                    ['{"hits":["Colosseum"]}'] * 2 +
                    ['{"error":"no scripted result for search with these arguments"}']))
                prompts = {p["id"]: p for p in report["prompts"]}
                self.assertEqual(prompts["weather"]["status"], "stable")
                self.assertEqual(prompts["weather"]["unique_completions"], 1)
                self.assertEqual(prompts["trip"]["status"], "unstable")
                self.assertEqual(prompts["trip"]["unique_completions"], 2)
                self.assertEqual(prompts["trip"]["tool_call_divergence"],
                                 {"step": 0, "field": "arguments.q"})
                rate = report["summary"]["unstable_rate"]
                self.assertEqual((rate["judged"], rate["rate"]), (2, 0.5))

    def test_tools_to_a_dialect_without_them(self):
        endpoint = self.start_endpoint(script(), "ollama", name="ollama")
        suite_path = self.write_suite("ollama.jsonl", suite())
        run = self.run_llmrepro(["audit", "--suite", suite_path, "--endpoint", endpoint.url,
                                 "--api", "ollama", "--model", "agent-model",
                                 "--db", self.path("ollama.db")])
        self.assertEqual(run.returncode, 2, run.describe())
        self.assertIn("ollama.jsonl:1: prompt 'weather' has tools, which --api ollama does not "
                      "send", run.stderr)
        self.assertEqual(endpoint.posts(preflight=True), [])


if __name__ == "__main__":
    h.main()
