#!/usr/bin/python3
"""Parses an llmrepro JUnit XML file with a real XML parser (expat) and checks its shape.

usage: check_junit_xml.py JUNIT_FILE

One <testsuite> inside <testsuites>; its tests/failures/errors attributes equal the counts of
<testcase>, <failure> and <error> elements; every prompt's test case has classname
"llmrepro.audit" and a name; every failure and error has a message. The suite's properties carry
"verdict" (pass, fail or error) and "headline"; unless the verdict passed there is exactly one
test case classname "llmrepro.verdict" name "verdict" holding a <failure> (fail) or an <error>
(error) whose message is the headline, and none when it passed. Exits 0 when all hold, 1 with a
message otherwise.
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
        for attribute, actual in (("tests", len(cases)), ("failures", len(failures)), ("errors", len(errors))):
            if suite.get(attribute) != str(actual):
                problems.append(f"testsuite {attribute}={suite.get(attribute)!r} but {actual} found")
        properties = {p.get("name"): p.get("value") for p in suite.findall("properties/property")}
        status = properties.get("verdict")
        if status not in ("pass", "fail", "error"):
            problems.append(f"the verdict property is {status!r}")
        if not properties.get("headline"):
            problems.append("no headline property")
        verdicts = [c for c in cases if c.get("classname") == "llmrepro.verdict"]
        if status == "pass" and verdicts:
            problems.append("a passing verdict has a test case")
        if status in ("fail", "error"):
            outcome = "failure" if status == "fail" else "error"
            if len(verdicts) != 1 or verdicts[0].get("name") != "verdict":
                problems.append(f"expected one verdict test case, found {len(verdicts)}")
            elif verdicts[0].find(outcome) is None:
                problems.append(f"the {status} verdict's test case has no <{outcome}>")
            elif verdicts[0].find(outcome).get("message") != properties.get("headline"):
                problems.append("the verdict test case's message is not the headline")
        for case in cases:
            if case.get("classname") == "llmrepro.verdict":
                continue
            if case.get("classname") != "llmrepro.audit" or not case.get("name"):
                problems.append(f"test case without classname llmrepro.audit or name: {case.attrib}")
        for outcome in failures + errors:
            if not outcome.get("message"):
                problems.append("a failure or error without a message")
    if problems:
        for problem in problems:
            print("FAIL:", problem, file=sys.stderr)
        sys.exit(1)
    print(f"ok: {len(suites[0].findall('testcase'))} test cases, well-formed")


if __name__ == "__main__":
    main()
