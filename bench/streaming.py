#!/usr/bin/python3
"""Streaming against whole answers: the CPU (user + sys) one `llmrepro audit` spends on one
N-token chat completion streamed as SSE (one token a chunk, top-2 logprobs, as vLLM and OpenAI
send it) divided by the CPU of the same completion answered whole, both measured in this one
command against the same loopback server. The ratio stays flat as N grows when streaming is
linear in the tokens; it grew with N (about 50 at 50,000 tokens) while every chunk reallocated
the token list.

Each audit sends 2 requests (--runs 2, one prompt, --concurrency 1) and parses, stores and
analyses both, so a figure is the whole process; the server answers from prebuilt bodies and
costs llmrepro nothing. The best of --repeat audits is taken for each form.

Usage: bench/streaming.py [--binary build/cli/llmrepro] [--tokens 5000,20000,50000]
                          [--repeat 3] [--baseline-binary OTHER]
"""

import argparse
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = "bench-model"


def token_text(i):
    return f" w{i % 997}"


def top(i):
    return [{"token": token_text(i), "logprob": -0.01, "bytes": None},
            {"token": f" v{i % 991}", "logprob": -4.5, "bytes": None}]


def whole_body(n):
    content = [{"token": token_text(i), "logprob": -0.01, "bytes": None, "top_logprobs": top(i)}
               for i in range(n)]
    return json.dumps({
        "id": "cmpl-bench", "object": "chat.completion", "created": 0, "model": MODEL,
        "choices": [{"index": 0, "finish_reason": "length",
                     "message": {"role": "assistant",
                                 "content": "".join(token_text(i) for i in range(n))},
                     "logprobs": {"content": content}}],
        "usage": {"prompt_tokens": 12, "completion_tokens": n, "total_tokens": n + 12},
    }).encode()


def stream_body(n):
    parts = []

    def chunk(choices, usage=None):
        event = {"id": "cmpl-bench", "object": "chat.completion.chunk", "created": 0,
                 "model": MODEL, "choices": choices}
        if usage is not None:
            event["usage"] = usage
        parts.append("data: " + json.dumps(event) + "\n\n")

    chunk([{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
            "finish_reason": None}])
    for i in range(n):
        entry = {"token": token_text(i), "logprob": -0.01, "bytes": None, "top_logprobs": top(i)}
        chunk([{"index": 0, "delta": {"content": token_text(i)},
                "logprobs": {"content": [entry]},
                "finish_reason": "length" if i == n - 1 else None}])
    chunk([], {"prompt_tokens": 12, "completion_tokens": n, "total_tokens": n + 12})
    parts.append("data: [DONE]\n\n")
    return "".join(parts).encode()


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    bodies = {}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, body, content_type="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/v1/models":
            self.send(200, json.dumps({"object": "list",
                                       "data": [{"id": MODEL, "object": "model"}]}).encode())
        else:
            self.send(404, b'{"error": {"message": "not found"}}')

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        stream = bool(request.get("stream"))
        body = self.server.bodies[(request.get("max_tokens"), stream)]
        self.send(200, body, "text/event-stream" if stream else "application/json")


def measure(binary, url, n, stream, workdir, repeat):
    best = None
    for attempt in range(repeat):
        suite = os.path.join(workdir, "suite.jsonl")
        with open(suite, "w", encoding="utf-8") as f:
            f.write(json.dumps({"id": "p", "prompt": "Say many words.", "max_tokens": n}) + "\n")
        db = os.path.join(workdir, f"{n}-{int(stream)}-{attempt}.db")
        args = ["audit", "--suite", suite, "--endpoint", url, "--api", "openai-chat",
                "--model", MODEL, "--runs", "2", "--concurrency", "1", "--max-tokens", str(n),
                "--max-response-bytes", str(1 << 30), "--timeout", "600", "--db", db, "--quiet"]
        if stream:
            args.append("--stream")
        env = dict(os.environ, NO_PROXY="127.0.0.1,localhost")
        process = subprocess.Popen([binary] + args, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        stderr = process.stderr.read()
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode not in (0, 1):
            sys.exit(f"{binary} exited {process.returncode}: {stderr.decode()[-2000:]}")
        with __import__("sqlite3").connect(db) as connection:
            ok = connection.execute("SELECT count(*) FROM requests WHERE ok = 1"
                                    ).fetchone()[0]
        if ok != 2:
            sys.exit(f"{binary}: {ok} of 2 requests succeeded at N={n}, stream={stream}")
        cpu = usage.ru_utime + usage.ru_stime
        best = cpu if best is None else min(best, cpu)
        os.remove(db)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", default=os.path.join(ROOT, "build", "cli", "llmrepro"))
    parser.add_argument("--baseline-binary")
    parser.add_argument("--tokens", default="5000,20000,50000")
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    sizes = [int(t) for t in options.tokens.split(",")]

    server = Server(("127.0.0.1", 0), Handler)
    for n in sizes:
        server.bodies[(n, False)] = whole_body(n)
        server.bodies[(n, True)] = stream_body(n)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"

    binaries = [("llmrepro", options.binary)]
    if options.baseline_binary:
        binaries.append(("baseline", options.baseline_binary))
    print(f"{'binary':<10} {'tokens':>7} {'whole CPU s':>12} {'stream CPU s':>13} "
          f"{'stream/whole':>13}")
    with tempfile.TemporaryDirectory(prefix="llmrepro-bench-stream-") as workdir:
        for name, binary in binaries:
            for n in sizes:
                whole = measure(binary, url, n, False, workdir, options.repeat)
                streamed = measure(binary, url, n, True, workdir, options.repeat)
                print(f"{name:<10} {n:>7} {whole:>12.3f} {streamed:>13.3f} "
                      f"{streamed / whole:>13.2f}", flush=True)
    server.shutdown()


if __name__ == "__main__":
    main()
