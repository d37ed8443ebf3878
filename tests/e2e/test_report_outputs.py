#!/usr/bin/python3
"""Scenario: every report format of one scripted audit, and `llmrepro report` re-rendering them
from the database alone (the endpoint stopped first).

The standard audit (tests/e2e/standard_audit.py) plus a fifth prompt, "hostile", whose two
completions carry HTML and quotes and diverge at a token that is itself markup. Then:
- `report --db` writes JSON, HTML, JUnit and Markdown byte for byte equal to the audit's: the
  audit's own times and tool info are stored, nothing is re-measured;
- the JUnit parses (expat) and agrees with the exit code: with no gate configured (exit 0) it
  fails nothing and reports the unstable and fragile prompts as findings (system-out); with
  --fail-on unstable (exit 1) it fails that gate and exactly the unstable prompts, with messages
  giving the divergence position, both candidates and the gap; with a gate that passes
  (--max-unstable-rate 0.6, exit 0) it fails nothing;
- the Markdown carries the verdict, the summary table and the worst prompts;
- a wrong --db is an input error (exit 2) that names the file.
The HTML is rendered in a real browser by tests/browser/test_browser_reports.py.
"""

import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import e2e_harness as h
import standard_audit as std

HOSTILE_TEXT = "Show markup."
# The completion text a browser must show as text, never run.
HOSTILE_A = [
    ["</script><script>alert(1)</script>", -0.1, [["</script><script>alert(1)</script>", -0.1],
                                                 ["<b>", -2.0]]],
    [" <img src=x onerror=alert(1)>", -0.4, [[" <img src=x onerror=alert(1)>", -0.4],
                                             [" \"q'uote\" & <i>", -0.45]]],
    # A right-to-left override, which would show "exe.png" as "gnp.exe": every format shows it
    # as its \u{202e} marker (report/detail/bidi_controls.hpp).
    [" end\u202egnp.exe", -0.2, [[" end\u202egnp.exe", -0.2], [" stop", -2.2]]],
]
HOSTILE_B = HOSTILE_A[:1] + [
    [" \"q'uote\" & <i>", -0.42, [[" \"q'uote\" & <i>", -0.42],
                                  [" <img src=x onerror=alert(1)>", -0.43]]],
]


def hostile_script():
    script = std.script()
    a, b = std.variant(HOSTILE_A), std.variant(HOSTILE_B)
    script["prompts"][HOSTILE_TEXT] = [a, a, b, a, a]
    return script


def hostile_suite():
    return std.suite() + [{"id": "hostile", "prompt": HOSTILE_TEXT}]


def run_hostile_audit(test, tag="audit", gates=(), code=0):
    """Runs the standard audit plus the hostile prompt, writing every format, with the gate
    flags `gates` and expecting exit `code`; returns the paths by format name and the
    endpoint."""
    endpoint = test.start_endpoint(hostile_script(), name=tag)
    suite = test.write_suite(f"{tag}-suite.jsonl", hostile_suite())
    paths = {"db": test.path(f"{tag}.db")}
    args = ["audit", "--suite", suite, "--endpoint", endpoint.url, "--api", "openai-chat",
            "--model", std.MODEL, "--runs", str(std.RUNS),
            "--concurrency", ",".join(map(str, std.LEVELS)),
            "--fragile-window", str(std.WINDOW), "--seed", str(std.SEED), "--db", paths["db"]]
    for fmt, ext in (("json", "json"), ("html", "html"), ("junit", "junit.xml"),
                     ("markdown", "md")):
        paths[fmt] = test.path(f"{tag}.{ext}")
        args += [f"--{fmt}", paths[fmt]]
    run = test.run_llmrepro(args + list(gates))
    test.assert_exit(run, code)
    return paths, endpoint


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


