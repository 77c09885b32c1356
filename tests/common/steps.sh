# SPDX-License-Identifier: MIT
# Sourced by the script tests (tests/api/header_compile.sh, tests/packaging/*.sh).
# step DESCRIPTION COMMAND...: runs the command with its output in $tmp/log and
# prints "ok: DESCRIPTION", or "FAILED: DESCRIPTION" with the command and its
# output; a failure sets fail=1 and returns 1. The caller sets $tmp.
fail=0
step() {
  local what=$1
  shift
  if "$@" >"$tmp/log" 2>&1; then
    echo "ok: $what"
    return 0
  fi
  echo "FAILED: $what"
  echo "  command: $*"
  sed 's/^/  | /' "$tmp/log"
  fail=1
  return 1
}
