#!/bin/sh
# SPDX-License-Identifier: MIT
# Every source file the project owns starts with its license line,
# "SPDX-License-Identifier: MIT" (LICENSE), as the file's first line or, in
# a script, right after its shebang line:
#   /* SPDX-License-Identifier: MIT */  or  // SPDX-License-Identifier: MIT
#       *.c *.h *.cu *.cpp *.hpp, and the Promela model (*.pml);
#   # SPDX-License-Identifier: MIT
#       meson.build, meson_options.txt, CMake files (cmake/, CMakeLists.txt,
#       *.cmake), *.sh, *.py and every other file that starts with "#!".
# Not checked: documentation, images, data (tests/reliability/corpus and
# regressions: fuzzer inputs), suppression lists.
# The files are git's tracked ones where $1 is the top of a git work tree,
# else every file under $1 but .git, .dev, subprojects and build*/.
# Fails, listing the files without the line; before that, checks itself on
# a scratch tree with one file lacking the line, so that it cannot pass by
# checking nothing.
root=${1:?usage: check_spdx.sh SOURCE_ROOT}
[ -f "$root/meson.build" ] || { echo "check_spdx.sh: $root is not the source tree" >&2; exit 2; }

c_line='/* SPDX-License-Identifier: MIT */'
cxx_line='// SPDX-License-Identifier: MIT'
hash_line='# SPDX-License-Identifier: MIT'

# Lists the files of $1 to check, one a line, relative to $1.
list_files() {
  top=$(git -C "$1" rev-parse --show-toplevel 2>/dev/null)
  if [ -n "$top" ] && [ "$top" = "$(cd "$1" && pwd -P)" ]; then
    git -C "$1" ls-files
  else
    (cd "$1" && find . \( -name .git -o -name .dev -o -name subprojects -o -name __pycache__ \
      -o -path './build*' \) -prune -o -type f -print | sed 's|^\./||')
  fi
}

# Prints the files of tree $1 that lack the line; counts the checked ones
# in the file $2.
missing() {
  n=0
  list_files "$1" | {
    while IFS= read -r f; do
      p=$1/$f
      [ -f "$p" ] || continue # tracked, deleted in the work tree
      case $f in
      tests/reliability/corpus/* | tests/reliability/regressions/*) continue ;;
      *.c | *.h | *.cu | *.cpp | *.hpp | *.pml) style=c ;;
      meson.build | */meson.build | meson_options.txt | CMakeLists.txt | */CMakeLists.txt | \
        cmake/* | *.cmake | *.sh | *.py) style='hash' ;;
      *)
        [ "$(head -c 2 "$p")" = '#!' ] || continue
        style='hash'
        ;;
      esac
      n=$((n + 1))
      first=$(head -n 1 "$p")
      if [ "$style" = c ]; then
        [ "$first" = "$c_line" ] || [ "$first" = "$cxx_line" ] || echo "$f"
      else
        case $first in '#!'*) first=$(sed -n 2p "$p") ;; esac
        [ "$first" = "$hash_line" ] || echo "$f"
      fi
    done
    echo "$n" >"$2"
  }
}

scratch=$(mktemp -d) || exit 2
trap 'rm -rf "$scratch"' EXIT

# Its own teeth: a tree with one file of each style that has the line and
# one C file and one script that lack it (the script's line below its
# first comment, not at the top) must list exactly those two.
mkdir -p "$scratch/tree/src" "$scratch/tree/scripts"
printf '%s\n' "$hash_line" "project('t', 'c')" >"$scratch/tree/meson.build"
printf '%s\n' "$c_line" '/* has it */' 'int a;' >"$scratch/tree/src/good.c"
printf '%s\n' "$cxx_line" 'int b;' >"$scratch/tree/src/good.cpp"
printf '%s\n' '/* lacks it */' 'int c;' >"$scratch/tree/src/bad.c"
printf '%s\n' '#!/bin/sh' "$hash_line" 'true' >"$scratch/tree/scripts/good"
printf '%s\n' '#!/bin/sh' '# a comment first' "$hash_line" 'true' >"$scratch/tree/scripts/bad.sh"
got=$(missing "$scratch/tree" "$scratch/count" | sort | tr '\n' ' ')
if [ "$got" != "scripts/bad.sh src/bad.c " ] || [ "$(cat "$scratch/count")" != 6 ]; then
  echo "check_spdx.sh: its own check failed: listed '$got' of $(cat "$scratch/count") files," \
    "expected 'scripts/bad.sh src/bad.c ' of 6" >&2
  exit 2
fi

bad=$(missing "$root" "$scratch/count")
n=$(cat "$scratch/count")
[ "$n" -gt 0 ] || { echo "check_spdx.sh: no source file found under $root" >&2; exit 2; }
if [ -n "$bad" ]; then
  echo "files without the line \"SPDX-License-Identifier: MIT\" at the top (the first line;"
  echo "in a script, the one after the shebang line):"
  echo "$bad"
  exit 1
fi
echo "every one of the $n source files under $root starts with its SPDX line"
