#!/bin/sh
# weft.hpp compiles on its own as C++17 and as C++20, with exceptions on
# and off, under strict warnings; and program.cpp, which instantiates every
# wrapper, builds each of those ways against the shared library and runs.
#
# usage: header_cpp.sh <include-dir> <library-dir> <tests/cpp source dir>
# environment: CXX (the C++ compiler command; empty: no C++ compiler, the
# test is skipped with exit 77), WEFT_TEST_SANITIZE (meson's b_sanitize, or
# "none": an instrumented library needs the same -fsanitize at the link).
set -u

inc=${1:?include dir}
lib=${2:?library dir}
src=${3:?tests/cpp dir}
cxx=${CXX:-}
san=
case ${WEFT_TEST_SANITIZE:-none} in
  none | '') ;;
  *) san="-fsanitize=$WEFT_TEST_SANITIZE" ;;
esac

if [ -z "$cxx" ]; then
  echo "no C++ compiler: skipped"
  exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-hpp.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# shellcheck source=../common/steps.sh
. "$(dirname "$0")/../common/steps.sh"

# What a user's strict build may turn on, beside the usual four.
strict="-pedantic -Wall -Wextra -Werror -Wshadow -Wconversion -Wsign-conversion -Wold-style-cast -Wnon-virtual-dtor"

# The header alone, nothing before or after it; then twice, after weft.h.
printf '#include <weft/weft.hpp>\n' >"$tmp/alone.cpp"
printf '#include <weft/weft.h>\n#include <weft/weft.hpp>\n#include <weft/weft.hpp>\n' >"$tmp/twice.cpp"

for std in c++17 c++20; do
  for exc in "" -fno-exceptions; do
    # shellcheck disable=SC2086 # the compiler command and flags are word lists
    step "weft.hpp alone as -std=$std ${exc:-(exceptions on)}" \
      $cxx -std=$std $exc $strict -I"$inc" -c "$tmp/alone.cpp" -o "$tmp/alone.o"
  done
done
# shellcheck disable=SC2086
step "weft.hpp twice, after weft.h" $cxx -std=c++17 $strict -I"$inc" -c "$tmp/twice.cpp" -o "$tmp/twice.o"

# program.cpp each way: built (every template instantiated), linked, run.
build_and_run() {
  what=$1
  shift
  # shellcheck disable=SC2086
  if step "program.cpp builds as $what" $cxx "$@" $strict $san -I"$inc" "$src/program.cpp" \
    -o "$tmp/program" -L"$lib" -lweft -Wl,-rpath,"$lib" -lpthread; then
    step "program.cpp runs ($what)" "$tmp/program"
  fi
  rm -f "$tmp/program"
}
build_and_run "C++17" -std=c++17 -O1
build_and_run "C++20" -std=c++20 -O1
build_and_run "C++17 with -fno-exceptions" -std=c++17 -O1 -fno-exceptions -DWEFT_TEST_NO_EXCEPTIONS

exit $fail
