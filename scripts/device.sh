#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The bench on the GPU machine: 16 CPU cores, one NVIDIA GPU (an H100 or an
# H200) with its driver, and no package registry. Build here, carry a bundle
# there, run it there.
#
#   scripts/device.sh pack [BUNDLE]         here: builds build-device (release,
#       bench on, MPI on; WEFT_DEVICE_BUILDDIR names another directory,
#       WEFT_BUILD_JOBS ninja's -j), copies its bench executables, the
#       Cholesky example and its peers, the MPI Cholesky and ping-pong, the
#       CUDA programs (when this machine has the toolkit: the conformance
#       suite, the CUDA fault suite, examples gpu_cuda_streams and cholesky_gpu,
#       bench_gpu; each when built), libweft, libweft_mpi, Open MPI (below),
#       StarPU-MPI's mpi_cholesky and every shared library they load that is
#       neither glibc's own nor a CUDA math library (below) into BUNDLE
#       (default .dev/bundle, ignored by git), then runs the bundle's check.
#   scripts/device.sh check [BUNDLE]        either side: every executable of
#       the bundle loads every library from the bundle, except glibc's own
#       and the CUDA math libraries (ldd, with the bundle's LD_LIBRARY_PATH);
#       exit 1 and the culprit if not.
#   scripts/device.sh run [BUNDLE] [ARGS]   there: the check, then
#       bench/engine/run.py --builddir BUNDLE ARGS (the tree's own run.py, which the
#       GPU machine's copy of the working tree has; default: the dependency
#       lists and the pipeline at 1, 2, 4, 8 and 16 threads, 3 runs a cell,
#       weft, oneTBB, libgomp and libomp), with bench_xfer's line-move cost
#       first.
#   scripts/device.sh cpu [BUNDLE] [--dry] [--only S[,S]]
#       there: the machine (lscpu), the line-move floor, the engine and pool
#       sweep at 1-16 threads (the op lists with their replays, the
#       pipeline, fib, pfor_fine, pfor_imb; weft, oneTBB, libgomp, libomp;
#       312 s on the 16-core GPU machine before the peers' configuration
#       trials), Taskflow's graph shapes and fanout at 1-16 threads
#       (graph_dag, graph_grid, graph_tree, once and relaunched, and
#       fanout; the same runtimes), XNNPACK over the stock libpthreadpool and over weft's
#       drop-in at 1-16 threads, tiled Cholesky N 8192 b 256, double, 1 and
#       16 threads, against the same peers and OpenBLAS's dpotrf, then the
#       MPI section: bench/mpi/run.py's distributed Cholesky, N 8192 b 512,
#       4 ranks x 4 threads and 1 x 16, weft_mpi against StarPU-MPI, and the
#       ping-pong at 2 ranks (a core each, or unbound: whichever bare MPI is
#       the faster in), on the bundle's Open MPI (relocated: OPAL_PREFIX).
#       Every peer at its best: each table's footer says how each ran
#       (bench/harness/peers.py). One report on stdout.
#       --dry: every section once, small, at 1 thread (the MPI section: 2
#       ranks of 1 thread; a check here: 58 s on the 2-vCPU VM). --only
#       S[,S] (sweep, shapes, xnnpack, cholesky, mpi): those sections alone, e.g. to
#       split the call where one command may run for 10 minutes at most
#       (the trials lengthen every section).
#   The bundle is carried packed (pack writes BUNDLE.tar.xz, ~17 MB):
#       carry .dev/bundle.tar.xz; there: tar xJf .dev/bundle.tar.xz -C .dev
#   scripts/device.sh gpu [BUNDLE] [--dry] [--log FILE]
#       there, the GPU work in one command (under 9 minutes: each
#       step has a timeout, the whole a deadline, WEFT_DEVICE_GPU_S, 530 s):
#       first the GPU and its driver (nvidia-smi --query-gpu=name,
#       driver_version,compute_mode; without nvidia-smi, that it is absent
#       and /proc/driver/nvidia/version), and whether a GPU is present
#       (/dev/nvidia<N> or /proc/driver/nvidia/gpus/*, as the CUDA suites
#       judge it: tests/gpu/gpu_present.h); the bundle's check; the CUDA
#       math libraries the bundle leaves to the GPU machine (below), found and
#       put on LD_LIBRARY_PATH after the bundle's lib; then, each step's
#       exit status reported and the next run after a failure: the cuda
#       backend's conformance suite (40 s) and the scenarios of early
#       release after a device error and of the watchdog on CUDA
#       (tests/gpu/test_cuda_faults.c) once per WEFT_GPU_COMPLETION mode,
#       hostword, event and blocking (20 s each); the conformance suite's
#       host_word_by_kernel alone, timed, under lazy module loading (the
#       default) and with CUDA_MODULE_LOADING=EAGER (30 s each: a first
#       launch that waits behind a running kernel shows as a gap between
#       the two, or as a failure); the CUDA examples, gpu_cuda_streams and
#       cholesky_gpu (15 s each); bench_gpu, full (240 s);
#       bench/cholesky/run_gpu.py (what is left, at most 120 s). One report
#       at the end; exit 1 if a step failed or timed out. A CUDA program
#       that skips itself (exit 77) is a failure where a GPU is present (a
#       GPU CUDA cannot use: a driver too old for the runtime, CUDA 13
#       needing 580 or newer; the suites and bench_gpu say which driver they
#       found), "skipped: no GPU" elsewhere. A program the bundle lacks is
#       reported "not in the bundle: not built".
#       --dry: here, without a GPU: every step once, small (bench_gpu
#       --quick, cholesky/run_gpu.py --quick when it takes it); the CUDA
#       programs exit 77, reported "skipped: no GPU". --log FILE: the whole
#       output also goes to FILE (the report is its tail).
#
# The CUDA math libraries (cuBLAS, cuBLASLt, cuSOLVER, cuSPARSE, nvJitLink,
# ...: hundreds of MB) are not carried: the GPU machine has them, in its CUDA
# toolkit or in Python's nvidia-* wheels (PyTorch, CuPy). pack lists the
# sonames the bundle needs in BUNDLE/device-libs; gpu looks for each in
# WEFT_CUDA_LIBDIRS (colon-separated, first), /usr/local/cuda/lib64,
# /usr/local/cuda-*/lib64 and lib, python3's site-packages (nvidia/*/lib,
# torch/lib), the loader's cache, then a find under /opt, /usr and the home
# directories (20 s at most), and says which directory it used for each.
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
[ $# -eq 0 ] || shift
bundle=.dev/bundle # unless named (an option is not a bundle: "gpu --dry")
if [ $# -gt 0 ] && [[ $1 != -* ]]; then
  bundle=$1
  shift
fi

# glibc's own libraries: present on any Linux machine that runs our binaries
glibc_re='^(linux-vdso|ld-linux|libc|libm|libpthread|libdl|librt|libresolv)[.-]'
# the CUDA math libraries: found on the GPU machine (the header), never carried
cuda_math_re='^lib(cublas|cublasLt|cusolver|cusolverMg|cusparse|cufft|cufftw|curand|nvJitLink|nvrtc|nvblas)[.]so'
# what gpu looks for when the bundle names none (cholesky_gpu's, with CUDA 13)
cuda_math_default=(libcublas.so.13 libcublasLt.so.13 libcusolver.so.12 libcusparse.so.12
  libnvJitLink.so.13)
bins=(bench_weft bench_tbb bench_gomp bench_omp_clang bench_serial bench_xfer bench_skeleton
  bench_cholesky_gomp bench_cholesky_omp_clang bench_cholesky_tbb bench_xnnpack
  bench_mpi_pingpong bench_gpu)
# weft's pthreadpool drop-in, beside bench_xnnpack (pthreadpool/run.py finds it here)
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
      [[ $name =~ $cuda_math_re ]] && continue # the GPU machine's own (gpu: cuda_libs)
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
    python3 bench/mpi/run.py --builddir "$bundle" "${sp[@]}" "${mpi[@]}"
  ) || echo "== MPI: exit $?"
}

