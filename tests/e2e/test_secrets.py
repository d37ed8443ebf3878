#!/usr/bin/python3
"""Scenario: credentials reach the endpoint and nothing else. OPENAI_API_KEY is not sent to a
loopback endpoint (a conventional variable goes only to its provider's own https host); the key
from the variable --api-key-env names is sent as a bearer token on every request, detection
probes included (the one GET of the Gemini API's model list carries it in x-goog-api-key); it, a
password in the endpoint URL and a secret --header value never appear in the database files, the
JSON report, stdout or stderr, also when the audit fails. With --api gemini the key goes in the
x-goog-api-key header instead, never in the URL. tests/e2e/test_keys.py holds the rest of the
key rule and the redaction of echoed secrets."""

import glob

import e2e_harness as h
import standard_audit as std

KEY = "sk-test-SECRET123"
CUSTOM_KEY = "sk-custom-SECRET456"
PASSWORD = "pw-SECRET789"
HEADER_SECRET = "hdr-SECRET000"
GEMINI_KEY = "AIza-gemini-SECRET321"


class Secrets(h.E2ETestCase):
    def audit(self, tag, url, *extra, env=None, api="auto"):
        suite = self.write_suite(f"{tag}.jsonl", std.suite()[:2])
        report = self.path(f"{tag}.json")
        run = self.run_llmrepro(["audit", "--suite", suite, "--endpoint", url, "--api", api,
                                 "--runs", "2", "--concurrency", "1,2",
                                 "--db", self.path(f"{tag}.db"), "--json", report, *extra],
                                env=env)
        return run, report

    def assert_nowhere(self, tag, run, *secrets):
        files = glob.glob(self.path(f"{tag}.db*")) + glob.glob(self.path(f"{tag}.json"))
        self.assertTrue(any(f.endswith(".db") for f in files), "the database exists")
        for secret in secrets:
            for path in files:
                with open(path, "rb") as f:
                    self.assertNotIn(secret.encode(), f.read(), f"{secret} in {path}")
            self.assertNotIn(secret, run.stdout, "stdout")
            self.assertNotIn(secret, run.stderr, "stderr")

    def bearer_on_every_request(self, endpoint, key):
        log = endpoint.requests()
        self.assertGreater(len(log), 0)
        for item in log:
            where = f"{item['method']} {item['path']}"
            auth = [v for k, v in item["headers"] if k.lower() == "authorization"]
            goog = [v for k, v in item["headers"] if k.lower() == "x-goog-api-key"]
            if item["path"] == "/v1beta/models":
                # --api auto's look for the Gemini API's model list: Google refuses an API key
                # sent as a bearer token, so this one GET carries it in x-goog-api-key alone.
                self.assertEqual((auth, goog), ([], [key]), where)
            else:
                self.assertEqual((auth, goog), ([f"Bearer {key}"], []), where)
        self.assertEqual(sum(item["path"] == "/v1beta/models" for item in log), 1,
                         "one detection GET of the Gemini list")

    def test_default_key_variable_stays_with_its_host(self):
        endpoint = self.start_endpoint(std.script(), name="default")
        run, report = self.audit("default", endpoint.url, env={"OPENAI_API_KEY": KEY})
        self.assert_exit(run, 0)
        self.load_report(report)
        log = endpoint.requests()
        self.assertGreater(len(log), 0)
        for item in log:
            sent = [k for k, _ in item["headers"] if k.lower() in ("authorization",
                                                                   "x-goog-api-key")]
            self.assertEqual(sent, [], f"{item['method']} {item['path']}")
        self.assert_nowhere("default", run, KEY)

    def test_custom_key_variable_and_header(self):
        endpoint = self.start_endpoint(std.script(), name="custom")
        run, report = self.audit("custom", endpoint.url, "--api-key-env", "LLMREPRO_TEST_KEY",
                                 "--header", f"X-Upstream-Token: {HEADER_SECRET}",
                                 env={"LLMREPRO_TEST_KEY": CUSTOM_KEY, "OPENAI_API_KEY": KEY})
        self.assert_exit(run, 0)
        self.load_report(report)
        self.bearer_on_every_request(endpoint, CUSTOM_KEY)
        for item in endpoint.requests():
            sent = [v for k, v in item["headers"] if k.lower() == "x-upstream-token"]
            self.assertEqual(sent, [HEADER_SECRET], f"{item['method']} {item['path']}")
        self.assert_nowhere("custom", run, CUSTOM_KEY, HEADER_SECRET, KEY)

    def test_a_key_echoed_into_the_servers_self_description_is_redacted(self):
        endpoint = self.start_endpoint(dict(std.script(), props_echo_auth=True), "llamacpp",
                                       name="props-echo")
        run, report = self.audit("props-echo", endpoint.url, "--api-key-env", "LLMREPRO_TEST_KEY",
                                 env={"LLMREPRO_TEST_KEY": CUSTOM_KEY}, api="llamacpp")
        self.assert_exit(run, 0)
        server = self.load_report(report)["endpoints"][0]["server"]
        self.assertEqual(server["version"], "b1-Bearer [redacted]", server)
        self.assert_nowhere("props-echo", run, CUSTOM_KEY)

    def test_url_credentials_stripped(self):
        endpoint = self.start_endpoint(std.script(), name="userinfo")
        url = f"http://user:{PASSWORD}@127.0.0.1:{endpoint.port}"
        run, report_path = self.audit("userinfo", url)
        self.assert_exit(run, 0)
        report = self.load_report(report_path)
        self.assertEqual(report["endpoints"][0]["url"], endpoint.url)
        self.assert_nowhere("userinfo", run, PASSWORD)

    def test_gemini_key_in_its_header_only(self):
        endpoint = self.start_endpoint(std.script(), "gemini", name="gemini")
        run, report = self.audit("gemini", endpoint.url, "--model", std.MODEL, "--api-key-env",
                                 "GEMINI_API_KEY", env={"GEMINI_API_KEY": GEMINI_KEY},
                                 api="gemini")
        self.assert_exit(run, 0)
        self.load_report(report)
        log = endpoint.requests()
        # Two prompts, two runs, two levels, and the capability preflight's two.
        self.assertEqual(len(log), 2 * 2 * 2 + 2)
        for item in log:
            where = f"{item['method']} {item['path']}"
            keys = [v for k, v in item["headers"] if k.lower() == "x-goog-api-key"]
            self.assertEqual(keys, [GEMINI_KEY], where)
            self.assertEqual([k for k, _ in item["headers"] if k.lower() == "authorization"], [],
                             where)
            self.assertNotIn(GEMINI_KEY, item["path"] + item["body"], where)
        self.assert_nowhere("gemini", run, GEMINI_KEY)

    def test_failing_gemini_audit_does_not_leak(self):
        run, _ = self.audit("gemini-dead", f"http://127.0.0.1:{h.free_port()}", "--model",
                            std.MODEL, "--api-key-env", "GEMINI_API_KEY",
                            env={"GEMINI_API_KEY": GEMINI_KEY}, api="gemini")
        self.assert_exit(run, 3)
        self.assertNotIn(GEMINI_KEY, run.stdout + run.stderr)

    def test_failing_audit_does_not_leak(self):
        url = f"http://user:{PASSWORD}@127.0.0.1:{h.free_port()}"
        run, _ = self.audit("dead", url, "--header", f"X-Upstream-Token: {HEADER_SECRET}",
                            env={"OPENAI_API_KEY": KEY})
        self.assert_exit(run, 3)
        self.assertNotIn(KEY, run.stdout + run.stderr)
        self.assertNotIn(PASSWORD, run.stdout + run.stderr)
        self.assertNotIn(HEADER_SECRET, run.stdout + run.stderr)


if __name__ == "__main__":
    h.main()
