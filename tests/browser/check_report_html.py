#!/usr/bin/python3
"""Renders an llmrepro HTML report in headless Chromium and checks the DOM after its script ran.

usage: check_report_html.py [--diff] [--sections] [--json REPORT_JSON] HTML_FILE SCREENSHOT_PNG

Audit report (default): asserts that the summary, the verdict, the prompt table rows and the
SVG charts are there, that the table script ran (it writes the "N of M shown" count), and that
hostile model text stayed text: no <img> element, exactly one <script> element (ours). The
verdict section carries one status class (pass, fail, error, or nogate for a pass no stability
gate judged) that agrees with its data-status and badge, and #verdict-headline is not empty.
With --json (the same audit's JSON report), the page states the JSON's verdict: #verdict-headline
reads exactly summary.verdict.headline, the status and class match summary.verdict, and #warnings
holds one <li> per line of "warnings" (no #warnings section when there are none).
With LLMREPRO_EXPECT_HOSTILE=1 the hostile strings must also be shown as text.
With --sections (an audit with probe kinds, two endpoints and semantic agreement), the probe-kind
panels, the endpoint comparison and the semantic agreement sections are there with their table
rows, and their hostile ids and URLs are shown as text, not markup.
Diff report (--diff): the verdict, the overall metrics and the prompt table are there, and
the page holds no script and no <img> at all.
Saves a screenshot of the first screen a reviewer sees (1280x800). Exits 0 when every check
holds, 1 with a message otherwise, 77 (skip) when no Chromium is installed.
"""
import html.parser
import json
import os
import shutil
import subprocess
import sys
import tempfile

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--hide-scrollbars"]


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def run_chromium(chromium, extra, url):
    with tempfile.TemporaryDirectory(prefix="llmrepro-chromium-") as profile:
        command = [chromium, *FLAGS, f"--user-data-dir={profile}", *extra, url]
        result = subprocess.run(command, capture_output=True, timeout=120, check=False)
    if result.returncode != 0:
        sys.exit(f"chromium failed ({result.returncode}): {result.stderr.decode(errors='replace')[-2000:]}")
    return result.stdout.decode("utf-8", errors="replace")


