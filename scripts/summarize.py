#!/usr/bin/env python3
"""Counts test results from meson testlog.json files and prints one closing
line: "N passed, N failed, N skipped". A Criterion executable counts as its
test cases (its "Synthesis" line); any other test counts as one. Exit 1 if
anything failed."""
import json
import re
import sys

SYNTH = re.compile(r"Synthesis: Tested: (\d+) \| Passing: (\d+) \| Failing: (\d+) \| Crashing: (\d+)")


def count(path):
    passed = failed = skipped = 0
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            t = json.loads(line)
            result = t.get("result", "")
            out = (t.get("stdout") or "") + (t.get("stderr") or "")
            m = SYNTH.findall(out)
            if result == "SKIP":
                skipped += 1
            elif m and result in ("OK", "FAIL"):
                tested, ok, failing, crashing = map(int, m[-1])
                passed += ok
                failed += failing + crashing
                skipped += tested - ok - failing - crashing
                if result == "FAIL" and failing + crashing == 0:
                    failed += 1  # the executable failed outside any test case
            elif result == "OK":
                passed += 1
            else:
                failed += 1
    return passed, failed, skipped


def main():
    total = [0, 0, 0]
    for path in sys.argv[1:]:
        try:
            counts = count(path)
        except (OSError, ValueError) as e:
            # The build or the test run never got as far as a log: a failure.
            print(f"summarize: no usable test log {path}: {e}", file=sys.stderr)
            counts = (0, 1, 0)
        for i, v in enumerate(counts):
            total[i] += v
    print(f"{total[0]} passed, {total[1]} failed, {total[2]} skipped")
    return 1 if total[1] else 0


if __name__ == "__main__":
    sys.exit(main())
