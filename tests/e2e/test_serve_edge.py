#!/usr/bin/python3
"""Scenario: the edge of `llmrepro serve`. 500 clients connecting at once on loopback all get an
HTTP answer (200, or 503 when full), none a connection reset; with `--max-queue 2` a burst of
slow requests gets 503s in the API's error shape with Retry-After, again without a reset; a
body over the limit (8 MiB by default, `--max-body-bytes`) is a 413 naming the limit, a body
under it is served; a limit of 0 is a usage error (exit 2); and numbers that overflow (1e400, 2^64-1) or that a field cannot hold are a
400 naming the parameter, never a 500."""

import json
import selectors
import socket
import time

import e2e_harness as h

CLIENTS = 500
DEFAULT_LIMIT = 8 << 20


def request_bytes(path, body, extra_headers=""):
    data = body if isinstance(body, bytes) else body.encode()
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\nConnection: close\r\n{extra_headers}\r\n"
            ).encode() + data


def parse_response(raw):
    """(status, headers with lower-case names, body) of one HTTP/1.1 response."""
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers, body


def burst(port, count, payload, timeout=30):
    """Opens `count` connections at once (non-blocking connects, all started before any
    request is sent), then sends `payload` on each and reads each answer to the end. Returns
    (answers: list of raw responses, resets: connections refused or reset, unanswered)."""
    selector = selectors.DefaultSelector()
    state = {}
    for _ in range(count):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.connect_ex(("127.0.0.1", port))
        state[sock] = {"phase": "connect", "out": payload, "in": bytearray()}
        selector.register(sock, selectors.EVENT_WRITE)
    answers, resets = [], 0
    deadline = time.monotonic() + timeout
    while state and time.monotonic() < deadline:
        for key, _ in selector.select(timeout=0.5):
            sock, entry = key.fileobj, state[key.fileobj]
            try:
                if entry["phase"] == "connect":
                    error = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if error:
                        raise ConnectionResetError(error, "connect failed")
                    entry["phase"] = "send"
                if entry["phase"] == "send":
                    sent = sock.send(entry["out"])
                    entry["out"] = entry["out"][sent:]
                    if not entry["out"]:
                        entry["phase"] = "read"
                        selector.modify(sock, selectors.EVENT_READ)
                    continue
                chunk = sock.recv(65536)
                if chunk:
                    entry["in"] += chunk
                    continue
                answers.append(bytes(entry["in"]))
            except (ConnectionResetError, ConnectionRefusedError, BrokenPipeError):
                resets += 1
            selector.unregister(sock)
            sock.close()
            del state[sock]
    unanswered = len(state)
    for sock in state:
        selector.unregister(sock)
        sock.close()
    return answers, resets, unanswered