class Dom(html.parser.HTMLParser):
    """Counts the elements of the dumped DOM by tag, id and class."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags = {}
        self.ids = set()
        self.classes = {}
        self.text = []
        self.rows_in_prompt_table = 0
        self.rows_in = {}
        self._table = None
        self._in_prompt_table = False
        self._in_body = False
        self._shown_count = None
        self._capture = None
        self.verdict_attrs = None
        self.headline = None
        self._headline_depth = 0
        self.warning_items = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if "id" in attrs:
            self.ids.add(attrs["id"])
        for cls in (attrs.get("class") or "").split():
            self.classes[cls] = self.classes.get(cls, 0) + 1
        if tag == "section" and attrs.get("id"):
            self._table = attrs["id"]
        if tag == "tr" and self._table is not None:
            self.rows_in[self._table] = self.rows_in.get(self._table, 0) + 1
        if tag == "table" and attrs.get("id") == "prompt-table":
            self._in_prompt_table = True
        if self._in_prompt_table and tag == "tbody":
            self._in_body = True
        if self._in_body and tag == "tr":
            self.rows_in_prompt_table += 1
        if attrs.get("id") == "shown-count":
            self._capture = "shown"
            self._shown_count = ""
        if tag == "section" and attrs.get("id") == "verdict":
            self.verdict_attrs = attrs
        if self._headline_depth > 0 and tag == "div":
            self._headline_depth += 1
        if attrs.get("id") == "verdict-headline":
            self.headline = ""
            self._headline_depth = 1
        if tag == "li" and self._table == "warnings":
            self.warning_items += 1

    def handle_endtag(self, tag):
        if tag == "table" and self._in_prompt_table:
            self._in_prompt_table = False
            self._in_body = False
        if self._capture == "shown" and tag == "span":
            self._capture = None
        if self._headline_depth > 0 and tag == "div":
            self._headline_depth -= 1

    def handle_data(self, data):
        self.text.append(data)
        if self._capture == "shown":
            self._shown_count += data
        if self._headline_depth > 0:
            self.headline += data

    @property
    def shown_count(self):
        return (self._shown_count or "").strip()


def main():
    args = sys.argv[1:]
    report_json = None
    if "--json" in args:
        at = args.index("--json")
        if at + 1 >= len(args):
            sys.exit(__doc__)
        with open(args[at + 1], encoding="utf-8") as f:
            report_json = json.load(f)
        del args[at:at + 2]
    diff = "--diff" in args
    sections = "--sections" in args
    args = [a for a in args if a not in ("--diff", "--sections")]
    if len(args) != 2:
        sys.exit(__doc__)
    html_file, screenshot = os.path.abspath(args[0]), os.path.abspath(args[1])
    chromium = find_chromium()
    if chromium is None:
        print("SKIP: no chromium installed (apt-get install -y chromium)")
        sys.exit(77)
    url = "file://" + html_file
    dom_text = run_chromium(chromium, ["--dump-dom", "--virtual-time-budget=2000"], url)
    dom = Dom()
    dom.feed(dom_text)
    text = "".join(dom.text)
    failures = []

    def check(condition, message):
        if not condition:
            failures.append(message)

    if diff:
        for element_id in ("verdict", "metrics", "prompts"):
            check(element_id in dom.ids, f"no element with id {element_id}")
        # Header rows included: at least one metric and one prompt besides the headers.
        check(dom.rows_in.get("metrics", 0) >= 2, "the metrics table has no rows")
        check(dom.rows_in.get("prompts", 0) >= 2, "the prompt table has no rows")
        check(dom.tags.get("script", 0) == 0, f"the diff page has {dom.tags.get('script', 0)} script(s)")
        check(dom.tags.get("img", 0) == 0, f"the diff page has {dom.tags.get('img', 0)} <img> element(s)")
        finish(chromium, url, screenshot, failures, f"ok: diff page, screenshot {screenshot}")
        return
    for element_id in ("verdict", "summary", "worst", "charts", "prompt-table", "details"):
        check(element_id in dom.ids, f"no element with id {element_id}")
    check(dom.classes.get("card", 0) >= 11, f"expected at least 11 summary cards, found {dom.classes.get('card', 0)}")
    check(dom.rows_in_prompt_table >= 1, "the prompt table has no rows")
    check(dom.tags.get("svg", 0) >= 4, f"expected at least 4 inline SVG charts, found {dom.tags.get('svg', 0)}")
    check(dom.tags.get("script", 0) == 1, f"expected exactly one script element, found {dom.tags.get('script', 0)}")
    check(dom.tags.get("img", 0) == 0, f"model text produced {dom.tags.get('img', 0)} <img> element(s)")
    check(dom.tags.get("iframe", 0) == 0, "an iframe appeared")
    check_verdict(dom, report_json, check)
    expected_count = f"{dom.rows_in_prompt_table} of {dom.rows_in_prompt_table} shown"
    check(dom.shown_count == expected_count,
          f"the table script did not run: shown-count is {dom.shown_count!r}, expected {expected_count!r}")
    if sections:
        for element_id in ("probes", "probe-sweep", "probe-mixed", "probe-prefix", "comparison",
                           "semantic"):
            check(element_id in dom.ids, f"no element with id {element_id}")
        # Three probe panels of 3 level rows (header and 2 levels) and 3 prompt rows each, plus the
        # prefix table's header and 2 prompts.
        check(dom.rows_in.get("probes", 0) == 3 * (3 + 3) + 3,
              f"the probe panels have {dom.rows_in.get('probes', 0)} table rows")
        # Endpoints: header and 2; prompts: header and 2.
        check(dom.rows_in.get("comparison", 0) == 6,
              f"the comparison has {dom.rows_in.get('comparison', 0)} table rows")
        check(dom.rows_in.get("semantic", 0) == 3,
              f"the semantic table has {dom.rows_in.get('semantic', 0)} table rows")
        check(dom.tags.get("i", 0) == 0, "a hostile id became an <i> element")
        check(dom.tags.get("x", 0) == 0, "a hostile model name became an element")
        check("drift<i>|`x`" in text, "the hostile prompt id is not shown as text")
        check("http://127.0.0.1:9/<b>|`v1`" in text, "the hostile URL is not shown as text")
        check("Warm against cold" in text, "the prefix probe's warm-against-cold table is missing")
        check("Endpoints compared" in text and "Semantic agreement" in text,
              "a section heading is missing")
    if os.environ.get("LLMREPRO_EXPECT_HOSTILE") == "1":
        check("<img src=x onerror=alert(1)>" in text, "the hostile <img> text is not shown as text")
        check("</script><script>alert(1)</script>" in text, "the hostile </script> text is not shown as text")
        check("\\u{202e}gnp.exe" in text and "\u202e" not in text,
              "the right-to-left override is not shown as its \\u{202e} marker")

    finish(chromium, url, screenshot, failures,
           f"ok: {dom.rows_in_prompt_table} prompt rows, {dom.tags.get('svg', 0)} svg, "
           f"screenshot {screenshot}")


BADGES = {"pass": "PASS", "nogate": "NO GATE", "fail": "FAIL", "error": "ERROR"}


def check_verdict(dom, report_json, check):
    """The verdict section states one verdict; with the JSON report, the JSON's."""
    attrs = dom.verdict_attrs or {}
    classes = set((attrs.get("class") or "").split())
    status_classes = classes & set(BADGES)
    check(len(status_classes) == 1, f"the verdict section has status classes {sorted(status_classes)}")
    status_class = next(iter(status_classes), None)
    data_status = attrs.get("data-status")
    check(data_status in ("pass", "fail", "error"), f"the verdict's data-status is {data_status!r}")
    check(status_class == data_status or (status_class == "nogate" and data_status == "pass"),
          f"verdict class {status_class!r} disagrees with data-status {data_status!r}")
    check(dom.headline is not None and dom.headline.strip() != "", "no #verdict-headline text")
    if report_json is None:
        return
    verdict = report_json["summary"]["verdict"]
    expected_class = verdict["status"]
    if expected_class == "pass" and not verdict["stability_gated"]:
        expected_class = "nogate"
    check(data_status == verdict["status"],
          f"the page's verdict is {data_status!r}, the JSON's {verdict['status']!r}")
    check(status_class == expected_class,
          f"the verdict section's class is {status_class!r}, expected {expected_class!r}")
    check(dom.headline == verdict["headline"],
          f"#verdict-headline reads {dom.headline!r}, the JSON's headline is {verdict['headline']!r}")
    warnings = report_json["warnings"]
    check(("warnings" in dom.ids) == bool(warnings),
          f"#warnings present: {'warnings' in dom.ids}, JSON warnings: {len(warnings)}")
    check(dom.warning_items == len(warnings),
          f"#warnings lists {dom.warning_items} items, the JSON {len(warnings)}")


def finish(chromium, url, screenshot, failures, ok_line):
    """Takes the screenshot, then reports every failure (exit 1) or the ok line."""
    if os.path.exists(screenshot):
        os.remove(screenshot)
    run_chromium(chromium, [f"--screenshot={screenshot}", "--window-size=1280,800"], url)
    if not (os.path.exists(screenshot) and os.path.getsize(screenshot) > 10000):
        failures.append(f"no screenshot written to {screenshot}")
    if failures:
        for failure in failures:
            print("FAIL:", failure, file=sys.stderr)
        sys.exit(1)
    print(ok_line)


if __name__ == "__main__":
    main()
