#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian packages weft needs that are missing (as root; uses sudo
# otherwise). Usage: scripts/deps.sh [test|bench]
set -euo pipefail
want=(meson ninja-build pkg-config gcc g++ python3 libhwloc-dev libcriterion-dev libjemalloc-dev
  libudev-dev  # libudev-dev: hwloc.pc names -ludev, which a static link of weft needs
  relacy-dev spin  # tests/reliability: the relacy harnesses and the spin model checker
  libpthreadpool-dev libxnnpack-dev  # tests/compat, bench_xnnpack: the system pthreadpool and XNNPACK
  libopenblas-pthread-dev liblapacke-dev libopenblas0-serial  # examples/cholesky: threaded OpenBLAS
  # (one thread a call), LAPACKE; the sequential build only for the test that it is refused
  clang libclang-rt-14-dev  # tests/reliability/fuzz.sh: clang with libFuzzer
  openmpi-bin libopenmpi-dev  # src/mpi and tests/mpi: Open MPI and mpirun
  cmake)  # weftConfig.cmake (meson's cmake module) and tests/packaging/cmake.sh
if [ "${1:-test}" = bench ]; then
  # The bench peers: oneTBB, clang with libomp (gcc's libgomp comes with gcc), StarPU (and its
  # cholesky_implicit, starpu-examples);
  # gnuplot draws the runner's PNG.
  want+=(libtbb-dev libomp-dev clang libstarpu-dev gnuplot-nox starpu-examples)
fi
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "weft: installing ${missing[*]}" >&2
SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
