#!/usr/bin/python3
"""Real audits and a real diff, rendered in headless Chromium.

usage: test_browser_reports.py --binary LLMREPRO --source-dir REPO --artifacts DIR

- The HTML of a real audit against a scripted endpoint whose completions carry `</script>`,
  `<img src=x onerror=alert(1)>` and quotes (tests/e2e/test_report_outputs.py) passes
  check_report_html.py with the hostile strings shown as text and the verdict the audit's JSON
  report states (headline, status, warnings); the same page re-rendered by `llmrepro report --db`
  passes too, against the JSON rendered beside it.
- The HTML of `llmrepro diff` of two real audits, one much less stable
  (tests/e2e/test_diff_audits.py), passes check_report_html.py --diff and names the regression.
Screenshots (1280x800, what a reviewer sees first) are kept in DIR as audit-report.png and
diff-report.png. Exits 77 (skip) when no Chromium is installed.
"""

import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))

import e2e_harness as h  # noqa: E402
import test_diff_audits as diffs  # noqa: E402
import test_report_outputs as reports  # noqa: E402

CHECKER = os.path.join(HERE, "check_report_html.py")
ARTIFACTS = {"dir": None}


def chromium_installed():
    return any(shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome"))


class BrowserReports(h.E2ETestCase):
    def artifact(self, name):
        return os.path.join(ARTIFACTS["dir"] or self.tmp, name)

    def check_in_browser(self, html, screenshot, *flags, hostile=False, report_json=None):
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        env.pop("LLMREPRO_EXPECT_HOSTILE", None)
        if hostile:
            env["LLMREPRO_EXPECT_HOSTILE"] = "1"
        if report_json is not None:
            flags = (*flags, "--json", report_json)
        done = subprocess.run([sys.executable, CHECKER, *flags, html, screenshot],
                              capture_output=True, text=True, timeout=300, env=env, check=False)
        self.assertEqual(done.returncode, 0, f"{done.stdout}\n{done.stderr}")
        self.assertGreater(os.path.getsize(screenshot), 10000)

    def test_real_audit_html_keeps_hostile_text_as_text(self):
        audit, endpoint = reports.run_hostile_audit(self)
        with open(audit["html"], encoding="utf-8") as f:
            page = f.read()
        # The raw file holds the markup escaped only; the browser check proves it renders as text.
        self.assertNotIn("<img src=x", page)
        self.assertEqual(page.count("<script"), 1)
        self.check_in_browser(audit["html"], self.artifact("audit-report.png"), hostile=True,
                              report_json=audit["json"])
        endpoint.process.terminate()
        endpoint.process.wait(timeout=5)
        again = self.path("again.html")
        again_json = self.path("again.json")
        run = self.run_llmrepro(["report", "--db", audit["db"], "--html", again, "--json",
                                 again_json, "--quiet"])
        self.assert_exit(run, 0)
        self.check_in_browser(again, self.path("again.png"), hostile=True, report_json=again_json)

    def test_real_diff_html_names_the_regression(self):
        a = diffs.DiffAudits.audit(self, "a", diffs.script(False), diffs.suite(), diffs.RUNS,
                                   diffs.LEVELS)
        b = diffs.DiffAudits.audit(self, "b", diffs.script(True), diffs.suite(), diffs.RUNS,
                                   diffs.LEVELS)
        html = self.path("diff.html")
        run = self.run_llmrepro(["diff", a, b, "--html", html, "--quiet"])
        self.assert_exit(run, 1)
        with open(html, encoding="utf-8") as f:
            page = f.read()
        self.assertIn("REGRESSION", page)
        for pid in diffs.DEGRADED:
            self.assertIn(f"<code>{pid}</code>", page)
        self.check_in_browser(html, self.artifact("diff-report.png"), "--diff")


def main():
    if "--artifacts" in sys.argv:
        at = sys.argv.index("--artifacts")
        ARTIFACTS["dir"] = os.path.abspath(sys.argv[at + 1])
        del sys.argv[at:at + 2]
    if not chromium_installed():
        print("SKIP: no chromium installed (apt-get install -y chromium)")
        sys.exit(77)
    h.main()


if __name__ == "__main__":
    main()
