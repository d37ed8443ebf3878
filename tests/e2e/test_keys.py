#!/usr/bin/python3
"""Scenario: a key goes only where it belongs, and no secret comes back out. With OPENAI_API_KEY
and GEMINI_API_KEY in the environment and no flag naming them, no loopback --endpoint, --compare
endpoint or --embeddings host receives a key (a conventional variable is read only for its
provider's own https host); a plain-http provider host gets none either. Each key reaches exactly
the endpoint whose flag names its variable (--api-key-env, --compare-api-key-env in --compare
order, --embeddings-api-key-env), also on --resume, and a named variable that is unset or empty
is a usage error before any request. An explicit Authorization (or x-goog-api-key) --header
replaces the key: one such header goes out, never two. A key sent over plain http to a host that
is not loopback gets one warning line. A server echoing the request's headers in a 500, a 401 and
a completion (split across two tokens) leaves no key, --header value or URL password in the
database files, any report, stdout or stderr: requests.error holds "[redacted]" in their place;
nor does one echoing them in its 401s to the --api auto detection GETs.
--dry-run shows a URL's password and api_key parameter as "[redacted]"."""

import glob
import json
import urllib.parse

import e2e_harness as h
import standard_audit as std

OPENAI_KEY = "sk-openai-SECRET111"
GEMINI_KEY = "AIza-gemini-SECRET222"
PRIMARY_KEY = "sk-primary/SECRET+333"
COMPARE_KEY = "sk-compare-SECRET444"
EMBED_KEY = "sk-embed-SECRET555"
HEADER_TOKEN = "tok-header-SECRET666"
PASSWORD = "pw-SECRET777"
QUERY_KEY = "qk-SECRET888"
PROVIDER_ENV = {"OPENAI_API_KEY": OPENAI_KEY, "GEMINI_API_KEY": GEMINI_KEY}
KEY_HEADERS = ("authorization", "x-goog-api-key")


def forms(secret):
    """The secret and the encodings a server echo or a report could give it."""
    return {secret, json.dumps(secret)[1:-1], json.dumps(secret)[1:-1].replace("/", "\\/"),
            urllib.parse.quote(secret, safe="")}


