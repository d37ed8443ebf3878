#!/usr/bin/python3
"""Scenario: structured output. A suite's response_format (a JSON schema, and json_object)
reaches the endpoint untouched in every request; the endpoint answers with JSON texts that
differ only in whitespace, so raw agreement fails (TARr 1/2: only the byte-stable prompt agrees)
while parsed agreement holds (TARa 1: the extracted $.answer is the same in every run), and the
json_path checker passes every run."""

import json

import e2e_harness as h

SCHEMA = {"type": "json_schema", "json_schema": {"name": "answer", "strict": True, "schema": {
    "type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}}}
OBJECT = {"type": "json_object"}
RUNS = 3


def tokens(*pieces):
    return [[p, -0.1, [[p, -0.1], [" ", -2.3]]] for p in pieces]


def script():
    spaced = [{"tokens": tokens('{"answer"', ': ', '"Tokyo"', '}')},
              {"tokens": tokens('{"answer"', ':', '"Tokyo"', '}')},
              {"tokens": tokens('{ "answer"', ' : ', '"Tokyo"', ' }')}]
    return {"model": "scripted-model", "prompts": {
        "Capital of Japan as JSON.": spaced,
        "Capital of Italy as JSON.": [{"tokens": tokens('{"answer"', ': ', '"Rome"', '}')}]}}


class ResponseFormat(h.E2ETestCase):
    def test_parsed_agreement_beside_raw(self):
        endpoint = self.start_endpoint(script())
        suite = self.write_suite("suite.jsonl", [
            {"id": "japan", "messages": [{"role": "user", "content": "Capital of Japan as JSON."}],
             "response_format": SCHEMA,
             "expect": {"type": "json_path", "path": "$.answer", "value": "Tokyo"},
             "extract": {"type": "json_path", "pattern": "$.answer"}},
            {"id": "italy", "messages": [{"role": "user", "content": "Capital of Italy as JSON."}],
             "response_format": OBJECT,
             "extract": {"type": "json_path", "pattern": "$.answer"}}])
        report_path = self.path("report.json")
        run = self.run_llmrepro(["audit", "--suite", suite, "--endpoint", endpoint.url, "--api",
                                 "openai-chat", "--runs", str(RUNS), "--concurrency", "1",
                                 "--db", self.path("audit.db"), "--json", report_path])
        self.assert_exit(run, 0)

        posts = endpoint.posts()
        self.assertEqual(len(posts), 2 * RUNS)
        for post in posts:
            body = json.loads(post["body"])
            question = body["messages"][-1]["content"]
            want = SCHEMA if "Japan" in question else OBJECT
            self.assertEqual(body["response_format"], want, post["body"])

        report = self.load_report(report_path)
        self.assertEqual(report["summary"]["tarr"], 0.5)
        self.assertEqual(report["summary"]["tara"], 1.0)
        prompts = {p["id"]: p for p in report["prompts"]}
        japan = prompts["japan"]
        self.assertEqual(japan["unique_completions"], 3)
        self.assertTrue(japan["unstable"])
        self.assertEqual(japan["answers"], [{"answer": "Tokyo", "count": RUNS}])
        self.assertEqual(japan["answer_failures"], 0)
        self.assertTrue(japan["answers_agree"])
        self.assertEqual((japan["passes"], japan["checked_runs"]), (RUNS, RUNS))
        italy = prompts["italy"]
        self.assertEqual(italy["unique_completions"], 1)
        self.assertEqual(italy["answers"], [{"answer": "Rome", "count": RUNS}])
        self.assertIsNone(italy["passes"])


if __name__ == "__main__":
    h.main()
