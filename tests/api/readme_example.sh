#!/bin/sh
# The README's example compiles and runs: the FIRST ```c fenced block of
# README.md, compiled with cc against the built library, must exit 0.
#
# usage: readme_example.sh <README.md> <include-dir> <library-dir>
# environment: CC (compiler command, default cc), WEFT_TEST_SANITIZE
# (meson's b_sanitize, or "none": an instrumented library needs the same
# -fsanitize when linking the example).
set -u

readme=${1:?path to README.md}
inc=${2:?include dir}
lib=${3:?library dir}
cc=${CC:-cc}
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

# A fence opens with ```c (up to three spaces of indent, nothing after the
# language but spaces) and closes with the next ``` line.
awk '
  state == 0 && /^ ? ? ?```c[ \t]*$/ { state = 1; start = NR; next }
  state == 1 && /^ ? ? ?```[ \t]*$/   { state = 2; exit }
  state == 1                          { print }
  END {
    if (state == 0) exit 2
    if (state == 1) { printf "unterminated block from line %d\n", start > "/dev/stderr"; exit 3 }
  }
' "$readme" >"$tmp/example.c"
status=$?
if [ $status -eq 2 ]; then
  echo "readme_example: FAILED: no \`\`\`c fenced block in $readme" >&2
  exit 1
elif [ $status -ne 0 ]; then
  echo "readme_example: FAILED: could not extract the \`\`\`c block from $readme" >&2
  exit 1
fi
if ! grep -q 'main[[:space:]]*(' "$tmp/example.c"; then
  echo "readme_example: FAILED: the first \`\`\`c block has no main(); it was:" >&2
  sed 's/^/  | /' "$tmp/example.c" >&2
  exit 1
fi

echo "readme_example: $(wc -l <"$tmp/example.c") lines extracted from $readme"
# shellcheck disable=SC2086 # CC and the sanitizer flag are word lists
if ! $cc -std=c11 -Wall -Wextra $san -I"$inc" "$tmp/example.c" -o "$tmp/example" \
  -L"$lib" -lweft -Wl,-rpath,"$lib" -lpthread; then
  echo "readme_example: FAILED: the example does not compile; it was:" >&2
  sed 's/^/  | /' "$tmp/example.c" >&2
  exit 1
fi

if command -v timeout >/dev/null 2>&1; then
  timeout 120 "$tmp/example"
else
  "$tmp/example"
fi
rc=$?
if [ $rc -ne 0 ]; then
  echo "readme_example: FAILED: the example exited with status $rc" >&2
  exit 1
fi
echo "readme_example: ok"
