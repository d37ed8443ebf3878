#!/usr/bin/python3
"""Scenario: --api auto probes each kind of server (GET /v1/models, /health, /api/tags, /info,
/get_model_info) before any completion, picks its dialect and says which, finds the model
when --model is not given, and audits with it. vLLM and plain OpenAI servers are spoken to
as openai-chat; both llama.cpp shapes as llamacpp.

Then the cases the strongest-evidence rule exists for: llama.cpp and SGLang that also answer
GET /api/tags are not taken for Ollama, and the evidence is printed; a hosted base URL with a
path beyond /v1 (DeepInfra's .../v1/openai) is the base of every request; llama.cpp in router
mode gets `model` in its native /completion requests; a server whose chat route is absent (404
on GET) and whose /v1/responses answers (405 on GET) is audited through the Responses API; the
Gemini API is told by its /v1beta/models list (the key in x-goog-api-key), and its first model
that supports generateContent is audited."""

import glob
import json

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
    "gemini": "gemini",
}
GEMINI_KEY = "AIza-auto-SECRET654"


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
                log = [item for item in endpoint.requests() if not item.get("preflight")]
                methods = [item["method"] for item in log]
                self.assertIn("GET", methods)
                self.assertLess(methods.index("GET"), methods.index("POST"),
                                "detection probes come before the first completion")
                self.assertEqual(methods.count("POST"), 2)
                self.assertEqual({item["outcome"] for item in endpoint.posts()}, {"completion"},
                                 "every completion went to a path the dialect serves")


    def audit_auto(self, endpoint, name, prompts, extra=(), env=None):
        suite = self.write_suite(f"{name}.jsonl", prompts)
        report_path = self.path(f"{name}.json")
        run = self.run_llmrepro(["audit", "--suite", suite, "--endpoint", endpoint, "--api", "auto",
                                 "--runs", "2", "--concurrency", "1",
                                 "--db", self.path(f"{name}.db"), "--json", report_path,
                                 *extra], env=env)
        self.assert_exit(run, 0)
        return run, self.load_report(report_path)

    def test_api_tags_never_outweighs_the_server_naming_itself(self):
        # One text prompt and one chat prompt: misdetected as Ollama, the text one went to
        # /api/generate and the chat one to /api/chat, neither served by these two.
        prompts = [{"id": "capital", "prompt": "Name the capital of France."},
                   {"id": "hello", "messages": [{"role": "user", "content": "Say hello."}]}]
        evidence = {
            "llamacpp": "--api auto chose llamacpp (llamacpp: /v1/models lists owned_by "
                        "\"llamacpp\" (llama.cpp server); /api/tags also answers, but those "
                        "Ollama-compatible routes are not used)",
            "sglang": "--api auto chose sglang (sglang: /v1/models lists owned_by \"sglang\" "
                      "(SGLang); /api/tags also answers, but those Ollama-compatible routes are "
                      "not used)",
        }
        native = {"llamacpp": "/completion", "sglang": "/generate"}
        for dialect, line in evidence.items():
            with self.subTest(dialect=dialect):
                script = dict(std.script(), api_tags=True)
                endpoint = self.start_endpoint(script, dialect, name=f"tags-{dialect}")
                run, report = self.audit_auto(endpoint.url, f"tags-{dialect}", prompts)
                self.assertIn(line, run.stderr, run.describe())
                self.assertEqual(report["endpoints"][0]["dialect"], dialect)
                gets = {item["path"] for item in endpoint.requests("GET")}
                self.assertIn("/api/tags", gets, "the endpoint did answer /api/tags")
                self.assertIn("/api/version", gets, "Ollama's own route was asked for")
                self.assertEqual([item["path"] for item in endpoint.posts()],
                                 [native[dialect]] * 4)
                self.assertEqual({item["outcome"] for item in endpoint.posts()}, {"completion"})
                self.assertEqual((report["summary"]["requests"],
                                  report["summary"]["failed_requests"]), (4, 0))

    def test_chat_suites_go_through_the_chat_route(self):
        # A suite of chat prompts on a server found by its native completion route goes to its
        # /v1/chat/completions (the model's chat template), never flattened silently; sent to
        # the native route on request, every output names the flattening.
        prompts = [{"id": "hello", "messages": [{"role": "system", "content": "Be brief."},
                                                {"role": "user", "content": "Say hello."}]},
                   {"id": "capital", "messages": [{"role": "user",
                                                   "content": "Name the capital of France."}]}]
        for dialect in ("llamacpp", "sglang", "tgi"):
            with self.subTest(dialect=dialect):
                endpoint = self.start_endpoint(std.script(), dialect, name=f"chat-{dialect}")
                run, report = self.audit_auto(endpoint.url, f"chat-{dialect}", prompts)
                self.assertIn(f"--api auto chose openai-chat ({dialect}: ", run.stderr)
                self.assertIn("the suite's 2 chat prompts go to its /v1/chat/completions route, "
                              f"through the model's chat template, not flattened onto {dialect}",
                              run.stderr)
                self.assertEqual(report["endpoints"][0]["dialect"], "openai-chat")
                self.assertEqual([item["path"] for item in endpoint.posts()],
                                 ["/v1/chat/completions"] * 4)
                self.assertEqual(report["warnings"], [])
                bodies = [json.loads(item["body"]) for item in endpoint.posts()]
                self.assertIn({"role": "system", "content": "Be brief."},
                              [m for b in bodies for m in b["messages"]])

        endpoint = self.start_endpoint(std.script(), "llamacpp", name="chat-flattened")
        suite = self.write_suite("flattened.jsonl", prompts)
        paths = self.report_paths("flattened")
        run = self.run_llmrepro(["audit", "--suite", suite, "--endpoint", endpoint.url,
                                 "--api", "llamacpp", "--runs", "2", "--concurrency", "1",
                                 "--db", paths["db"], *h.report_args(paths)])
        self.assert_exit(run, 0)
        report = self.assert_verdict_agrees(run, paths)
        self.assertEqual([item["path"] for item in endpoint.posts()], ["/completion"] * 4)
        line = ("the endpoint (llamacpp) takes a text prompt: the suite's 2 chat prompts were "
                "sent flattened to 'role: content' lines ending in 'assistant:', not through the "
                "model's chat template, so their tokens are not those of chat traffic (audit "
                "with --api openai-chat to use the server's chat route)")
        self.assertEqual(report["warnings"], [line])
        self.assert_report_reproduces(paths, report)

    def test_ollama_is_still_ollama(self):
        endpoint = self.start_endpoint(std.script(), "ollama", name="ollama-evidence")
        run, report = self.audit_auto(endpoint.url, "ollama-evidence",
                                      [{"id": "capital", "prompt": "Name the capital of France."}])
        self.assertIn("--api auto chose ollama (ollama: /api/version and /api/tags answer "
                      "(Ollama))", run.stderr, run.describe())
        self.assertEqual([item["path"] for item in endpoint.posts()], ["/api/generate"] * 2)

    def test_base_url_with_a_path_beyond_v1(self):
        script = dict(std.script(), base_path="/v1/openai")
        endpoint = self.start_endpoint(script, "openai-chat", name="deepinfra")
        base = endpoint.url + "/v1/openai"
        prompts = [{"id": "hello", "messages": [{"role": "user", "content": "Say hello."}]},
                   {"id": "capital", "prompt": "Name the capital of France."}]
        run, report = self.audit_auto(base, "deepinfra", prompts)
        self.assertIn("--api auto chose openai-chat (openai-chat: /v1/models answers "
                      "(OpenAI-compatible))", run.stderr, run.describe())
        self.assertEqual(report["endpoints"][0]["model"], std.MODEL, "found at <base>/models")
        self.assertEqual(report["endpoints"][0]["url"], base)
        self.assertIn("/v1/openai/models", [item["path"] for item in endpoint.requests("GET")])
        self.assertEqual([item["path"] for item in endpoint.posts()],
                         ["/v1/openai/chat/completions"] * 4)
        self.assertEqual({item["outcome"] for item in endpoint.posts()}, {"completion"})
        self.assertEqual((report["summary"]["requests"], report["summary"]["failed_requests"],
                          [p["unique_completions"] for p in report["prompts"]]), (4, 0, [1, 1]))
        # The same base with the path given twice is not what the user copied: it fails visibly.
        doubled = self.run_llmrepro(["audit", "--suite", self.path("deepinfra.jsonl"),
                                     "--endpoint", base + "/v1", "--api", "openai-chat",
                                     "--model", std.MODEL, "--runs", "1", "--retries", "0",
                                     "--db", self.path("doubled.db"),
                                     "--json", self.path("doubled.json")])
        self.assertNotEqual(doubled.returncode, 0, doubled.describe())
        self.assertEqual({(item["path"], item["outcome"]) for item in endpoint.posts()[4:]},
                         {("/v1/openai/v1/chat/completions", "not_found")})

    def test_llamacpp_router_mode_names_the_model(self):
        script = dict(std.script(), router=True)
        endpoint = self.start_endpoint(script, "llamacpp", name="router")
        run, report = self.audit_auto(endpoint.url, "router",
                                      [{"id": "capital", "prompt": "Name the capital of France."}])
        self.assertIn("/props says role \"router\": each request names its model", run.stderr,
                      run.describe())
        self.assertEqual(report["endpoints"][0]["model"], std.MODEL)
        posts = endpoint.posts()
        self.assertEqual([item["path"] for item in posts], ["/completion"] * 2)
        self.assertEqual([json.loads(item["body"])["model"] for item in posts], [std.MODEL] * 2)
        self.assertEqual({item["outcome"] for item in posts}, {"completion"})
        self.assertEqual((report["summary"]["requests"], report["summary"]["failed_requests"]),
                         (2, 0))
        # Told --api llamacpp --model, nothing detects the router: the model given is sent
        # anyway, so the scripted router (which refuses a body without model) answers.
        told = self.run_llmrepro(["audit", "--suite", self.path("router.jsonl"),
                                  "--endpoint", endpoint.url, "--api", "llamacpp",
                                  "--model", std.MODEL, "--runs", "2", "--concurrency", "1",
                                  "--retries", "0", "--db", self.path("told.db"),
                                  "--json", self.path("told.json")])
        self.assert_exit(told, 0)
        told_posts = endpoint.posts()[2:]
        self.assertEqual([item["path"] for item in told_posts], ["/completion"] * 2)
        self.assertEqual([json.loads(item["body"])["model"] for item in told_posts],
                         [std.MODEL] * 2)
        self.assertEqual({item["outcome"] for item in told_posts}, {"completion"})
        told_report = self.load_report(self.path("told.json"))
        self.assertEqual((told_report["summary"]["requests"],
                          told_report["summary"]["failed_requests"]), (2, 0))

    def test_responses_only_server(self):
        # A FastAPI-style server serving only the Responses API: GET on its POST route answers
        # 405, GET on the absent chat route 404. Misdetected as openai-chat, every completion
        # went to /v1/chat/completions and failed.
        prompts = [{"id": "hello", "messages": [{"role": "user", "content": "Say hello."}]},
                   {"id": "capital", "prompt": "Name the capital of France."}]
        script = dict(std.script(), method_not_allowed=True)
        endpoint = self.start_endpoint(script, "openai-responses", name="responses-only")
        run, report = self.audit_auto(endpoint.url, "responses-only", prompts)
        self.assertIn("--api auto chose openai-responses (openai-responses: /v1/models answers; "
                      "/v1/chat/completions answers 404 and /v1/responses 405: the Responses API "
                      "only)", run.stderr, run.describe())
        self.assertEqual((report["endpoints"][0]["dialect"], report["endpoints"][0]["model"]),
                         ("openai-responses", std.MODEL))
        gets = [item["path"] for item in endpoint.requests("GET")]
        self.assertIn("/v1/chat/completions", gets)
        self.assertIn("/v1/responses", gets)
        self.assertEqual([item["path"] for item in endpoint.posts()], ["/v1/responses"] * 4)
        self.assertEqual({item["outcome"] for item in endpoint.posts()}, {"completion"})
        self.assertEqual((report["summary"]["requests"], report["summary"]["failed_requests"],
                          [p["unique_completions"] for p in report["prompts"]]), (4, 0, [1, 1]))

        # Without a model list (a proxy in front of one API) the two routes still decide, and
        # the model must be named.
        script = dict(script, models_route=False)
        bare = self.start_endpoint(script, "openai-responses", name="responses-bare")
        run, report = self.audit_auto(bare.url, "responses-bare", prompts[1:],
                                      ["--model", std.MODEL])
        self.assertIn("--api auto chose openai-responses (openai-responses: no model list "
                      "(/v1/models: HTTP 404); /v1/chat/completions answers 404 and "
                      "/v1/responses 405: the Responses API only)", run.stderr, run.describe())
        self.assertEqual([item["path"] for item in bare.posts()], ["/v1/responses"] * 2)
        self.assertEqual((report["summary"]["requests"], report["summary"]["failed_requests"]),
                         (2, 0))

        # The same 405 on a chat server's own route is no reason to leave chat.
        chat = self.start_endpoint(dict(std.script(), method_not_allowed=True), "openai-chat",
                                   name="chat-405")
        run, report = self.audit_auto(chat.url, "chat-405", prompts[1:])
        self.assertIn("--api auto chose openai-chat (openai-chat: /v1/models answers "
                      "(OpenAI-compatible))", run.stderr, run.describe())
        self.assertEqual([item["path"] for item in chat.posts()], ["/v1/chat/completions"] * 2)

    def test_gemini_from_its_model_list(self):
        prompts = [{"id": "hello", "messages": [{"role": "user", "content": "Say hello."}]},
                   {"id": "capital", "prompt": "Name the capital of France."}]
        endpoint = self.start_endpoint(std.script(), "gemini", name="gemini-auto")
        run, report = self.audit_auto(endpoint.url, "gemini-auto", prompts,
                                      ["--api-key-env", "GEMINI_API_KEY"],
                                      env={"GEMINI_API_KEY": GEMINI_KEY})
        self.assertIn("--api auto chose gemini (gemini: /v1beta/models lists \"models/...\" with "
                      "supportedGenerationMethods (the Gemini API))", run.stderr, run.describe())
        # models/embedding-001 is listed first but cannot generate: the second is the one.
        self.assertIn(f"no --model given: auditing {std.MODEL} (the first model /v1beta/models "
                      "lists with generateContent)", run.stderr)
        self.assertEqual((report["endpoints"][0]["dialect"], report["endpoints"][0]["model"]),
                         ("gemini", std.MODEL))
        lists = [item for item in endpoint.requests("GET") if item["path"] == "/v1beta/models"]
        self.assertEqual(len(lists), 2, "one detection GET, one for the model")
        for item in lists:
            headers = [(name.lower(), value) for name, value in item["headers"]]
            self.assertIn(("x-goog-api-key", GEMINI_KEY), headers)
            self.assertNotIn("authorization", [name for name, _ in headers],
                             "Google refuses an API key sent as a bearer token")
        posts = endpoint.posts()
        self.assertEqual(sorted(item["path"] for item in posts),
                         [f"/v1beta/models/{std.MODEL}:generateContent"] * 4)
        self.assertEqual({item["outcome"] for item in posts}, {"completion"})
        self.assertEqual((report["summary"]["requests"], report["summary"]["failed_requests"],
                          [p["unique_completions"] for p in report["prompts"]]), (4, 0, [1, 1]))
        for path in [self.path("gemini-auto.json")] + [
                p for p in glob.glob(self.path("gemini-auto.db*"))]:
            with open(path, "rb") as f:
                self.assertNotIn(GEMINI_KEY.encode(), f.read(), path)
        self.assertNotIn(GEMINI_KEY, run.stdout + run.stderr)

        # Nothing that generates content is listed: a clear error, before any completion.
        script = dict(std.script(), gemini_generates=False)
        bare = self.start_endpoint(script, "gemini", name="gemini-embed-only")
        suite = self.write_suite("embed-only.jsonl", prompts[1:])
        failed = self.run_llmrepro(["audit", "--suite", suite, "--endpoint", bare.url,
                                    "--api", "auto", "--runs", "1",
                                    "--db", self.path("embed-only.db")])
        self.assert_exit(failed, 3)
        self.assertIn("no model that /v1beta/models lists supports generateContent "
                      f"(models/embedding-001, models/{std.MODEL}); pass --model", failed.stderr)
        self.assertEqual(bare.posts(), [])


if __name__ == "__main__":
    h.main()
