#!/usr/bin/python3
"""A JUnit XML checker written from the format's description, not from dtnn's writer.

The rules (the Apache Ant JUnit report schema as published by Windy Road, JUnit.xsd, and the Jenkins
description of how it reads the format):
  - the root is <testsuites> holding <testsuite> elements, or a single <testsuite>;
  - <testsuite> requires name and tests; failures, errors, skipped, time, timestamp, hostname, id, package,
    disabled are optional; its children are <properties>, <testcase>, <system-out>, <system-err>;
  - tests / failures / errors / skipped, when present, are non-negative integers equal to the number of
    testcases, of testcases with a <failure>, with an <error>, and with a <skipped> (and no failure/error);
    the same attributes on <testsuites> are the sums over its suites;
  - <testcase> requires name and classname (time optional, a number of seconds); its children are at most one
    of <skipped>, <error>, <failure> (message and type attributes; text is the details), then <system-out>
    and <system-err>, in that order;
  - time attributes are decimal numbers >= 0.

Usage: junit_check.py FILE [--tests N] [--failures N] [--skipped N]
Exit 0 when FILE is well-formed JUnit XML (and has the counts asked for), else 1 with the broken rule.
"""

import argparse
import sys
import xml.etree.ElementTree as ET

SUITE_ATTRS = {"name", "tests", "failures", "errors", "skipped", "time", "timestamp", "hostname", "id",
               "package", "disabled", "file"}
SUITES_ATTRS = {"name", "tests", "failures", "errors", "skipped", "time", "disabled"}
CASE_ATTRS = {"name", "classname", "time", "assertions", "status", "file", "line"}
OUTCOMES = ("skipped", "error", "failure")


class Broken(Exception):
    pass


def count_attr(element, name):
    value = element.get(name)
    if value is None:
        return None
    if not value.isdigit():
        raise Broken(f"<{element.tag}> {name}=\"{value}\" is not a non-negative integer")
    return int(value)


def check_time(element):
    value = element.get("time")
    if value is None:
        return
    try:
        if float(value) < 0:
            raise ValueError
    except ValueError:
        raise Broken(f"<{element.tag}> time=\"{value}\" is not a number of seconds >= 0")


def check_case(case):
    for attr in case.attrib:
        if attr not in CASE_ATTRS:
            raise Broken(f"<testcase> has an unknown attribute {attr}")
    for attr in ("name", "classname"):
        if not case.get(attr):
            raise Broken(f"<testcase> without {attr}")
    check_time(case)
    children = [c.tag for c in case]
    outcomes = [t for t in children if t in OUTCOMES]
    if len(outcomes) > 1:
        raise Broken(f"testcase {case.get('name')!r} has {outcomes}: at most one outcome")
    order = {"skipped": 0, "error": 0, "failure": 0, "system-out": 1, "system-err": 2}
    last = -1
    for tag in children:
        if tag not in order:
            raise Broken(f"testcase {case.get('name')!r} has an unknown child <{tag}>")
        if order[tag] < last:
            raise Broken(f"testcase {case.get('name')!r}: <{tag}> out of order")
        last = order[tag]
    for outcome in case:
        if outcome.tag in ("error", "failure"):
            for attr in outcome.attrib:
                if attr not in ("message", "type"):
                    raise Broken(f"<{outcome.tag}> has an unknown attribute {attr}")
        if outcome.tag == "skipped" and set(outcome.attrib) - {"message"}:
            raise Broken("<skipped> has an attribute other than message")
    return outcomes[0] if outcomes else "passed"


def check_suite(suite):
    for attr in suite.attrib:
        if attr not in SUITE_ATTRS:
            raise Broken(f"<testsuite> has an unknown attribute {attr}")
    if not suite.get("name"):
        raise Broken("<testsuite> without name")
    if suite.get("tests") is None:
        raise Broken("<testsuite> without tests")
    check_time(suite)
    tally = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for child in suite:
        if child.tag == "testcase":
            outcome = check_case(child)
            tally["tests"] += 1
            key = {"failure": "failures", "error": "errors", "skipped": "skipped"}.get(outcome)
            if key:
                tally[key] += 1
        elif child.tag not in ("properties", "system-out", "system-err"):
            raise Broken(f"<testsuite> has an unknown child <{child.tag}>")
    for name, actual in tally.items():
        stated = count_attr(suite, name)
        if stated is not None and stated != actual:
            raise Broken(f"<testsuite name={suite.get('name')!r}> says {name}={stated}, its testcases give {actual}")
    return tally


def check(path):
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as e:
        raise Broken(f"{path}: not well-formed XML ({e})")
    if root.tag == "testsuite":
        return check_suite(root)
    if root.tag != "testsuites":
        raise Broken(f"root element <{root.tag}>, expected <testsuites> or <testsuite>")
    for attr in root.attrib:
        if attr not in SUITES_ATTRS:
            raise Broken(f"<testsuites> has an unknown attribute {attr}")
    total = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in root:
        if suite.tag != "testsuite":
            raise Broken(f"<testsuites> has a child <{suite.tag}>")
        for k, v in check_suite(suite).items():
            total[k] += v
    for name, actual in total.items():
        stated = count_attr(root, name)
        if stated is not None and stated != actual:
            raise Broken(f"<testsuites> says {name}={stated}, its suites give {actual}")
    return total


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("--tests", type=int)
    parser.add_argument("--failures", type=int)
    parser.add_argument("--skipped", type=int)
    args = parser.parse_args()
    try:
        total = check(args.file)
        for name in ("tests", "failures", "skipped"):
            want = getattr(args, name)
            if want is not None and total[name] != want:
                raise Broken(f"{args.file}: {total[name]} {name}, expected {want}")
    except Broken as e:
        print(f"junit_check: {e}", file=sys.stderr)
        return 1
    print(f"junit_check: ok ({total['tests']} tests, {total['failures']} failures, {total['skipped']} skipped)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
