#!/usr/bin/env bash
# The bench on a machine without a package registry (the workplace's lent
# 16-core host): build here, carry a bundle there, run it there.
#
#   scripts/device.sh pack [BUNDLE]         here: builds build-device (release,
#       bench on, MPI off), copies its bench executables, the Cholesky
#       example and its peers, the CUDA conformance suite (when this machine
#       has the toolkit), libweft and every shared library they load that is
#       not glibc's own into BUNDLE (default .dev/bundle, ignored by git),
#       then runs the bundle's check.
#   scripts/device.sh check [BUNDLE]        either side: every executable of
#       the bundle loads every library from the bundle, except glibc's own
#       (ldd, with the bundle's LD_LIBRARY_PATH); exit 1 and the culprit if not.
#   scripts/device.sh run [BUNDLE] [ARGS]   there: the check, then
#       bench/run.py --builddir BUNDLE ARGS (the tree's own run.py, which the
#       device's copy of the working tree has; default: the dependency lists
#       and the pipeline at 1, 2, 4, 8 and 16 threads, 3 runs a cell, weft,
#       oneTBB, libgomp and libomp), with bench_xfer's line-move cost first.
#   scripts/device.sh cpu [BUNDLE]          there: the machine (lscpu), the
#       line-move floor, the engine and pool sweep at 1-16 threads (the op
#       lists with their replays, the pipeline, fib, pfor_fine, pfor_imb;
#       weft, oneTBB, libgomp, libomp; 312 s on the 16-core device), XNNPACK
#       over the stock libpthreadpool and over weft's drop-in at 1-16
#       threads, then tiled Cholesky N 8192 b 256, double, 1 and 16 threads,
#       against the same peers and OpenBLAS's dpotrf. One report on stdout.
#       With --dry (after BUNDLE): every section once, small, at 1 thread (a
#       check here: 18 s on the 2-vCPU VM).
#   The bundle is carried packed (pack writes BUNDLE.tar.xz, ~14 MB):
#       carry .dev/bundle.tar.xz; there: tar xJf .dev/bundle.tar.xz -C .dev
#   scripts/device.sh gpu [BUNDLE]          there: nvidia-smi's view of the
#       device, then the cuda backend's conformance suite on it.
#
# StarPU is left out (its own installation is much larger than the carry
# limit of 64 MiB allows, and it is not the peer the 16-core targets name).
set -euo pipefail
cd "$(dirname "$0")/.."
cmd=${1:-}
bundle=${2:-.dev/bundle}
[ $# -ge 2 ] && shift 2 || shift $#

# glibc's own libraries: present on any Linux machine that runs our binaries
glibc_re='^(linux-vdso|ld-linux|libc|libm|libpthread|libdl|librt|libresolv)[.-]'
bins=(bench_weft bench_tbb bench_gomp bench_omp_clang bench_serial bench_xfer bench_skeleton
  bench_cholesky_gomp bench_cholesky_omp_clang bench_cholesky_tbb bench_xnnpack)
# weft's pthreadpool drop-in, beside bench_xnnpack (run_pthreadpool.py finds it here)
dropin=src/compat/pthreadpool/libpthreadpool.so.0

check() {
  local bad=0 root
  [ -d "$bundle/bench" ] || { echo "device.sh: no bundle at $bundle (run: scripts/device.sh pack)" >&2; return 1; }
  root=$(realpath "$bundle")
  for f in "$bundle"/bench/* "$bundle"/examples/* "$bundle"/tests/* "$bundle/$dropin"; do
    [ -x "$f" ] || continue
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

case "$cmd" in
pack)
  scripts/deps.sh bench
  builddir=build-device # its own: build-bench keeps the MPI bench on
  # tests on for the CUDA suite alone: only the targets named below are built
  scripts/meson-setup.sh "$builddir" -Dtests=enabled -Dbench=true -Dmpi=disabled >/dev/null
  targets=()
  for b in "${bins[@]}"; do targets+=("bench/$b"); done
  targets+=(examples/cholesky tests/test_gpu_cuda "$dropin")
  known=$(ninja -C "$builddir" -t targets all | cut -d: -f1)
  want=()
  for t in "${targets[@]}"; do
    grep -qx "$t" <<<"$known" && want+=("$t") # a peer that is not built here
  done
  ninja -C "$builddir" "${want[@]}" >/dev/null
  rm -rf "$bundle"
  mkdir -p "$bundle/bench" "$bundle/lib" "$bundle/examples" "$bundle/tests" "$bundle/${dropin%/*}"
  found=()
  for t in "${want[@]}"; do
    cp "$builddir/$t" "$bundle/$t"
    found+=("$builddir/$t")
  done
  [ -x "$bundle/bench/bench_weft" ] || { echo "device.sh: bench_weft was not built" >&2; exit 1; }
  # the device's copy of the tree has no git: the bundle says what it was built from
  echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src include bench examples tests || echo '+uncommitted')" >"$bundle/commit"
  # the executables find libweft through their runpath ($ORIGIN/..)
  find "$builddir" -maxdepth 1 -name 'libweft.so*' ! -type d -exec cp -P {} "$bundle/" \;
  ldd "${found[@]}" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
    while read -r name path; do
      [[ $name =~ $glibc_re ]] && continue
      [[ $path == "$PWD/$builddir/"* ]] && continue # libweft, copied above
      cp -L "$path" "$bundle/lib/$name"
    done
  check
  # the carry limit is 64 MiB: the bundle travels packed (unpack it there with
  # tar xJf BUNDLE.tar.xz -C "$(dirname BUNDLE)")
  tar -C "$(dirname "$bundle")" -cJf "$bundle.tar.xz" "$(basename "$bundle")"
  echo "device.sh: $bundle.tar.xz: $(du -sh "$bundle.tar.xz" | cut -f1) to carry"
  echo "device.sh: $bundle: $(du -sh "$bundle" | cut -f1)," \
    "$(cat <(ls "$bundle/bench") <(ls "$bundle/examples") <(ls "$bundle/tests") | wc -l) executables," \
    "$(ls "$bundle/lib" | wc -l) libraries"
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
  check
  export LD_LIBRARY_PATH="$(realpath "$bundle")/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "== device.sh cpu, $(date -u '+%Y-%m-%d %H:%M UTC'), built from $(cat "$bundle/commit")"
  lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|NUMA node\(s\)|L2|L3)' || true
  echo "== the sweep: engine and pool, 1-16 threads"
  if [ "${1:-}" = --dry ]; then # here: every section once, small and at 1 thread
    sweep=(--quick --threads 1 --reps 1)
    chol=(--n 1024 --b 256 --threads 1 --reps 1)
  else
    sweep=(--threads 1,2,4,8,16 --reps 3)
    chol=(--n 8192 --b 256 --threads 1,16 --reps 3)
  fi
  python3 bench/run.py --builddir "$bundle" --only chain,indep,dag,wave,pipeline,fib,pfor_fine,pfor_imb \
    --rt weft,tbb,gomp,omp_clang "${sweep[@]}" || echo "== the sweep: exit $?"
  echo "== XNNPACK over the stock libpthreadpool and over weft's drop-in"
  if [ -x "$bundle/bench/bench_xnnpack" ] && [ -e "$bundle/$dropin" ]; then
    if [ "${1:-}" = --dry ]; then xnn=(--quick --threads 1 --rounds 1); else xnn=(--threads 1,2,4,8,16); fi
    python3 bench/run_pthreadpool.py --builddir "$bundle" --stock-libdir "$bundle/lib" "${xnn[@]}" ||
      echo "== XNNPACK: exit $?"
  else
    echo "no bench_xnnpack or drop-in in the bundle (libxnnpack-dev was not found at pack time)"
  fi
  echo "== tiled Cholesky"
  if [ -x "$bundle/examples/cholesky" ]; then
    python3 bench/run_cholesky.py --builddir "$bundle" --prec double "${chol[@]}" ||
      echo "== tiled Cholesky: exit $?"
  else
    echo "no examples/cholesky in the bundle (OpenBLAS was not found at pack time)"
  fi
  ;;
gpu)
  check
  export LD_LIBRARY_PATH="$(realpath "$bundle")/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "== device.sh gpu, $(date -u '+%Y-%m-%d %H:%M UTC'), built from $(cat "$bundle/commit")"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv || echo "nvidia-smi: exit $?"
  [ -x "$bundle/tests/test_gpu_cuda" ] || { echo "device.sh: no CUDA suite in the bundle (no toolkit at pack time)" >&2; exit 1; }
  "$bundle/tests/test_gpu_cuda" --verbose -j4
  ;;
*)
  awk 'NR > 1 && !/^#/ {exit} NR > 1' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
  ;;
esac
