#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The bench suite: installs what is missing (weft's build and the peers),
# configures, builds and runs bench/engine/run.py with the given arguments
# (--quick for the quick mode; see bench/engine/run.py for the others: weft, its
# C++ API beside it as weft++ with the ratio C++ / C, and the peers), then
# bench/pthreadpool/run.py (weft's libpthreadpool.so.0 against the stock one
# under XNNPACK), bench/cholesky/run.py (tiled Cholesky against StarPU,
# OpenMP tasks and LAPACK) and bench/mpi/run.py (the Cholesky across MPI
# ranks against StarPU-MPI, and a remote read against a bare MPI round
# trip), --quick passed on. Every peer runs in its best configuration on
# this machine (OpenMP's binding, StarPU's scheduler and binding, each tried
# per row; bench/harness/peers.py), and every table's footer says how each ran and
# how to rerun one cell by hand. Then, when nvidia-smi -L shows a GPU,
# bench_gpu (bench/gpu/bench_gpu.c: CUDA's floors and the GPU layer's figures
# per completion mode; --quick passed on). Non-zero exit if any of them
# found a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh bench
# WEFT_BENCH_BUILDDIR: another build directory (one per person on a shared
# machine); WEFT_BUILD_JOBS: ninja's -j, as in scripts/test.sh
builddir=${WEFT_BENCH_BUILDDIR:-build-bench}
scripts/meson-setup.sh "$builddir" -Dtests=disabled -Dbench=true -Dmpi=enabled >/dev/null
ninja -C "$builddir" ${WEFT_BUILD_JOBS:+-j "$WEFT_BUILD_JOBS"} >/dev/null
rc=0
python3 bench/engine/run.py --builddir "$builddir" "$@" || rc=$?
quick=()
for a in "$@"; do [ "$a" = --quick ] && quick=(--quick); done
python3 bench/pthreadpool/run.py --builddir "$builddir" "${quick[@]}" || rc=1
python3 bench/cholesky/run.py --builddir "$builddir" "${quick[@]}" || rc=1
python3 bench/mpi/run.py --builddir "$builddir" "${quick[@]}" || rc=1
# (no grep -q: with pipefail, nvidia-smi's SIGPIPE would read as "no GPU")
if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep '^GPU' >/dev/null; then
  grc=0
  "$builddir/bench/bench_gpu" "${quick[@]}" || grc=$?
  # 77: a build without CUDA (where a GPU is present, bench_gpu fails, exit 1,
  # rather than skip when CUDA finds no device: a driver too old, say)
  [ "$grc" = 0 ] || [ "$grc" = 77 ] || rc=1
else
  echo "no GPU: bench_gpu skipped"
fi
exit "$rc"
