"""Shared plumbing of the end-to-end tests: arguments, temp dirs, the scripted endpoint, the
built binary, reports and their schema. Each test file is one scenario and runs as
    /usr/bin/python3 tests/e2e/test_x.py --binary <llmrepro> --source-dir <repo>
Every process a test starts is stopped in its cleanup, even when the test fails.
"""

import argparse
import html
import html.parser
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
import xml.etree.ElementTree as ElementTree

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
    program = unittest.main(argv=[sys.argv[0]] + rest, verbosity=2, exit=False)
    result = program.result
    if not result.wasSuccessful():
        sys.exit(1)
    # A scenario whose every test was skipped ran nothing: CTest reports it as Skipped
    # (SKIP_RETURN_CODE in tests/e2e/CMakeLists.txt), never as Passed.
    if result.testsRun == len(result.skipped) or (result.skipped and result.testsRun == 0):
        sys.exit(SKIPPED_EXIT)
    sys.exit(0)


# The exit code of a scenario that skipped every test.
SKIPPED_EXIT = 77


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

    def posts(self, preflight=False):
        """The POSTs received, in arrival order: the audited requests (and the probes' side
        traffic), without the capability preflight's unless `preflight`."""
        return [i for i in self.requests("POST") if preflight or not i.get("preflight")]

    def preflight_posts(self):
        """The capability preflight's requests (probes/capability_preflight.cpp)."""
        return [i for i in self.requests("POST") if i.get("preflight")]


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

    def report_paths(self, tag):
        """Where one run writes its database and every report format."""
        paths = {fmt: self.path(f"{tag}.{ext}") for fmt, ext in REPORT_FORMATS}
        paths["db"] = self.path(f"{tag}.db")
        return paths

    def audit_reports(self, suite, endpoint_args, extra=(), tag="audit", api="openai-chat",
                      timeout=90):
        """Runs `llmrepro audit` writing every report format, asserts that they and the exit
        code agree on the verdict (assert_verdict_agrees) and that `llmrepro report` re-renders
        the same JSON from the database (assert_report_reproduces). Returns (run, report,
        paths)."""
        paths = self.report_paths(tag)
        args = ["audit", "--suite", suite, *endpoint_args, "--api", api, "--db", paths["db"],
                *report_args(paths), *extra]
        run = self.run_llmrepro(args, timeout=timeout)
        report = self.assert_verdict_agrees(run, paths, quiet="--quiet" in extra)
        self.assert_report_reproduces(paths, report)
        return run, report, paths

    def assert_report_reproduces(self, paths, report):
        """`llmrepro report --db` re-renders the audit's JSON from the database alone: the same
        endpoints, warnings, summary, prompts and verdict status (the verdict's errors may
        differ where only the run knew why it stopped). Returns the re-rendered report."""
        again = self.path(f"{os.path.basename(paths['db'])}-again.json")
        run = self.run_llmrepro(["report", "--db", paths["db"], "--json", again, "--quiet"])
        self.assertIn(run.returncode, (0, 1, 3), run.describe())
        reproduced = self.load_report(again)

        def without_verdict(summary):
            return {k: v for k, v in summary.items() if k != "verdict"}

        self.assertEqual(without_verdict(reproduced["summary"]), without_verdict(report["summary"]),
                         "report --db: summary")
        for key in ("endpoints", "warnings", "prompts"):
            self.assertEqual(reproduced[key], report[key], f"report --db: {key}")
        self.assertEqual(reproduced["summary"]["verdict"]["status"],
                         report["summary"]["verdict"]["status"], "report --db: verdict")
        return reproduced

    def assert_verdict_agrees(self, run, paths, quiet=False):
        """Loads the JSON report and asserts that the exit code, the terminal (stdout, or under
        --quiet stderr), the Markdown, the HTML (#verdict-headline) and the JUnit verdict
        property all state its summary.verdict, that the JUnit fails exactly the failed gates
        (and prompts only where one failed) and errs only on an error verdict, and that each
        warning reaches the terminal, the HTML (#warnings) and the Markdown. Returns the
        report."""
        report = self.load_report(paths["json"])
        verdict = report["summary"]["verdict"]
        status, headline = verdict["status"], verdict["headline"]
        where = f"verdict {json.dumps(verdict, indent=1)}\n{run.describe()}"
        self.assertIn(status, EXIT_CODES, where)
        self.assertIn(run.returncode, EXIT_CODES[status], where)
        failed_gates = [g for g in verdict["gates"] if not g["passed"]]
        self.assertIn("max_failed_rate", [g["name"] for g in verdict["gates"]], where)
        if status == "error":
            self.assertTrue(verdict["errors"], where)
            self.assertTrue(headline.startswith("ERROR: "), where)
        else:
            self.assertEqual(verdict["errors"], [], where)
            self.assertEqual(bool(failed_gates), status == "fail", where)
            if status == "fail":
                self.assertTrue(headline.startswith("FAIL: "), where)
            elif verdict["stability_gated"]:
                self.assertTrue(headline.startswith("PASS: "), where)
            else:
                self.assertTrue(headline.startswith("NO STABILITY GATE: "), where)
        says_pass = headline.startswith("PASS: ")
        # The terminal.
        if quiet:
            self.assertEqual(run.stdout, "", where)
            if status == "pass":
                self.assertNotIn(headline, run.stderr, where)
            else:
                self.assertIn(f"llmrepro: {headline}", run.stderr.splitlines(), where)
        else:
            self.assertIn(headline, run.stdout, where)
            if not says_pass:
                self.assertNotIn("PASS", run.stdout, where)
            for warning in report["warnings"]:
                self.assertIn(f"warning: {warning}", run.stdout, where)
        # Markdown: escaped for the forge, so compared with its character references decoded.
        with open(paths["markdown"], encoding="utf-8") as f:
            markdown = html.unescape(f.read())
        self.assertIn(headline, markdown, "Markdown: " + where)
        if not says_pass:
            self.assertNotIn("PASS", markdown, "Markdown: " + where)
        for warning in report["warnings"]:
            self.assertIn(warning, markdown, "Markdown warnings: " + where)
        # HTML.
        with open(paths["html"], encoding="utf-8") as f:
            document = f.read()
        found, text = ElementText.of(document, "verdict-headline")
        self.assertEqual((found, text), (1, " ".join(headline.split())), "HTML: " + where)
        if report["warnings"]:
            found, text = ElementText.of(document, "warnings")
            self.assertEqual(found, 1, "HTML #warnings: " + where)
            for warning in report["warnings"]:
                self.assertIn(" ".join(warning.split()), text, "HTML warnings: " + where)
        # JUnit.
        root = ElementTree.parse(paths["junit"]).getroot()
        suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
        self.assertTrue(suites, "JUnit: no testsuite")
        for suite in suites:
            values = [p.get("value") for p in suite.iter("property") if p.get("name") == "verdict"]
            self.assertEqual(values, [status], "JUnit verdict property: " + where)
            # A CI system reading the JUnit fails exactly when the exit code does: the failing
            # test cases are the failed gates (their messages, in order) and prompts only where
            # a gate failed; an error verdict is one error case.
            cases = suite.findall("testcase")
            gate_failures = [c.find("failure").get("message") for c in cases
                             if c.get("classname") == "llmrepro.gate"
                             and c.find("failure") is not None]
            self.assertEqual(gate_failures, [g["message"] for g in failed_gates],
                             "JUnit failing gates: " + where)
            prompt_failures = [c.get("name") for c in cases
                               if c.get("classname", "").startswith("llmrepro.audit")
                               and c.find("failure") is not None]
            if not failed_gates:
                self.assertEqual(prompt_failures, [], "JUnit failures, no gate failed: " + where)
            errors = [c for c in cases if c.find("error") is not None]
            self.assertEqual(len(errors), 1 if status == "error" else 0, "JUnit errors: " + where)
            if status == "pass":
                self.assertEqual((suite.get("failures"), suite.get("errors")), ("0", "0"),
                                 "JUnit of a passing verdict: " + where)
        return report

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


