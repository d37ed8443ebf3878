#!/usr/bin/python3
"""Parses an llmrepro JUnit XML file with a real XML parser (expat) and checks its shape.

usage: check_junit_xml.py JUNIT_FILE

One <testsuite> inside <testsuites>; its tests/failures/errors/skipped attributes equal the counts
of <testcase>, <failure>, <error> and <skipped> elements; every test case has classname
"llmrepro.gate" (one per gate), "llmrepro.audit..." (one per prompt) or "llmrepro.verdict", and
a name; every failure, error and skip has a message. The suite's properties carry "verdict"
(pass, fail or error) and "headline". The JUnit fails exactly when the exit code does: a
passing verdict has no failure and no error; a failed one has a failing gate case and no
error; an error verdict has exactly one test case classname "llmrepro.verdict" name "verdict"
holding an <error> whose message is the headline (and none otherwise); a prompt's case fails
only where a gate's case fails. Exits 0 when all hold, 1 with a message otherwise.
"""
import sys
import xml.etree.ElementTree as ElementTree


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    try:
        root = ElementTree.parse(sys.argv[1]).getroot()
    except ElementTree.ParseError as error:
        sys.exit(f"FAIL: not well-formed XML: {error}")
    problems = []
    if root.tag != "testsuites":
        problems.append(f"root element is <{root.tag}>, expected <testsuites>")
    suites = root.findall("testsuite")
    if len(suites) != 1:
        problems.append(f"expected one <testsuite>, found {len(suites)}")
    for suite in suites:
        cases = suite.findall("testcase")
        failures = suite.findall("testcase/failure")
        errors = suite.findall("testcase/error")
        skips = suite.findall("testcase/skipped")
        for attribute, actual in (("tests", len(cases)), ("failures", len(failures)),
                                  ("errors", len(errors)), ("skipped", len(skips))):
            if suite.get(attribute) != str(actual):
                problems.append(f"testsuite {attribute}={suite.get(attribute)!r} but {actual} found")
        properties = {p.get("name"): p.get("value") for p in suite.findall("properties/property")}
        status = properties.get("verdict")
        if status not in ("pass", "fail", "error"):
            problems.append(f"the verdict property is {status!r}")
        if not properties.get("headline"):
            problems.append("no headline property")
        verdicts = [c for c in cases if c.get("classname") == "llmrepro.verdict"]
        gates = [c for c in cases if c.get("classname") == "llmrepro.gate"]
        failed_gates = [c for c in gates if c.find("failure") is not None]
        failed_prompts = [c for c in cases if c.get("classname", "").startswith("llmrepro.audit")
                          and c.find("failure") is not None]
        if status == "pass" and (failures or errors):
            problems.append("a passing verdict has a failure or an error")
        if status == "fail" and (not failed_gates or errors):
            problems.append("a failed verdict without a failing gate case, or with an error")
        if failed_prompts and not failed_gates:
            problems.append("a prompt fails where no gate failed")
        if status == "error":
            if len(verdicts) != 1 or verdicts[0].get("name") != "verdict":
                problems.append(f"expected one verdict test case, found {len(verdicts)}")
            elif verdicts[0].find("error") is None:
                problems.append("the error verdict's test case has no <error>")
            elif verdicts[0].find("error").get("message") != properties.get("headline"):
                problems.append("the verdict test case's message is not the headline")
        elif verdicts:
            problems.append(f"a {status} verdict has a verdict test case")
        for case in cases:
            classname = case.get("classname", "")
            known = classname in ("llmrepro.verdict", "llmrepro.gate") or \
                classname == "llmrepro.audit" or classname.startswith("llmrepro.audit.")
            if not known or not case.get("name"):
                problems.append(f"test case without a known classname or a name: {case.attrib}")
        for outcome in failures + errors + skips:
            if not outcome.get("message"):
                problems.append("a failure, error or skip without a message")
    if problems:
        for problem in problems:
            print("FAIL:", problem, file=sys.stderr)
        sys.exit(1)
    print(f"ok: {len(suites[0].findall('testcase'))} test cases, well-formed")


if __name__ == "__main__":
    main()
