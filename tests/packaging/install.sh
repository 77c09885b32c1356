#!/bin/sh
# The installed library works for a program built out of tree: installs the
# build into a temporary staging directory (meson install --destdir), checks
# that exactly the public headers, the shared and static libraries, weft.pc
# and the CMake package (where meson found cmake; tests/packaging/cmake.sh
# uses it) were installed, then builds an example with
#   cc prog.c $(pkg-config --cflags --libs weft)
# against the shared library, and with pkg-config --static against the
# static one (so weft.pc's Requires.private/Libs.private must name all that
# libweft.a needs), and runs both; with a C++ compiler, a program on the
# installed weft.hpp too (shared).
#
# usage: install.sh <meson> <build root> <source root> <includedir> <libdir> <version>
#                   <default_library> <cmake|no-cmake>
#   includedir, libdir: absolute (prefix / get_option(...)); cmake: whether
#   the CMake package is installed (meson found cmake).
# environment: CC, CXX (empty: no C++ compiler, the weft.hpp program is left
# out), WEFT_TEST_SANITIZE (meson's b_sanitize, or "none").
# Exit 77 (skipped) only when meson, pkg-config or the C compiler is missing.
set -u

meson=${1:?meson command}
build=${2:?build root}
src=${3:?source root}
includedir=${4:?includedir}
libdir=${5:?libdir}
version=${6:?version}
libkind=${7:?default_library}
cmake_package=${8:?cmake or no-cmake}
cc=${CC:-cc}
cxx=${CXX:-}
san=
case ${WEFT_TEST_SANITIZE:-none} in
  none | '') ;;
  *) san="-fsanitize=$WEFT_TEST_SANITIZE" ;;
esac

skip() {
  echo "install: SKIPPED: $*" >&2
  exit 77
}
[ -n "$meson" ] || skip "no meson command found"
command -v pkg-config >/dev/null 2>&1 || skip "no pkg-config in PATH"
# shellcheck disable=SC2086 # CC is a word list
command -v ${cc%% *} >/dev/null 2>&1 || skip "no C compiler ($cc)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-install.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
dest=$tmp/dest

# shellcheck source=../common/steps.sh
. "$(dirname "$0")/../common/steps.sh"

# shellcheck disable=SC2086 # the meson command is a word list
step "meson install --destdir" $meson install -C "$build" --no-rebuild --destdir "$dest"
[ $fail -eq 0 ] || exit 1

# What must be there, nothing more: every public header, the libraries, weft.pc,
# the CMake package.
major=${version%%.*}
mpi=
ls "$build"/src/mpi/libweft_mpi.* >/dev/null 2>&1 && mpi=1
{
  for h in "$src"/include/weft/*.h "$src"/include/weft/*.hpp; do
    echo "$includedir/weft/${h##*/}"
  done
  case $libkind in
    shared | both)
      echo "$libdir/libweft.so"
      echo "$libdir/libweft.so.$major"
      echo "$libdir/libweft.so.$version"
      ;;
  esac
  case $libkind in
    static | both) echo "$libdir/libweft.a" ;;
  esac
  echo "$libdir/pkgconfig/weft.pc"
  if [ "$cmake_package" = cmake ]; then
    echo "$libdir/cmake/weft/weftConfig.cmake"
    echo "$libdir/cmake/weft/weftConfigVersion.cmake"
  fi
  # libweft_mpi, where MPI was found (README "Running on several machines").
  if [ -n "$mpi" ]; then
    case $libkind in
      shared | both)
        echo "$libdir/libweft_mpi.so"
        echo "$libdir/libweft_mpi.so.$major"
        echo "$libdir/libweft_mpi.so.$version"
        ;;
    esac
    case $libkind in
      static | both) echo "$libdir/libweft_mpi.a" ;;
    esac
    echo "$libdir/pkgconfig/weft-mpi.pc"
  fi
} | sort >"$tmp/expected"
(cd "$dest" && find . ! -type d | sed 's|^\.||' | sort) >"$tmp/installed"
if cmp -s "$tmp/expected" "$tmp/installed"; then
  echo "ok: installed files are exactly: $(tr '\n' ' ' <"$tmp/expected")"
