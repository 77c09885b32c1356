#!/bin/sh
# SPDX-License-Identifier: MIT
# XNNPACK unchanged on weft: MobileNet v1 (xnn_mobilenet) runs once on the
# system's libpthreadpool.so.0 and once on ours (LD_LIBRARY_PATH), at 1, 2
# and 4 threads; every output must be bit-identical to every other (cmp),
# and each run must prove which library it had (dladdr, --expect-lib /
# --reject-lib), so that a run on the wrong one cannot pass.
#
# usage: xnnpack_identical.sh <xnn_mobilenet> <dir of our libpthreadpool.so.0>
set -u
exe=${1:?xnn_mobilenet}
ours=${2:?our library dir}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-xnn.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

fail=0
for n in 1 2 4; do
  # meson's LD_LIBRARY_PATH names our build's libraries: not for the stock run
  if ! env -u LD_LIBRARY_PATH "$exe" --threads "$n" --runs 2 --out "$tmp/stock_$n" \
      --reject-lib "$ours"; then
    echo "xnnpack_identical: FAILED: the stock library, $n threads" >&2
    fail=1
    continue
  fi
  if ! LD_LIBRARY_PATH="$ours" \
      "$exe" --threads "$n" --runs 2 --out "$tmp/weft_$n" --expect-lib "$ours/libpthreadpool.so.0"; then
    echo "xnnpack_identical: FAILED: weft's library, $n threads" >&2
    fail=1
    continue
  fi
  if ! cmp "$tmp/stock_$n" "$tmp/weft_$n"; then
    echo "xnnpack_identical: FAILED: $n threads: weft's output differs from the stock one" >&2
    fail=1
  fi
  if ! cmp "$tmp/stock_1" "$tmp/weft_$n"; then
    echo "xnnpack_identical: FAILED: weft's output at $n threads differs from 1 thread's" >&2
    fail=1
  fi
done
[ "$fail" = 0 ] && echo "xnnpack_identical: MobileNet v1 bit-identical, stock and weft, 1/2/4 threads" >&2
exit "$fail"