# ------------------------------------------------------------ gpu's parts

# The directories where python3's packages may hold the CUDA math libraries:
# the nvidia-* wheels (nvidia/<lib>/lib; CUDA 13's: nvidia/cu13/lib) and
# torch/lib, on every site-packages python3 knows.
python_cuda_dirs() {
  command -v python3 >/dev/null || return 0
  timeout 15 python3 - <<'PY' 2>/dev/null || true
import glob, os, site, sys
roots = []
try:
    import nvidia  # a namespace package: one path per site-packages
    roots += [os.path.dirname(p) for p in nvidia.__path__]
except Exception:
    pass
try:
    roots += site.getsitepackages() + [site.getusersitepackages()]
except Exception:
    pass
roots += [p for p in sys.path if p.endswith("-packages")]
seen = set()
for r in roots:
    for d in sorted(glob.glob(os.path.join(r, "nvidia", "*", "lib"))) + [os.path.join(r, "torch", "lib")]:
        if os.path.isdir(d) and d not in seen:
            seen.add(d)
            print(d)
PY
}

# Finds each CUDA math library the bundle needs (BUNDLE/device-libs, the
# header) and puts the directories after the bundle's lib on
# LD_LIBRARY_PATH; says where each was found, or what is there instead.
# Sets cuda_libs_status for the report.
cuda_libs() {
  local want=() cands=() dirs=() missing=() s d hit ldc
  [ ! -s "$bundle/device-libs" ] || mapfile -t want <"$bundle/device-libs"
  if [ ${#want[@]} -eq 0 ]; then
    echo "no program of the bundle needs one (no cholesky_gpu); looking for CUDA 13's anyway"
    want=("${cuda_math_default[@]}")
  fi
  [ -z "${WEFT_CUDA_LIBDIRS:-}" ] || IFS=: read -r -a cands <<<"$WEFT_CUDA_LIBDIRS"
  cands+=(/usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib)
  mapfile -t -O ${#cands[@]} cands < <(ls -d /usr/local/cuda-*/lib64 /usr/local/cuda-*/lib 2>/dev/null |
    sort -rV)
  mapfile -t -O ${#cands[@]} cands < <(python_cuda_dirs)
  ldc=$( (command -v ldconfig || echo /sbin/ldconfig) | head -1)
  for s in "${want[@]}"; do
    hit=
    for d in "${cands[@]}"; do
      if [ -e "$d/$s" ]; then
        hit=$d
        break
      fi
    done
    if [ -z "$hit" ]; then # the loader's cache (added all the same: it says where)
      hit=$("$ldc" -p 2>/dev/null | awk -v s="$s" '$1 == s {print $NF}' | head -1) || true
      hit=${hit%/*}
    fi
    if [ -n "$hit" ]; then
      echo "$s: $hit"
      [[ " ${dirs[*]} " == *" $hit "* ]] || dirs+=("$hit")
    else
      missing+=("$s")
    fi
  done
  if [ ${#missing[@]} -gt 0 ]; then
    local expr=() f
    for s in "${missing[@]}"; do expr+=(-o -name "${s%%.so*}.so*"); done
    echo "searching /opt /usr /home /root for ${missing[*]} (20 s at most)"
    mapfile -t f < <(timeout 20 find /opt /usr /home /root -xdev \( "${expr[@]:1}" \) \
      \( -type f -o -type l \) 2>/dev/null | sort)
    for s in "${missing[@]}"; do
      hit=$(printf '%s\n' "${f[@]}" | awk -v s="$s" '{n = split($0, p, "/")} p[n] == s' | head -1) ||
        true
      if [ -n "$hit" ]; then
        echo "$s: ${hit%/*}"
        [[ " ${dirs[*]} " == *" ${hit%/*} "* ]] || dirs+=("${hit%/*}")
      else
        echo "$s: NOT FOUND; other versions here: $(printf '%s\n' "${f[@]}" |
          grep -F "/${s%%.so*}.so" | head -3 | tr '\n' ' ')"
      fi
    done
  fi
  local root joined
  root=$(realpath "$bundle")
  joined=$(IFS=:; echo "${dirs[*]}")
  # after the bundle's lib (set first by gpu), before the rest
  [ ${#dirs[@]} -eq 0 ] || export LD_LIBRARY_PATH="$root/lib:$joined${LD_LIBRARY_PATH#"$root/lib"}"
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  # what still does not load (the header: the bundle's check left these out)
  local bad=() b
  for b in "$bundle"/tests/* "$bundle"/examples/* "$bundle"/bench/*; do
    [ -f "$b" ] && [ -x "$b" ] || continue
    if ldd "$b" 2>/dev/null | grep 'not found' >/dev/null; then # (no -q: pipefail, SIGPIPE)
      bad+=("${b#"$bundle"/}: $(ldd "$b" | awk '/not found/ {print $1}' | tr '\n' ' ')")
    fi
  done
  if [ ${#bad[@]} -eq 0 ]; then
    cuda_libs_status="found: ${dirs[*]:-nothing to add}"
  else
    printf 'does not load: %s\n' "${bad[@]}"
    cuda_libs_status="MISSING for ${bad[*]}"
  fi
  [ ${#missing[@]} -eq 0 ] || cuda_libs_status+=" (searched for: ${missing[*]})"
}

# Whether this machine has an NVIDIA GPU, judged without CUDA as the CUDA
# suites judge it (tests/gpu/gpu_present.h): a node /dev/nvidia<N>, or an
# entry of /proc/driver/nvidia/gpus. Sets gpu_evidence (empty: none).
gpu_evidence=
gpu_present() {
  local f
  for f in /dev/nvidia* /proc/driver/nvidia/gpus/*; do
    [ -e "$f" ] || continue
    if [[ $f == /proc/* || ${f##*/} =~ ^nvidia[0-9]+$ ]]; then
      gpu_evidence=$f
      return 0
    fi
  done
  return 1
}

# One step of gpu: NAME, LIMIT (s), a command. Runs it under timeout (the
# deadline may shorten the limit), prints its exit status and wall time,
# adds a line to the report (gpu_step_ms: its wall time, ms); never stops
# the script. Exit 77 (a CUDA program that found no device) is a failure
# where a GPU is present.
gpu_report=()
gpu_failed=0
gpu_step_ms=0
gpu_step() {
  local name=$1 limit=$2 rc status left t0
  shift 2
  left=$((gpu_deadline - SECONDS))
  [ "$limit" -le "$left" ] || limit=$left
  if [ "$limit" -lt 5 ]; then
    gpu_note "$name" "NOT RUN: out of time (WEFT_DEVICE_GPU_S)"
    gpu_failed=1
    gpu_step_ms=0
    return 0
  fi
  echo "== $name (at most ${limit} s): $*"
  t0=$(date +%s%N)
  set +e
  timeout -k 5 "$limit" "$@"
  rc=$?
  set -e
  gpu_step_ms=$((($(date +%s%N) - t0) / 1000000))
  case $rc in
  0) status=ok ;;
  77)
    if [ -n "$gpu_evidence" ]; then
      status="FAILED: skipped, GPU present" gpu_failed=1
    else
      status="skipped: no GPU"
    fi
    ;;
  124 | 137) status="TIMED OUT after ${limit} s" gpu_failed=1 ;;
  *) status="FAILED (exit $rc)" gpu_failed=1 ;;
  esac
  echo "== $name: $status, $gpu_step_ms ms"
  gpu_report+=("$(printf '%-44s %-28s %7d ms' "$name" "$status" "$gpu_step_ms")")
}

