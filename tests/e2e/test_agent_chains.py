#!/usr/bin/python3
"""Scenario: agent chains against a scripted endpoint that calls tools, in every dialect that
takes tools (OpenAI's chat shape, Anthropic's Messages API, Gemini's generateContent, OpenAI's
Responses API and Ollama's /api/chat), streamed and not. Suite lines carry `tools` (OpenAI's
function schema) and `tool_results` (the stub registry); the tool answers each call from it,
sends the conversation again, and compares the runs' tool-call sequences under --compare-on
tool_calls:
- "weather" calls get_weather(Paris) at step 0, gets "18C, sunny" back and answers: one sequence
  over every run, stable;
- "trip" calls search(Rome) in two runs of three and search(Milan) in the third, a call the
  registry does not hold: that run's tool answers with an error result, and the prompt's runs
  part at call 0, field arguments.q;
- "tour" calls search(Rome) in every run, then get_weather(Rome) in two runs and
  get_weather(Florence) in the third: the runs part at call 1, field arguments.city, after a
  three-request chain;
- a suite with tools sent to a dialect without them is refused before any completion request,
  naming the dialects that take tools."""

import json

import e2e_harness as h

WEATHER = "What is the weather in Paris?"
TRIP = "Plan a trip to Italy."
TOUR = "Plan a day in Rome."
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
DIALECTS = ("openai-chat", "anthropic", "gemini", "openai-responses", "ollama")
NO_RESULT = '{"error":"no scripted result for %s with these arguments"}'


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
        TOUR: {"steps": [[call("search", q="Rome")],
                         [call("get_weather", city="Rome"), call("get_weather", city="Rome"),
                          call("get_weather", city="Florence")],
                         [text(["Walk."])]]},
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
        {"id": "tour", "messages": [{"role": "user", "content": TOUR}], "tools": TOOLS,
         "tool_results": [{"name": "search", "arguments": {"q": "Rome"},
                           "result": {"hits": ["Pantheon"]}},
                          {"name": "get_weather", "arguments": {"city": "Rome"},
                           "result": "21C, clear"}]},
    ]


def as_sent(dialect, result):
    """A tool result as the endpoint logs it: Gemini's functionResponse takes an object, so a
    result that is none arrives wrapped as {"output": ...}."""
    if dialect == "gemini" and not result.startswith("{"):
        return json.dumps({"output": result}, separators=(",", ":"))
    return result


def calls_json(*calls):
    """A run's tool calls as the database stores them (core::tool_calls_json)."""
    return json.dumps([{"arguments": arguments, "name": name} for name, arguments in calls],
                      separators=(",", ":"), sort_keys=True)


