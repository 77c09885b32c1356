#!/bin/sh
# SPDX-License-Identifier: MIT
# Every environment variable of the library is read through src/common/env.h
# and env.c (one set of rules, one message naming the variable:
# WEFT_MPI_TIMEOUT_MS once took " 5" through a raw strtol while
# WEFT_NUM_THREADS refused it). Fails, listing them, on any other getenv
# (or secure_getenv) call in the source tree given ($1: src/).
src=${1:?usage: check_env_readers.sh SRC_DIR}
[ -d "$src/common" ] || { echo "check_env_readers.sh: $src is not the source tree" >&2; exit 2; }
[ -f "$src/common/env.h" ] || { echo "check_env_readers.sh: no $src/common/env.h" >&2; exit 2; }
others=$(grep -rnE '(^|[^A-Za-z0-9_])(secure_)?getenv[[:space:]]*\(' "$src" \
  --include='*.c' --include='*.h' --include='*.cpp' --include='*.hpp' |
  grep -v -e "^$src/common/env\.c:" -e "^$src/common/env\.h:")
if [ -n "$others" ]; then
  echo "environment read outside src/common/env.{c,h} (use weft_env_int, weft_env_int_read,"
  echo "weft_env_str or weft_env_nonempty):"
  echo "$others"
  exit 1
fi
n=$(grep -rhcE '(^|[^A-Za-z0-9_])getenv[[:space:]]*\(' "$src/common/env.c" "$src/common/env.h" |
  awk '{s += $1} END {print s}')
[ "$n" -gt 0 ] || { echo "check_env_readers.sh: no getenv in src/common/env.{c,h}?" >&2; exit 2; }
echo "every getenv in $src is in src/common/env.{c,h} ($n)"
