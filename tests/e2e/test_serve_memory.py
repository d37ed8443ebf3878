#!/usr/bin/python3
"""Scenario: a 256 MiB request body sent to `llmrepro serve` in chunks (no Content-Length, so
only the server's own count can stop it) is answered 413 naming the 8 MiB limit, the same
keep-alive connection then serves a normal request, and the server's peak resident memory
(VmHWM) grows by less than twice the limit plus 4 MiB over what it was before the body: the
body past the limit is dropped as it arrives, never buffered or parsed. Measures memory, so
the sanitizer builds skip it."""

import json
import socket
import time

import e2e_harness as h

LIMIT = 8 << 20
CHUNK = 1 << 20
CHUNKS = 256


def vm_hwm_kib(pid):
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc/PID/status")


def read_response(sock):
    """One HTTP/1.1 response with a Content-Length body: (status, body)."""
    raw = bytearray()
    while b"\r\n\r\n" not in raw:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError(f"connection closed before a response: {bytes(raw)!r}")
        raw += chunk
    head, _, body = bytes(raw).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    length = next(int(line.split(":", 1)[1]) for line in lines
                  if line.lower().startswith("content-length:"))
    body = bytearray(body)
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError("connection closed inside a response body")
        body += chunk
    return int(lines[0].split(" ")[1]), bytes(body)


class ServeMemory(h.E2ETestCase):
    def test_chunked_body_past_the_limit_stays_bounded(self):
        port = h.free_port()
        process = self.start_llmrepro(["serve", "--port", str(port)])
        deadline = time.monotonic() + 20
        while True:
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=120)
                break
            except OSError:
                if time.monotonic() > deadline:
                    self.fail("llmrepro serve did not listen within 20 s")
                time.sleep(0.05)
        self.addCleanup(sock.close)
        small = json.dumps({"prompt": "the cat", "max_tokens": 1}).encode()
        small_request = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                         b"Content-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n" % len(small)) + small
        # Warm: one request served, so the base includes a request's own working memory.
        sock.sendall(small_request)
        self.assertEqual(read_response(sock)[0], 200)
        base = vm_hwm_kib(process.pid)

        sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        words = b"word " * (CHUNK // 5)
        pieces = [b'{"prompt": "'] + [words] * CHUNKS + [b'", "max_tokens": 1}']
        for piece in pieces:
            sock.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
        sock.sendall(b"0\r\n\r\n")
        status, body = read_response(sock)
        self.assertEqual(status, 413, body)
        error = json.loads(body)["error"]
        self.assertEqual((error["message"], error["code"]),
                         ("the request body is larger than the limit of 8388608 bytes "
                          "(llmrepro serve --max-body-bytes)", "request_too_large"))
        # The connection is still in step: its next request is served.
        sock.sendall(small_request)
        self.assertEqual(read_response(sock)[0], 200)

        grown_kib = vm_hwm_kib(process.pid) - base
        self.assertLess(grown_kib, (2 * LIMIT + (4 << 20)) // 1024,
                        f"VmHWM grew by {grown_kib} KiB from {base} KiB")


if __name__ == "__main__":
    h.main()
