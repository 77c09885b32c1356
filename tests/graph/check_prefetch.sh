#!/bin/sh
# SPDX-License-Identifier: MIT
# The replay's node prefetch (weft_gnode_prefetch, src/graph/replay.h) is in
# the library: FUNCTION, the function that runs replayed nodes (meson passes
# weft_gnode_run, src/graph/run.c; LTO may add a suffix to its name), holds
# prefetch instructions. GCC 12 once deleted every call to the prefetch (a
# function of loads and prefetches alone looked effect-free to it) and
# nothing failed: docs/bench-2026-11-27-replay-prefetch.txt.
#
# Fails when the library has no FUNCTION while it has symbols (the function
# was renamed or folded into another: this check would prove nothing, so
# it must be pointed at the new one), or when FUNCTION has no prefetch.
# Exit 77 (skipped) only where the check cannot be made at all: no objdump,
# another architecture, a library without symbols (stripped).
#
# usage: check_prefetch.sh <library-dir> <function>
set -u

lib=${1:?library dir}/libweft.so.0
fn=${2:?function that holds the prefetch}
command -v objdump >/dev/null 2>&1 || { echo "no objdump: skipped"; exit 77; }
case $(uname -m) in
  x86_64) insn='prefetch' ;;
  aarch64) insn='prfm' ;;
  *) echo "$(uname -m): skipped"; exit 77 ;;
esac
[ -r "$lib" ] || { echo "FAIL: no $lib"; exit 1; }

dis=$(objdump -d --no-show-raw-insn "$lib") || { echo "FAIL: objdump $lib"; exit 1; }
# Function labels at all? A public entry point always has one unless the
# library was stripped.
if ! printf '%s\n' "$dis" | grep -q '^[0-9a-f]* <weft_push>:$'; then
  echo "$lib has no symbols (stripped?): skipped"
  exit 77
fi
body=$(printf '%s\n' "$dis" | awk -v fn="$fn" '
  $0 ~ "^[0-9a-f]+ <" fn "(\\.[A-Za-z_0-9.]+)?>:$" { f = 1; next }
  /^$/ { f = 0 }
  f')
if [ -z "$body" ]; then
  echo "FAIL: $fn not found in $lib, which has symbols: point this check (tests/graph/meson.build) at the function that runs replayed nodes"
  exit 1
fi
n=$(printf '%s\n' "$body" | grep -c "$insn")
if [ "$n" -lt 1 ]; then
  echo "FAIL: $fn in $lib has no $insn instruction: the replay's node prefetch is gone"
  exit 1
fi
echo "$fn: $n $insn instructions"
