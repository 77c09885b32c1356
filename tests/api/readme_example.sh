#!/bin/sh
# The README's examples compile and run: the FIRST ```c fenced block of
# README.md, compiled as C11 with cc against the built library, and the
# FIRST ```cpp fenced block, compiled as C++17 with c++ (include/weft/
# weft.hpp over the same library), must each exit 0. Without a C++
# compiler (CXX set and empty) the C++ one is skipped.
#
# usage: readme_example.sh <README.md> <include-dir> <library-dir>
# environment: CC (compiler command, default cc), CXX (default c++; empty:
# no C++ compiler), WEFT_TEST_SANITIZE (meson's b_sanitize, or "none": an
# instrumented library needs the same -fsanitize when linking the example).
set -u

readme=${1:?path to README.md}
inc=${2:?include dir}
lib=${3:?library dir}
cc=${CC:-cc}
cxx=${CXX-c++}
san=
case ${WEFT_TEST_SANITIZE:-none} in
  none | '') ;;
  *) san="-fsanitize=$WEFT_TEST_SANITIZE" ;;
esac

if [ ! -f "$readme" ]; then
  echo "readme_example: FAILED: $readme does not exist" >&2
  exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-readme.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# run_block LANG FILE COMPILER FLAGS...: extracts the first ```LANG block
# into $tmp/FILE, compiles it with COMPILER FLAGS against the library and
# runs it. A fence opens with ```LANG (up to three spaces of indent, nothing
# after the language but spaces) and closes with the next ``` line.
# Returns 0 when it built and exited 0.
run_block() {
  lang=$1
  file=$2
  shift 2
  src="$tmp/$file"
  exe="$tmp/${file%.*}"
  awk -v lang="$lang" '
    state == 0 && $0 ~ ("^ ? ? ?```" lang "[ \t]*$") { state = 1; start = NR; next }
    state == 1 && /^ ? ? ?```[ \t]*$/                  { state = 2; exit }
    state == 1                                         { print }
    END {
      if (state == 0) exit 2
      if (state == 1) { printf "unterminated block from line %d\n", start > "/dev/stderr"; exit 3 }
    }
  ' "$readme" >"$src"
  status=$?
  if [ $status -eq 2 ]; then
    echo "readme_example: FAILED: no \`\`\`$lang fenced block in $readme" >&2
    return 1
  elif [ $status -ne 0 ]; then
    echo "readme_example: FAILED: could not extract the \`\`\`$lang block from $readme" >&2
    return 1
  fi
  if ! grep -q 'main[[:space:]]*(' "$src"; then
    echo "readme_example: FAILED: the first \`\`\`$lang block has no main(); it was:" >&2
    sed 's/^/  | /' "$src" >&2
    return 1
  fi

  echo "readme_example: $(wc -l <"$src") lines of $lang extracted from $readme"
  # shellcheck disable=SC2068,SC2086 # the compiler command and flags are word lists
  if ! $@ $san -I"$inc" "$src" -o "$exe" -L"$lib" -lweft -Wl,-rpath,"$lib" -lpthread; then
    echo "readme_example: FAILED: the $lang example does not compile; it was:" >&2
    sed 's/^/  | /' "$src" >&2
    return 1
  fi

  if command -v timeout >/dev/null 2>&1; then
    timeout 120 "$exe"
  else
    "$exe"
  fi
  rc=$?
  if [ $rc -ne 0 ]; then
    echo "readme_example: FAILED: the $lang example exited with status $rc" >&2
    return 1
  fi
  echo "readme_example: the $lang example ran"
  return 0
}

fail=0
# shellcheck disable=SC2086 # CC is a word list
run_block c example.c $cc -std=c11 -Wall -Wextra || fail=1
if [ -n "$cxx" ]; then
  # shellcheck disable=SC2086 # CXX is a word list
  run_block cpp example.cpp $cxx -std=c++17 -Wall -Wextra || fail=1
else
  echo "readme_example: no C++ compiler: the \`\`\`cpp block was skipped"
fi
[ $fail -eq 0 ] || exit 1
echo "readme_example: ok"
