#!/usr/bin/python3
"""Scenario: the transport's edges, each named for what it is.

- Proxies: with http_proxy, HTTP_PROXY, https_proxy and ALL_PROXY all pointing at a recording
  "proxy" on loopback (and no no_proxy), an audit of a loopback endpoint and one of the
  embedded engine never contact it and say nothing of a proxy. An endpoint whose name
  (llmrepro-test.invalid) resolves nowhere goes through a forwarding proxy on loopback named in
  http_proxy with credentials: the terminal names that proxy without them, the proxy sees every
  request in absolute form with its Proxy-Authorization, and the audit succeeds through it.
  no_proxy naming that host sends it direct, where it does not resolve: the error says so.
- A refused connection names the address and the IP tried, in the record and the terminal.
- The open-file limit: at --concurrency 128 under a limit of 64 (soft and hard) the audit exits
  2 naming the limit before any request; with only the soft limit low (16, at --concurrency 16)
  it raises it and runs every request.
- --timeout and --rate values that overflow the clocks are refused with exit 2, naming the flag
  and its range, before any request; so is diff's --alpha nan.
- A 302 is not followed: the record's error names its Location, without its credentials.
- A lone surrogate escape ("\\ud800" without its low half) in a response is U+FFFD, counted
  (summary and prompt "lone_surrogates", and a warning), not a failed request: whole and
  streamed.
- Bidirectional controls (U+202A..U+202E, U+2066..U+2069) in a prompt id, a model and the
  model's tokens reach no report raw: HTML, JUnit, Markdown and the terminal show each as the
  marker "\\u{202e}" (the JSON keeps the text as it is, escaped by JSON itself).
"""

import glob
import http.client
import http.server
import json
import os
import resource
import socketserver
import subprocess
import threading

import e2e_harness as h
import standard_audit as std
import token_blob

X = std.variant(std.FEYNMAN_X)
PROMPT = "Where was Feynman born?"
PROXY_VARIABLES = ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy",
                   "ALL_PROXY", "no_proxy", "NO_PROXY")


