#!/bin/sh
# SPDX-License-Identifier: MIT
# The installed CMake package works for a program built out of tree with
# CMake: installs the build into a temporary staging directory (meson install
# --destdir), moves the staged prefix elsewhere (the package must find
# itself from its own location), then configures and builds
# tests/packaging/cmake_project with
#   find_package(weft MAJOR.MINOR REQUIRED), target_link_libraries(... weft::weft)
# against the shared library, and with weft_USE_STATIC_LIBS against the
# static one (each where installed: default_library), and runs the program
# (pool and engine, checked). Where the MPI layer is installed, the same
# project also links a program with weft::weft_mpi (find_package's component
# mpi) and runs it without mpirun (it calls no MPI_Init). The imported
# targets must point into the moved tree, the program must load the moved
# libweft.so (or none, linked statically), and find_package must refuse a
# newer version or another major, a component it does not have, and a
# required component mpi without libweft_mpi or without MPI (where CMake
# finds none, weft::weft alone is found).
#
# usage: cmake.sh <meson> <cmake> <build root> <source root> <prefix> <libdir> <version>
#                 <default_library>
#   cmake: the one meson found when configuring (empty: none, so weft
#   installs no CMake package); libdir: absolute (prefix / get_option(...)).
# environment: CC, WEFT_TEST_SANITIZE (meson's b_sanitize, or "none").
# Exit 77 (skipped) only when meson, cmake or the C compiler is missing.
set -u

meson=${1:?meson command}
cmake=${2?cmake command}
build=${3:?build root}
src=${4:?source root}
prefix=${5:?prefix}
libdir=${6:?libdir}
version=${7:?version}
libkind=${8:?default_library}
cc=${CC:-cc}
san=
case ${WEFT_TEST_SANITIZE:-none} in
  none | '') ;;
  *) san="-fsanitize=$WEFT_TEST_SANITIZE" ;;
esac

skip() {
  echo "cmake: SKIPPED: $*" >&2
  exit 77
}
[ -n "$meson" ] || skip "no meson command found"
[ -n "$cmake" ] || skip "no cmake found when weft was configured (it installs no CMake package then)"
[ -x "$cmake" ] || skip "no $cmake (cmake is no longer installed)"
# shellcheck disable=SC2086 # CC is a word list
command -v ${cc%% *} >/dev/null 2>&1 || skip "no C compiler ($cc)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-cmake.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
dest=$tmp/dest

# shellcheck source=../common/steps.sh
. "$(dirname "$0")/../common/steps.sh"

# shellcheck disable=SC2086 # the meson command is a word list
step "meson install --destdir" $meson install -C "$build" --no-rebuild --destdir "$dest" || exit 1
for f in weftConfig.cmake weftConfigVersion.cmake; do
  step "$libdir/cmake/weft/$f is installed" test -f "$dest$libdir/cmake/weft/$f"
done
[ $fail -eq 0 ] || exit 1

# The staged prefix, moved: nothing may point at $prefix or at the staging
# directory.
root=$tmp/moved
step "move the staged prefix to $root" mv "$dest$prefix" "$root" || exit 1
rootlib=$root${libdir#"$prefix"}
major=${version%%.*}
minor=${version#*.}
minor=${minor%%.*}
mpi=
ls "$build"/src/mpi/libweft_mpi.* >/dev/null 2>&1 && mpi=1
gen=
command -v ninja >/dev/null 2>&1 && gen="-G Ninja"
proj=$src/tests/packaging/cmake_project

# configure DIR ARGS...: configures the project in $tmp/DIR, output in $tmp/log.
configure() {
  local dir=$1
  shift
  # shellcheck disable=SC2086 # gen is a word list
  env CC="$cc" "$cmake" $gen -S "$proj" -B "$tmp/$dir" \
    -DCMAKE_PREFIX_PATH="$root" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
    -DCMAKE_C_FLAGS="$san" -DCMAKE_EXE_LINKER_FLAGS="$san" "$@"
}

# variant shared|static ARGS...: builds and runs the project against that library.
variant() {
  local kind=$1 dir=build-$1 type=SHARED_LIBRARY t
  shift
  [ "$kind" = static ] && type=STATIC_LIBRARY
  step "$kind: cmake configures (find_package(weft $major.$minor))" \
    configure "$dir" -DWEFT_TEST_VERSION="$major.$minor" -DWEFT_TEST_MPI="${mpi:-OFF}" "$@" ||
    return
  sed -n 's/^-- \(weft .*\)/  | \1/p' "$tmp/log"
  # The imported targets: the library asked for, in the moved tree.
  for t in weft::weft ${mpi:+weft::weft_mpi}; do
    if grep -q "^$t $type $rootlib/lib[^ ]* $root/" "$tmp/$dir/weft-targets.txt"; then
      echo "ok: $kind: $t is the $kind library in the moved prefix"
    else
      echo "FAILED: $kind: $t is not the $kind library in $root (target, type, location, include):"
      sed 's/^/  | /' "$tmp/$dir/weft-targets.txt"
      fail=1
    fi
  done
  step "$kind: cmake --build" "$cmake" --build "$tmp/$dir" || return
  step "$kind: the program runs (pool, engine)" \
    env LD_LIBRARY_PATH="$rootlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$tmp/$dir/consumer"
  sed 's/^/  | /' "$tmp/log"
  if [ "$kind" = shared ] && command -v ldd >/dev/null 2>&1; then
    # shellcheck disable=SC2016 # expanded by the inner sh
    step "shared: the moved libweft.so is the one loaded" sh -c \
      'LD_LIBRARY_PATH="$1" ldd "$2" | grep -F "libweft.so.$3 => $1/"' sh \
      "$rootlib" "$tmp/$dir/consumer" "$major"
  fi
  if [ "$kind" = static ] && command -v readelf >/dev/null 2>&1; then
    # shellcheck disable=SC2016 # expanded by the inner sh
    step "static: the program needs no libweft.so" \
      sh -c '! readelf -d "$1" | grep -F libweft' sh "$tmp/$dir/consumer"
  fi
  if [ -n "$mpi" ]; then
    step "$kind: the weft::weft_mpi program runs (no MPI_Init)" \
      env LD_LIBRARY_PATH="$rootlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$tmp/$dir/consumer_mpi"
    sed 's/^/  | /' "$tmp/log"
  fi
}

case $libkind in
  shared) variant shared ;;
  static) variant static ;;
  both)
    variant shared
    variant static -Dweft_USE_STATIC_LIBS=ON
    ;;
