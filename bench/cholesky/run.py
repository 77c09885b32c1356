#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Tiled Cholesky: weft against StarPU, OpenMP tasks and LAPACK, one table.

    python3 bench/cholesky/run.py --builddir build-bench [--quick]

Same matrix order N and tile size b for everyone, one BLAS thread per task
(threaded OpenBLAS with OPENBLAS_NUM_THREADS=1 / openblas_set_num_threads):
  weft      examples/cholesky (one var per tile; POTRF/TRSM/SYRK/GEMM)
  gomp      bench_cholesky_gomp: OpenMP tasks with depend clauses, libgomp
  libomp    bench_cholesky_omp_clang: the same by clang, LLVM libomp
  oneTBB    bench_cholesky_tbb: a flow graph, one node per operator, edges
            from the tiles each reads and writes (construction timed)
  StarPU    cholesky_implicit from starpu-examples (single precision only:
            it calls sgemm/ssyrk/strsm; --starpu PATH overrides), STARPU_NCPU=T
  LAPACK    ?potrf of threaded OpenBLAS on the whole matrix, T threads
and, as the ceiling, one core's GEMM on b x b tiles times T (measured in
the same run by examples/cholesky --gemm-ceiling). GFLOP/s count N^3/3.
Every runtime checks its factor (weft, gomp, libomp: the residual; StarPU:
its -check; LAPACK: info); a failed check makes the exit status non-zero.

Every peer at its best (bench/harness/peers.py), per row: weft runs with
its defaults (workers not pinned); gomp and libomp are tried once each
unbound (OMP_PROC_BIND unset), OMP_PROC_BIND=close and, with fewer threads
than cores, spread (OMP_PLACES=cores), and StarPU with the schedulers lws,
dmda (after one run, not counted, that calibrates its models) and eager;
the best trial's configuration runs the row's repetitions (StarPU: its
trial, one run like every repetition, counts as the first). oneTBB (its
arena and global_control sized to T) and LAPACK (OpenBLAS's T threads)
have one configuration each. The footer names every choice, with the
trial figures, and a command that reruns one cell by hand.

--quick: N 2048, b 256, 5 repetitions. Full: N 2048 and 4096, b 256 and
512, 7 repetitions. --n N[,N] --b b[,b] --prec float|double --reps R pick
other cells (every N with every b). Threads: 1, 2 and 4, 8, 16 up to the CPU count
(--threads N[,N]). Each cell: the median over the repetitions [min-max].
Targets set for weft: >= the best of StarPU, OpenMP and
oneTBB in the same precision, >= 80% of the ceiling, >= 1.3x LAPACK's dpotrf.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys

# peers.py and runutil.py, the runners' shared code, are in bench/harness/
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))

from peers import Trials, omp_configs, shell, starpu_sched_configs
from runutil import print_table, run_main

STARPU = "/usr/lib/x86_64-linux-gnu/starpu/examples/cholesky_implicit"
LINE = re.compile(r"GFLOP/s \[([0-9.]+)-([0-9.]+)\]")
STARPU_ENV = {"STARPU_NCUDA": "0", "STARPU_NOPENCL": "0", "STARPU_SILENT": "1",
              "OPENBLAS_NUM_THREADS": "1"}


def run(cmd, env=None, timeout=1800):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), p.returncode,
                                                (p.stderr or p.stdout).strip()[-400:]))
    return p.stdout


def ours_cmd(exe, n, b, t, prec, reps):
    return [exe, "--n", str(n), "--b", str(b), "--threads", str(t), "--precision", prec,
            "--reps", str(reps), "--check", "--lapack-bench", "--gemm-ceiling"]


def ours(exe, n, b, t, prec, reps):
    out = run(ours_cmd(exe, n, b, t, prec, reps))
    m = re.search(r"([0-9.]+) GFLOP/s \[([0-9.]+)-([0-9.]+)\]", out)
    lap = re.search(r"LAPACK \?potrf \(\d+ threads\) ([0-9.]+) GFLOP/s", out)
    gemm = re.search(r"one-core GEMM on \d+ x \d+ tiles ([0-9.]+) GFLOP/s", out)
    return ((float(m.group(1)), float(m.group(2)), float(m.group(3))),
            float(lap.group(1)) if lap else None, float(gemm.group(1)))


def omp_cmd(exe, n, b, t, prec, reps):  # also oneTBB's: the same command line and output
    return [exe, "--n", str(n), "--b", str(b), "--threads", str(t), "--precision", prec,
            "--reps", str(reps), "--check"]


def omp(exe, n, b, t, prec, reps, env=None):
    out = run(omp_cmd(exe, n, b, t, prec, reps), env)
    m = re.search(r"([0-9.]+) GFLOP/s \[([0-9.]+)-([0-9.]+)\]", out)
    return float(m.group(1)), float(m.group(2)), float(m.group(3))