class RecordingProxy:
    """A loopback HTTP proxy that records each request line and its Proxy-Authorization, and
    forwards it to `target_port` on 127.0.0.1 (or, without one, answers 502)."""

    def __init__(self, target_port=None, echo_auth=False):
        self.seen = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def relay(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length) if length else None
                proxy.seen.append({"method": self.command, "target": self.path,
                                   "auth": self.headers.get("Proxy-Authorization")})
                if echo_auth:
                    # A proxy that quotes the credentials it refused, as some gateways do.
                    body = f"proxy refused Proxy-Authorization: {proxy.seen[-1]['auth']}".encode()
                    self.send_response(500)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                if target_port is None:
                    self.send_response(502)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                upstream = http.client.HTTPConnection("127.0.0.1", target_port, timeout=30)
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("proxy-authorization", "proxy-connection")}
                upstream.request(self.command, self.path, body=body, headers=headers)
                answer = upstream.getresponse()
                data = answer.read()
                self.send_response(answer.status)
                for key, value in answer.getheaders():
                    if key.lower() not in ("transfer-encoding", "content-length", "connection"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                upstream.close()

            do_GET = relay
            do_POST = relay

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Transport(h.E2ETestCase):
    def proxy(self, target_port=None, echo_auth=False):
        proxy = RecordingProxy(target_port, echo_auth)
        self.addCleanup(proxy.close)
        return proxy

    def proxy_env(self, url, no_proxy=""):
        """Every proxy variable libcurl reads set to `url`, no_proxy as given."""
        env = {name: url for name in PROXY_VARIABLES}
        env["no_proxy"] = env["NO_PROXY"] = no_proxy
        return env

    def suite(self, name="suite.jsonl"):
        return self.write_suite(name, [{"id": "feynman", "prompt": PROMPT}])

    def endpoint(self, entries=None, name="endpoint"):
        script = {"model": std.MODEL, "prompts": {PROMPT: entries or [X]}}
        return self.start_endpoint(script, "openai-chat", name=name)

    def audit_args(self, url, tag, extra=(), runs=2, levels="1"):
        args = ["audit", "--suite", self.suite(f"{tag}.jsonl"), "--api", "openai-chat",
                "--model", std.MODEL, "--runs", str(runs), "--concurrency", levels,
                "--retries", "0",
                "--db", self.path(f"{tag}.db"), "--json", self.path(f"{tag}.json"), *extra]
        if url is not None:
            args[1:1] = ["--endpoint", url]
        return args

    def test_loopback_and_embedded_never_use_a_proxy(self):
        proxy = self.proxy()
        env = self.proxy_env(f"http://user:secret@127.0.0.1:{proxy.port}")
        endpoint = self.endpoint()
        run = self.run_llmrepro(self.audit_args(endpoint.url, "loopback"), env=env)
        self.assertIn(run.returncode, (0, 1), run.describe())
        self.assertEqual(len(endpoint.posts()), 2, run.describe())
        self.assertNotIn("proxy", run.stderr, run.describe())
        localhost = endpoint.url.replace("127.0.0.1", "localhost")
        run = self.run_llmrepro(self.audit_args(localhost, "localhost"), env=env)
        self.assertIn(run.returncode, (0, 1), run.describe())
        self.assertEqual(len(endpoint.posts()), 4, run.describe())
        # The embedded reference engine listens on loopback too.
        run = self.run_llmrepro(["audit", "--suite", self.suite("engine.jsonl"), "--runs", "2",
                                 "--concurrency", "1", "--max-tokens", "4",
                                 "--db", self.path("engine.db")], env=env)
        self.assertIn(run.returncode, (0, 1), run.describe())
        self.assertNotIn("proxy", run.stderr, run.describe())
        self.assertEqual(proxy.seen, [])

    def test_a_proxied_endpoint_is_named_without_credentials(self):
        endpoint = self.endpoint()
        proxy = self.proxy(endpoint.port)
        url = f"http://llmrepro-test.invalid:{endpoint.port}"
        env = {"http_proxy": f"http://user:secret@127.0.0.1:{proxy.port}", "NO_PROXY": ""}
        run = self.run_llmrepro(self.audit_args(url, "proxied"), env=env)
        self.assertIn(run.returncode, (0, 1), run.describe())
        self.assertIn(f"llmrepro: requests to {url} go through the proxy "
                      f"http://127.0.0.1:{proxy.port} (from $http_proxy)",
                      run.stderr.splitlines(), run.describe())
        self.assertNotIn("secret", run.stdout + run.stderr)
        posts = [r for r in proxy.seen if r["method"] == "POST"]
        # The capability preflight's two, then the plan's two.
        self.assertEqual([r["target"] for r in posts], [f"{url}/v1/chat/completions"] * 4)
        self.assertEqual({r["auth"] for r in proxy.seen}, {"Basic dXNlcjpzZWNyZXQ="})
        self.assertEqual(len(endpoint.posts()), 2)
        report = self.load_report(self.path("proxied.json"))
        self.assertEqual((report["summary"]["requests"], report["summary"]["failed_requests"]),
                         (2, 0))

        # no_proxy names the host: it goes direct, where the name does not resolve.
        env["no_proxy"] = ".invalid"
        run = self.run_llmrepro(self.audit_args(url, "direct"), env=env)
        self.assertEqual(run.returncode, 3, run.describe())
        self.assertNotIn("go through the proxy", run.stderr)
        self.assertIn(f"(address llmrepro-test.invalid:{endpoint.port}, not resolved)", run.stderr,
                      run.describe())
        # Still the first run's four: the direct one reached nothing.
        self.assertEqual(len([r for r in proxy.seen if r["method"] == "POST"]), 4)

    def test_a_proxy_echoing_its_credentials_leaves_them_nowhere(self):
        proxy = self.proxy(echo_auth=True)
        url = "http://llmrepro-test.invalid:9"
        env = {"http_proxy": f"http://user:pxPASS77@127.0.0.1:{proxy.port}", "NO_PROXY": ""}
        run = self.run_llmrepro(self.audit_args(url, "echoed"), env=env)
        self.assertEqual(run.returncode, 3, run.describe())
        self.assertEqual({r["auth"] for r in proxy.seen}, {"Basic dXNlcjpweFBBU1M3Nw=="})
        conn = h.open_db(self.path("echoed.db"))
        errors = [e for (e,) in conn.execute("SELECT error FROM requests")]
        conn.close()
        self.assertEqual(
            errors, ["HTTP 500: proxy refused Proxy-Authorization: Basic [redacted] after 1 attempt"]
            * 2)
        for path in glob.glob(self.path("echoed.*")):
            with open(path, "rb") as f:
                data = f.read()
            for secret in (b"pxPASS77", b"dXNlcjpweFBBU1M3Nw=="):
                self.assertNotIn(secret, data, path)
        for secret in ("pxPASS77", "dXNlcjpweFBBU1M3Nw=="):
            self.assertNotIn(secret, run.stdout + run.stderr)

    def test_a_refused_connection_names_its_address(self):
        port = h.free_port()
        run = self.run_llmrepro(self.audit_args(f"http://127.0.0.1:{port}", "refused"))
        self.assertEqual(run.returncode, 3, run.describe())
        where = f"(address 127.0.0.1:{port}, IP 127.0.0.1)"
        self.assertIn(f"cannot reach http://127.0.0.1:{port}: ", run.stderr, run.describe())
        self.assertIn(where, run.stderr, run.describe())
        with h.open_db(self.path("refused.db")) as db:
            errors = [row[0] for row in db.execute("SELECT error FROM requests")]
        self.assertTrue(errors, "no request recorded")
        for error in errors:
            self.assertIn(where, error)

    def run_limited(self, args, soft, hard):
        def limit():
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        done = subprocess.run([h.ARGS.binary] + args, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=90,
                              env=self.audit_env(), cwd=self.tmp, preexec_fn=limit)
        return h.Run(args, done.returncode, done.stdout, done.stderr, 0)

    def test_the_open_file_limit_is_named_as_such(self):
        endpoint = self.endpoint()
        args = self.audit_args(endpoint.url, "limited", runs=128, levels="128")
        run = self.run_limited(args, 64, 64)
        self.assertEqual(run.returncode, 2, run.describe())
        self.assertIn("llmrepro: error: the local open-file limit is too low for --concurrency "
                      "128: it needs ", run.stderr, run.describe())
        self.assertIn("but `ulimit -n` allows 64 (hard limit 64)", run.stderr)
        self.assertNotIn("cannot reach", run.stderr)
        self.assertEqual(endpoint.requests(), [])
        self.assertFalse(os.path.exists(self.path("limited.db")))

        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard != resource.RLIM_INFINITY and hard < 1024:
            self.skipTest(f"the hard open-file limit here is {hard}")
        # Only the soft limit is low: the audit raises it and runs every request, 16 at once
        # (1 prompt x 16 runs at level 16), where 16 descriptors would not hold their sockets.
        args = self.audit_args(endpoint.url, "raised", runs=16, levels="16")
        run = self.run_limited(args, 16, min(hard, 4096) if hard != resource.RLIM_INFINITY
                               else 4096)
        self.assertIn(run.returncode, (0, 1), run.describe())
        self.assertEqual(len(endpoint.posts()), 16, run.describe())
        report = self.load_report(self.path("raised.json"))
        self.assertEqual(report["summary"]["failed_requests"], 0, run.describe())

    def test_durations_that_overflow_the_clock_are_refused(self):
        endpoint = self.endpoint()
        cases = [
            (["--timeout", "1e300"], "--timeout must be a number of seconds greater than 0 and "
                                     "at most 2592000 (got 1e+300)"),
            (["--timeout", "1e7"], "--timeout must be a number of seconds greater than 0 and "
                                   "at most 2592000 (got 10000000)"),
            (["--timeout", "0"], "--timeout must be a number of seconds greater than 0 and at "
                                 "most 2592000 (got 0)"),
            (["--rate", "1e-300"], "--rate must be 0 (unlimited) or a number of requests per "
                                   "second within 1e-06..1000000000 (got 1e-300)"),
            (["--rate", "5e-324"], "--rate must be 0 (unlimited) or a number of requests per "
                                   "second within 1e-06..1000000000 (got 5e-324)"),
            (["--rate", "1e300"], "--rate must be 0 (unlimited) or a number of requests per "
                                  "second within 1e-06..1000000000 (got 1e+300)"),
        ]
        for extra, message in cases:
            with self.subTest(extra=extra):
                run = self.run_llmrepro(self.audit_args(endpoint.url, "bad", extra))
                self.assertEqual(run.returncode, 2, run.describe())
                self.assertIn(f"llmrepro: error: {message}", run.stderr.splitlines(),
                              run.describe())
        self.assertEqual(endpoint.requests(), [])
        # diff's --alpha: NaN compared false both ways and passed the range check.
        for alpha in ("nan", "0", "1"):
            run = self.run_llmrepro(["diff", self.path("a.db"), self.path("b.db"),
                                     "--alpha", alpha])
            self.assertEqual(run.returncode, 2, run.describe())
            self.assertIn("llmrepro: error: --alpha must be in (0, 1)", run.stderr.splitlines())

    def test_a_redirect_names_its_location(self):
        location = "https://user:pw@new.example/v1?api_key=s3cret&region=eu"
        endpoint = self.endpoint([{"fault": "302", "location": location}])
        run = self.run_llmrepro(self.audit_args(endpoint.url, "redirect"))
        self.assertEqual(run.returncode, 3, run.describe())
        expected = ("HTTP 302 redirect to https://new.example/v1?region=eu refused: llmrepro "
                    "does not follow redirects; use the final URL as --endpoint")
        with h.open_db(self.path("redirect.db")) as db:
            errors = [row[0] for row in db.execute("SELECT error FROM requests")]
        self.assertEqual(errors, [expected + " after 1 attempt"] * 2)
        self.assertEqual(len(endpoint.posts()), 2)
        report = self.load_report(self.path("redirect.json"))
        reasons = [r["reason"] for r in report["summary"]["failure_reasons"]]
        self.assertEqual(len(reasons), 1)
        self.assertIn(expected, reasons[0])
        for text in (run.stdout, run.stderr, json.dumps(report)):
            self.assertNotIn("s3cret", text)
            self.assertNotIn("user:pw", text)

    def test_bidirectional_controls_are_shown_escaped(self):
        rlo, lri, pdi = "\u202e", "\u2066", "\u2069"
        pid = f"invoice{rlo}fdp.exe"
        x = [[f" He{rlo}", -0.05, [[f" He{rlo}", -0.05], [" Richard", -3.1]]],
             [f" was{lri}", -0.02, [[f" was{lri}", -0.02], [" is", -4.0]]],
             [f" born{pdi}", -0.1, [[f" born{pdi}", -0.1], [" raised", -2.4]]]]
        y = x[:1] + [[" is", -0.03, [[" is", -0.03], [f" was{lri}", -0.04]]]] + x[2:]
        prompt = "Tell me about Feynman."
        endpoint = self.start_endpoint({"model": f"model{rlo}x", "prompts": {
            prompt: [std.variant(x), std.variant(y)]}}, "openai-chat")
        suite = self.write_suite("bidi.jsonl", [{"id": pid, "prompt": prompt}])
        run, report, paths = self.audit_reports(
            suite, ["--endpoint", endpoint.url, "--model", f"model{rlo}x"],
            ["--runs", "4", "--concurrency", "1", "--seed", "7"], tag="bidi")
        self.assertEqual(report["prompts"][0]["id"], pid)
        self.assertEqual(report["prompts"][0]["status"], "unstable")
        for fmt in ("html", "junit", "markdown"):
            with open(paths[fmt], encoding="utf-8") as f:
                text = f.read()
            with self.subTest(fmt=fmt):
                for control in map(chr, [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]):
                    self.assertNotIn(control, text)
                shown = text.replace("&#92;", "\\")  # Markdown writes "\\" as a reference
                self.assertIn("invoice\\u{202e}fdp.exe", shown)
                if fmt == "html":
                    self.assertIn(" was\\u{2066}", shown)
                    self.assertIn(" born\\u{2069}", shown)
        for control in (rlo, lri, pdi):
            self.assertNotIn(control, run.stdout + run.stderr)
        self.assertIn("invoice\\u{202e}fdp.exe", run.stdout)

    def test_a_lone_surrogate_is_replaced_and_counted(self):
        # The script's JSON carries the lone surrogate in one token's string, whose bytes are
        # those of " was" and U+FFFD (the text is those bytes): the endpoint writes it escaped
        # (json.dumps, ASCII only) in the token and its candidate, two a response.
        lone = "\ud800"
        fffd = list(" was\ufffd".encode())
        tokens = [[" He", -0.05, [[" He", -0.05], [" Richard", -3.1]]],
                  [f" was{lone}", -0.02, [[f" was{lone}", -0.02], [" is", -4.0]], fffd],
                  [" born", -0.1, [[" born", -0.1], [" raised", -2.4]]]]
        endpoint = self.endpoint([std.variant(tokens)])
        for stream in (False, True):
            with self.subTest(stream=stream):
                tag = "surrogate-stream" if stream else "surrogate"
                run = self.run_llmrepro(self.audit_args(endpoint.url, tag,
                                                        ["--stream"] if stream else []))
                self.assertIn(run.returncode, (0, 1), run.describe())
                report = self.load_report(self.path(f"{tag}.json"))
                summary = report["summary"]
                self.assertEqual((summary["requests"], summary["failed_requests"]), (2, 0))
                self.assertEqual(summary["lone_surrogates"], 4)
                self.assertEqual(report["prompts"][0]["lone_surrogates"], 4)
                warning = ("the endpoint sent 4 lone surrogate escapes (U+D800..U+DFFF escaped "
                           "without their pair) in its JSON strings: each was read as U+FFFD")
                self.assertIn(warning, report["warnings"])
                self.assertIn(f"warning: {warning}", run.stdout)
                with h.open_db(self.path(f"{tag}.db")) as db:
                    texts = token_blob.request_texts(db)
                    rows = [(ok, texts[request_id], surrogates) for request_id, ok, surrogates in
                            db.execute("SELECT id, ok, lone_surrogates FROM requests")]
                self.assertEqual(rows, [(1, " He was\ufffd born", 2)] * 2)


if __name__ == "__main__":
    h.main()
