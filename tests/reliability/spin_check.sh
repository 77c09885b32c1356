#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks tests/reliability/park.pml with spin: generates the verifier
# (spin -a), compiles pan.c with gcc and runs it twice:
#   safety      assertions and invalid end states (a worker asleep with work
#               pending and no wake-up to come deadlocks the model);
#   liveness    non-progress cycles (-DNP, pan -l) under weak fairness (-f).
# Prints the states explored by each run. Exits non-zero on any error.
# Usage: spin_check.sh MODEL [spin -D options, for mutants]
set -euo pipefail
model=$(realpath "$1")
shift
command -v spin >/dev/null || { echo "spin_check: spin is not installed (scripts/deps.sh test)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
spin -a "$@" "$model" >spin.log 2>&1 || { cat spin.log; exit 1; }
label="park.pml${*:+ $*}"
rc=0
run() { # NAME CFLAGS PAN_ARGS
  local name=$1 cflags=$2 args=$3
  gcc -O2 -w $cflags -o "pan_$name" pan.c || { echo "spin_check: gcc failed"; exit 1; }
  local out errors states
  out=$(./"pan_$name" $args 2>&1) || true
  errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' <<<"$out" | head -1)
  states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' <<<"$out" | head -1)
  if [ "${errors:-x}" = 0 ]; then
    echo "spin $label $name: $states states stored, 0 errors"
  else
    rc=1
    echo "spin $label $name: FAILED (errors: ${errors:-?}, $states states stored)"
    grep -E "pan:|error|invalid end state|acceptance|non-progress|assertion" <<<"$out" | head -5
  fi
}
# -m: search depth (the model is small; pan says when it is too shallow)
run safety "-DSAFETY" "-m100000"
run liveness "-DNP" "-l -f -m100000"
exit $rc