gpu_note() { # NAME WHY: a step that does not run
  echo "== $1: $2"
  gpu_report+=("$(printf '%-44s %s' "$1" "$2")")
}

# gpu's body (the header), after its arguments: exit 1 if a step failed.
gpu_main() {
  gpu_deadline=$((SECONDS + ${WEFT_DEVICE_GPU_S:-530}))
  # First the GPU and its driver (a driver too old for the bundle's CUDA
  # runtime makes every CUDA program find no device).
  echo "== the GPU and its driver"
  if command -v nvidia-smi >/dev/null; then
    timeout 10 nvidia-smi --query-gpu=name,driver_version,compute_mode --format=csv ||
      echo "nvidia-smi: exit $?"
    gpu_device=$(timeout 10 nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap \
      --format=csv,noheader 2>&1 | head -4 | tr '\n' ';') || true
  else
    echo "no nvidia-smi on this machine; /proc/driver/nvidia/version:"
    cat /proc/driver/nvidia/version 2>/dev/null || echo "(absent: no NVIDIA kernel module loaded)"
    gpu_device="no nvidia-smi; $(head -1 /proc/driver/nvidia/version 2>/dev/null ||
      echo 'no NVIDIA kernel module')"
  fi
  if gpu_present; then
    echo "a GPU is present ($gpu_evidence): a CUDA program that skips (exit 77) fails this run"
    gpu_device+=" (present: $gpu_evidence)"
  else
    echo "no GPU present (no /dev/nvidia<N>, no /proc/driver/nvidia/gpus/*): the CUDA programs skip"
  fi
  check || exit 1 # (errexit does not hold in gpu's pipeline with tee)
  export LD_LIBRARY_PATH="$(realpath "$bundle")/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "== device.sh gpu${dry:+ $dry}, $(date -u '+%Y-%m-%d %H:%M UTC'), built from $(cat "$bundle/commit")"
  if command -v nvidia-smi >/dev/null; then
    timeout 10 nvidia-smi || echo "nvidia-smi: exit $?"
  fi
  echo "device: $gpu_device"
  echo "== the CUDA math libraries"
  cuda_libs_status=
  cuda_libs
  # The suite (one process per test, the tests in parallel) and the fault
  # suite (early release after a device error, the watchdog), once per
  # completion mode (one test at a time: each traps its context).
  run_bin() { # NAME LIMIT PATH ARGS...: a program of the bundle, if there
    local name=$1 limit=$2 path=$3
    shift 3
    if [ -x "$bundle/$path" ]; then
      gpu_step "$name" "$limit" "$bundle/$path" "$@"
    else
      gpu_note "$name" "not in the bundle: not built"
    fi
  }
  run_bin "CUDA conformance suite" 40 tests/test_gpu_cuda --verbose -j4
  for mode in hostword event blocking; do
    if [ -x "$bundle/tests/test_gpu_cuda_faults" ]; then
      gpu_step "CUDA fault suite, WEFT_GPU_COMPLETION=$mode" 20 \
        env WEFT_GPU_COMPLETION=$mode "$bundle/tests/test_gpu_cuda_faults" --verbose -j1
    else
      gpu_note "CUDA fault suite, WEFT_GPU_COMPLETION=$mode" "not in the bundle: not built"
    fi
  done
  # The host word's kernel path behind a running gate kernel, timed: under
  # lazy module loading (the default) a first launch that loads its kernel
  # may wait for the running ones; with EAGER every kernel is loaded at
  # start. The two times should be alike.
  if [ -x "$bundle/tests/test_gpu_cuda" ]; then
    local kernel_ms=()
    for loading in lazy EAGER; do
      if [ $loading = lazy ]; then
        gpu_step "host_word_by_kernel, lazy loading" 30 env -u CUDA_MODULE_LOADING \
          "$bundle/tests/test_gpu_cuda" --filter 'cuda/host_word_by_kernel' --verbose
      else
        gpu_step "host_word_by_kernel, CUDA_MODULE_LOADING=EAGER" 30 env CUDA_MODULE_LOADING=EAGER \
          "$bundle/tests/test_gpu_cuda" --filter 'cuda/host_word_by_kernel' --verbose
      fi
      kernel_ms+=("$gpu_step_ms")
    done
    echo "== host_word_by_kernel: ${kernel_ms[0]} ms lazy (the default), ${kernel_ms[1]} ms" \
      "with CUDA_MODULE_LOADING=EAGER"
    gpu_host_word_times="${kernel_ms[0]} ms lazy, ${kernel_ms[1]} ms EAGER"
  else
    gpu_note "host_word_by_kernel, timed" "not in the bundle: not built"
  fi
  run_bin "examples/gpu_cuda_streams 32 8" 15 examples/gpu_cuda_streams 32 8
  run_bin "examples/cholesky_gpu --n 2048 --b 512 --check" 30 \
    examples/cholesky_gpu --n 2048 --b 512 --reps 1 --check
  if [ -n "$dry" ]; then
    run_bin "bench_gpu --quick" 60 bench/bench_gpu --quick
  else
    run_bin "bench_gpu" 240 bench/bench_gpu
  fi
  chol=(python3 -u bench/cholesky/run_gpu.py --builddir "$bundle")
  if [ ! -f bench/cholesky/run_gpu.py ]; then
    gpu_note "cholesky/run_gpu.py" "not in the tree: not merged"
  elif [ ! -x "$bundle/examples/cholesky_gpu" ]; then
    gpu_note "cholesky/run_gpu.py" "not run: examples/cholesky_gpu not in the bundle"
  else
    # its row budget within the step's 120 s; --dry: small, on emulated devices
    if [ -n "$dry" ]; then
      chol+=(--backend host --n 1024 --b 256 --reps 1 --budget 30)
    else
      chol+=(--budget 100)
    fi
    gpu_step "cholesky/run_gpu.py${dry:+ (small)}" 120 "${chol[@]}"
  fi
  echo
  echo "== device.sh gpu${dry:+ $dry}: report (built from $(cat "$bundle/commit"), $SECONDS s)"
  echo "device: $gpu_device"
  echo "CUDA math libraries: $cuda_libs_status"
  echo "host_word_by_kernel: ${gpu_host_word_times:-not run}"
  printf '%s\n' "${gpu_report[@]}"
  exit $gpu_failed
}