def omp_best(trials, peer, exe, row, n, b, t, prec, reps):
    """An OpenMP peer in its best binding for the row (one --reps 1 trial each)."""
    cfg, _ = trials.pick(peer, row, omp_configs(t),
                         lambda c: omp(exe, n, b, t, prec, 1, c.env)[0], unit="GFLOP/s")
    trials.set_rerun(peer, row, shell(cfg.env, omp_cmd(exe, n, b, t, prec, reps)))
    return omp(exe, n, b, t, prec, reps, cfg.env)


def starpu_cmd(exe, n, b):
    return [exe, "-size", str(n), "-nblocks", str(n // b), "-check"]


def starpu_once(exe, n, b, t, cfg):
    """One run (one factorization, checked): its GFLOP/s."""
    env = dict(STARPU_ENV, STARPU_NCPU=str(t), **cfg.env)
    out = run(starpu_cmd(exe, n, b), env)
    last = [l for l in out.splitlines() if l.strip() and not l.startswith("#")][-1].split()
    return float(last[2])


def starpu(trials, exe, row, n, b, t, reps):
    """StarPU with its best scheduler for the row; the winner's trial run is
    its first repetition (the same command as the others)."""

    def measure(cfg):
        if cfg.name == "dmda":
            starpu_once(exe, n, b, t, cfg)  # calibrates dmda's models: not counted
        return starpu_once(exe, n, b, t, cfg)

    cfg, first = trials.pick("StarPU", row, starpu_sched_configs(), measure, unit="GFLOP/s")
    trials.set_rerun("StarPU", row, shell(dict(STARPU_ENV, STARPU_NCPU=str(t), **cfg.env),
                                          starpu_cmd(exe, n, b)))
    g = [first] + [starpu_once(exe, n, b, t, cfg) for _ in range(reps - 1)]
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
    ap.add_argument("--starpu", default=STARPU, help="cholesky_implicit's path (default %s)"
                    % STARPU)
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
    trials = Trials()
    for n, b in configs:
        for prec in precs:
            for t in threads:
                row = "%d:%d %s T%d" % (n, b, prec, t)
                w, lap, gemm = ours(exe, n, b, t, prec, reps)
                trials.set_rerun("weft", row, shell({}, ours_cmd(exe, n, b, t, prec, reps)))
                r = {"n": n, "b": b, "prec": prec, "t": t, "weft": w, "ceiling": gemm * t,
                     "LAPACK": lap if prec == "double" else None}
                for peer, path in (("gomp", gomp), ("libomp", libomp)):
                    r[peer] = (omp_best(trials, peer, path, row, n, b, t, prec, reps)
                               if os.path.exists(path) else None)
                r["oneTBB"] = omp(tbb, n, b, t, prec, reps) if os.path.exists(tbb) else None
                if r["oneTBB"]:
                    trials.set_rerun("oneTBB", row, shell({}, omp_cmd(tbb, n, b, t, prec, reps)))
                r["StarPU"] = (starpu(trials, a.starpu, row, n, b, t, reps)
                               if prec == "float" and os.path.exists(a.starpu) else None)
                rows.append(r)
                print("run_cholesky: n %d b %d %s %d threads done" % (n, b, prec, t),
                      file=sys.stderr)
    trials.note("weft", "examples/cholesky --threads T: weft's defaults (WEFT_AFFINITY unset: "
                "workers not pinned), one BLAS thread per call")
    trials.note("oneTBB", "task_arena(T) and global_control(T): the arena sized to the "
                "threads, one configuration (oneTBB pins nothing, as weft here)")
    trials.note("LAPACK", "examples/cholesky --lapack-bench: OpenBLAS ?potrf, "
                "openblas_set_num_threads(T) (Debian's pthread build), one configuration")
    if any(r["StarPU"] for r in rows):
        trials.note("StarPU", "STARPU_NCPU=T (StarPU pins its workers to cores 0..T-1), "
                    "OPENBLAS_NUM_THREADS=1; the scheduler tried per row")
    elif "float" not in precs:
        trials.note("StarPU", "single precision only (cholesky_implicit): not run in double")
    for p in ("gomp", "libomp"):
        trials.note(p, "omp_set_num_threads(T); the binding tried per row")
    for path, peer in ((gomp, "gomp"), (libomp, "libomp"), (tbb, "oneTBB")):
        if not os.path.exists(path):
            trials.note(peer, "not built (%s missing): skipped" % path)
    if "float" in precs and not os.path.exists(a.starpu):
        trials.note("StarPU", "not installed (%s missing; Debian: starpu-examples): skipped"
                    % a.starpu)
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
    trials.print_footer(["weft"] + peers)
    for f in trials.failures:
        print("run_cholesky: FAILED trial: %s" % f, file=sys.stderr)
    return 1 if trials.failures else 0


if __name__ == "__main__":
    run_main(main, "run_cholesky")