class Keys(h.E2ETestCase):
    def audit(self, tag, endpoint_args, *extra, env=None, prompts=2):
        suite = self.write_suite(f"{tag}.jsonl", std.suite()[:prompts])
        paths = self.report_paths(tag)
        run = self.run_llmrepro(["audit", "--suite", suite, *endpoint_args, "--api", "openai-chat",
                                 "--model", std.MODEL, "--runs", "2", "--concurrency", "1",
                                 "--retries", "0", "--db", paths["db"], *h.report_args(paths),
                                 *extra], env=env)
        return run, paths

    def key_headers(self, endpoint):
        """Each request's key headers as (name, value), lower-cased names."""
        log = endpoint.requests()
        self.assertGreater(len(log), 0, "the endpoint was asked")
        return [[(k.lower(), v) for k, v in item["headers"] if k.lower() in KEY_HEADERS]
                for item in log]

    def assert_keys(self, endpoint, expected, where):
        for sent in self.key_headers(endpoint):
            self.assertEqual(sent, expected, where)

    def assert_nowhere(self, run, paths, *secrets):
        files = glob.glob(paths["db"] + "*") + [paths[f] for f, _ in h.REPORT_FORMATS]
        self.assertTrue(any(f.endswith(".db") for f in files), "the database exists")
        for secret in secrets:
            for form in forms(secret):
                for path in files:
                    with open(path, "rb") as f:
                        self.assertNotIn(form.encode(), f.read(), f"{form} in {path}")
                self.assertNotIn(form, run.stdout, "stdout")
                self.assertNotIn(form, run.stderr, "stderr")

    def test_provider_variables_stay_with_their_hosts(self):
        primary = self.start_endpoint(std.script(), name="primary")
        compare = self.start_endpoint(std.script(), name="compare")
        script = std.script()
        script["embeddings"] = True
        embed = self.start_endpoint(script, name="embed")
        run, paths = self.audit("default", ["--endpoint", primary.url, "--compare", compare.url,
                                            "--embeddings", embed.url], env=PROVIDER_ENV)
        self.assertIn(run.returncode, (0, 1), run.describe())
        for name, endpoint in (("primary", primary), ("compare", compare), ("embed", embed)):
            self.assert_keys(endpoint, [], name)
        # One embeddings request per prompt.
        self.assertEqual([i["outcome"] for i in embed.requests()], ["embeddings"] * 2)
        self.assertNotIn("warning: the API key", run.stderr)
        self.assert_nowhere(run, paths, OPENAI_KEY, GEMINI_KEY)

    def test_plain_http_provider_host(self):
        # api.openai.com over plain http (reached through http_proxy): the default rule sends
        # nothing; naming the variable sends it, with one warning naming the endpoint.
        endpoint = self.start_endpoint(std.script(), name="proxied")
        proxy = {"http_proxy": f"http://127.0.0.1:{endpoint.port}", **PROVIDER_ENV}
        run, _ = self.audit("http-default", ["--endpoint", "http://api.openai.com/v1"],
                            env=proxy)
        self.assert_exit(run, 0)
        self.assert_keys(endpoint, [], "default rule over http")
        self.assertNotIn("warning", run.stderr)
        before = len(endpoint.requests())
        run, paths = self.audit("http-named",
                                ["--endpoint", f"http://user:{PASSWORD}@api.openai.com/v1"],
                                "--api-key-env", "OPENAI_API_KEY", env=proxy)
        self.assert_exit(run, 0)
        for sent in self.key_headers(endpoint)[before:]:
            self.assertEqual(sent, [("authorization", f"Bearer {OPENAI_KEY}")])
        warnings = [line for line in run.stderr.splitlines() if "over plain http" in line]
        self.assertEqual(warnings, ["llmrepro: warning: the API key goes to "
                                    "http://api.openai.com/v1 over plain http, readable by anyone "
                                    "on the network; use https or a loopback address"])
        self.assert_nowhere(run, paths, OPENAI_KEY, PASSWORD)

    def test_named_variables_reach_their_endpoints_only(self):
        primary = self.start_endpoint(std.script(), name="primary")
        compare = self.start_endpoint(std.script(), name="compare")
        script = std.script()
        script["embeddings"] = True
        embed = self.start_endpoint(script, name="embed")
        env = {"PRIMARY_KEY": PRIMARY_KEY, "COMPARE_KEY": COMPARE_KEY, "EMBED_KEY": EMBED_KEY,
               **PROVIDER_ENV}
        run, paths = self.audit("named", ["--endpoint", primary.url, "--compare", compare.url,
                                          "--embeddings", embed.url],
                                "--api-key-env", "PRIMARY_KEY", "--compare-api-key-env",
                                "COMPARE_KEY", "--embeddings-api-key-env", "EMBED_KEY", env=env)
        self.assertIn(run.returncode, (0, 1), run.describe())
        self.assert_keys(primary, [("authorization", f"Bearer {PRIMARY_KEY}")], "primary")
        self.assert_keys(compare, [("authorization", f"Bearer {COMPARE_KEY}")], "compare")
        self.assert_keys(embed, [("authorization", f"Bearer {EMBED_KEY}")], "embeddings")
        self.assertNotIn("warning: the API key", run.stderr)  # loopback: no warning
        self.assert_nowhere(run, paths, PRIMARY_KEY, COMPARE_KEY, EMBED_KEY, OPENAI_KEY)

    def test_resume_chooses_the_keys_again(self):
        endpoint = self.start_endpoint(std.script(), name="resumed")
        env = {"PRIMARY_KEY": PRIMARY_KEY, **PROVIDER_ENV}
        run, paths = self.audit("resume", ["--endpoint", endpoint.url], "--api-key-env",
                                "PRIMARY_KEY", "--max-requests", "2", env=env)
        # Completions only: each run also GETs the server's description (/version, /props).
        self.assertEqual(len(endpoint.posts()), 2, run.describe())
        resumed = self.run_llmrepro(["audit", "--resume", "--db", paths["db"], "--api-key-env",
                                     "PRIMARY_KEY", "--max-requests", "10"], env=env)
        self.assert_exit(resumed, 0)
        self.assertEqual(len(endpoint.posts()), 4)
        self.assert_keys(endpoint, [("authorization", f"Bearer {PRIMARY_KEY}")], "resumed")
        for stream in (run.stdout, run.stderr, resumed.stdout, resumed.stderr):
            self.assertNotIn(PRIMARY_KEY, stream)

    def test_named_variable_unset_or_empty_is_a_usage_error(self):
        endpoint = self.start_endpoint(std.script(), name="unsent")
        cases = [
            (["--endpoint", endpoint.url, "--api-key-env", "LLMREPRO_NO_SUCH_KEY"], {},
             "--api-key-env LLMREPRO_NO_SUCH_KEY: the environment variable is not set"),
            (["--endpoint", endpoint.url, "--compare", endpoint.url, "--compare-api-key-env",
              "EMPTY_KEY"], {"EMPTY_KEY": ""},
             "--compare-api-key-env EMPTY_KEY: the environment variable is empty"),
            (["--endpoint", endpoint.url, "--embeddings", endpoint.url,
              "--embeddings-api-key-env", "EMPTY_KEY"], {"EMPTY_KEY": ""},
             "--embeddings-api-key-env EMPTY_KEY: the environment variable is empty"),
            (["--endpoint", endpoint.url, "--compare-api-key-env", "PRIMARY_KEY"],
             {"PRIMARY_KEY": PRIMARY_KEY},
             "--compare-api-key-env is given 1 times for 0 compared endpoints"),
        ]
        for i, (args, env, message) in enumerate(cases):
            with self.subTest(message=message):
                run, _ = self.audit(f"unset{i}", args, env=env)
                self.assert_exit(run, 2)
                self.assertIn(message, run.stderr)
        self.assertEqual(endpoint.requests(), [], "nothing was sent")

    def test_explicit_header_replaces_the_key(self):
        for name in ("Authorization", "authorization"):
            with self.subTest(header=name):
                endpoint = self.start_endpoint(std.script(), name=f"header-{name}")
                run, paths = self.audit(f"header-{name}", ["--endpoint", endpoint.url],
                                        "--api-key-env", "PRIMARY_KEY", "--header",
                                        f"{name}: Bearer {HEADER_TOKEN}",
                                        env={"PRIMARY_KEY": PRIMARY_KEY})
                self.assert_exit(run, 0)
                self.assert_keys(endpoint, [("authorization", f"Bearer {HEADER_TOKEN}")], name)
                self.assert_nowhere(run, paths, HEADER_TOKEN, PRIMARY_KEY)
        endpoint = self.start_endpoint(std.script(), "gemini", name="gemini-header")
        suite = self.write_suite("gemini.jsonl", std.suite()[:1])
        run = self.run_llmrepro(["audit", "--suite", suite, "--endpoint", endpoint.url, "--api",
                                 "gemini", "--model", std.MODEL, "--runs", "2", "--concurrency",
                                 "1", "--db", self.path("gemini.db"), "--api-key-env",
                                 "GEMINI_API_KEY", "--header", f"X-Goog-Api-Key: {HEADER_TOKEN}"],
                                env=PROVIDER_ENV)
        self.assert_exit(run, 0)
        self.assert_keys(endpoint, [("x-goog-api-key", HEADER_TOKEN)], "gemini")

    def test_echoed_secrets_are_redacted(self):
        script = std.script()
        first, second = std.suite()[:2]
        script["prompts"] = {
            first["prompt"]: [{"fault": "500", "echo_headers": True},
                              {"fault": "401", "echo_headers": True}],
            second["prompt"]: [{"tokens": script["prompts"][second["prompt"]][0]["tokens"][:2],
                                "echo_headers": True}],
        }
        endpoint = self.start_endpoint(script, name="echo")
        url = (f"http://user:{PASSWORD}@127.0.0.1:{endpoint.port}"
               f"?api_key={QUERY_KEY}&api-version=1")
        run, paths = self.audit("echo", ["--endpoint", url], "--api-key-env", "PRIMARY_KEY",
                                "--header", f"X-Upstream-Token: {HEADER_TOKEN}",
                                env={"PRIMARY_KEY": PRIMARY_KEY})
        self.assertIn(run.returncode, (1, 3), run.describe())
        # The server did echo them: the key, the header and the basic credentials.
        self.assert_keys(endpoint, [("authorization", f"Bearer {PRIMARY_KEY}")], "echo")
        sent = endpoint.requests()[0]["headers"]
        self.assertIn(["X-Upstream-Token", HEADER_TOKEN], sent)
        conn = h.open_db(paths["db"])
        try:
            errors = [row[0] for row in conn.execute(
                "SELECT error FROM requests WHERE error != '' ORDER BY error")]
        finally:
            conn.close()
        self.assertEqual(len(errors), 2, errors)  # the first prompt's two runs: 500, then 401
        for error in errors:
            self.assertIn("Authorization: Bearer [redacted]", error)
            self.assertIn("X-Upstream-Token: [redacted]", error)
        report = self.load_report(paths["json"])
        echoed = [c["text"] for p in report["prompts"] for c in p["completions"]]
        self.assertTrue(echoed, "the echoing prompt has completions")
        for text in echoed:
            self.assertIn("Authorization: Bearer [redacted]", text)
            self.assertIn("X-Upstream-Token: [redacted]", text)
        self.assert_nowhere(run, paths, PRIMARY_KEY, HEADER_TOKEN, PASSWORD, QUERY_KEY)

    def test_echoed_secrets_in_detection_errors_are_redacted(self):
        script = std.script()
        script["echo_headers_get"] = True
        endpoint = self.start_endpoint(script, name="detect")
        suite = self.write_suite("detect.jsonl", std.suite()[:1])
        url = f"http://user:{PASSWORD}@127.0.0.1:{endpoint.port}"
        run = self.run_llmrepro(["audit", "--suite", suite, "--endpoint", url, "--api", "auto",
                                 "--db", self.path("detect.db"), "--api-key-env", "PRIMARY_KEY",
                                 "--header", f"X-Upstream-Token: {HEADER_TOKEN}"],
                                env={"PRIMARY_KEY": PRIMARY_KEY})
        self.assert_exit(run, 3)
        self.assertIn("refused the credentials", run.stderr)
        self.assertTrue(all(i["method"] == "GET" for i in endpoint.requests()))
        for secret in (PRIMARY_KEY, HEADER_TOKEN, PASSWORD):
            for form in forms(secret):
                self.assertNotIn(form, run.stdout + run.stderr)

    def test_dry_run_redacts_url_credentials(self):
        suite = self.write_suite("dry.jsonl", std.suite()[:1])
        url = f"http://user:{PASSWORD}@127.0.0.1:{h.free_port()}/v1?api_key={QUERY_KEY}&n=1"
        run = self.run_llmrepro(["audit", "--suite", suite, "--endpoint", url, "--api",
                                 "openai-chat", "--model", std.MODEL, "--dry-run"])
        self.assert_exit(run, 0)
        self.assertIn("?api_key=[redacted]&n=1", run.stdout)
        self.assertIn("http://[redacted]@127.0.0.1", run.stdout)
        for secret in (PASSWORD, QUERY_KEY):
            self.assertNotIn(secret, run.stdout + run.stderr)


if __name__ == "__main__":
    h.main()