case "$cmd" in
pack)
  scripts/deps.sh bench
  builddir=${WEFT_DEVICE_BUILDDIR:-build-device} # its own: a release build
  # tests on for the CUDA suite alone: only the targets named below are built
  scripts/meson-setup.sh "$builddir" -Dtests=enabled -Dbench=true -Dmpi=enabled >/dev/null
  targets=()
  for b in "${bins[@]}"; do targets+=("bench/$b"); done
  targets+=(examples/cholesky examples/cholesky_mpi tests/test_gpu_cuda tests/test_gpu_cuda_faults
    examples/gpu_cuda_streams examples/cholesky_gpu "$dropin")
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
  # the GPU machine's copy of the tree has no git: the bundle says what it was built from
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
  : >"$bundle/device-libs"
  { ldd "${found[@]}" 2>/dev/null || true; } | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
    while read -r name path; do
      [[ $name =~ $glibc_re ]] && continue
      if [[ $name =~ $cuda_math_re ]]; then # too large to carry: the GPU machine has them
        echo "$name" >>"$bundle/device-libs"
        continue
      fi
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
  echo "device.sh: CUDA programs: $(cd "$bundle" && ls -d tests/test_gpu_cuda* examples/gpu_cuda_streams \
    examples/cholesky_gpu bench/bench_gpu 2>/dev/null | tr '\n' ' ')"
  echo "device.sh: left to the GPU machine (CUDA math libraries):" \
    "$([ -s "$bundle/device-libs" ] && tr '\n' ' ' <"$bundle/device-libs" || echo "none (no program needs one)")"
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
  python3 bench/engine/run.py --builddir "$bundle" "$@"
  ;;
