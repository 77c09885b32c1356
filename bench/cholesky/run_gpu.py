#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Tiled Cholesky on a GPU: weft (cuBLAS/cuSOLVER per tile) against one cusolverDnDpotrf.

    python3 bench/cholesky/run_gpu.py --builddir build-device [--n 16384] [--b 1024,2048]

Runs examples/cholesky_gpu (examples/cholesky/cholesky_gpu.c), which times,
in one process and on the same matrix, weft's tiled factorization (one GPU
operator per tile kernel: POTRF on cuSOLVER, TRSM/SYRK/GEMM on cuBLAS, the
tiles resident on the device) and one cusolverDn?potrf call on the whole
matrix, each --reps times after an untimed run; every factor is compared
with cuSOLVER's and every POTRF's devInfo is checked (a failed check fails
the row). GFLOP/s count N^3/3; each cell is the median [min-max].

Rows (N 16384, double, 3 repetitions by default):
  gpu           every kernel on the GPU, for each tile size of --b (1024:
                2.1 GFLOP GEMMs of ~50 us on an H200, several times weft's
                per-operator cost, 816 operators; 2048 fills the GPU better per
                kernel but puts 8 POTRFs of 2048 on the critical path), and at
                the first tile size with 4 compute streams (WEFT_GPU_WORKERS=4)
  hybrid        POTRF on a CPU worker (MAGMA's split), the rest on the GPU
  hybrid-panel  POTRF and TRSM on CPU workers, SYRK and GEMM on the GPU
Before the rows, the cuda meson tests' small runs (N 1024 b 256: every
mode, both precisions, the not-SPD report; --no-smoke skips them). The
residual ||A - L L^T|| is computed once, on the first row (OpenBLAS on
every core: seconds at N 16384); the other rows rely on the comparison with
cuSOLVER's factor. Target: weft's GPU mode >= 80% of
cusolverDnDpotrf at N 16384 in double (the best gpu row); measured and
printed, never asserted. The whole run stops starting rows after --budget
seconds (default 170: under 3 minutes on an H200, where one row takes
10-20 s, mostly the host's matrix setup and checks).

Shared libraries: the build links cuBLAS and cuSOLVER from the toolkit it
was built with (libcublas.so.13, libcusolver.so.12 for CUDA 13). When the
loader cannot find them (ldd), this script looks in the CUDA toolkits under
/usr/local and in Python's nvidia-* wheel directories (PyTorch, CuPy) and
runs the program with LD_LIBRARY_PATH set to where they are, saying so.

Exit status: 0, 1 when a row failed, 2 on bad arguments, 77 when the
machine has no CUDA device (the program's own skip).
"""

import argparse
import glob
import json
import os
import re
import site
import subprocess
import sys
import time

# peers.py and runutil.py, the runners' shared code, are in bench/harness/
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))

from runutil import print_table, run_main

TARGET = 0.80

# First, the small correctness runs of the cuda meson tests (examples/
# meson.build), each under a second on an H200: every mode, both
# precisions, the not-SPD report. --no-smoke skips them.
SMOKE = [[], ["--prec", "float"], ["--mode", "hybrid"],
         ["--mode", "hybrid-panel", "--prec", "float"], ["--gpu-workers", "4"],
         ["--not-spd"], ["--mode", "hybrid", "--not-spd"]]


def lib_dirs():
    """Directories that may hold the CUDA libraries, most likely first."""
    dirs = ["/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib"]
    dirs += sorted(glob.glob("/usr/local/cuda-*/lib64") + glob.glob("/usr/local/cuda-*/lib"),
                   reverse=True)
    roots = list(site.getsitepackages()) + [site.getusersitepackages()]
    roots += glob.glob("/usr/local/lib/python3*/dist-packages")
    roots += glob.glob("/usr/lib/python3*/dist-packages") + glob.glob("/opt/conda/lib/python3*/site-packages")
    for r in roots:
        dirs += sorted(glob.glob(os.path.join(r, "nvidia", "*", "lib")))
    dirs += ["/usr/lib/x86_64-linux-gnu", "/opt/conda/lib"]
    seen = []
    for d in dirs:
        if os.path.isdir(d) and d not in seen:
            seen.append(d)
    return seen


def missing_libs(exe, env):
    """The libraries the loader cannot find for exe ("NAME => not found");
    any other complaint of the loader (a version a library lacks) is an
    error that no search fixes."""
    p = subprocess.run(["ldd", exe], env=env, capture_output=True, text=True)
    missing, other = [], []
    for l in (p.stdout + p.stderr).splitlines():
        m = re.match(r"\s*(\S+) => not found", l)
        if m:
            missing.append(m.group(1))
        elif "not found" in l:
            other.append(l.strip())
    if other:
        raise RuntimeError("%s: the loader says: %s" % (exe, "; ".join(other)))
    return missing


def loader_env(exe):
    """The environment exe loads in: the current one, or one with
    LD_LIBRARY_PATH extended by the directories that hold what ldd misses
    (repeated, as a found library may need others)."""
    env = dict(os.environ)
    added = []
    dirs = None
    while True:
        missing = missing_libs(exe, env)
        if not missing:
            if added:
                print("run_cholesky_gpu: LD_LIBRARY_PATH += %s" % ":".join(added), file=sys.stderr)
            return env
        dirs = dirs if dirs is not None else lib_dirs()
        found = []
        for lib in missing:
            hit = next((d for d in dirs if os.path.exists(os.path.join(d, lib))), None)
            if hit and hit not in added and hit not in found:
                found.append(hit)
        if not found:
            near = []
            for lib in missing:
                stem = lib.split(".so")[0]
                near += [os.path.join(d, os.path.basename(f)) for d in dirs
                         for f in glob.glob(os.path.join(d, stem + ".so.*"))]
            raise RuntimeError(
                "%s cannot load %s; looked in %s%s" % (
                    exe, ", ".join(missing), ", ".join(dirs) or "(no candidate directory)",
                    ("; other versions there: %s (the build needs the versions of the toolkit it "
                     "was built with: rebuild against this machine's toolkit)" % ", ".join(near))
                    if near else ""))
        added += found
        env["LD_LIBRARY_PATH"] = ":".join(added + [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p])


class Skipped(Exception):
    pass


def run_row(exe, env, args, timeout):
    cmd = [exe] + args
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if p.returncode == 77:
        raise Skipped(p.stdout.strip() or p.stderr.strip())
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), p.returncode,
                                                (p.stderr + p.stdout).strip()[-600:]))
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    if not lines:
        raise RuntimeError("%s: no JSON line in its output: %s" % (" ".join(cmd), p.stdout[-400:]))
    return json.loads(lines[-1])


def cell(g):
    return "%.0f [%.0f-%.0f]" % tuple(g)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--builddir", default="build-device")
    ap.add_argument("--exe", help="cholesky_gpu's path (default BUILDDIR/examples/cholesky_gpu)")
    ap.add_argument("--n", type=int, default=16384)
    ap.add_argument("--b", default="1024,2048", help="tile sizes of the gpu rows (the first one "
                    "also for the others)")
    ap.add_argument("--prec", default="double", choices=["double", "float"])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--backend", default="cuda", choices=["cuda", "host"],
                    help="host: weft's emulated devices (a dry run on a machine without a GPU)")
    ap.add_argument("--budget", type=float, default=170, help="seconds after which no row starts")
    ap.add_argument("--no-smoke", action="store_true", help="skip the small correctness runs")
    a = ap.parse_args()
    try:
        bs = [int(x) for x in a.b.split(",") if x]
    except ValueError:
        bs = []
    if not bs or any(b <= 0 or a.n % b for b in bs) or a.n <= 0 or a.reps < 1:
        print("run_cholesky_gpu: --n must be a positive multiple of every --b, --reps >= 1",
              file=sys.stderr)
        return 2
    exe = a.exe or os.path.join(a.builddir, "examples", "cholesky_gpu")
    if not os.path.exists(exe):
        print("run_cholesky_gpu: no %s (built with the CUDA toolkit, cuBLAS, cuSOLVER, OpenBLAS "
              "and LAPACKE: examples/meson.build)" % exe, file=sys.stderr)
        return 1
    env = loader_env(exe)
    failures = []
    if not a.no_smoke:
        passed = 0
        for extra in SMOKE:
            cmd = [exe, "--n", "1024", "--b", "256", "--reps", "2", "--check",
                   "--backend", a.backend] + extra
            try:
                p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
            except subprocess.TimeoutExpired:
                failures.append("%s: no result after 120 s" % " ".join(cmd))
                print("run_cholesky_gpu: FAILED: %s" % failures[-1], file=sys.stderr)
                continue
            if p.returncode == 77:
                print("run_cholesky_gpu: skipped: %s" % (p.stdout.strip() or p.stderr.strip()),
                      file=sys.stderr)
                return 77
            if p.returncode == 0:
                passed += 1
            else:
                failures.append("%s: exit %d: %s" % (" ".join(cmd), p.returncode,
                                                     (p.stderr + p.stdout).strip()[-600:]))
                print("run_cholesky_gpu: FAILED: %s" % failures[-1], file=sys.stderr)
        print("correctness runs (N 1024 b 256: gpu, float, hybrid, hybrid-panel float, 4 streams, "
              "not SPD in gpu and hybrid modes): %d of %d passed" % (passed, len(SMOKE)))
    rows = [("gpu", b, 0) for b in bs] + [("gpu", bs[0], 4), ("hybrid", bs[0], 0),
                                          ("hybrid-panel", bs[0], 0)]
    start = time.monotonic()
    results, skipped = [], []
    slowest = 0.0
    for k, (mode, b, workers) in enumerate(rows):
        left = a.budget - (time.monotonic() - start)
        if left < max(slowest, 5):
            skipped.append("%s b %d%s" % (mode, b, " %d streams" % workers if workers else ""))
            continue
        args = ["--n", str(a.n), "--b", str(b), "--prec", a.prec, "--reps", str(a.reps),
                "--mode", mode, "--backend", a.backend] + (["--check"] if k == 0 else [])
        if workers:
            args += ["--gpu-workers", str(workers)]
        t0 = time.monotonic()
        try:
            results.append(run_row(exe, env, args, timeout=max(left, 10)))
        except Skipped as e:
            print("run_cholesky_gpu: skipped: %s" % e, file=sys.stderr)
            return 77
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            failures.append(str(e))
            print("run_cholesky_gpu: FAILED: %s" % e, file=sys.stderr)
        slowest = max(slowest, time.monotonic() - t0)
        print("run_cholesky_gpu: %s b %d done (%.1f s)" % (mode, b, time.monotonic() - t0),
              file=sys.stderr)
    if not results:
        return 1  # every failure was printed above
    ref = results[0]["ref"]
    hdr = ["mode", "N", "b", "streams", "weft GFLOP/s", ref + " GFLOP/s", "weft/ref",
           "target >= %.0f%%" % (TARGET * 100), "kernels per stream (timed runs)", "copies",
           "vs ref", "residual"]
    table = [hdr]
    for r in results:
        gpu = r["mode"] == "gpu"
        table.append([r["mode"], str(r["n"]), str(r["b"]), str(r["streams"]), cell(r["weft_gflops"]),
                      cell(r["ref_gflops"]), "%.2f" % r["ratio"],
                      ("yes" if r["ratio"] >= TARGET else "NO") if gpu else "-",
                      "/".join(str(c) for c in r["stream_kernels"]) or "-", str(r["copies"]),
                      "%.1e" % r["vs_ref"],
                      "-" if r["residual"] is None else "%.2g" % r["residual"]])
    print_table("Tiled Cholesky on %s: weft vs %s, N %d %s, GFLOP/s (N^3/3 flops), median "
                "[min-max] of %d runs after an untimed one" % (
                    "weft's emulated devices (host backend)" if a.backend == "host" else "the GPU",
                    ref, a.n, a.prec, a.reps), table)
    gpu_rows = [r for r in results if r["mode"] == "gpu"]
    if gpu_rows:
        best = max(gpu_rows, key=lambda r: r["ratio"])
        on_target = a.n == 16384 and a.prec == "double" and a.backend == "cuda"
        print("target: weft's gpu mode >= %.0f%% of %s at N 16384 double: %s (best gpu "
              "row: b %d, %d streams, %.2f)%s" % (
                  TARGET * 100, ref, "yes" if best["ratio"] >= TARGET else "NO", best["b"],
                  best["streams"], best["ratio"],
                  "" if on_target else "; this run is not that configuration"))
    print("timed: weft from its first push to weft_wait_all (tiles already on the device; the "
          "hybrid rows' copies included); %s %s" % (
              ref, "from its call to its return" if a.backend == "host" else
              "from its call to its stream's synchronization (matrix uploaded, workspace "
              "allocated before)"))
    for s in skipped:
        print("run_cholesky_gpu: not run (the %.0f s budget was spent): %s" % (a.budget, s))
    return 1 if failures else 0


if __name__ == "__main__":
    run_main(main, "run_cholesky_gpu")
