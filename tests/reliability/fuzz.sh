#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds tests/reliability/fuzz_engine.c with libFuzzer (clang
# -fsanitize=fuzzer,address,undefined; the library's sources compiled in the
# same way, with coverage) in a temporary directory, and fuzzes the engine
# for SECONDS (default 60) from the committed seed corpus. Prints the number
# of executions. Exit 77 (skipped) without clang or libFuzzer
# (Debian: clang, libclang-rt-14-dev).
#
# Usage: fuzz.sh SOURCE_ROOT [SECONDS] [extra libFuzzer flags...]
# A crash or mismatch leaves the input as fuzz-crash-* in the current
# directory (WEFT_FUZZ_ARTIFACTS=prefix to change), to be committed under
# tests/reliability/regressions/ once understood.
# WEFT_FUZZ_BIN=path also keeps the binary (replay: BINARY FILE).
set -euo pipefail
root=$(cd "${1:?usage: fuzz.sh SOURCE_ROOT [SECONDS]}" && pwd)
secs=${2:-60}
shift $(($# >= 2 ? 2 : 1))
cc=${WEFT_FUZZ_CC:-clang}
command -v "$cc" >/dev/null || { echo "fuzz: no $cc: skipped"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-fuzz.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }' \
  >"$tmp/probe.c"
if ! "$cc" -fsanitize=fuzzer,address,undefined "$tmp/probe.c" -o "$tmp/probe" 2>/dev/null; then
  echo "fuzz: $cc cannot link libFuzzer (libclang-rt-*-dev missing?): skipped"
  exit 77
fi
# The library without hwloc, jemalloc (ASan must see every allocation) or CUDA.
printf '#define WEFT_HAVE_HWLOC 0\n#define WEFT_HAVE_JEMALLOC 0\n#define WEFT_HAVE_CUDA 0\n' \
  >"$tmp/weft_config.h"
flags=(-std=c11 -O1 -g -D_GNU_SOURCE -DWEFT_BUILDING -pthread -I"$tmp" -I"$root/include"
  -I"$root/src" -I"$root" -fno-sanitize-recover=all -fno-omit-frame-pointer -Wall -Wextra -Werror)
t0=$(date +%s)
# src/mpi is libweft_mpi, a library of its own over libweft (and MPI).
find "$root/src" -name '*.c' ! -name backend_cuda.c ! -path "$root/src/mpi/*" -print0 |
  xargs -0 -P 2 -I{} sh -c 'o="$1/$(echo "$2" | tr / _).o"; shift 2; exec "$@" -c "$0" -o "$o"' \
    {} "$tmp" "{}" "$cc" -fsanitize=fuzzer-no-link,address,undefined "${flags[@]}"
"$cc" -fsanitize=fuzzer,address,undefined "${flags[@]}" "$root/tests/reliability/fuzz_engine.c" \
  "$tmp"/*.o -o "$tmp/fuzz_engine"
echo "fuzz: built in $(($(date +%s) - t0)) s"
# WEFT_FUZZ_BIN=path keeps the binary (to replay an input: BINARY FILE).
[ -z "${WEFT_FUZZ_BIN:-}" ] || cp "$tmp/fuzz_engine" "$WEFT_FUZZ_BIN"
mkdir -p "$tmp/corpus"
# -timeout: one input that runs this long is a hang (a deadlock), reported.
set +e
ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" "$tmp/fuzz_engine" \
  -max_total_time="$secs" -timeout=30 -rss_limit_mb=3072 -max_len=512 -print_final_stats=1 \
  -artifact_prefix="${WEFT_FUZZ_ARTIFACTS:-$PWD/fuzz-}" "$@" \
  "$tmp/corpus" "$root/tests/reliability/corpus" >"$tmp/log" 2>&1
rc=$?
set -e
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$tmp/log" | tail -1)
if [ $rc -ne 0 ]; then
  tail -n 60 "$tmp/log"
  echo "fuzz: FAILED (libFuzzer exit $rc) after ${execs:-?} executions"
  exit 1
fi
grep -E '^(#[0-9]+ +DONE|stat::)' "$tmp/log" || true
echo "fuzz: ${execs:-?} executions in $secs s, corpus $(ls "$tmp/corpus" | wc -l) new + $(ls "$root/tests/reliability/corpus" | wc -l) seed inputs, no crash or mismatch"