class ServeEdge(h.E2ETestCase):
    def start_serve(self, *flags):
        port = h.free_port()
        self.start_llmrepro(["serve", "--port", str(port), *flags])
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
                    sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    if sock.recv(64).startswith(b"HTTP/1.1 200"):
                        return port
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.fail("llmrepro serve did not answer /health within 20 s")
            time.sleep(0.05)

    def post(self, port, path, body, extra_headers=""):
        with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
            sock.sendall(request_bytes(path, body, extra_headers))
            raw = bytearray()
            while chunk := sock.recv(65536):
                raw += chunk
        return parse_response(bytes(raw))

    def assert_error(self, answer, status, param, message, code=None):
        got_status, _, body = answer
        self.assertEqual(got_status, status, body)
        error = json.loads(body)["error"]
        self.assertEqual((error["param"], error["message"]), (param, message))
        if code is not None:
            self.assertEqual(error["code"], code)

    def test_500_simultaneous_clients_all_answered(self):
        port = self.start_serve()
        body = json.dumps({"prompt": "the cat", "max_tokens": 1})
        answers, resets, unanswered = burst(port, CLIENTS,
                                            request_bytes("/v1/completions", body))
        self.assertEqual((resets, unanswered, len(answers)), (0, 0, CLIENTS))
        statuses = [parse_response(a)[0] for a in answers]
        self.assertEqual(sorted(set(statuses) - {200, 503}), [], statuses)
        self.assertGreater(statuses.count(200), 0)

    def test_full_queue_answers_503_with_retry_after(self):
        port = self.start_serve("--max-queue", "2", "--max-num-seqs", "1")
        body = json.dumps({"prompt": "the cat sat on the mat", "max_tokens": 200})
        answers, resets, unanswered = burst(port, 60, request_bytes("/v1/completions", body))
        self.assertEqual((resets, unanswered, len(answers)), (0, 0, 60))
        parsed = [parse_response(a) for a in answers]
        statuses = [p[0] for p in parsed]
        self.assertEqual(sorted(set(statuses)), [200, 503], statuses)
        for status, headers, payload in parsed:
            if status != 503:
                continue
            self.assertEqual(headers.get("retry-after"), "1")
            error = json.loads(payload)["error"]
            self.assertEqual((error["type"], error["code"]), ("server_error", "queue_full"))
        # The queue drains: the server answers again once the burst is over.
        self.assertEqual(self.post(port, "/v1/completions", body)[0], 200)

    def test_body_over_the_limit_is_413(self):
        port = self.start_serve()
        over = json.dumps({"prompt": "word " * (DEFAULT_LIMIT // 5 + 10), "max_tokens": 1})
        self.assert_error(self.post(port, "/v1/completions", over), 413, None,
                          "the request body is larger than the limit of 8388608 bytes "
                          "(llmrepro serve --max-body-bytes)", "request_too_large")
        # The connection's next request is read correctly after a refused body.
        small = json.dumps({"prompt": "the cat", "max_tokens": 1})
        self.assertEqual(self.post(port, "/v1/completions", small)[0], 200)

        port = self.start_serve("--max-body-bytes", "100")
        self.assert_error(self.post(port, "/v1/completions", json.dumps(
            {"prompt": "the cat " * 20, "max_tokens": 1})), 413, None,
            "the request body is larger than the limit of 100 bytes "
            "(llmrepro serve --max-body-bytes)", "request_too_large")
        self.assertEqual(self.post(port, "/v1/completions", small)[0], 200)

    def test_bad_limits_are_usage_errors(self):
        for flags, message in (
                (["--max-body-bytes", "0"],
                 "--max-body-bytes: Value 0 not in range 1 to 17179869184"),
                (["--max-body-bytes", "-1"],
                 "--max-body-bytes: Value -1 not in range 1 to 17179869184"),
                (["--max-queue", "0"], "llmrepro: error: --max-queue must be at least 1")):
            with self.subTest(flags=flags):
                run = self.run_llmrepro(["serve", "--port", "0", *flags], timeout=20)
                self.assert_exit(run, 2)
                self.assertIn(message, run.stderr.splitlines())

    def test_overflowing_numbers_are_400_naming_the_parameter(self):
        port = self.start_serve()
        chat = '{"messages": [{"role": "user", "content": "the cat"}], %s}'
        completion = '{"prompt": "the cat", %s}'
        cases = [
            (chat, '"temperature": 1e400', "temperature",
             "'temperature' is out of range: 1e400 overflows a 64-bit number"),
            (chat, '"top_p": -1e400', "top_p",
             "'top_p' is out of range: -1e400 overflows a 64-bit number"),
            (chat, '"max_tokens": 18446744073709551615', "max_tokens",
             "'max_tokens' must be at most 1000000, got 18446744073709551615"),
            (completion, '"max_tokens": 1e400', "max_tokens",
             "'max_tokens' is out of range: 1e400 overflows a 64-bit number"),
            (chat, '"max_completion_tokens": 100000000000000000000', "max_completion_tokens",
             "'max_completion_tokens' must be at most 1000000, got 1e+20"),
            (chat, '"logprobs": true, "top_logprobs": 18446744073709551615', "top_logprobs",
             "'top_logprobs' must be between 0 and 20, got 18446744073709551615"),
            (completion, '"logprobs": 18446744073709551615', "logprobs",
             "'logprobs' must be between 0 and 20, got 18446744073709551615"),
            (chat, '"seed": 18446744073709551615', "seed",
             "'seed' must be between -9223372036854775808 and 9223372036854775807, "
             "got 18446744073709551615"),
            (chat, '"n": 18446744073709551615', "n", "'n' must be 1"),
            (chat, '"max_tokens": -1', "max_tokens", "'max_tokens' must be at least 1"),
        ]
        for template, fields, param, message in cases:
            path = "/v1/chat/completions" if template is chat else "/v1/completions"
            with self.subTest(fields=fields):
                self.assert_error(self.post(port, path, template % fields), 400, param, message)


if __name__ == "__main__":
    h.main()
