#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Proves the model checkers have teeth: every mutant (a weakened memory
# order in a relacy harness, a re-check removed or moved in the Promela
# model) must make its checker FAIL. Passes only if every mutant is caught;
# prints which check caught each one.
# Usage: mutants.sh SPIN_CHECK MODEL [HARNESS_EXE N...]
#   HARNESS_EXE N runs the relacy harness's mutant n (rl_common.hpp): it
#   exits 0 when relacy found an error (caught), 1 when every run passed
#   (not caught), 2 when it has no mutant n.
#   SPIN_CHECK and MODEL empty (''): the relacy mutants only (meson runs one
#   such test per mutant, and the Promela mutants as a test of their own,
#   so that each finishes well within its limit on a busy machine).
set -uo pipefail
spin_check=$1 model=$2
shift 2
[ -n "$spin_check" ] || [ $# -gt 1 ] || { echo "mutants.sh: nothing to check" >&2; exit 2; }
caught=0 total=0 missed=()
exe=${1:-}
[ $# -eq 0 ] || shift
for n in "$@"; do
  total=$((total + 1))
  out=$("$exe" "$n" 2>&1)
  rc=$?
  line=$(grep -E "^MUTANT (NOT )?CAUGHT" <<<"$out" | tail -1)
  how=$(grep -m1 "FAILED at" <<<"$out" | sed 's/  */ /g')
  if [ $rc -eq 0 ] && [[ $line == "MUTANT CAUGHT"* ]]; then
    caught=$((caught + 1))
    echo "caught: ${line#MUTANT CAUGHT: } by:${how#relacy}"
  else
    missed+=("$(basename "$exe") $n")
    echo "NOT caught: $(basename "$exe") $n (rc $rc): ${line:-no verdict}"
    [ $rc -ne 2 ] || echo "$out"
  fi
done
for def in ${spin_check:+NO_RECHECK RECHECK_FIRST}; do
  total=$((total + 1))
  if out=$(bash "$spin_check" "$model" "-D$def" 2>&1); then
    missed+=("park.pml -D$def")
    echo "NOT caught: park.pml -D$def: spin found no error"
    echo "$out"
  else
    caught=$((caught + 1))
    echo "caught: park.pml -D$def by: $(grep -m1 FAILED <<<"$out" | sed 's/^spin //')"
  fi
done
echo "mutants caught: $caught of $total"
[ ${#missed[@]} -eq 0 ]
