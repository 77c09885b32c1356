#!/usr/bin/env bash
# The bench on a machine without a package registry (the workplace's lent
# 16-core host): build here, carry a bundle there, run it there.
#
#   scripts/device.sh pack [BUNDLE]         here: builds build-device (release,
#       bench on, MPI off), copies its bench executables, libweft and every
#       shared library they load that is not glibc's own into BUNDLE
#       (default .dev/bundle, ignored by git), then runs the bundle's check.
#   scripts/device.sh check [BUNDLE]        either side: every executable of
#       the bundle loads every library from the bundle, except glibc's own
#       (ldd, with the bundle's LD_LIBRARY_PATH); exit 1 and the culprit if not.
#   scripts/device.sh run [BUNDLE] [ARGS]   there: the check, then
#       bench/run.py --builddir BUNDLE ARGS (the tree's own run.py, which the
#       device's copy of the working tree has; default: the dependency lists
#       and the pipeline at 1, 2, 4, 8 and 16 threads, 3 runs a cell, weft,
#       oneTBB, libgomp and libomp), with bench_xfer's line-move cost first.
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
bins=(bench_weft bench_tbb bench_gomp bench_omp_clang bench_serial bench_xfer bench_skeleton)

check() {
  local bad=0 root
  [ -d "$bundle/bench" ] || { echo "device.sh: no bundle at $bundle (run: scripts/device.sh pack)" >&2; return 1; }
  root=$(realpath "$bundle")
  for f in "$bundle"/bench/*; do
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
  scripts/meson-setup.sh "$builddir" -Dtests=disabled -Dbench=true -Dmpi=disabled >/dev/null
  ninja -C "$builddir" >/dev/null
  rm -rf "$bundle"
  mkdir -p "$bundle/bench" "$bundle/lib"
  found=()
  for b in "${bins[@]}"; do
    [ -x "$builddir/bench/$b" ] || continue # a peer that was not built
    cp "$builddir/bench/$b" "$bundle/bench/"
    found+=("$builddir/bench/$b")
  done
  [ -x "$bundle/bench/bench_weft" ] || { echo "device.sh: bench_weft was not built" >&2; exit 1; }
  # the executables find libweft through their runpath ($ORIGIN/..)
  find "$builddir" -maxdepth 1 -name 'libweft.so*' ! -type d -exec cp -P {} "$bundle/" \;
  ldd "${found[@]}" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
    while read -r name path; do
      [[ $name =~ $glibc_re ]] && continue
      [[ $path == "$PWD/$builddir/"* ]] && continue # libweft, copied above
      cp -L "$path" "$bundle/lib/$name"
    done
  check
  echo "device.sh: $bundle: $(du -sh "$bundle" | cut -f1)," \
    "$(ls "$bundle/bench" | wc -l) executables, $(ls "$bundle/lib" | wc -l) libraries"
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
*)
  sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
  ;;
esac
