#!/bin/sh
# The replay's node prefetch (weft_gnode_prefetch, src/deps/replay.h) is in
# the library: the function that runs replayed nodes, run_task in
# src/deps/dispatch.c (LTO may add a suffix to its name), holds prefetch
# instructions. GCC 12 once deleted every call to the prefetch (a function
# of loads and prefetches alone looked effect-free to it) and nothing
# failed: docs/bench-2026-11-27-replay-prefetch.txt. Exit 77 (skipped) where
# the check cannot be made: no objdump, another architecture, no symbols.
#
# usage: check_prefetch.sh <library-dir>
set -u

lib=${1:?library dir}/libweft.so.0
command -v objdump >/dev/null 2>&1 || { echo "no objdump: skipped"; exit 77; }
case $(uname -m) in
  x86_64) insn='prefetch' ;;
  aarch64) insn='prfm' ;;
  *) echo "$(uname -m): skipped"; exit 77 ;;
esac
[ -r "$lib" ] || { echo "FAIL: no $lib"; exit 1; }

dis=$(objdump -d --no-show-raw-insn "$lib") || { echo "FAIL: objdump $lib"; exit 1; }
body=$(printf '%s\n' "$dis" | awk '/^[0-9a-f]+ <run_task(\.[A-Za-z_0-9.]+)?>:$/ { f = 1; next }
                                  /^$/ { f = 0 }
                                  f')
if [ -z "$body" ]; then
  echo "run_task not found in $lib (stripped?): skipped"
  exit 77
fi
n=$(printf '%s\n' "$body" | grep -c "$insn")
if [ "$n" -lt 1 ]; then
  echo "FAIL: run_task in $lib has no $insn instruction: the replay's node prefetch is gone"
  exit 1
fi
echo "run_task: $n $insn instructions"
