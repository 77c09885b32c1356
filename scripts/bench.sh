#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The bench suite: installs what is missing (weft's build and the peers),
# configures, builds and runs python3 bench/bench.py all with the given
# arguments, which runs, in turn: bench/engine/run.py with the given
# arguments (--quick for the quick mode; see bench/engine/run.py for the
# others: weft, its C++ API beside it as weft++ with the ratio C++ / C, and
# the peers), then bench/pthreadpool/run.py (weft's libpthreadpool.so.0
# against the stock one under XNNPACK), bench/cholesky/run.py (tiled
# Cholesky against StarPU, OpenMP tasks and LAPACK) and bench/mpi/run.py
# (the Cholesky across MPI ranks against StarPU-MPI, and a remote read
# against a bare MPI round trip), --quick passed on. Every peer runs in its
# best configuration on this machine (OpenMP's binding, StarPU's scheduler
# and binding, each tried per row; bench/harness/peers.py), and every
# table's footer says how each ran and how to rerun one cell by hand. Then,
# when nvidia-smi -L shows a GPU, bench_gpu (bench/gpu/bench_gpu.c: CUDA's
# floors and the GPU layer's figures per completion mode; --quick passed
# on). Non-zero exit if any of them found a failure: the engine's exit
# status if it failed, else 1 (bench_gpu: an exit status other than 0 and
# 77, a build without CUDA).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh bench
# WEFT_BENCH_BUILDDIR: another build directory (one per person on a shared
# machine); WEFT_BUILD_JOBS: ninja's -j, as in scripts/test.sh
builddir=${WEFT_BENCH_BUILDDIR:-build-bench}
scripts/meson-setup.sh "$builddir" -Dtests=disabled -Dbench=true -Dmpi=enabled >/dev/null
ninja -C "$builddir" ${WEFT_BUILD_JOBS:+-j "$WEFT_BUILD_JOBS"} >/dev/null
# every suite in turn, the exit status as the header says (bench/bench.py, "all")
exec python3 bench/bench.py all --builddir "$builddir" "$@"