else
  echo "FAILED: installed files differ from the expected (- expected, + installed):"
  diff -u "$tmp/expected" "$tmp/installed" | sed -n '3,$s/^/  | /p'
  fail=1
fi

# pkg-config as for a staged install: the sysroot prefixes weft.pc's paths
# with the staging directory; the system's .pc files (hwloc, jemalloc) are
# found as usual. The sysroot also prefixes absolute paths that lie outside
# weft's prefix (the CUDA toolkit's libcudart_static.a, MPI's include
# directories): those are taken back to where they are.
PKG_CONFIG_SYSROOT_DIR=$dest
PKG_CONFIG_PATH=$dest$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
export PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_PATH
pc() {
  local out tok
  out=$(pkg-config "$@") || return
  for tok in $out; do
    case $tok in
      "$dest"/*.a) [ -e "$tok" ] || tok=${tok#"$dest"} ;;
      -I"$dest"/*) [ -e "${tok#-I}" ] || tok=-I${tok#-I"$dest"} ;; # mpi.h's, for weft-mpi
    esac
    printf '%s ' "$tok"
  done
}
prog=$src/examples/forkjoin_quicksort.c
cflags="-std=c11 -pedantic -Wall -Wextra -Werror -O2"

if [ "$libkind" != static ]; then
  if flags=$(pc --cflags --libs weft 2>"$tmp/pc.err"); then
    echo "ok: pkg-config --cflags --libs weft: $flags"
    # shellcheck disable=SC2086 # word lists
    step "example builds against the installed shared library" \
      $cc $cflags $san "$prog" -o "$tmp/shared" $flags
    if [ -x "$tmp/shared" ]; then
      step "example runs against the installed shared library" \
        env LD_LIBRARY_PATH="$dest$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        "$tmp/shared" 200000
      # It must really have loaded the staged copy, not the build tree's or
      # a system one.
      if command -v ldd >/dev/null 2>&1; then
        # shellcheck disable=SC2016 # expanded by the inner sh
        step "the staged libweft.so is the one loaded" sh -c \
          'LD_LIBRARY_PATH="$1" ldd "$2" | grep -F "libweft.so.$3 => $1/"' sh \
          "$dest$libdir" "$tmp/shared" "$major"
      fi
    fi
    # The C++ header, installed beside weft.h, on the same flags.
    if [ -n "$cxx" ]; then
      cat >"$tmp/hpp.cpp" <<'EOF_CPP'
#include <weft/weft.hpp>
int main()
{
  weft::pool pool;
  long n = 0;
  weft::status s = pool.parallel_for(0, 100, [&n](std::size_t b, std::size_t e) {
    if (b == 0 && e == 100)
      n = 100;
  }, 100);
  return pool.ok() && s.ok() && n == 100 ? 0 : 1;
}
EOF_CPP
      # shellcheck disable=SC2086 # word lists
      step "a C++17 program builds against the installed weft.hpp" \
        $cxx -std=c++17 -pedantic -Wall -Wextra -Werror -O2 $san "$tmp/hpp.cpp" -o "$tmp/hpp" $flags
      if [ -x "$tmp/hpp" ]; then
        step "the weft.hpp program runs against the installed shared library" \
          env LD_LIBRARY_PATH="$dest$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$tmp/hpp"
      fi
    fi
  else
    echo "FAILED: pkg-config --cflags --libs weft"
    sed 's/^/  | /' "$tmp/pc.err"
    fail=1
  fi
fi

# weft_mpi.h and libweft_mpi through weft-mpi.pc (built, not run: that
# needs mpirun; tests/mpi runs the build tree's).
if [ -n "$mpi" ] && [ "$libkind" != static ]; then
  if flags=$(pc --cflags --libs weft-mpi 2>"$tmp/pc.err"); then
    printf '#include <weft/weft_mpi.h>\nint main(void) { weft_mpi_config c; weft_mpi_config_default(&c); return c.timeout_ms == -1 ? 0 : 1; }\n' >"$tmp/mpi.c"
    # shellcheck disable=SC2086 # word lists
    step "a program builds against the installed libweft_mpi (pkg-config weft-mpi)" \
      $cc $cflags $san "$tmp/mpi.c" -o "$tmp/mpi" $flags
  else
    echo "FAILED: pkg-config --cflags --libs weft-mpi"
    sed 's/^/  | /' "$tmp/pc.err"
    fail=1
  fi
fi

# The static library: libweft.a, plus what weft.pc says it needs (Libs.private,
# and the libraries of the Requires.private packages), those linked shared as
# usual. This is what weft.pc must get right.
if [ "$libkind" != shared ]; then
  pc=$dest$libdir/pkgconfig/weft.pc
  # shellcheck disable=SC2086 # requires is a list of package names
  if requires=$(pc --print-requires-private weft 2>"$tmp/pc.err") &&
    flags=$(pc --cflags --libs weft $requires 2>>"$tmp/pc.err"); then
    private=$(sed -n 's/^Libs\.private:[[:space:]]*//p' "$pc")
    static_flags=
    for f in $flags $private; do
      [ "$f" = -lweft ] && f=-l:libweft.a # this one from the archive
      static_flags="$static_flags $f"
    done
    echo "ok: weft.pc for a static link: Requires.private: $(echo "$requires" | tr '\n' ' ' | sed 's/ $//'), Libs.private: $private"
    # shellcheck disable=SC2086 # word lists
    step "example builds against the installed static library" \
      $cc $cflags $san "$prog" -o "$tmp/static" $static_flags
    if [ -x "$tmp/static" ]; then
      if command -v readelf >/dev/null 2>&1; then
        # shellcheck disable=SC2016 # expanded by the inner sh
        step "the static build needs no libweft.so" \
          sh -c '! readelf -d "$1" | grep -F libweft' sh "$tmp/static"
      fi
      step "example runs, linked statically" "$tmp/static" 200000
    fi
  else
    echo "FAILED: pkg-config --print-requires-private / --libs"
    sed 's/^/  | /' "$tmp/pc.err"
    fail=1
  fi

  # The same with pkg-config --static, which also adds the dependencies'
  # own private libraries (hwloc's -ludev on Debian, whose -dev package
  # may be absent): a failure there that names only libraries weft.pc
  # itself does not list is the dependency's, reported but not failed.
  if flags=$(pc --static --cflags --libs weft 2>"$tmp/pc.err"); then
    static_flags=
    for f in $flags; do
      [ "$f" = -lweft ] && f=-l:libweft.a
      static_flags="$static_flags $f"
    done
    # shellcheck disable=SC2086 # word lists
    if $cc $cflags $san "$prog" -o "$tmp/static2" $static_flags >"$tmp/log" 2>&1; then
      step "example runs, linked with pkg-config --static" "$tmp/static2" 200000
    else
      missing=$(sed -n 's/.*cannot find -l\([^:]*\):.*/\1/p' "$tmp/log" | sort -u)
      own=
      for m in $missing; do
        grep -Eq "^(Libs|Libs\.private):.*-l$m( |\$)" "$pc" && own="$own $m"
      done
      if [ -n "$missing" ] && [ -z "$own" ]; then
        echo "note: the full pkg-config --static link fails here: the linker finds no" \
          "$(echo $missing | sed 's/\([^ ]*\)/-l\1/g'), which weft.pc does not name (it comes" \
          "from a dependency's Libs.private, whose -dev package is not installed)"
      else
        echo "FAILED: example builds with pkg-config --static --libs weft"
        echo "  command: $cc $cflags $san $prog -o $tmp/static2 $static_flags"
        sed 's/^/  | /' "$tmp/log"
        fail=1
      fi
    fi
  else
    echo "FAILED: pkg-config --static --cflags --libs weft"
    sed 's/^/  | /' "$tmp/pc.err"
    fail=1
  fi
fi

exit $fail