esac

# weftConfigVersion.cmake: any version of the same major up to this one is
# accepted (the soname's rule), a newer one or another major refused, saying
# which one it found.
refused() { # VERSION
  if configure "refused-$1" -DWEFT_TEST_VERSION="$1" >"$tmp/log" 2>&1; then
    echo "FAILED: find_package(weft $1 REQUIRED) accepted weft $version"
    sed 's/^/  | /' "$tmp/log"
    fail=1
  elif grep -q "with requested version \"$1\"" "$tmp/log" &&
    grep -q "weftConfig.cmake, version: $version" "$tmp/log"; then
    echo "ok: find_package(weft $1 REQUIRED) refuses weft $version"
  else
    echo "FAILED: find_package(weft $1 REQUIRED) failed, but not for the version:"
    sed 's/^/  | /' "$tmp/log"
    fail=1
  fi
}
refused "$((major + 1)).0"
[ "$major" -gt 0 ] && refused "$((major - 1)).0"
refused "$major.$((minor + 1))"
step "find_package(weft $major.0 REQUIRED) accepts weft $version" \
  configure accepted -DWEFT_TEST_VERSION="$major.0"

# A component weft does not have is not found.
if configure nosuch -DWEFT_TEST_VERSION="$major.$minor" -DWEFT_TEST_COMPONENTS=nosuch \
  >"$tmp/log" 2>&1; then
  echo "FAILED: find_package(weft COMPONENTS nosuch REQUIRED) succeeded"
  sed 's/^/  | /' "$tmp/log"
  fail=1
elif grep -q "no such component: nosuch" "$tmp/log"; then
  echo "ok: find_package(weft COMPONENTS nosuch REQUIRED) fails"
else
  echo "FAILED: find_package(weft COMPONENTS nosuch REQUIRED) failed, but not for the component:"
  sed 's/^/  | /' "$tmp/log"
  fail=1
fi

# Where CMake finds no MPI (CMAKE_DISABLE_FIND_PACKAGE_MPI), weft::weft is
# found all the same, without weft::weft_mpi.
if [ -n "$mpi" ]; then
  if configure nompi -DWEFT_TEST_VERSION="$major.$minor" -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON \
    >"$tmp/log" 2>&1 && grep -q "^weft::weft " "$tmp/nompi/weft-targets.txt" &&
    ! grep -q "^weft::weft_mpi " "$tmp/nompi/weft-targets.txt"; then
    echo "ok: where CMake finds no MPI, find_package(weft) gives weft::weft alone"
  else
    echo "FAILED: where CMake finds no MPI, find_package(weft) should give weft::weft alone:"
    sed 's/^/  | /' "$tmp/log" "$tmp/nompi/weft-targets.txt" 2>/dev/null
    fail=1
  fi
fi

# The component mpi, required, is not found without libweft_mpi (or without
# MPI for CMake).
nompi='' without=libweft_mpi
[ -n "$mpi" ] && nompi=-DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON without="MPI for CMake"
# shellcheck disable=SC2086 # nompi: one argument or none
if configure nompi-required -DWEFT_TEST_VERSION="$major.$minor" -DWEFT_TEST_MPI=ON $nompi \
  >"$tmp/log" 2>&1; then
  echo "FAILED: find_package(weft COMPONENTS mpi REQUIRED) succeeded without $without"
  sed 's/^/  | /' "$tmp/log"
  fail=1
elif grep -qi "mpi" "$tmp/log"; then
  echo "ok: find_package(weft COMPONENTS mpi REQUIRED) fails without $without"
else
  echo "FAILED: find_package(weft COMPONENTS mpi REQUIRED) failed, but not for the component:"
  sed 's/^/  | /' "$tmp/log"
  fail=1
fi

exit $fail
