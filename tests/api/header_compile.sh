#!/bin/sh
# SPDX-License-Identifier: MIT
# weft.h compiles on its own as strict C11 and as C++17, and programs built
# from it link against the shared library and run.
#
# usage: header_compile.sh <include-dir> <library-dir> <tests/api source dir>
# environment: CC, CXX (compiler commands; CXX empty: no C++ compiler, that
# part is skipped), WEFT_TEST_SANITIZE (meson's b_sanitize, or "none").
set -u

inc=${1:?include dir}
lib=${2:?library dir}
src=${3:?tests/api dir}
cc=${CC:-cc}
cxx=${CXX:-}
san=
case ${WEFT_TEST_SANITIZE:-none} in
  none | '') ;;
  *) san="-fsanitize=$WEFT_TEST_SANITIZE" ;;
esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-header.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# shellcheck source=../common/steps.sh
. "$(dirname "$0")/../common/steps.sh"

cflags="-std=c11 -pedantic -Wall -Wextra -Werror"
cxxflags="-std=c++17 -pedantic -Wall -Wextra -Werror"

# The header alone in a translation unit, nothing before or after it.
printf '#include <weft/weft.h>\n' >"$tmp/alone.c"
printf '#include <weft/weft.h>\n' >"$tmp/alone.cpp"
printf '#include <weft/version.h>\nstatic const char v[] = WEFT_VERSION_STRING;\nconst char *weft_test_version(void) { return v; }\n' >"$tmp/version.c"

# shellcheck disable=SC2086 # the compiler commands and flags are word lists
step "weft.h alone as C11 ($cflags)" $cc $cflags -I"$inc" -c "$tmp/alone.c" -o "$tmp/alone.o"
# shellcheck disable=SC2086
step "version.h alone as C11" $cc $cflags -I"$inc" -c "$tmp/version.c" -o "$tmp/version.o"
# shellcheck disable=SC2086
step "C11 program builds against libweft" \
  $cc $cflags $san -I"$inc" "$src/header_c.c" -o "$tmp/header_c" -L"$lib" -lweft \
  -Wl,-rpath,"$lib" -lpthread
if [ -x "$tmp/header_c" ]; then
  step "C11 program runs" "$tmp/header_c"
fi

# weft_mpi.h alone too, with nothing but this include directory (mpi.h may
# be off the default path: its MPI-typed calls are then left out).
printf '#include <weft/weft_mpi.h>\n' >"$tmp/mpi_alone.c"
printf '#include <weft/weft_mpi.h>\n' >"$tmp/mpi_alone.cpp"
# shellcheck disable=SC2086
step "weft_mpi.h alone as C11" $cc $cflags -I"$inc" -c "$tmp/mpi_alone.c" -o "$tmp/mpi_alone.o"

if [ -n "$cxx" ]; then
  # shellcheck disable=SC2086
  step "weft_mpi.h alone as C++17" $cxx $cxxflags -I"$inc" -c "$tmp/mpi_alone.cpp" \
    -o "$tmp/mpi_alone_cpp.o"
  # shellcheck disable=SC2086
  step "weft.h alone as C++17 ($cxxflags)" $cxx $cxxflags -I"$inc" -c "$tmp/alone.cpp" \
    -o "$tmp/alone_cpp.o"
  # shellcheck disable=SC2086
  step "C++17 program builds against libweft (C linkage)" \
    $cxx $cxxflags $san -I"$inc" "$src/header_cpp.cpp" -o "$tmp/header_cpp" -L"$lib" -lweft \
    -Wl,-rpath,"$lib" -lpthread
  if [ -x "$tmp/header_cpp" ]; then
    step "C++17 program runs" "$tmp/header_cpp"
  fi
else
  echo "no C++ compiler: the C++ part was skipped"
fi

exit $fail
