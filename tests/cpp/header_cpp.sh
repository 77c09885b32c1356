#!/bin/sh
# weft.hpp compiles on its own as C++17 and as C++20, with exceptions on
# and off, under strict warnings; program.cpp, which instantiates every
# wrapper, builds each of those ways against the shared library and runs;
# and so does the example of docs/api.md's "C++" section (its first ```cpp
# block), as C++17.
#
# usage: header_cpp.sh <include-dir> <library-dir> <tests/cpp source dir> <docs/api.md>
# environment: CXX (the C++ compiler command; empty: no C++ compiler, the
# test is skipped with exit 77), WEFT_TEST_SANITIZE (meson's b_sanitize, or
# "none": an instrumented library needs the same -fsanitize at the link).
set -u

inc=${1:?include dir}
lib=${2:?library dir}
src=${3:?tests/cpp dir}
api_md=${4:?docs/api.md}
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

# A program each way: built (every template it uses instantiated), linked, run.
# usage: build_and_run SOURCE DESCRIPTION COMPILER-FLAGS...
build_and_run() {
  prog=$1
  what=$2
  shift 2
  # shellcheck disable=SC2086
  if step "${prog##*/} builds as $what" $cxx "$@" $strict $san -I"$inc" "$prog" \
    -o "$tmp/program" -L"$lib" -lweft -Wl,-rpath,"$lib" -lpthread; then
    step "${prog##*/} runs ($what)" "$tmp/program"
  fi
  rm -f "$tmp/program"
}
build_and_run "$src/program.cpp" "C++17" -std=c++17 -O1
build_and_run "$src/program.cpp" "C++20" -std=c++20 -O1
build_and_run "$src/program.cpp" "C++17 with -fno-exceptions" -std=c++17 -O1 -fno-exceptions \
  -DWEFT_TEST_NO_EXCEPTIONS

# The documentation's example: the first ```cpp block after "## C++".
awk '
  state == 0 && /^## C\+\+[ \t]*$/ { state = 1; next }
  state == 1 && /^```cpp[ \t]*$/     { state = 2; next }
  state == 2 && /^```[ \t]*$/        { state = 3; exit }
  state == 2                         { print }
  END { exit state == 3 ? 0 : 1 }
' "$api_md" >"$tmp/api_example.cpp"
if [ $? -ne 0 ]; then
  echo "FAILED: no complete \`\`\`cpp block after \"## C++\" in $api_md"
  fail=1
else
  build_and_run "$tmp/api_example.cpp" "C++17 (docs/api.md's example)" -std=c++17 -O1
fi

exit $fail