# Report formats an audit can write: flag -> file extension.
REPORT_FORMATS = (("json", "json"), ("html", "html"), ("junit", "junit.xml"),
                  ("markdown", "md"))
# The exit code each verdict status gives (error: 3, or 130 when interrupted).
EXIT_CODES = {"pass": (0,), "fail": (1,), "error": (3, 130)}


class ElementText(html.parser.HTMLParser):
    """The text (entities decoded) inside the element with a given id."""

    def __init__(self, element_id):
        super().__init__(convert_charrefs=True)
        self.element_id = element_id
        self.depth = 0
        self.found = 0
        self.parts = []

    def handle_starttag(self, tag, attrs):
        if self.depth:
            if tag not in ("br", "img", "hr", "wbr", "input", "meta", "link"):
                self.depth += 1
        elif dict(attrs).get("id") == self.element_id:
            self.found += 1
            self.depth = 1

    def handle_endtag(self, tag):
        if self.depth:
            self.depth -= 1

    def handle_data(self, data):
        if self.depth:
            self.parts.append(data)

    @classmethod
    def of(cls, document, element_id):
        """(how many elements carry the id, their text with whitespace collapsed)."""
        parser = cls(element_id)
        parser.feed(document)
        parser.close()
        return parser.found, " ".join("".join(parser.parts).split())


def report_args(paths):
    """The --json/--html/--junit/--markdown arguments writing the files in `paths`."""
    args = []
    for fmt, _ in REPORT_FORMATS:
        args += [f"--{fmt}", paths[fmt]]
    return args


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


def recorded_rows(path):
    """The requests an audit database holds so far; 0 before it (or its schema) is committed."""
    try:
        conn = open_db(path)
        try:
            return conn.execute("SELECT COUNT(*) FROM requests").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def kill(process):
    """SIGKILL, as a crash would."""
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
