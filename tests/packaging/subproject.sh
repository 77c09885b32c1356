#!/bin/sh
# SPDX-License-Identifier: MIT
# weft works as a meson subproject: copies tests/packaging/subproj (a tiny
# project using dependency('weft', fallback: ['weft', 'weft_dep'])) into a
# temporary directory, makes subprojects/weft a symlink to this source tree,
# configures it (forcing the fallback, so an installed weft is not used),
# builds it and runs its program.
#
# usage: subproject.sh <meson> <source root>
# environment: CC (the C compiler the nested build uses).
# Exit 77 (skipped) only when meson, ninja or the C compiler is missing.
set -u

meson=${1:?meson command}
src=${2:?source root}
cc=${CC:-cc}

skip() {
  echo "subproject: SKIPPED: $*" >&2
  exit 77
}
[ -n "$meson" ] || skip "no meson command found"
command -v ninja >/dev/null 2>&1 || command -v samu >/dev/null 2>&1 ||
  skip "no ninja (or samu) in PATH"
# shellcheck disable=SC2086 # CC is a word list
command -v ${cc%% *} >/dev/null 2>&1 || skip "no C compiler ($cc)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-subproject.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# shellcheck source=../common/steps.sh
. "$(dirname "$0")/../common/steps.sh"
run() { # as step, but stops at the first failure
  step "$@" || exit 1
}

cp -R "$src/tests/packaging/subproj" "$tmp/proj" || exit 1
mkdir "$tmp/proj/subprojects" && ln -s "$src" "$tmp/proj/subprojects/weft" || exit 1

# The nested build is a plain one (whatever the outer build's sanitizers):
# it tests the build files, and a debug build compiles fastest.
# shellcheck disable=SC2086 # word lists
run "meson setup (weft as a subproject)" env CC="$cc" \
  $meson setup --force-fallback-for=weft --buildtype=debug "$tmp/proj" "$tmp/build"
if grep -q "Executing subproject weft" "$tmp/log"; then
  echo "ok: the subproject was used"
else
  echo "FAILED: meson did not use the weft subproject:"
  sed 's/^/  | /' "$tmp/log"
  exit 1
fi
# The subproject contributes the library only: no tests, examples or bench.
# shellcheck disable=SC2086
run "meson introspect --tests" $meson introspect --tests "$tmp/build"
if [ "$(tr -d ' \n' <"$tmp/log")" = "[]" ]; then
  echo "ok: weft registers no tests in the parent project"
else
  echo "FAILED: the parent project got tests from weft:"
  sed 's/^/  | /' "$tmp/log"
  exit 1
fi
# shellcheck disable=SC2086
run "meson compile -j 2" $meson compile -C "$tmp/build" -j 2
run "the program runs" "$tmp/build/consumer"
sed 's/^/  | /' "$tmp/log"
