#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The whole test suite: installs what is missing, configures (assertions on:
# -Db_ndebug=false; the MPI layer required: -Dmpi=enabled), builds (-Werror)
# and runs every test.
# Usage: scripts/test.sh [BUILDDIR] [extra meson setup args]
#
# Its last line is "N passed, N failed, N skipped", from meson's own records
# of the run: the Criterion suites speak TAP (tests/meson.build), so meson
# records each test case in meson-logs/testlog.junit.xml; any other test
# counts as one (its result in meson-logs/testlog.json). An executable that
# fails outside its recorded cases (a crash, a timeout, a short plan) adds a
# failure, and so does a TAP executable that recorded no case at all. A
# failed setup or build prints "0 passed, 1 failed, 0 skipped". Exit status:
# non-zero when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
builddir=${1:-build-test}
shift || true

give_up() {
  echo "test.sh: $1" >&2
  echo "0 passed, 1 failed, 0 skipped"
  exit 1
}

scripts/deps.sh test || give_up "installing the packages failed"
scripts/meson-setup.sh "$builddir" -Dwerror=true -Dbench=false -Db_ndebug=false -Dmpi=enabled "$@" >/dev/null ||
  give_up "meson setup failed ($builddir)"
ninja -C "$builddir" ${WEFT_BUILD_JOBS:+-j "$WEFT_BUILD_JOBS"} >/dev/null || give_up "the build failed ($builddir)"

# The logs of an earlier run must not stand in for this one.
rm -f "$builddir/meson-logs/testlog.json" "$builddir/meson-logs/testlog.junit.xml"
rc=0
export WEFT_TEST_REQUIRE_ASSERTS=1 # tests/api/test_assert.c: fail, not skip, without WEFT_ASSERT
meson test -C "$builddir" --print-errorlogs --num-processes "${WEFT_TEST_JOBS:-2}" || rc=$?

python3 - "$builddir" <<'EOF' || rc=1
import json
import os
import sys
import xml.etree.ElementTree as ET

build = sys.argv[1]
logs = os.path.join(build, "meson-logs")
try:
    with open(os.path.join(build, "meson-info", "intro-projectinfo.json")) as f:
        project = json.load(f)["descriptive_name"]
    with open(os.path.join(build, "meson-info", "intro-tests.json")) as f:
        protocol = {t["name"]: t["protocol"] for t in json.load(f)}
    with open(os.path.join(logs, "testlog.json")) as f:
        runs = [json.loads(line) for line in f if line.strip()]
    junit = ET.parse(os.path.join(logs, "testlog.junit.xml")).getroot()
except (OSError, ValueError, KeyError, ET.ParseError) as e:
    print(f"test.sh: no usable meson test log in {logs}: {e}", file=sys.stderr)
    print("0 passed, 1 failed, 0 skipped")
    sys.exit(1)

# meson's JUnit log: a test with TAP results is a testsuite "PROJECT.NAME"
# holding one testcase per result (a failure, error or skipped child, or none
# for a pass).
cases = {}
for suite in junit.iter("testsuite"):
    name = suite.get("name", "")
    if name.startswith(project + "."):
        cases[name[len(project) + 1:]] = [
            "failed" if c.find("failure") is not None or c.find("error") is not None
            else "skipped" if c.find("skipped") is not None else "passed"
            for c in suite.iter("testcase")]

# testlog.json names a test "PROJECT:SUITE / NAME" (with several suites),
# intro-tests.json "NAME".
BAD = {"FAIL", "ERROR", "TIMEOUT", "INTERRUPT", "UNEXPECTEDPASS"}
count = {"passed": 0, "failed": 0, "skipped": 0}
for run in runs:
    name, result = run["name"], run["result"]
    if name in cases:
        for c in cases[name]:
            count[c] += 1
        if result in BAD and "failed" not in cases[name]:
            count["failed"] += 1  # failed outside its cases: crash, timeout, short plan
            print(f"test.sh: {name}: {result} outside its test cases", file=sys.stderr)
    elif protocol.get(name, protocol.get(name.split(" / ", 1)[-1])) == "tap":
        count["failed"] += 1  # a TAP executable that recorded no test case
        print(f"test.sh: {name}: {result} with no TAP test case recorded", file=sys.stderr)
    elif result in ("OK", "EXPECTEDFAIL"):
        count["passed"] += 1
    elif result == "SKIP":
        count["skipped"] += 1
    else:
        count["failed"] += 1
if not runs:
    count["failed"] += 1
    print(f"test.sh: meson ran no test in {build}", file=sys.stderr)
print("{passed} passed, {failed} failed, {skipped} skipped".format(**count))
sys.exit(1 if count["failed"] else 0)
EOF
exit $rc