cpu)
  dry= only=sweep,shapes,xnnpack,cholesky,mpi
  while [ $# -gt 0 ]; do
    case "$1" in
    --dry) dry=--dry ;;
    --only) only=${2:?device.sh cpu: --only takes sweep,shapes,xnnpack,cholesky,mpi}; shift ;;
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
    python3 bench/engine/run.py --builddir "$bundle" --only chain,indep,dag,wave,pipeline,fib,pfor_fine,pfor_imb \
      --rt weft,tbb,gomp,omp_clang "${sweep[@]}" || echo "== the sweep: exit $?"
  fi
  if section shapes; then
    echo "== Taskflow's graph shapes and fanout, 1-16 threads"
    python3 bench/engine/run.py --builddir "$bundle" --only graph_dag,graph_grid,graph_tree,fanout \
      --rt weft,tbb,gomp,omp_clang "${sweep[@]}" || echo "== the shapes: exit $?"
  fi
  if section xnnpack; then
    echo "== XNNPACK over the stock libpthreadpool and over weft's drop-in"
    if [ -x "$bundle/bench/bench_xnnpack" ] && [ -e "$bundle/$dropin" ]; then
      python3 bench/pthreadpool/run.py --builddir "$bundle" --stock-libdir "$bundle/lib" "${xnn[@]}" ||
        echo "== XNNPACK: exit $?"
    else
      echo "no bench_xnnpack or drop-in in the bundle (libxnnpack-dev was not found at pack time)"
    fi
  fi
  if section cholesky; then
    echo "== tiled Cholesky"
    if [ -x "$bundle/examples/cholesky" ]; then
      python3 bench/cholesky/run.py --builddir "$bundle" --prec double "${chol[@]}" ||
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
  dry= log=
  while [ $# -gt 0 ]; do
    case "$1" in
    --dry) dry=--dry ;;
    --log) log=${2:?device.sh gpu: --log takes a file}; shift ;;
    *) echo "device.sh gpu: unknown argument $1 (gpu [BUNDLE] [--dry] [--log FILE])" >&2; exit 2 ;;
    esac
    shift
  done
  if [ -z "$log" ]; then
    gpu_main
  else # everything to the file as well (the report is its tail)
    set +e
    gpu_main 2>&1 | tee -a "$log"
    rc=${PIPESTATUS[0]}
    set -e
    echo "the whole output: $log"
    exit "$rc"
  fi
  ;;
*)
  awk 'NR > 1 && !/^#/ {exit} NR > 1' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
  ;;
esac