class ReportOutputs(h.E2ETestCase):
    def test_report_rerenders_every_format_from_the_database(self):
        audit, endpoint = run_hostile_audit(self)
        report = self.load_report(audit["json"])
        self.assertEqual(report["summary"]["unstable_prompts"], 3)
        self.assertEqual(report["summary"]["fragile_prompts"], 3)
        # The endpoint is gone: `report` must need nothing but the database.
        endpoint.process.terminate()
        endpoint.process.wait(timeout=5)
        again = {"db": audit["db"]}
        args = ["report", "--db", audit["db"], "--quiet"]
        for fmt, ext in (("json", "json"), ("html", "html"), ("junit", "junit.xml"),
                         ("markdown", "md")):
            again[fmt] = self.path(f"again.{ext}")
            args += [f"--{fmt}", again[fmt]]
        run = self.run_llmrepro(args)
        self.assert_exit(run, 0)
        self.assertEqual(run.stdout, "", "--quiet printed something")
        for fmt in ("json", "html", "junit", "markdown"):
            with self.subTest(format=fmt):
                self.assertEqual(read_bytes(again[fmt]), read_bytes(audit[fmt]),
                                 f"`report --{fmt}` differs from the audit's")
        self.load_report(again["json"])

    def junit(self, path):
        """The suite element and its test cases by (classname, name), after the browser suite's
        checker (tests/browser/check_junit_xml.py) has passed the file."""
        checker = os.path.join(h.ARGS.source_dir, "tests", "browser", "check_junit_xml.py")
        checked = subprocess.run([sys.executable, checker, path], capture_output=True, text=True,
                                 timeout=60)
        self.assertEqual(checked.returncode, 0, checked.stderr)
        root = ElementTree.parse(path).getroot()
        self.assertEqual(root.tag, "testsuites")
        suite = root.find("testsuite")
        return suite, {(c.get("classname"), c.get("name")): c for c in suite.findall("testcase")}

    def test_junit_without_a_gate_fails_nothing(self):
        # No --fail-on: the verdict cannot fail on stability (exit 0), so a CI system reading the
        # JUnit must not fail either; the three unstable prompts and the fragile one are findings.
        audit, _ = run_hostile_audit(self)
        suite, cases = self.junit(audit["junit"])
        prompts = ["capital", "feynman", "primes", "hello", "hostile"]
        self.assertEqual(sorted(cases), sorted([("llmrepro.gate", "--max-failed-rate")]
                                               + [("llmrepro.audit", p) for p in prompts]))
        self.assertEqual((suite.get("tests"), suite.get("failures"), suite.get("errors"),
                          suite.get("skipped")), ("6", "0", "0", "0"))
        self.assertEqual(suite.findall("testcase/failure"), [])
        properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
        self.assertEqual((properties["verdict"], properties["unstable_prompts"]), ("pass", "3"))
        outs = {name: c.find("system-out").text.splitlines()[0] for (_, name), c in cases.items()
                if c.find("system-out") is not None}
        self.assertEqual(
            outs["primes"], "finding, no gate failed on it: unstable: 2 distinct completions in "
            "15 runs; first divergence at token 1: \u201c,\u201d (-0.3000) vs \u201c and\u201d "
            "(-0.9000), gap 0.6 nats")
        self.assertEqual(outs["hello"], "finding, no gate failed on it: fragile: min gap 0.01 "
                         "nats at token 2 is below \u03c4 = 0.05")
        self.assertEqual(outs["--max-failed-rate"], "passed: 0 of 75 requests failed after their "
                         "retries, limit 0.000 (--max-failed-rate)")
        self.assertNotIn("capital", outs)
        # A gate that passes (3 of 5 judged prompts unstable is within 0.6) fails nothing either.
        audit, _ = run_hostile_audit(self, "within", ["--max-unstable-rate", "0.6"])
        suite, cases = self.junit(audit["junit"])
        self.assertEqual((suite.get("tests"), suite.get("failures"), suite.get("errors")),
                         ("7", "0", "0"))
        self.assertIsNone(cases[("llmrepro.gate", "--max-unstable-rate")].find("failure"))

    def test_junit_with_a_gate_fails_the_gate_and_the_prompts_it_names(self):
        audit, _ = run_hostile_audit(self, "gated", ["--fail-on", "unstable"], code=1)
        suite, cases = self.junit(audit["junit"])
        self.assertEqual((suite.get("tests"), suite.get("failures"), suite.get("errors")),
                         ("7", "4", "0"))
        failing = {name: c.find("failure") for (_, name), c in cases.items()
                   if c.find("failure") is not None}
        self.assertEqual(sorted(failing), ["--fail-on unstable", "feynman", "hostile", "primes"])
        gate = failing.pop("--fail-on unstable")
        self.assertEqual(gate.get("message"), "3 of 5 judged prompts unstable (--fail-on unstable)")
        self.assertEqual(gate.text, "prompts: feynman, primes, hostile\n")
        self.assertEqual({name: f.get("type") for name, f in failing.items()},
                         {"feynman": "unstable", "primes": "unstable", "hostile": "unstable"})
        messages = {name: f.get("message") for name, f in failing.items()}
        self.assertEqual(
            messages["feynman"],
            "unstable: 2 distinct completions in 15 runs; first divergence at token 3: "
            "\u201c in\u201d (-0.6800) vs \u201c on\u201d (-0.7000), gap 0.02 nats; also fragile "
            "(--fail-on unstable)")
        self.assertEqual(
            messages["primes"],
            "unstable: 2 distinct completions in 15 runs; first divergence at token 1: "
            "\u201c,\u201d (-0.3000) vs \u201c and\u201d (-0.9000), gap 0.6 nats "
            "(--fail-on unstable)")
        # The parser hands back the hostile text exactly: the XML escaped it, nothing was lost.
        self.assertEqual(
            messages["hostile"],
            "unstable: 2 distinct completions in 15 runs; first divergence at token 1: "
            "\u201c <img src=x onerror=alert(1)>\u201d (-0.4000) vs "
            "\u201c \"q'uote\" & <i>\u201d (-0.4500), gap 0.05 nats; also fragile "
            "(--fail-on unstable)")
        body = failing["hostile"].text
        self.assertIn("</script><script>alert(1)</script> <img src=x onerror=alert(1)> end", body)
        self.assertIn("</script><script>alert(1)</script> \"q'uote\" & <i>", body)
        # The fragile but stable prompt is named by no failing gate: a finding, not a failure.
        self.assertIsNone(cases[("llmrepro.audit", "hello")].find("failure"))
        self.assertIn("fragile: min gap 0.01 nats",
                      cases[("llmrepro.audit", "hello")].find("system-out").text)
        # --fail-on fragile names the fragile prompts (feynman and hostile are fragile too).
        audit, _ = run_hostile_audit(self, "fragile", ["--fail-on", "fragile"], code=1)
        suite, cases = self.junit(audit["junit"])
        failing = sorted(name for (_, name), c in cases.items() if c.find("failure") is not None)
        self.assertEqual(failing, ["--fail-on fragile", "feynman", "hello", "hostile"])

    def test_markdown_has_verdict_summary_and_worst_prompts(self):
        audit, _ = run_hostile_audit(self)
        with open(audit["markdown"], encoding="utf-8") as f:
            text = f.read()
        # Each level's drift as the JSON counts it (no logprob moves in the standard script).
        positions = [lv["logprob_drift"]["positions_compared"]
                     for lv in self.load_report(audit["json"])["summary"]["by_concurrency"]]
        lines = text.splitlines()
        # No gate judged stability: the title says so instead of a green PASS.
        self.assertEqual(lines[0], "## llmrepro audit: \u26a0\ufe0f NO STABILITY GATE")
        self.assertIn("NO STABILITY GATE: 3 of 5 prompts unstable", text)
        for row in ("| prompts | 5 |", "| requests (failed) | 75 (0) |",
                    "| stable prompts | 2 of 5 |", "| unstable prompts | 3 of 5 |",
                    "| inconclusive prompts | 0 of 5 |",
                    f"| c=1 | 3 | 0 | serial | 0 nats over {positions[0]} positions |",
                    f"| c=4 | 3 | 0 | 0 | 0 nats over {positions[-1]} positions |",
                    "| stability tiers | bitwise 2 \u00b7 token 0 \u00b7 unstable 3 \u00b7 "
                    "inconclusive 0 |", "| max logprob drift | 0 nats |",
                    "| fragile prompts | 3 |", "| TARr | 40.0% |"):
            self.assertIn(row, lines)
        self.assertIn("### Worst prompts", lines)
        worst = lines[lines.index("### Worst prompts") + 2:]
        self.assertEqual(worst[0], "| prompt | status | distinct | first divergence | gap (nats) "
                                   "| candidates |")
        rows = [line for line in worst[2:] if line.startswith("| ")]
        ids = [row.split("|")[1].strip() for row in rows]
        self.assertEqual(sorted(ids[:3]), ["feynman", "hostile", "primes"])
        # Markdown is rendered by the forge: model text must not become markup there either.
        self.assertNotIn("<img", text)
        self.assertNotIn("<script>", text)
        self.assertLess(len(text.encode("utf-8")), 65536, "too long for a PR comment")

    def test_report_of_a_missing_database_is_an_input_error(self):
        missing = self.path("absent.db")
        run = self.run_llmrepro(["report", "--db", missing, "--json", self.path("x.json")])
        self.assert_exit(run, 2)
        self.assertIn("absent.db", run.stderr)
        self.assertFalse(os.path.exists(self.path("x.json")))

    def test_an_unwritable_report_path_is_named_and_nothing_is_lost(self):
        audit, endpoint = run_hostile_audit(self)
        endpoint.process.terminate()
        endpoint.process.wait(timeout=5)
        before = read_bytes(audit["db"])
        missing_dir = self.path(os.path.join("no-such-dir", "r.json"))
        run = self.run_llmrepro(["report", "--db", audit["db"], "--json", missing_dir])
        # Checked before the database is read: a usage error naming the path and its directory.
        self.assert_exit(run, 2)
        self.assertIn(f"--json '{missing_dir}' is in a directory that does not exist "
                      f"('{self.path('no-such-dir')}')", run.stderr)
        # A directory where the file should go: refused before any report is written.
        directory = self.path("a-directory.json")
        os.mkdir(directory)
        run = self.run_llmrepro(["report", "--db", audit["db"], "--json", directory,
                                 "--html", self.path("fine.html")])
        self.assert_exit(run, 2)
        self.assertIn(f"--json '{directory}' is a directory: name a file", run.stderr)
        self.assertFalse(os.path.exists(self.path("fine.html")))
        self.assertEqual([n for n in os.listdir(self.tmp) if n.endswith(".tmp")], [])
        self.assertTrue(os.path.isdir(directory))
        self.assertEqual(read_bytes(audit["db"]), before, "a failed report changed the database")


if __name__ == "__main__":
    h.main()
