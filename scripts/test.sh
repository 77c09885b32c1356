#!/usr/bin/env bash
# The whole test suite: installs what is missing, configures, builds (-Werror)
# and runs every test. Usage: scripts/test.sh [BUILDDIR] [extra meson setup args]
# Prints "N passed, N failed" (Criterion test cases) as its last line.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh test
builddir=${1:-build-test}
shift || true
if [ -d "$builddir" ]; then
  meson setup --reconfigure "$builddir" -Dwerror=true -Dbench=false "$@" >/dev/null
else
  meson setup "$builddir" -Dwerror=true -Dbench=false "$@" >/dev/null
fi
ninja -C "$builddir" >/dev/null
rc=0
meson test -C "$builddir" --print-errorlogs --num-processes "${WEFT_TEST_JOBS:-2}" || rc=$?
python3 scripts/summarize.py "$builddir/meson-logs/testlog.json"
exit $rc
