#!/usr/bin/env bash
# The bench on a machine without a package registry (the workplace's lent
# 16-core host): build here, carry a bundle there, run it there.
#
#   scripts/device.sh pack [BUNDLE]         here: builds build-device (release,
#       bench on, MPI on; WEFT_DEVICE_BUILDDIR names another directory,
#       WEFT_BUILD_JOBS ninja's -j), copies its bench executables, the
#       Cholesky example and its peers, the MPI Cholesky and ping-pong, the
#       CUDA conformance suite (when this machine has the toolkit), libweft,
#       libweft_mpi, Open MPI (below), StarPU-MPI's mpi_cholesky and every
#       shared library they load that is not glibc's own into BUNDLE (default
#       .dev/bundle, ignored by git), then runs the bundle's check.
#   scripts/device.sh check [BUNDLE]        either side: every executable of
#       the bundle loads every library from the bundle, except glibc's own
#       (ldd, with the bundle's LD_LIBRARY_PATH); exit 1 and the culprit if not.
#   scripts/device.sh run [BUNDLE] [ARGS]   there: the check, then
#       bench/run.py --builddir BUNDLE ARGS (the tree's own run.py, which the
#       device's copy of the working tree has; default: the dependency lists
#       and the pipeline at 1, 2, 4, 8 and 16 threads, 3 runs a cell, weft,
#       oneTBB, libgomp and libomp), with bench_xfer's line-move cost first.
#   scripts/device.sh cpu [BUNDLE] [--dry] [--only S[,S]]
#       there: the machine (lscpu), the line-move floor, the engine and pool
#       sweep at 1-16 threads (the op lists with their replays, the
#       pipeline, fib, pfor_fine, pfor_imb; weft, oneTBB, libgomp, libomp;
#       312 s on the 16-core device before the peers' configuration
#       trials), XNNPACK over the stock libpthreadpool and over weft's
#       drop-in at 1-16 threads, tiled Cholesky N 8192 b 256, double, 1 and
#       16 threads, against the same peers and OpenBLAS's dpotrf, then the
#       MPI section: bench/run_mpi.py's distributed Cholesky, N 8192 b 512,
#       4 ranks x 4 threads and 1 x 16, weft_mpi against StarPU-MPI, and the
#       ping-pong at 2 ranks (a core each, or unbound: whichever bare MPI is
#       the faster in), on the bundle's Open MPI (relocated: OPAL_PREFIX).
#       Every peer at its best: each table's footer says how each ran
#       (bench/peers.py). One report on stdout.
#       --dry: every section once, small, at 1 thread (the MPI section: 2
#       ranks of 1 thread; a check here: 58 s on the 2-vCPU VM). --only
#       S[,S] (sweep, xnnpack, cholesky, mpi): those sections alone, e.g. to
#       split the call where one command may run for 10 minutes at most
#       (the trials lengthen every section).
#   The bundle is carried packed (pack writes BUNDLE.tar.xz, ~17 MB):
#       carry .dev/bundle.tar.xz; there: tar xJf .dev/bundle.tar.xz -C .dev
#   scripts/device.sh gpu [BUNDLE] [ARGS]   there: nvidia-smi's view of the
#       device, the cuda backend's conformance suite on it, then bench_gpu
#       ARGS (e.g. --quick; bench/bench_gpu.c: CUDA's floors and the GPU
#       layer's figures per completion mode, ~1 minute).
#
# Open MPI is carried as Debian installs it (openmpi-bin 4.1): mpirun, the
# plugins it and the ranks dlopen, its help texts and Debian's MCA defaults,
# laid out under BUNDLE/ompi as under its prefix, so that OPAL_PREFIX
# relocates it; PMIx's plugins under BUNDLE/pmix (found by path). The
# plugins of the network stacks (UCX, libfabric, verbs, PSM) and of
# OpenSHMEM are left out: one machine, shared memory (Debian's defaults
# exclude UCX, OFI and openib anyway). Of StarPU only StarPU-MPI's
# mpi_cholesky and its libraries are carried (bench_starpu and
# cholesky_implicit are not: not the peers the 16-core targets name, and
# the tiled Cholesky section runs in double, which cholesky_implicit
# does not).
set -euo pipefail
cd "$(dirname "$0")/.."
cmd=${1:-}
bundle=${2:-.dev/bundle}
[ $# -ge 2 ] && shift 2 || shift $#

# glibc's own libraries: present on any Linux machine that runs our binaries
glibc_re='^(linux-vdso|ld-linux|libc|libm|libpthread|libdl|librt|libresolv)[.-]'
bins=(bench_weft bench_tbb bench_gomp bench_omp_clang bench_serial bench_xfer bench_skeleton
  bench_cholesky_gomp bench_cholesky_omp_clang bench_cholesky_tbb bench_xnnpack
  bench_mpi_pingpong bench_gpu)
# weft's pthreadpool drop-in, beside bench_xnnpack (run_pthreadpool.py finds it here)
dropin=src/compat/pthreadpool/libpthreadpool.so.0
# the Open MPI plugins left out of the bundle: those that load these (see above)
ompi_skip_re='liboshmem|libucp|libucs|libuct|libucm|libfabric|libibverbs|librdmacm|libpsm|libinfinipath'
starpu_mpi=/usr/lib/x86_64-linux-gnu/starpu/mpi/mpi_cholesky # Debian's starpu-examples

check() {
  local bad=0 root
  [ -d "$bundle/bench" ] || { echo "device.sh: no bundle at $bundle (run: scripts/device.sh pack)" >&2; return 1; }
  root=$(realpath "$bundle")
  for f in "$bundle"/bench/* "$bundle"/examples/* "$bundle"/tests/* "$bundle/$dropin" \
    "$bundle"/src/mpi/*.so.* "$bundle"/starpu/* "$bundle"/ompi/bin/* "$bundle"/pmix/*.so \
    $(find "$bundle/ompi" -name '*.so' 2>/dev/null); do
    [ -f "$f" ] || continue
    local name arrow path
    while read -r name arrow path _; do
      [[ $name =~ $glibc_re ]] && continue
      [ "$arrow" = "=>" ] || continue
      case "$path" in
      "$root"/*) ;;
      *)
        echo "device.sh: $f: $name resolves to ${path:-nothing}, outside the bundle" >&2
        bad=1
        ;;
      esac
    done < <(LD_LIBRARY_PATH="$root/lib" ldd "$f")
  done
  return $bad
}

# Open MPI into BUNDLE/ompi, laid out as under its prefix (OPAL_PREFIX), and
# PMIx's plugins into BUNDLE/pmix (see the header). Nothing where this
# machine has no Open MPI.
pack_ompi() {
  local mpirun prefix pkglib pkgdata sysconf p pmix
  mpirun=$(command -v mpirun) && command -v ompi_info >/dev/null ||
    { echo "device.sh: no Open MPI here: the bundle has no MPI section" >&2; return 0; }
  ompi_path() { ompi_info --path "$1" --parsable | cut -d: -f3-; }
  prefix=$(ompi_path prefix) pkglib=$(ompi_path pkglibdir) pkgdata=$(ompi_path pkgdatadir)
  sysconf=$(ompi_path sysconfdir)
  if [[ $pkglib != "$prefix"/* || $pkgdata != "$prefix"/* ]]; then
    echo "device.sh: Open MPI's plugins or data outside its prefix $prefix: not relocatable, not carried" >&2
    return 0
  fi
  mkdir -p "$bundle/ompi/bin" "$bundle/ompi/etc" "$bundle/ompi/${pkglib#"$prefix"/}" \
    "$bundle/ompi/${pkgdata#"$prefix"/}"
  cp -L "$mpirun" "$bundle/ompi/bin/mpirun"
  for p in "$pkglib"/*.so; do
    # (no grep -q: with pipefail, ldd's SIGPIPE would read as "no match")
    ldd "$p" | grep -E "$ompi_skip_re" >/dev/null || cp -L "$p" "$bundle/ompi/${pkglib#"$prefix"/}/"
  done
  cp -rL "$pkgdata/." "$bundle/ompi/${pkgdata#"$prefix"/}/"
  [ ! -f "$sysconf/openmpi-mca-params.conf" ] || cp "$sysconf/openmpi-mca-params.conf" "$bundle/ompi/etc/"
  # PMIx's plugins: beside its library, in pmix/
  pmix=$(ldd "$pkglib"/mca_pmix_*.so 2>/dev/null | awk '$1 ~ /^libpmix/ && !n++ {print $3}')
  pmix=$([ -z "$pmix" ] || readlink -f "$pmix") # /lib/... links to PMIx's own lib dir
  if [ -n "$pmix" ] && [ -d "${pmix%/*}/pmix" ]; then
    mkdir -p "$bundle/pmix"
    cp -L "${pmix%/*}"/pmix/*.so "$bundle/pmix/"
  fi
}

# The MPI section (the header): the bundle's Open MPI, relocated; its StarPU-MPI.
mpi_section() {
  local root mpi sp=()
  root=$(realpath "$bundle")
  echo "== MPI: distributed tiled Cholesky, weft_mpi vs StarPU-MPI; the ping-pong"
  if [ ! -x "$root/ompi/bin/mpirun" ] || [ ! -x "$root/examples/cholesky_mpi" ]; then
    echo "no Open MPI or no examples/cholesky_mpi in the bundle (no Open MPI at pack time)"
    return 0
  fi
  if [ "${1:-}" = --dry ]; then
    mpi=(--layout 2x1 --size 1024:256 --rounds 1)
  else
    mpi=(--layout 4x4,1x16 --size 8192:512 --rounds 3)
  fi
  [ ! -x "$root/starpu/mpi_cholesky" ] || sp=(--starpu "$root/starpu/mpi_cholesky")
  # mpirun's children inherit all this (one machine: no remote daemons)
  (
    export PATH="$root/ompi/bin:$PATH" OPAL_PREFIX="$root/ompi"
    export PMIX_MCA_mca_base_component_path="$root/pmix"
    [ ! -f "$root/ompi/etc/openmpi-mca-params.conf" ] ||
      export OMPI_MCA_mca_base_param_files="$root/ompi/etc/openmpi-mca-params.conf"
    export STARPU_HOME="${STARPU_HOME:-$root/starpu-home}" # its calibration files
    echo "mpirun: $(command -v mpirun), $(mpirun --version 2>&1 | head -1)"
    python3 bench/run_mpi.py --builddir "$bundle" "${sp[@]}" "${mpi[@]}"
  ) || echo "== MPI: exit $?"
}

case "$cmd" in
pack)
  scripts/deps.sh bench
  builddir=${WEFT_DEVICE_BUILDDIR:-build-device} # its own: a release build
  # tests on for the CUDA suite alone: only the targets named below are built
  scripts/meson-setup.sh "$builddir" -Dtests=enabled -Dbench=true -Dmpi=enabled >/dev/null
  targets=()
  for b in "${bins[@]}"; do targets+=("bench/$b"); done
  targets+=(examples/cholesky examples/cholesky_mpi tests/test_gpu_cuda "$dropin")
  known=$(ninja -C "$builddir" -t targets all | cut -d: -f1)
  want=()
  for t in "${targets[@]}"; do
    grep -qx "$t" <<<"$known" && want+=("$t") # a peer that is not built here
  done
  ninja -C "$builddir" ${WEFT_BUILD_JOBS:+-j "$WEFT_BUILD_JOBS"} "${want[@]}" >/dev/null
  rm -rf "$bundle"
  mkdir -p "$bundle/bench" "$bundle/lib" "$bundle/examples" "$bundle/tests" "$bundle/${dropin%/*}" \
    "$bundle/src/mpi"
  found=()
  for t in "${want[@]}"; do
    cp "$builddir/$t" "$bundle/$t"
    found+=("$builddir/$t")
  done
  [ -x "$bundle/bench/bench_weft" ] || { echo "device.sh: bench_weft was not built" >&2; exit 1; }
  # the device's copy of the tree has no git: the bundle says what it was built from
  echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src include bench examples tests || echo '+uncommitted')" >"$bundle/commit"
  # the executables find libweft through their runpath ($ORIGIN/..), libweft_mpi
  # through $ORIGIN/../src/mpi
  find "$builddir" -maxdepth 1 -name 'libweft.so*' ! -type d -exec cp -P {} "$bundle/" \;
  find "$builddir/src/mpi" -maxdepth 1 -name 'libweft_mpi.so*' ! -type d -exec cp -P {} "$bundle/src/mpi/" \;
  pack_ompi
  if [ -x "$starpu_mpi" ]; then
    mkdir -p "$bundle/starpu"
    cp "$starpu_mpi" "$bundle/starpu/"
  fi
  # (each of these may be absent: no Open MPI, PMIx plugins or StarPU-MPI here)
  found+=($(find "$bundle/ompi" "$bundle/pmix" "$bundle/starpu" -type f \( -name '*.so' -o -perm -u+x \) 2>/dev/null || true))
  { ldd "${found[@]}" 2>/dev/null || true; } | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
    while read -r name path; do
      [[ $name =~ $glibc_re ]] && continue
      [[ $path == "$PWD/$builddir/"* ]] && continue # libweft, copied above
      [ -e "$bundle/lib/$name" ] || cp -L "$path" "$bundle/lib/$name"
    done
  check
  # the carry limit is 64 MiB: the bundle travels packed (unpack it there with
  # tar xJf BUNDLE.tar.xz -C "$(dirname BUNDLE)")
  tar -C "$(dirname "$bundle")" -cJf "$bundle.tar.xz" "$(basename "$bundle")"
  echo "device.sh: $bundle.tar.xz: $(du -sh "$bundle.tar.xz" | cut -f1) to carry"
  [ "$(stat -c %s "$bundle.tar.xz")" -lt $((64 << 20)) ] ||
    { echo "device.sh: $bundle.tar.xz is over the carry limit of 64 MiB" >&2; exit 1; }
  echo "device.sh: $bundle: $(du -sh "$bundle" | cut -f1)," \
    "$(cat <(ls "$bundle/bench") <(ls "$bundle/examples") <(ls "$bundle/tests") | wc -l) executables," \
    "$(ls "$bundle/lib" | wc -l) libraries," \
    "$([ -x "$bundle/ompi/bin/mpirun" ] && echo "Open MPI ($(du -sh "$bundle/ompi" | cut -f1))" || echo "no Open MPI")"
  ;;
check)
  check
  echo "device.sh: $bundle: every library found"
  ;;
run)
  check
  [ $# -gt 0 ] || set -- --only chain,indep,dag,wave,pipeline --threads 1,2,4,8,16 --reps 3 \
    --rt weft,tbb,gomp,omp_clang
  export LD_LIBRARY_PATH="$(realpath "$bundle")/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  python3 bench/run.py --builddir "$bundle" "$@"
  ;;
cpu)
  dry= only=sweep,xnnpack,cholesky,mpi
  while [ $# -gt 0 ]; do
    case "$1" in
    --dry) dry=--dry ;;
    --only) only=${2:?device.sh cpu: --only takes sweep,xnnpack,cholesky,mpi}; shift ;;
    *) echo "device.sh cpu: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
  done
  section() { [[ ,$only, == *,$1,* ]]; }
  check
  export LD_LIBRARY_PATH="$(realpath "$bundle")/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "== device.sh cpu ($only), $(date -u '+%Y-%m-%d %H:%M UTC'), built from $(cat "$bundle/commit")"
  lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|NUMA node\(s\)|L2|L3)' || true
  if [ -n "$dry" ]; then # here: every section once, small and at 1 thread
    sweep=(--quick --threads 1 --reps 1)
    xnn=(--quick --threads 1 --rounds 1)
    chol=(--n 1024 --b 256 --threads 1 --reps 1)
  else
    sweep=(--threads 1,2,4,8,16 --reps 3)
    xnn=(--threads 1,2,4,8,16)
    chol=(--n 8192 --b 256 --threads 1,16 --reps 3)
  fi
  if section sweep; then
    echo "== the sweep: engine and pool, 1-16 threads"
    python3 bench/run.py --builddir "$bundle" --only chain,indep,dag,wave,pipeline,fib,pfor_fine,pfor_imb \
      --rt weft,tbb,gomp,omp_clang "${sweep[@]}" || echo "== the sweep: exit $?"
  fi
  if section xnnpack; then
    echo "== XNNPACK over the stock libpthreadpool and over weft's drop-in"
    if [ -x "$bundle/bench/bench_xnnpack" ] && [ -e "$bundle/$dropin" ]; then
      python3 bench/run_pthreadpool.py --builddir "$bundle" --stock-libdir "$bundle/lib" "${xnn[@]}" ||
        echo "== XNNPACK: exit $?"
    else
      echo "no bench_xnnpack or drop-in in the bundle (libxnnpack-dev was not found at pack time)"
    fi
  fi
  if section cholesky; then
    echo "== tiled Cholesky"
    if [ -x "$bundle/examples/cholesky" ]; then
      python3 bench/run_cholesky.py --builddir "$bundle" --prec double "${chol[@]}" ||
        echo "== tiled Cholesky: exit $?"
    else
      echo "no examples/cholesky in the bundle (OpenBLAS was not found at pack time)"
    fi
  fi
  if section mpi; then
    mpi_section "$dry"
  fi
  ;;
gpu)
  check
  export LD_LIBRARY_PATH="$(realpath "$bundle")/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "== device.sh gpu, $(date -u '+%Y-%m-%d %H:%M UTC'), built from $(cat "$bundle/commit")"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv || echo "nvidia-smi: exit $?"
  [ -x "$bundle/tests/test_gpu_cuda" ] || { echo "device.sh: no CUDA suite in the bundle (no toolkit at pack time)" >&2; exit 1; }
  grc=0
  "$bundle/tests/test_gpu_cuda" --verbose -j4 || grc=$?
  echo "== bench_gpu $*"
  "$bundle/bench/bench_gpu" "$@" || { echo "== bench_gpu: exit $?"; grc=1; }
  exit "$grc"
  ;;
*)
  awk 'NR > 1 && !/^#/ {exit} NR > 1' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
  ;;
esac