class AgentChains(h.E2ETestCase):
    def audit(self, dialect, tag, stream=False):
        endpoint = self.start_endpoint(script(), dialect, name=tag)
        suite_path = self.write_suite(f"{tag}.jsonl", suite())
        extra = ["--endpoint", endpoint.url, "--model", "agent-model", "--runs", str(RUNS),
                 "--concurrency", "1", "--compare-on", "tool_calls", "--fail-on", "unstable",
                 "--timeout", "20", "--retries", "0"] + (["--stream"] if stream else [])
        run, report, paths = self.audit_reports(suite_path, extra, tag=tag, api=dialect)
        return endpoint, run, report, paths["db"]

    def recorded(self, db):
        """Each prompt's runs' tool calls as stored, sorted."""
        conn = h.open_db(db)
        try:
            rows = conn.execute("SELECT prompt_index, tool_calls FROM requests WHERE ok = 1 "
                                "ORDER BY prompt_index, tool_calls").fetchall()
        finally:
            conn.close()
        return [[calls for index, calls in rows if index == prompt] for prompt in range(3)]

    def test_chains(self):
        for dialect in DIALECTS:
            for stream in (False, True):
                with self.subTest(dialect=dialect, stream=stream):
                    self.check_chains(dialect, stream)

    def check_chains(self, dialect, stream):
        endpoint, run, report, db = self.audit(dialect, f"{dialect}-{stream}", stream)
        self.assert_exit(run, 1)  # trip's and tour's runs part: --fail-on unstable
        posts = endpoint.posts()
        self.assertEqual({p["outcome"] for p in posts}, {"completion"})
        # Two requests a run of weather and trip, three of tour: the calls, then the answer.
        self.assertEqual(len(posts), (2 + 2 + 3) * RUNS)
        self.assertEqual(sorted(p["step"] for p in posts), [0] * 9 + [1] * 9 + [2] * 3)
        for item in posts:
            self.assertIsNotNone(item["tools"], "every step offers the tools")

        def results(prompt, step):
            return sorted(r["content"] for p in posts
                          if p["prompt"] == prompt and p["step"] == step for r in p["tool_results"])
        self.assertEqual(results(WEATHER, 1), [as_sent(dialect, "18C, sunny")] * RUNS)
        self.assertEqual(results(TRIP, 1), sorted(
            ['{"hits":["Colosseum"]}'] * 2 + [NO_RESULT % "search"]))
        # The tour's last step carries both steps' results.
        self.assertEqual(results(TOUR, 2), sorted(
            ['{"hits":["Pantheon"]}'] * 3 + [as_sent(dialect, "21C, clear")] * 2
            + [NO_RESULT % "get_weather"]))
        # What the database holds: every step's calls of each run, ids left out.
        weather, trip, tour = self.recorded(db)
        self.assertEqual(weather, [calls_json(("get_weather", {"city": "Paris"}))] * RUNS)
        self.assertEqual(trip, [calls_json(("search", {"q": "Milan"}))]
                         + [calls_json(("search", {"q": "Rome"}))] * 2)
        rome = [("search", {"q": "Rome"})]
        self.assertEqual(tour, [calls_json(*rome, ("get_weather", {"city": "Florence"}))]
                         + [calls_json(*rome, ("get_weather", {"city": "Rome"}))] * 2)
        prompts = {p["id"]: p for p in report["prompts"]}
        self.assertEqual(prompts["weather"]["status"], "stable")
        self.assertEqual(prompts["weather"]["unique_completions"], 1)
        self.assertIsNone(prompts["weather"]["tool_call_divergence"])
        self.assertEqual((prompts["trip"]["status"], prompts["trip"]["unique_completions"]),
                         ("unstable", 2))
        self.assertEqual(prompts["trip"]["tool_call_divergence"],
                         {"step": 0, "field": "arguments.q"})
        self.assertEqual((prompts["tour"]["status"], prompts["tour"]["unique_completions"]),
                         ("unstable", 2))
        self.assertEqual(prompts["tour"]["tool_call_divergence"],
                         {"step": 1, "field": "arguments.city"})
        rate = report["summary"]["unstable_rate"]
        self.assertEqual(rate["judged"], 3)
        self.assertAlmostEqual(rate["rate"], 2 / 3, places=6)

    def test_tools_to_a_dialect_without_them(self):
        endpoint = self.start_endpoint(script(), "tgi", name="tgi")
        suite_path = self.write_suite("tgi.jsonl", suite())
        run = self.run_llmrepro(["audit", "--suite", suite_path, "--endpoint", endpoint.url,
                                 "--api", "tgi", "--model", "agent-model",
                                 "--db", self.path("tgi.db")])
        self.assertEqual(run.returncode, 2, run.describe())
        self.assertIn("tgi.jsonl:1: prompt 'weather' has tools, which --api tgi does not send: "
                      "tools and agent chains go to --api openai-chat, ollama, openai-responses, "
                      "gemini or anthropic endpoints", run.stderr)
        self.assertEqual(endpoint.posts(preflight=True), [])


if __name__ == "__main__":
    h.main()
