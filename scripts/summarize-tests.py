#!/usr/bin/env python3
"""Adds up JUnit XML reports (lit and pytest write them) and prints one final
line `N passed, N failed[, N skipped]`. Exits non-zero when a test failed or a
report is missing, so a suite that did not run counts as a failure."""

import sys
import xml.etree.ElementTree as ET


def count(path):
    passed = failed = skipped = 0
    for case in ET.parse(path).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped


def main(paths):
    totals = [0, 0, 0]
    missing = 0
    for path in paths:
        try:
            result = count(path)
        except (OSError, ET.ParseError) as err:
            print(f"summarize-tests: no results in {path}: {err}")
            missing += 1
            continue
        print(f"{path}: {result[0]} passed, {result[1]} failed, {result[2]} skipped")
        totals = [t + r for t, r in zip(totals, result)]
    passed, failed, skipped = totals
    failed += missing
    suffix = f", {skipped} skipped" if skipped else ""
    print(f"{passed} passed, {failed} failed{suffix}")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
