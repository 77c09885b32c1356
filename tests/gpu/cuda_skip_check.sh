#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The CUDA suites skip themselves (exit 77) only where no GPU is present
# (tests/gpu/cuda_skip.h, gpu_present.h). Each suite given is run against
# two stand-ins for "/" (WEFT_TEST_GPU_ROOT):
#   - one with a GPU: dev/nvidia0 and the kernel module's version line. The
#     suite must not skip: where CUDA finds no device (this machine has no
#     working driver) it fails, with a line naming the GPU and the driver;
#     where CUDA works, it runs (exit 0).
#   - one without: only the driver's control nodes (dev/nvidiactl,
#     dev/nvidia-uvm), which are not GPUs. The suite skips where CUDA finds
#     no device, runs where it does: never the "GPU present" failure.
# Usage: cuda_skip_check.sh SUITE_EXECUTABLE...
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 SUITE_EXECUTABLE..." >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/gpu/dev" "$tmp/gpu/proc/driver/nvidia" "$tmp/none/dev"
: >"$tmp/gpu/dev/nvidia0"
: >"$tmp/gpu/dev/nvidiactl"
echo "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.124.06  (a stand-in)" \
  >"$tmp/gpu/proc/driver/nvidia/version"
: >"$tmp/none/dev/nvidiactl"
: >"$tmp/none/dev/nvidia-uvm"
bad=0
# run ROOT EXE: the suite's exit status in $rc, its output in $tmp/out (one
# quick test of the conformance suite where it runs; the constructor decides
# before any test starts)
run() {
  set +e
  WEFT_TEST_GPU_ROOT=$1 timeout 120 "$2" --filter '*/unrecorded_event_is_complete' >"$tmp/out" 2>&1
  rc=$?
  set -e
}
for exe in "$@"; do
  name=${exe##*/}
  run "$tmp/gpu" "$exe"
  if [ $rc -eq 77 ]; then
    echo "FAIL: $name skipped (exit 77) with a GPU present: $(tail -1 "$tmp/out")" >&2
    bad=1
  elif [ $rc -ne 0 ] && ! grep -q 'a GPU is present (dev/nvidia0; NVRM version' "$tmp/out"; then
    echo "FAIL: $name exit $rc with a GPU present, without the line naming it:" >&2
    cat "$tmp/out" >&2
    bad=1
  elif [ $rc -ne 0 ] && ! grep -q 'the driver .*(cudaDriverGetVersion [0-9-]*), .*needs a driver for CUDA' "$tmp/out"; then
    echo "FAIL: $name: the line does not name the driver's and the runtime's versions:" >&2
    cat "$tmp/out" >&2
    bad=1
  else
    echo "$name, a GPU present: exit $rc: $(grep -m1 'GPU is present' "$tmp/out" || echo 'ran')"
  fi
  run "$tmp/none" "$exe"
  if grep -q 'a GPU is present' "$tmp/out"; then
    echo "FAIL: $name took dev/nvidiactl or dev/nvidia-uvm for a GPU:" >&2
    cat "$tmp/out" >&2
    bad=1
  elif [ $rc -ne 77 ] && [ $rc -ne 0 ]; then
    echo "FAIL: $name exit $rc without a GPU present:" >&2
    cat "$tmp/out" >&2
    bad=1
  else
    echo "$name, no GPU present: exit $rc"
  fi
done
exit $bad
