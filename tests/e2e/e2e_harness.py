"""Shared plumbing of the end-to-end tests: arguments, temp dirs, the scripted endpoint, the
built binary, reports and their schema. Each test file is one scenario and runs as
    /usr/bin/python3 tests/e2e/test_x.py --binary <llmrepro> --source-dir <repo>
Every process a test starts is stopped in its cleanup, even when the test fails.
"""

import argparse
import json
import math
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ARGS = argparse.Namespace(binary=None, source_dir=os.path.dirname(os.path.dirname(HERE)))
PYTHON = sys.executable or "/usr/bin/python3"


def main():
    """Parses --binary/--source-dir, hands the rest to unittest."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--binary")
    parser.add_argument("--source-dir", default=ARGS.source_dir)
    known, rest = parser.parse_known_args()
    ARGS.binary = os.path.abspath(known.binary) if known.binary else None
    ARGS.source_dir = os.path.abspath(known.source_dir)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


def free_port():
    """A loopback port nothing listens on (bound then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Endpoint:
    """A running scripted_endpoint.py process."""

    def __init__(self, process, port, log_path):
        self.process = process
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = log_path

    def requests(self, method=None):
        """Every request the endpoint received, in arrival order."""
        if not os.path.exists(self.log_path):
            return []
        with open(self.log_path, encoding="utf-8") as f:
            items = [json.loads(line) for line in f if line.strip()]
        return [i for i in items if method is None or i["method"] == method]

    def posts(self):
        return self.requests("POST")


class Run:
    """The outcome of one finished llmrepro run."""

    def __init__(self, args, returncode, stdout, stderr, elapsed):
        self.args = args
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.elapsed = elapsed

    def describe(self):
        return (f"llmrepro {' '.join(self.args)}\nexit {self.returncode} after "
                f"{self.elapsed:.2f} s\n--- stdout ---\n{self.stdout[-4000:]}\n"
                f"--- stderr ---\n{self.stderr[-4000:]}")


class E2ETestCase(unittest.TestCase):
    """A test with a fresh temp dir, helpers to start processes, and cleanup of all of them."""

    maxDiff = None
    needs_binary = True

    def setUp(self):
        if self.needs_binary and (not ARGS.binary or not os.path.isfile(ARGS.binary)):
            self.fail(f"--binary must name the built llmrepro (got {ARGS.binary!r})")
        self.tmp = tempfile.mkdtemp(prefix="llmrepro-e2e-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.processes = []
        self.addCleanup(self.stop_processes)

    def path(self, name):
        return os.path.join(self.tmp, name)

    def stop_processes(self):
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    stream.close()

    def write_json(self, name, obj):
        path = self.path(name)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(obj, f)
        return path

    def write_suite(self, name, prompts):
        """A JSON Lines suite from dicts (or raw strings, written as they are)."""
        path = self.path(name)
        with open(path, "w", encoding="utf-8") as f:
            for prompt in prompts:
                f.write((prompt if isinstance(prompt, str) else json.dumps(prompt)) + "\n")
        return path

    def start_endpoint(self, script, dialect="openai-chat", name="endpoint"):
        script_path = self.write_json(f"{name}-script.json", script)
        port_file = self.path(f"{name}.port")
        log_path = self.path(f"{name}-requests.jsonl")
        stderr = open(self.path(f"{name}.stderr"), "w", encoding="utf-8")
        self.addCleanup(stderr.close)
        process = subprocess.Popen(
            [PYTHON, os.path.join(HERE, "scripted_endpoint.py"), "--script", script_path,
             "--port", "0", "--port-file", port_file, "--dialect", dialect, "--log", log_path],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr)
        self.processes.append(process)
        deadline = time.monotonic() + 10
        while not os.path.exists(port_file):
            if process.poll() is not None:
                with open(self.path(f"{name}.stderr"), encoding="utf-8") as f:
                    self.fail(f"scripted endpoint exited {process.returncode}: {f.read()}")
            if time.monotonic() > deadline:
                self.fail("scripted endpoint did not write its port file within 10 s")
            time.sleep(0.02)
        with open(port_file, encoding="utf-8") as f:
            port = int(f.read())
        return Endpoint(process, port, log_path)

    def audit_env(self, extra=None):
        env = {k: v for k, v in os.environ.items()
               if k not in ("OPENAI_API_KEY", "http_proxy", "https_proxy", "HTTP_PROXY",
                            "HTTPS_PROXY", "ALL_PROXY", "all_proxy")}
        env["NO_PROXY"] = "127.0.0.1,localhost"
        env.update(extra or {})
        return env

    def run_llmrepro(self, args, env=None, timeout=90):
        """Runs the binary to completion (killed after `timeout` s, which fails the test)."""
        start = time.monotonic()
        try:
            done = subprocess.run([ARGS.binary] + args, stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=timeout,
                                  env=self.audit_env(env), cwd=self.tmp)
        except subprocess.TimeoutExpired as expired:
            self.fail(f"llmrepro {' '.join(args)} still running after {timeout} s\n"
                      f"stderr: {expired.stderr!r}")
        return Run(args, done.returncode, done.stdout, done.stderr, time.monotonic() - start)

    def start_llmrepro(self, args, env=None):
        """Starts the binary in the background; stopped in cleanup if still running."""
        process = subprocess.Popen([ARGS.binary] + args, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   env=self.audit_env(env), cwd=self.tmp)
        self.processes.append(process)
        return process

    def assert_exit(self, run, code):
        self.assertEqual(run.returncode, code, run.describe())

    def load_report(self, path):
        self.assertTrue(os.path.exists(path), f"no JSON report at {path}")
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
        self.validate_report(report)
        return report

    def validate_report(self, report):
        """Validates against schemas/llmrepro.audit.v1.schema.json (draft 2020-12)."""
        import jsonschema
        schema_path = os.path.join(ARGS.source_dir, "schemas", "llmrepro.audit.v1.schema.json")
        self.assertTrue(os.path.exists(schema_path), f"schema missing: {schema_path}")
        with open(schema_path, encoding="utf-8") as f:
            schema = json.load(f)
        validator = jsonschema.Draft202012Validator(schema)
        errors = sorted(validator.iter_errors(report), key=lambda e: list(e.absolute_path))
        self.assertEqual([], [f"{list(e.absolute_path)}: {e.message}" for e in errors[:10]],
                         "report does not validate against the schema")


def post_json(url, body):
    """POSTs `body` as JSON to a loopback URL (no proxy) and returns the decoded answer."""
    request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=30) as response:
        return json.loads(response.read())


def cosine(a, b):
    """Cosine similarity of two vectors, computed independently of the tool under test."""
    dot = sum(x * y for x, y in zip(a, b))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def open_db(path):
    """A read-only connection to an audit database."""
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def kill(process):
    """SIGKILL, as a crash would."""
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
