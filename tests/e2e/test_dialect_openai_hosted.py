#!/usr/bin/python3
"""Scenario: the chat request forms of hosted OpenAI-compatible APIs, chosen by the host of the
base URL and reached here through http_proxy (the scripted endpoint serves absolute-form
requests by their path), so the tool sees the provider's real host name:
- Together (http://api.together.xyz/v1): `logprobs` as the integer 2 with no top_logprobs, and
  Together's answers (parallel arrays; stream chunks with a number `logprobs` and a choice-level
  top_logprobs map): the standard audit's report is exact, top-2 gaps included.
- Together's API shape on any other host (a gateway on 127.0.0.1) with --logprobs-form together:
  the same integer form and the same exact report; the form is stored with the audit, so a
  --resume giving another is refused before any request.
- OpenAI (http://api.openai.com/v1) with a model that answers 400 to `max_tokens`: every request
  carries max_completion_tokens instead, and the standard report is exact.
- OpenAI reasoning models that return no logprobs, by omitting them or refusing the parameter:
  named on stderr before the plan runs, and the audit compares texts."""

import json

import e2e_harness as h
import standard_audit as std


class HostedChatForms(h.E2ETestCase):
    def audit_via_proxy(self, script, base_url, stream, tag):
        endpoint = self.start_endpoint(script, "openai-chat", name=tag)
        suite_path = self.write_suite(f"{tag}-suite.jsonl", std.suite())
        db, report_path = self.path(f"{tag}.db"), self.path(f"{tag}-report.json")
        run = self.run_llmrepro(
            std.audit_args(suite_path, base_url, "openai-chat", db, report_path, stream),
            env={"http_proxy": f"http://127.0.0.1:{endpoint.port}"})
        return endpoint, run, report_path

    def check_bodies(self, posts, host, expected):
        for item in posts:
            body = json.loads(item["body"])
            where = item["body"][:300]
            self.assertEqual(dict(item["headers"]).get("Host"), host, where)
            self.assertEqual(item["path"], "/v1/chat/completions", where)
            for key, value in expected.items():
                if value is None:
                    self.assertNotIn(key, body, where)
                else:
                    self.assertEqual(body.get(key), value, where)

    def test_together_integer_logprobs(self):
        for stream in (False, True):
            with self.subTest(stream=stream):
                tag = f"together-{stream}"
                script = dict(std.script(), together=True)
                endpoint, run, report_path = self.audit_via_proxy(
                    script, "http://api.together.xyz/v1", stream, tag)
                self.assert_exit(run, 0)
                report = self.load_report(report_path)
                std.check_report(self, report, "openai-chat")
                posts = endpoint.posts()
                self.assertEqual(len(posts), 4 * std.RUNS * len(std.LEVELS))
                self.check_bodies(posts, "api.together.xyz",
                                  {"logprobs": 2, "top_logprobs": None, "max_tokens": 128,
                                   "max_completion_tokens": None, "seed": std.SEED})

    def test_together_shape_on_any_host(self):
        script = dict(std.script(), together=True)
        endpoint = self.start_endpoint(script, "openai-chat", name="gateway")
        suite_path = self.write_suite("gateway-suite.jsonl", std.suite())
        db, report_path = self.path("gateway.db"), self.path("gateway-report.json")
        args = std.audit_args(suite_path, endpoint.url, "openai-chat", db, report_path, False)
        run = self.run_llmrepro(args + ["--logprobs-form", "together"])
        self.assert_exit(run, 0)
        std.check_report(self, self.load_report(report_path), "openai-chat")
        posts = endpoint.posts()
        self.assertEqual(len(posts), 4 * std.RUNS * len(std.LEVELS))
        self.check_bodies(posts, f"127.0.0.1:{endpoint.port}",
                          {"logprobs": 2, "top_logprobs": None, "max_tokens": 128,
                           "max_completion_tokens": None, "seed": std.SEED})
        resumed = self.run_llmrepro(["audit", "--resume", "--db", db,
                                     "--logprobs-form", "openai"])
        self.assertEqual(resumed.returncode, 2, resumed.describe())
        self.assertIn("--logprobs-form together (stored) vs openai (given)", resumed.stderr)
        self.assertEqual(len(endpoint.posts()), len(posts))
        # Only openai-chat requests carry the form: on another dialect it is refused up front.
        other = self.run_llmrepro(["audit", "--suite", suite_path, "--endpoint", endpoint.url,
                                   "--api", "ollama", "--logprobs-form", "together",
                                   "--db", self.path("other.db")])
        self.assertEqual(other.returncode, 2, other.describe())
        self.assertIn("--logprobs-form applies to --api openai-chat (or auto), not --api ollama",
                      other.stderr)
        self.assertEqual(len(endpoint.posts()), len(posts))

    def test_openai_max_completion_tokens(self):
        script = dict(std.script(), max_completion_tokens=True)
        endpoint, run, report_path = self.audit_via_proxy(
            script, "http://api.openai.com/v1", False, "openai-current")
        self.assert_exit(run, 0)
        std.check_report(self, self.load_report(report_path), "openai-chat")
        posts = endpoint.posts()
        self.assertEqual([p["outcome"] for p in posts].count("bad_request"), 0)
        # The plan, beside the capability preflight's two.
        self.assertEqual(len(posts), 4 * std.RUNS * len(std.LEVELS))
        self.assertEqual(len(endpoint.preflight_posts()), 2)
        self.check_bodies(posts, "api.openai.com",
                          {"max_completion_tokens": 128, "max_tokens": None, "logprobs": True,
                           "top_logprobs": 2})
        self.assertNotIn("returns no logprobs", run.stderr)

    def test_reasoning_model_without_logprobs(self):
        for mode in ("omit", "reject"):
            with self.subTest(mode=mode):
                script = dict(std.script(), max_completion_tokens=True, no_logprobs_model=mode)
                endpoint, run, report_path = self.audit_via_proxy(
                    script, "http://api.openai.com/v1", False, f"reasoning-{mode}")
                reason = ("it answered without `logprobs`" if mode == "omit" else
                          "it rejects the `logprobs` parameter (HTTP 400: Unsupported parameter: "
                          "'logprobs' is not supported with this model.)")
                self.assertIn(f"llmrepro: model 'scripted-model' at http://api.openai.com/v1 "
                              f"returns no logprobs: {reason}; its completions are compared by "
                              f"text alone, with no top-2 gap", run.stderr)
                # Named before the plan runs.
                self.assertLess(run.stderr.index("returns no logprobs"),
                                run.stderr.index("llmrepro: auditing"))
                posts = endpoint.posts()
                self.assertEqual(len(posts), 4 * std.RUNS * len(std.LEVELS))
                plan = posts
                self.assertEqual({p["outcome"] for p in plan}, {"completion"})
                if mode == "reject":
                    self.assertEqual(endpoint.preflight_posts()[0]["outcome"], "bad_request")
                    self.check_bodies(plan, "api.openai.com",
                                      {"logprobs": None, "top_logprobs": None,
                                       "max_completion_tokens": 128})
                report = self.load_report(report_path)
                by_id = {p["id"]: p for p in report["prompts"]}
                self.assertEqual({pid: p["has_logprobs"] for pid, p in by_id.items()},
                                 {"capital": False, "feynman": False, "primes": False,
                                  "hello": False})
                self.assertEqual({pid: p["unique_completions"] for pid, p in by_id.items()},
                                 {"capital": 1, "feynman": 2, "primes": 2, "hello": 1})
                self.assert_exit(run, 0)


if __name__ == "__main__":
    h.main()
