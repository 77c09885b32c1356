#!/usr/bin/env python3
"""Tiled Cholesky: weft against StarPU, OpenMP tasks and LAPACK, one table.

    python3 bench/run_cholesky.py --builddir build-bench [--quick]

Same matrix order N and tile size b for everyone, one BLAS thread per task
(threaded OpenBLAS with OPENBLAS_NUM_THREADS=1 / openblas_set_num_threads):
  weft      examples/cholesky (one var per tile; POTRF/TRSM/SYRK/GEMM)
  gomp      bench_cholesky_gomp: OpenMP tasks with depend clauses, libgomp
  libomp    bench_cholesky_omp_clang: the same by clang, LLVM libomp
  oneTBB    bench_cholesky_tbb: a flow graph, one node per operator, edges
            from the tiles each reads and writes (construction timed)
  StarPU    cholesky_implicit from starpu-examples (single precision only:
            it calls sgemm/ssyrk/strsm), STARPU_SCHED=dmda, STARPU_NCPU=T
  LAPACK    ?potrf of threaded OpenBLAS on the whole matrix, T threads
and, as the ceiling, one core's GEMM on b x b tiles times T (measured in
the same run by examples/cholesky --gemm-ceiling). GFLOP/s count N^3/3.
Every runtime checks its factor (weft, gomp, libomp: the residual; StarPU:
its -check; LAPACK: info); a failed check makes the exit status non-zero.

--quick: N 2048, b 256, 5 repetitions. Full: N 2048 and 4096, b 256 and
512, 7 repetitions. --n N[,N] --b b[,b] --prec float|double --reps R pick
other cells (every N with every b). Threads: 1, 2 and 4, 8, 16 up to the CPU count
(--threads N[,N]). Each cell: the median over the repetitions [min-max].
Targets (issue "Tiled Cholesky"): weft >= the best of StarPU, OpenMP and
oneTBB in the same precision, >= 80% of the ceiling, >= 1.3x LAPACK's dpotrf.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys

from runutil import print_table, run_main

STARPU = "/usr/lib/x86_64-linux-gnu/starpu/examples/cholesky_implicit"
LINE = re.compile(r"GFLOP/s \[([0-9.]+)-([0-9.]+)\]")


def run(cmd, env=None, timeout=1800):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), p.returncode,
                                                (p.stderr or p.stdout).strip()[-400:]))
    return p.stdout


def ours(exe, n, b, t, prec, reps):
    out = run([exe, "--n", str(n), "--b", str(b), "--threads", str(t), "--precision", prec,
               "--reps", str(reps), "--check", "--lapack-bench", "--gemm-ceiling"])
    m = re.search(r"([0-9.]+) GFLOP/s \[([0-9.]+)-([0-9.]+)\]", out)
    lap = re.search(r"LAPACK \?potrf \(\d+ threads\) ([0-9.]+) GFLOP/s", out)
    gemm = re.search(r"one-core GEMM on \d+ x \d+ tiles ([0-9.]+) GFLOP/s", out)
    return ((float(m.group(1)), float(m.group(2)), float(m.group(3))),
            float(lap.group(1)) if lap else None, float(gemm.group(1)))


def omp(exe, n, b, t, prec, reps):  # also oneTBB's: the same command line and output
    out = run([exe, "--n", str(n), "--b", str(b), "--threads", str(t), "--precision", prec,
               "--reps", str(reps), "--check"])
    m = re.search(r"([0-9.]+) GFLOP/s \[([0-9.]+)-([0-9.]+)\]", out)
    return float(m.group(1)), float(m.group(2)), float(m.group(3))


def starpu(n, b, t, reps):
    env = {"STARPU_NCPU": str(t), "STARPU_NCUDA": "0", "STARPU_NOPENCL": "0",
           "STARPU_SCHED": "dmda", "STARPU_SILENT": "1", "OPENBLAS_NUM_THREADS": "1"}
    g = []
    for r in range(reps + 1):  # the first run calibrates dmda's models: not counted
        out = run([STARPU, "-size", str(n), "-nblocks", str(n // b), "-check"], env)
        last = [l for l in out.splitlines() if l.strip() and not l.startswith("#")][-1].split()
        if r:
            g.append(float(last[2]))
    return statistics.median(g), min(g), max(g)


def cell(x):
    return "-" if x is None else "%.1f [%.1f-%.1f]" % x if isinstance(x, tuple) else "%.1f" % x


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--builddir", default="build-bench")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", action="append")
    ap.add_argument("--n", help="matrix orders N[,N] (instead of the mode's)")
    ap.add_argument("--b", help="tile sizes b[,b] (with --n: every N with every b)")
    ap.add_argument("--prec", default="float,double", help="float, double or both")
    ap.add_argument("--reps", type=int, help="repetitions (instead of the mode's)")
    a = ap.parse_args()
    bd = a.builddir
    exe = os.path.join(bd, "examples", "cholesky")
    if not os.path.exists(exe):
        print("run_cholesky: no %s (Debian: libopenblas-pthread-dev liblapacke-dev)" % exe,
              file=sys.stderr)
        return 1
    gomp = os.path.join(bd, "bench", "bench_cholesky_gomp")
    libomp = os.path.join(bd, "bench", "bench_cholesky_omp_clang")
    tbb = os.path.join(bd, "bench", "bench_cholesky_tbb")
    default = [1, 2] + [t for t in (4, 8, 16) if t <= (os.cpu_count() or 1)]
    threads = [int(x) for ts in a.threads for x in ts.split(",")] if a.threads else default
    configs = [(2048, 256)] if a.quick else [(2048, 256), (4096, 256), (4096, 512)]
    if a.n or a.b:
        ns = [int(x) for x in a.n.split(",")] if a.n else sorted({n for n, _ in configs})
        bs = [int(x) for x in a.b.split(",")] if a.b else sorted({b for _, b in configs})
        configs = [(n, b) for n in ns for b in bs]
    bad = [(n, b) for n, b in configs if b <= 0 or n <= 0 or n % b]
    if bad:
        print("run_cholesky: N must be a positive multiple of b: %s" % bad, file=sys.stderr)
        return 2
    precs = a.prec.split(",")
    if not precs or any(p not in ("float", "double") for p in precs):
        print("run_cholesky: --prec takes float, double or float,double", file=sys.stderr)
        return 2
    reps = a.reps if a.reps else 5 if a.quick else 7
    if reps < 1:
        print("run_cholesky: --reps must be at least 1", file=sys.stderr)
        return 2
    rows = []
    for n, b in configs:
        for prec in precs:
            for t in threads:
                w, lap, gemm = ours(exe, n, b, t, prec, reps)
                r = {"n": n, "b": b, "prec": prec, "t": t, "weft": w, "ceiling": gemm * t,
                     "LAPACK": lap if prec == "double" else None}
                r["gomp"] = omp(gomp, n, b, t, prec, reps) if os.path.exists(gomp) else None
                r["libomp"] = omp(libomp, n, b, t, prec, reps) if os.path.exists(libomp) else None
                r["oneTBB"] = omp(tbb, n, b, t, prec, reps) if os.path.exists(tbb) else None
                r["StarPU"] = (starpu(n, b, t, reps) if prec == "float" and os.path.exists(STARPU)
                               else None)
                rows.append(r)
                print("run_cholesky: n %d b %d %s %d threads done" % (n, b, prec, t),
                      file=sys.stderr)
    peers = ["StarPU", "gomp", "libomp", "oneTBB", "LAPACK"]
    hdr = ["N", "b", "prec", "thr", "weft GFLOP/s"] + peers + [
        "weft/best task peer", "ceiling", "weft/ceiling", "weft/LAPACK"]
    table = [hdr]
    for r in rows:
        task_peers = [r[p][0] for p in ("StarPU", "gomp", "libomp", "oneTBB") if r[p]]
        best = max(task_peers) if task_peers else None
        w = r["weft"][0]
        table.append([str(r["n"]), str(r["b"]), r["prec"], str(r["t"]), cell(r["weft"])] +
                     [cell(r[p]) for p in peers] +
                     ["%.2f" % (w / best) if best else "-", "%.1f" % r["ceiling"],
                      "%.0f%%" % (100 * w / r["ceiling"]),
                      "%.2f" % (w / r["LAPACK"]) if r["LAPACK"] else "-"])
    print_table("Tiled Cholesky, GFLOP/s (N^3/3 flops), median [min-max] of %d repetitions; "
                "ceiling = one core's GEMM on b x b tiles x threads" % reps, table)
    print("targets: weft/best task peer >= 1 (same precision), weft/ceiling >= 80%, "
          "weft/LAPACK >= 1.3 (double); measured, never asserted")
    return 0


if __name__ == "__main__":
    run_main(main, "run_cholesky")
