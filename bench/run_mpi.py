#!/usr/bin/env python3
"""Tiled Cholesky across MPI ranks: weft_mpi against StarPU-MPI, one table.

    python3 bench/run_mpi.py --builddir build-mpi [--quick]

Same matrix order N and tile size b, single precision, one worker and one
BLAS thread per rank, ranks 1, 2 and 4 (--ranks N[,N]) under
`mpirun --oversubscribe --bind-to none` on this machine:
  weft        <builddir>/examples/cholesky_mpi (examples/cholesky/cholesky_mpi.c):
              2D block-cyclic tiles, one weft engine per rank attached with
              weft_mpi, WEFT_NUM_THREADS=1
  StarPU-MPI  mpi_cholesky from Debian's starpu-examples (found with dpkg -L;
              --starpu PATH overrides), -size N -nblocks N/b, STARPU_NCPU=1
              (it computes in single precision: sgemm, ssyrk, strsm, spotrf)
Each launch factorizes once (`cholesky_mpi --reps 1`; mpi_cholesky always
does one), so both pay the same first-touch and first-transfer costs; the
two alternate, launch by launch, for --rounds rounds (the order flips every
round). Times: StarPU's own (rank 0, from a barrier to its wait and barrier
after), weft's own (the slowest rank, from the first push, the ranks having
met in an empty collective wait, to weft_mpi_wait_all: every transfer is
in it); GFLOP/s count N^3/3 for both. The "weft, warm" column is one more
launch per rank count: --reps R factorizations in one attachment (tiles
refilled between them), median [min-max].

Checks: every warm weft launch runs --check (rank 0 gathers the factor and
compares it with LAPACK's spotrf; a failure exits non-zero), and StarPU runs
once per rank count with -check before its timed launches (not counted). A
launch that exits non-zero or prints no figure makes its cell an ERROR and
the exit status 1; a number is never made up.

--quick: N 2048, b 256, 3 rounds, 3 warm reps. Full: N 4096 with b 512 and
256, 5 rounds, 5 warm reps. --size N:b (repeatable) picks other sizes.

If <builddir>/bench/bench_mpi_pingpong exists (meson -Dbench=true), a
second table gives its remote-read round trip against bare MPI at -np 2.
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys

from runutil import print_table, run_main

STARPU_DEFAULT = "/usr/lib/x86_64-linux-gnu/starpu/mpi/mpi_cholesky"
TIMEOUT = 900

# Open MPI as root in a container, on one machine (tests/mpi/meson.build).
MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
    "OMPI_MCA_mpi_yield_when_idle": "1",
    "OMPI_MCA_btl": "self,vader",
    "OPENBLAS_NUM_THREADS": "1",
}
WEFT_ENV = {"WEFT_NUM_THREADS": "1"}
STARPU_ENV = {"STARPU_NCPU": "1", "STARPU_NCUDA": "0", "STARPU_NOPENCL": "0",
              "STARPU_SILENT": "1"}

WEFT_LINE = re.compile(r"cholesky_mpi: n (\d+) b (\d+) float, (\d+) ranks x (\d+) threads: "
                       r"([0-9.]+) ms \[([0-9.]+)-([0-9.]+)\]")
STARPU_MS = re.compile(r"Computation time \(in ms\):\s*([0-9.]+)")
STARPU_GF = re.compile(r"Synthetic GFlops\s*:\s*([0-9.]+)")


class Failed(Exception):
    """One launch failed: its cell says so."""


def mpirun(np_, cmd, env):
    e = dict(os.environ)
    e.update(MPI_ENV)
    e.update(env)
    full = ["mpirun", "-np", str(np_), "--oversubscribe", "--bind-to", "none"] + cmd
    try:
        p = subprocess.run(full, env=e, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        raise Failed("timed out after %d s: %s" % (TIMEOUT, " ".join(full)))
    if p.returncode != 0:
        raise Failed("%s: exit %d: %s" % (" ".join(full), p.returncode,
                                          (p.stderr or p.stdout).strip()[-400:]))
    return p.stdout


def gflops(n, ms):
    return n ** 3 / 3.0 / (ms * 1e-3) * 1e-9


def weft(exe, np_, n, b, reps, check):
    cmd = [exe, "--n", str(n), "--b", str(b), "--precision", "float", "--threads", "1",
           "--reps", str(reps)] + (["--check"] if check else [])
    out = mpirun(np_, cmd, WEFT_ENV)
    m = WEFT_LINE.search(out)
    if not m or int(m.group(3)) != np_ or int(m.group(1)) != n or int(m.group(2)) != b:
        raise Failed("cholesky_mpi -np %d: no figure for n %d b %d in: %s" %
                     (np_, n, b, out.strip()[-300:]))
    if check and "vs LAPACK" not in out:
        raise Failed("cholesky_mpi -np %d --check: no check figures in: %s" %
                     (np_, out.strip()[-300:]))
    med, lo, hi = (float(m.group(i)) for i in (5, 6, 7))
    return gflops(n, med), gflops(n, hi), gflops(n, lo)


def starpu(exe, np_, n, b, check=False):
    out = mpirun(np_, [exe, "-size", str(n), "-nblocks", str(n // b)] +
                 (["-check"] if check else []), STARPU_ENV)
    ms, gf = STARPU_MS.search(out), STARPU_GF.search(out)
    if not ms or not gf or float(ms.group(1)) <= 0 or float(gf.group(1)) <= 0:
        raise Failed("mpi_cholesky -np %d: no time or GFlops line in: %s" %
                     (np_, out.strip()[-300:]))
    return gflops(n, float(ms.group(1)))


def find_starpu(override):
    if override:
        return override if os.access(override, os.X_OK) else None
    try:
        p = subprocess.run(["dpkg", "-L", "starpu-examples"], capture_output=True, text=True,
                           timeout=60)
        for line in p.stdout.splitlines():
            if line.endswith("/mpi_cholesky") and os.access(line, os.X_OK):
                return line
    except (OSError, subprocess.TimeoutExpired):
        pass
    return STARPU_DEFAULT if os.access(STARPU_DEFAULT, os.X_OK) else None


def summary(samples):
    """median [min-max] of a list of GFLOP/s, or None."""
    if not samples:
        return None
    return statistics.median(samples), min(samples), max(samples)


def cell(x):
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    return "%.1f [%.1f-%.1f]" % x


def pingpong(bd):
    exe = os.path.join(bd, "bench", "bench_mpi_pingpong")
    if not os.path.exists(exe):
        return None
    out = mpirun(2, [exe], WEFT_ENV)
    rows = [["bytes", "bare MPI us", "hand-off floor us", "weft_mpi us", "weft/bare",
             "weft/hand-off"]]
    fig = r"([0-9.]+ \[[0-9.]+-[0-9.]+\])"
    pat = re.compile(r"pingpong: (\d+) B: bare " + fig + ", hand-off " + fig + ", weft " + fig +
                     r" us per round trip, ratio ([0-9.]+), ([0-9.]+)")
    for line in out.splitlines():
        m = pat.search(line)
        if m:
            rows.append(list(m.groups()))
    if len(rows) == 1:
        raise Failed("bench_mpi_pingpong: no figures in: %s" % out.strip()[-300:])
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--builddir", default="build-mpi")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--ranks", action="append", help="N[,N]: rank counts (default 1,2,4)")
    ap.add_argument("--size", action="append", help="N:b (repeatable)")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--starpu", help="mpi_cholesky's path (default: dpkg -L starpu-examples)")
    a = ap.parse_args()
    exe = os.path.join(a.builddir, "examples", "cholesky_mpi")
    if not os.path.exists(exe):
        print("run_mpi: no %s (needs MPI, mpirun, OpenBLAS and LAPACKE at configure time)" % exe,
              file=sys.stderr)
        return 1
    if not shutil.which("mpirun"):
        print("run_mpi: no mpirun on PATH", file=sys.stderr)
        return 1
    ranks = ([int(x) for rs in a.ranks for x in rs.split(",")] if a.ranks else [1, 2, 4])
    if a.size:
        configs = [tuple(int(x) for x in s.split(":")) for s in a.size]
    else:
        configs = [(2048, 256)] if a.quick else [(4096, 512), (4096, 256)]
    for n, b in configs:
        if b <= 0 or n % b:
            print("run_mpi: --size %d:%d: b must divide N" % (n, b), file=sys.stderr)
            return 2
    rounds = a.rounds or (3 if a.quick else 5)
    warm_reps = 3 if a.quick else 5
    sp = find_starpu(a.starpu)
    if not sp:
        print("run_mpi: no StarPU-MPI mpi_cholesky (Debian: starpu-examples); its column "
              "is left empty", file=sys.stderr)

    errors = []
    rows = []
    for n, b in configs:
        for np_ in ranks:
            r = {"n": n, "b": b, "np": np_, "weft": [], "starpu": [], "err": {}}
            if sp:
                try:
                    starpu(sp, np_, n, b, check=True)
                except Failed as e:
                    r["err"]["starpu"] = e
            rows.append(r)
        for rnd in range(rounds):
            for r in (x for x in rows if (x["n"], x["b"]) == (n, b)):
                order = ["weft", "starpu"] if rnd % 2 == 0 else ["starpu", "weft"]
                for who in order:
                    if who in r["err"] or (who == "starpu" and not sp):
                        continue
                    try:
                        if who == "weft":
                            r["weft"].append(weft(exe, r["np"], n, b, 1, False)[0])
                        else:
                            r["starpu"].append(starpu(sp, r["np"], n, b))
                    except Failed as e:
                        r["err"][who] = e
            print("run_mpi: n %d b %d round %d of %d done" % (n, b, rnd + 1, rounds),
                  file=sys.stderr)
        for r in (x for x in rows if (x["n"], x["b"]) == (n, b)):
            try:
                r["warm"] = weft(exe, r["np"], n, b, warm_reps, True)
            except Failed as e:
                r["err"]["warm"] = e

    hdr = ["N", "b", "ranks", "weft GFLOP/s", "StarPU-MPI GFLOP/s", "weft/StarPU",
           "weft, warm (%d reps, one attach)" % warm_reps]
    table = [hdr]
    for r in rows:
        cells = {}
        for who in ("weft", "starpu"):
            if who in r["err"]:
                cells[who] = "ERROR"
                errors.append(r["err"][who])
            elif who == "starpu" and not sp:
                cells[who] = None
            else:
                cells[who] = summary(r[who])
        if "warm" in r["err"]:
            cells["warm"] = "ERROR"
            errors.append(r["err"]["warm"])
        else:
            cells["warm"] = r.get("warm")
        w, s = cells["weft"], cells["starpu"]
        ratio = ("%.2f" % (w[0] / s[0]) if isinstance(w, tuple) and isinstance(s, tuple)
                 else "-")
        table.append([str(r["n"]), str(r["b"]), str(r["np"]), cell(w), cell(s), ratio,
                      cell(cells["warm"])])
    print_table("Tiled Cholesky across MPI ranks (single precision, one worker and one BLAS "
                "thread per rank, mpirun --oversubscribe --bind-to none, %d CPUs): GFLOP/s "
                "(N^3/3), median [min-max] of %d launches each, one factorization per launch"
                % (os.cpu_count() or 0, rounds), table)
    print("weft/StarPU > 1: weft faster; measured, never asserted")

    try:
        pp = pingpong(a.builddir)
    except Failed as e:
        errors.append(e)
        pp = None
    if pp:
        print_table("weft_mpi remote read vs bare MPI round trip (bench_mpi_pingpong, -np 2), "
                    "us, median [min-max]", pp)

    for e in errors:
        print("run_mpi: ERROR: %s" % e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    run_main(main, "run_mpi")
