#!/usr/bin/python3
"""The edge of `llmrepro serve`, a build against a baseline build, in this one command:

- serial latency: the same serial audit (--concurrency 1, a small suite, short answers) run by
  the new build's `audit` against `serve` of each build, and the same number of keep-alive
  requests sent one after another on one connection (Python's http.client); per request, and
  the ratio new/baseline;
- 500 simultaneous clients on loopback (all connecting before any sends): answered, reset or
  refused, and unanswered after 30 s;
- a 256 MiB chunked request body: the answer and the server's peak resident memory (VmHWM)
  before and after it.

Usage: bench/serve_edge.py --binary build/cli/llmrepro --baseline OLD_LLMREPRO [--runs 10]
"""

import argparse
import http.client
import json
import os
import selectors
import socket
import subprocess
import sys
import tempfile
import time

PROMPTS = ["The old city stands on a river", "Rain falls on the hills",
           "The sea covers the villages", "A bird sings in the morning"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Serve:
    """`llmrepro serve` of one build, on a free loopback port, until the block ends."""

    def __init__(self, binary):
        self.binary = binary
        self.port = free_port()

    def __enter__(self):
        self.process = subprocess.Popen([self.binary, "serve", "--port", str(self.port)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=5):
                    return self
            except OSError:
                time.sleep(0.05)
        raise SystemExit(f"{self.binary} serve did not listen within 20 s")

    def __exit__(self, *_):
        self.process.terminate()
        self.process.wait()

    def vm_hwm_kib(self):
        with open(f"/proc/{self.process.pid}/status", encoding="ascii") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))


def serial_audit(driver, serve, runs, work):
    """Seconds and requests of one serial audit against `serve`."""
    suite = os.path.join(work, "suite.jsonl")
    with open(suite, "w", encoding="utf-8") as f:
        for i, prompt in enumerate(PROMPTS):
            f.write(json.dumps({"id": f"p{i}", "prompt": prompt, "max_tokens": 4}) + "\n")
    db, report = os.path.join(work, "serial.db"), os.path.join(work, "serial.json")
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    start = time.monotonic()
    done = subprocess.run([driver, "audit", "--suite", suite, "--endpoint",
                           f"http://127.0.0.1:{serve.port}", "--api", "openai-chat",
                           "--runs", str(runs), "--concurrency", "1", "--db", db, "--overwrite",
                           "--json", report, "--quiet"],
                          capture_output=True, text=True, env=env, check=False)
    seconds = time.monotonic() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"serial audit exited {done.returncode}: {done.stderr}")
    with open(report, encoding="utf-8") as f:
        return seconds, json.load(f)["summary"]["requests"]


def keep_alive_requests(serve, count):
    """Seconds for `count` requests sent one after another on one keep-alive connection."""
    connection = http.client.HTTPConnection("127.0.0.1", serve.port, timeout=60)
    body = json.dumps({"prompt": PROMPTS[0], "max_tokens": 4})
    start = time.monotonic()
    for _ in range(count):
        connection.request("POST", "/v1/completions", body,
                           {"Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
        if response.status != 200:
            raise SystemExit(f"keep-alive request answered {response.status}")
    seconds = time.monotonic() - start
    connection.close()
    return seconds


def burst(serve, count=500, timeout=30):
    """(answered, reset or refused, unanswered) of `count` clients connecting at once."""
    body = json.dumps({"prompt": "the cat", "max_tokens": 1}).encode()
    payload = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body)) + body
    selector, state = selectors.DefaultSelector(), {}
    for _ in range(count):
        sock = socket.socket()
        sock.setblocking(False)
        sock.connect_ex(("127.0.0.1", serve.port))
        state[sock] = [False, bytearray()]
        selector.register(sock, selectors.EVENT_WRITE)
    answered = resets = 0
    deadline = time.monotonic() + timeout
    while state and time.monotonic() < deadline:
        for key, _ in selector.select(timeout=0.5):
            sock, entry = key.fileobj, state[key.fileobj]
            try:
                if not entry[0]:
                    if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                        raise ConnectionRefusedError()
                    sock.sendall(payload)
                    entry[0] = True
                    selector.modify(sock, selectors.EVENT_READ)
                    continue
                chunk = sock.recv(65536)
                if chunk:
                    entry[1] += chunk
                    continue
                answered += entry[1].startswith(b"HTTP/1.1 ")
            except (ConnectionResetError, ConnectionRefusedError, BrokenPipeError):
                resets += 1
            selector.unregister(sock)
            sock.close()
            del state[sock]
    for sock in state:
        sock.close()
    return answered, resets, len(state)


def big_body(serve, mib=256, timeout=300):
    """(status or a note, VmHWM KiB before, VmHWM KiB after) of a `mib` MiB chunked body."""
    before = serve.vm_hwm_kib()
    sock = socket.create_connection(("127.0.0.1", serve.port), timeout=timeout)
    status = "no answer"
    try:
        sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                     b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        words = b"word " * ((1 << 20) // 5)
        for piece in [b'{"prompt": "'] + [words] * mib + [b'", "max_tokens": 1}']:
            sock.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
        sock.sendall(b"0\r\n\r\n")
        answer = sock.recv(64)
        status = answer.split(b" ")[1].decode() if answer else "closed"
    except (OSError, socket.timeout) as error:
        status = f"{type(error).__name__}"
    finally:
        sock.close()
    return status, before, serve.vm_hwm_kib()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default="build/cli/llmrepro")
    parser.add_argument("--baseline", required=True)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    builds = [("baseline", os.path.abspath(args.baseline)), ("new", os.path.abspath(args.binary))]
    driver = builds[1][1]
    rows = {}
    with tempfile.TemporaryDirectory(prefix="llmrepro-serve-edge-") as work:
        for name, binary in builds:
            row = rows[name] = {}
            with Serve(binary) as serve:
                seconds, requests = serial_audit(driver, serve, args.runs, work)
                row["audit"] = (seconds, requests)
                row["keep_alive"] = keep_alive_requests(serve, requests)
            with Serve(binary) as serve:
                row["burst"] = burst(serve)
            with Serve(binary) as serve:
                row["big_body"] = big_body(serve)
    print("| | baseline | new | new/baseline |")
    print("| --- | --- | --- | --- |")
    b, n = rows["baseline"], rows["new"]
    per = {k: r["audit"][0] / r["audit"][1] * 1000 for k, r in rows.items()}
    print(f"| serial audit ({n['audit'][1]} requests), ms per request | {per['baseline']:.1f} | "
          f"{per['new']:.1f} | {per['new'] / per['baseline']:.3f} |")
    keep = {k: r["keep_alive"] / r["audit"][1] * 1000 for k, r in rows.items()}
    print(f"| keep-alive requests one after another, ms per request | {keep['baseline']:.1f} | "
          f"{keep['new']:.1f} | {keep['new'] / keep['baseline']:.3f} |")
    for key, label in ((0, "answered"), (1, "reset or refused"), (2, "unanswered after 30 s")):
        print(f"| 500 simultaneous clients: {label} | {b['burst'][key]} | {n['burst'][key]} | |")
    print(f"| 256 MiB chunked body: answer | {b['big_body'][0]} | {n['big_body'][0]} | |")
    grown = {k: (r["big_body"][2] - r["big_body"][1]) / 1024 for k, r in rows.items()}
    print(f"| 256 MiB chunked body: VmHWM growth, MiB | {grown['baseline']:.1f} | "
          f"{grown['new']:.1f} | {grown['new'] / max(grown['baseline'], 0.1):.4f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
