#!/usr/bin/python3
"""Scenario: --api auto probes each kind of server (GET /v1/models, /health, /api/tags, /info,
/get_model_info) before any completion, picks its dialect and says which, finds the model
when --model is not given, and audits with it. vLLM and plain OpenAI servers are spoken to
as openai-chat; both llama.cpp shapes as llamacpp."""

import e2e_harness as h
import standard_audit as std

EXPECTED = {
    "openai-chat": "openai-chat",
    "openai-completions": "openai-chat",
    "vllm": "openai-chat",
    "llamacpp": "llamacpp",
    "llamacpp-old": "llamacpp",
    "sglang": "sglang",
    "ollama": "ollama",
    "tgi": "tgi",
}


class ApiAuto(h.E2ETestCase):
    def test_detects_each_dialect(self):
        suite = self.write_suite("suite.jsonl", [{"id": "capital",
                                                  "prompt": "Name the capital of France."}])
        for server, dialect in EXPECTED.items():
            with self.subTest(server=server):
                endpoint = self.start_endpoint(std.script(), server, name=server)
                report_path = self.path(f"{server}.json")
                run = self.run_llmrepro(["audit", "--suite", suite, "--endpoint", endpoint.url,
                                         "--api", "auto", "--runs", "2", "--concurrency", "1",
                                         "--db", self.path(f"{server}.db"),
                                         "--json", report_path])
                self.assert_exit(run, 0)
                report = self.load_report(report_path)
                self.assertEqual(report["endpoints"][0]["dialect"], dialect, run.describe())
                self.assertEqual(report["endpoints"][0]["model"], std.MODEL)
                self.assertIn(dialect, run.stdout + run.stderr, "the tool says which dialect")
                self.assertEqual((report["summary"]["requests"], report["summary"]["failed_requests"],
                                  report["prompts"][0]["unique_completions"]), (2, 0, 1))
                log = endpoint.requests()
                methods = [item["method"] for item in log]
                self.assertIn("GET", methods)
                self.assertLess(methods.index("GET"), methods.index("POST"),
                                "detection probes come before the first completion")
                self.assertEqual(methods.count("POST"), 2)
                self.assertEqual({item["outcome"] for item in endpoint.posts()}, {"completion"},
                                 "every completion went to a path the dialect serves")


if __name__ == "__main__":
    h.main()
