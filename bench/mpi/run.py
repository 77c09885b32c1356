#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Tiled Cholesky across MPI ranks: weft_mpi against StarPU-MPI, one table.

    python3 bench/mpi/run.py --builddir build-mpi [--quick]

Same matrix order N and tile size b, single precision, T workers and one
BLAS thread per rank (OPENBLAS_NUM_THREADS=1: the runtimes run the calls),
R ranks on this machine, for each layout RxT (--layout RxT[,RxT]; default
1x1, 2x1 and 4x1; --ranks N[,N] is NxT with T = 1):
  weft        <builddir>/examples/cholesky_mpi (examples/cholesky/cholesky_mpi.c):
              2D block-cyclic tiles, one weft engine per rank attached with
              weft_mpi, WEFT_NUM_THREADS=T, `mpirun --oversubscribe --bind-to
              none` (weft's default: its workers are not pinned)
  StarPU-MPI  mpi_cholesky from Debian's starpu-examples (found with dpkg -L;
              --starpu PATH overrides), -size N -nblocks N/b, STARPU_NCPU=T
              (it computes in single precision: sgemm, ssyrk, strsm, spotrf),
              in its best configuration for the row (below)
StarPU-MPI at its best (bench/harness/peers.py): StarPU 1.3 pins each
rank's workers from core 0 up whatever mpirun did, so by default every
rank's workers share the same cores. Each row first tries, one launch each,
the bindings
  default   mpirun --bind-to none; StarPU's own binding (cores 0..T-1 in
            every rank, its MPI thread on the next core)
  getbind   STARPU_WORKERS_GETBIND=1 with mpirun --bind-to core --map-by
            slot:PE=T: each rank's workers on the cores mpirun gave it
            (hardware threads, --use-hwthread-cpus --bind-to hwthread,
            where R x T exceeds the cores but not the CPUs;
            core:overload-allowed where it exceeds the CPUs; not tried
            where T exceeds the cores)
  nobind    STARPU_WORKERS_NOBIND=1 STARPU_MPI_NOBIND=1, --bind-to none:
            nothing pinned, the OS places every thread
with its default scheduler (lws), then, in the best binding, the schedulers
dmda (after one launch, not counted, that calibrates its performance
models) and eager; the best of all is the configuration of every later
StarPU launch of the row. The table names it; the footer gives every trial
figure and a command that reruns one cell by hand.

Each launch factorizes once (`cholesky_mpi --reps 1`; mpi_cholesky always
does one), so both pay the same first-touch and first-transfer costs; the
two alternate, launch by launch, for --rounds rounds (the order flips every
round). Times: StarPU's own (rank 0, from a barrier to its wait and barrier
after), weft's own (the slowest rank, from the first push, the ranks having
met in an empty collective wait, to weft_mpi_wait_all: every transfer is
in it); GFLOP/s count N^3/3 for both. The "weft, warm" column is one more
launch per row: --reps R factorizations in one attachment (tiles refilled
between them), median [min-max].

Checks: every warm weft launch runs --check (rank 0 gathers the factor and
compares it with LAPACK's spotrf; a failure exits non-zero), and StarPU runs
once per row with -check, in the chosen configuration, before its timed
launches (not counted). A launch that exits non-zero or prints no figure
(a trial's included) makes its cell an ERROR, or its trial FAILED, and the
exit status 1; a number is never made up.

--quick: N 2048, b 256, 3 rounds, 3 warm reps. Full: N 4096 with b 512 and
256, 5 rounds, 5 warm reps. --size N:b (repeatable) picks other sizes.

If <builddir>/bench/bench_mpi_pingpong exists (meson -Dbench=true), a
second table gives its remote-read round trip against bare MPI at -np 2,
one launch with each rank on a core of its own (--bind-to core --map-by
core) and one unbound (--bind-to none): the table is the launch where bare
MPI's smallest round trip was the fastest (both launches in the footer).
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

# peers.py and runutil.py, the runners' shared code, are in bench/harness/
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))

from peers import (STARPU_SCHEDS, Config, Trials, physical_cores, shell, starpu_sched_configs,
                   usable_cpus)
from runutil import print_table, run_main

STARPU_DEFAULT = "/usr/lib/x86_64-linux-gnu/starpu/mpi/mpi_cholesky"
TIMEOUT = 900
STARPU = "StarPU-MPI"

# Open MPI as root in a container, on one machine (tests/mpi/meson.build).
MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
    "OMPI_MCA_mpi_yield_when_idle": "1",
    "OMPI_MCA_btl": "self,vader",
    "OPENBLAS_NUM_THREADS": "1",
}
# weft's workers are not pinned (WEFT_AFFINITY unset): nothing for mpirun to do
WEFT_LAUNCH = ["--bind-to", "none"]

WEFT_LINE = re.compile(r"cholesky_mpi: n (\d+) b (\d+) float, (\d+) ranks x (\d+) threads: "
                       r"([0-9.]+) ms \[([0-9.]+)-([0-9.]+)\]")
STARPU_MS = re.compile(r"Computation time \(in ms\):\s*([0-9.]+)")
STARPU_GF = re.compile(r"Synthetic GFlops\s*:\s*([0-9.]+)")


class Failed(Exception):
    """One launch failed: its cell says so."""


def weft_env(threads):
    return {"WEFT_NUM_THREADS": str(threads)}


def starpu_env(threads):
    return {"STARPU_NCPU": str(threads), "STARPU_NCUDA": "0", "STARPU_NOPENCL": "0",
            "STARPU_SILENT": "1"}


def mpirun_argv(np_, launch, cmd):
    return ["mpirun", "-np", str(np_), "--oversubscribe"] + list(launch) + cmd


def rerun_line(np_, env, launch, cmd):
    """The launch as one shell line (MPI_ENV included), for the footer."""
    e = dict(MPI_ENV)
    e.update(env)
    return shell(e, mpirun_argv(np_, launch, cmd))


def mpirun(np_, cmd, env, launch=WEFT_LAUNCH):
    e = dict(os.environ)
    e.update(MPI_ENV)
    e.update(env)
    full = mpirun_argv(np_, launch, cmd)
    try:
        p = subprocess.run(full, env=e, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        raise Failed("timed out after %d s: %s" % (TIMEOUT, " ".join(full)))
    if p.returncode != 0:
        raise Failed("%s: exit %d: %s" % (" ".join(full), p.returncode, why(p)))
    return p.stdout


def why(p):
    """A failed launch's own words: the ranks' first complaint (an assertion,
    an abort), then mpirun's closing lines."""
    err = (p.stderr or p.stdout).strip()
    first = next((line for line in err.splitlines() if re.search(
        r"(?i)assert|abort|error|fatal|signal|terminat", line)), "")
    return (first[:300] + " ... " if first and first not in err[-400:] else "") + err[-400:]


def gflops(n, ms):
    return n ** 3 / 3.0 / (ms * 1e-3) * 1e-9


def weft_cmd(exe, n, b, threads, reps, check):
    return [exe, "--n", str(n), "--b", str(b), "--precision", "float", "--threads",
            str(threads), "--reps", str(reps)] + (["--check"] if check else [])


def weft(exe, np_, threads, n, b, reps, check):
    out = mpirun(np_, weft_cmd(exe, n, b, threads, reps, check), weft_env(threads))
    m = WEFT_LINE.search(out)
    if not m or [int(m.group(i)) for i in (1, 2, 3, 4)] != [n, b, np_, threads]:
        raise Failed("cholesky_mpi -np %d: no figure for n %d b %d, %d threads in: %s" %
                     (np_, n, b, threads, out.strip()[-300:]))
    if check and "vs LAPACK" not in out:
        raise Failed("cholesky_mpi -np %d --check: no check figures in: %s" %
                     (np_, out.strip()[-300:]))
    med, lo, hi = (float(m.group(i)) for i in (5, 6, 7))
    return gflops(n, med), gflops(n, hi), gflops(n, lo)


def starpu_cmd(exe, n, b, check):
    return [exe, "-size", str(n), "-nblocks", str(n // b)] + (["-check"] if check else [])


class StarpuHomes:
    """A STARPU_HOME for each view of the CPUs (mpirun's binding, threads
    per rank), calibrated by one rank before any launch of several.

    StarPU keeps a model of the machine (its "bus" files) under STARPU_HOME
    and recalibrates it whenever the CPUs a process sees differ from the
    stored ones, as they do from one binding to the next; ranks that
    recalibrate at once race on those files (seen here: an assertion in
    check_bus_affinity_file, exit 134). The homes live under $STARPU_HOME
    (else the temporary directory) and go at the end of the run."""

    def __init__(self):
        self.root = None
        self.homes = {}  # (launch args, threads) -> its STARPU_HOME

    def env(self, exe, threads, cfg):
        key = (tuple(cfg.launch), threads)
        if key not in self.homes:
            if self.root is None:
                base = os.environ.get("STARPU_HOME")
                if base:
                    os.makedirs(base, exist_ok=True)
                self.root = tempfile.mkdtemp(prefix="run_mpi-starpu-", dir=base)
            home = os.path.join(self.root, "view%d" % len(self.homes))
            os.mkdir(home)
            env = dict(starpu_env(threads), STARPU_HOME=home, **cfg.env)
            mpirun(1, starpu_cmd(exe, 512, 256, False), env, cfg.launch)  # one rank calibrates
            self.homes[key] = home
        return {"STARPU_HOME": self.homes[key]}

    def close(self):
        if self.root:
            shutil.rmtree(self.root, ignore_errors=True)


HOMES = StarpuHomes()


def starpu(exe, np_, threads, n, b, cfg, check=False):
    env = starpu_env(threads)
    env.update(cfg.env)
    env.update(HOMES.env(exe, threads, cfg))
    out = mpirun(np_, starpu_cmd(exe, n, b, check), env, cfg.launch)
    ms, gf = STARPU_MS.search(out), STARPU_GF.search(out)
    if not ms or not gf or float(ms.group(1)) <= 0 or float(gf.group(1)) <= 0:
        raise Failed("mpi_cholesky -np %d: no time or GFlops line in: %s" %
                     (np_, out.strip()[-300:]))
    return gflops(n, float(ms.group(1)))


def rank_binding(np_, threads):
    """mpirun's arguments that give each of np_ ranks `threads` cores of its
    own (hardware threads where there are too few cores; shared cores where
    there are too few CPUs), or None where one rank needs more cores than
    the machine has."""
    cores, cpus, pe = physical_cores(), usable_cpus(), "slot:PE=%d" % threads
    if np_ * threads <= cores:
        return ["--bind-to", "core", "--map-by", pe]
    if np_ * threads <= cpus:
        return ["--use-hwthread-cpus", "--bind-to", "hwthread", "--map-by", pe]
    if threads <= cores:
        return ["--bind-to", "core:overload-allowed", "--map-by", pe]
    return None


def starpu_bindings(np_, threads):
    """StarPU-MPI's bindings to try for R ranks of T workers (module doc)."""
    out = [Config("default", {"STARPU_SCHED": "lws"}, ["--bind-to", "none"],
                  "StarPU pins each rank's workers from core 0 up")]
    own = rank_binding(np_, threads)
    if own:
        out.append(Config("getbind", {"STARPU_SCHED": "lws", "STARPU_WORKERS_GETBIND": "1"},
                          own, "each rank's workers on its own cores"))
    out.append(Config("nobind", {"STARPU_SCHED": "lws", "STARPU_WORKERS_NOBIND": "1",
                                 "STARPU_MPI_NOBIND": "1"}, ["--bind-to", "none"],
                      "nothing pinned"))
    return out


def with_sched(bind, sched):
    """bind's configuration with sched's STARPU_SCHED (named after sched)."""
    env = dict(bind.env)
    env.update(sched.env)
    return Config(sched.name, env, bind.launch)


def starpu_best(trials, exe, r):
    """StarPU-MPI's configuration for row r: the best binding (with lws),
    then the best scheduler in that binding (module doc)."""
    np_, t, n, b = r["np"], r["t"], r["n"], r["b"]
    row = "%d:%d %dx%d" % (n, b, np_, t)

    def measure(cfg):
        if cfg.env.get("STARPU_SCHED") == "dmda":
            starpu(exe, np_, t, n, b, cfg)  # calibrates dmda's performance models: not counted
        return starpu(exe, np_, t, n, b, cfg)

    bind, fig = trials.pick(STARPU, row + " binding", starpu_bindings(np_, t), measure,
                            unit="GFLOP/s")
    scheds = [with_sched(bind, s) for s in starpu_sched_configs()]
    known = {"lws": fig} if fig else {}  # the binding's trial ran lws
    sched, _ = trials.pick(STARPU, "%s scheduler, in %s" % (row, bind.name), scheds, measure,
                           unit="GFLOP/s", known=known, listed=False)
    best = Config("%s, %s" % (bind.name, sched.name), sched.env, sched.launch)
    trials.set_rerun(STARPU, row, rerun_line(np_, dict(starpu_env(t), **best.env), best.launch,
                                             starpu_cmd(exe, n, b, False)))
    return best


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


PP_FIG = r"([0-9.]+) \[([0-9.]+)-([0-9.]+)\]"
PP_LINE = re.compile(r"pingpong: (\d+) B: bare " + PP_FIG + ", hand-off " + PP_FIG +
                     ", weft " + PP_FIG + r" us per round trip, ratio ([0-9.]+), ([0-9.]+)")


def pingpong_bindings(cpus):
    """The ping-pong's two ranks: a core each, or unbound."""
    bind = "core" if cpus >= 2 else "core:overload-allowed"
    return [Config("core", {}, ["--bind-to", bind, "--map-by", "core"], "a core each"),
            Config("unbound", {}, ["--bind-to", "none"])]


def pingpong_once(exe, cfg):
    """One launch: its rows (bytes, then bare, hand-off, weft as median,
    min, max, then the two ratios), bare's smallest-size median first."""
    out = mpirun(2, [exe], weft_env(1), cfg.launch)
    rows = [PP_LINE.search(line).groups() for line in out.splitlines() if PP_LINE.search(line)]
    if not rows:
        raise Failed("bench_mpi_pingpong: no figures in: %s" % out.strip()[-300:])
    return rows


def pingpong(bd, trials):
    """The ping-pong table in the binding where bare MPI is the fastest, or None."""
    exe = os.path.join(bd, "bench", "bench_mpi_pingpong")
    if not os.path.exists(exe):
        return None
    runs = {}

    def measure(cfg):
        runs[cfg.name] = pingpong_once(exe, cfg)
        return float(runs[cfg.name][0][1])  # bare MPI, smallest message, median

    best, _ = trials.pick("bare MPI", "smallest round trip", pingpong_bindings(usable_cpus()),
                          measure, higher_better=False, unit="us")
    trials.set_rerun("bare MPI", "ping-pong", rerun_line(2, weft_env(1), best.launch, [exe]))
    table = [["bytes", "bare MPI us", "hand-off floor us", "weft_mpi us", "weft/bare",
              "weft/hand-off"]]
    for g in runs[best.name]:
        table.append([g[0]] + ["%s [%s-%s]" % g[k:k + 3] for k in (1, 4, 7)] + [g[10], g[11]])
    weft8 = {name: float(rows[0][7]) for name, rows in runs.items()}
    return table, best, weft8


def parse_layouts(a, ap):
    """[(ranks, threads)] from --layout RxT and --ranks N (N x 1)."""
    out = []
    try:
        for spec in a.layout or []:
            for x in spec.split(","):
                r, t = x.lower().split("x")
                out.append((int(r), int(t)))
        for spec in a.ranks or []:
            out += [(int(x), 1) for x in spec.split(",")]
    except ValueError:
        ap.error("--layout takes RxT[,RxT] (ranks x threads per rank), --ranks N[,N]")
    if any(r < 1 or t < 1 for r, t in out):
        ap.error("ranks and threads must be >= 1")
    return out or [(1, 1), (2, 1), (4, 1)]


def measure_rows(rows, exe, sp, trials, rounds, warm_reps):
    """Fills each row: StarPU's configuration (trials), check, then the
    rounds of alternating launches, then weft's warm launch."""
    for r in rows:
        if not sp:
            continue
        try:
            r["cfg"] = starpu_best(trials, sp, r)
            starpu(sp, r["np"], r["t"], r["n"], r["b"], r["cfg"], check=True)
        except Failed as e:
            r["err"]["starpu"] = e
    for rnd in range(rounds):
        for r in rows:
            order = ["weft", "starpu"] if rnd % 2 == 0 else ["starpu", "weft"]
            for who in order:
                if who in r["err"] or (who == "starpu" and not sp):
                    continue
                try:
                    if who == "weft":
                        r["weft"].append(weft(exe, r["np"], r["t"], r["n"], r["b"], 1, False)[0])
                    else:
                        r["starpu"].append(starpu(sp, r["np"], r["t"], r["n"], r["b"],
                                                  r["cfg"]))
                except Failed as e:
                    r["err"][who] = e
        print("run_mpi: n %d b %d round %d of %d done" % (rows[0]["n"], rows[0]["b"], rnd + 1,
                                                          rounds), file=sys.stderr)
    for r in rows:
        try:
            r["warm"] = weft(exe, r["np"], r["t"], r["n"], r["b"], warm_reps, True)
        except Failed as e:
            r["err"]["warm"] = e


def table_of(rows, sp, warm_reps, errors):
    hdr = ["N", "b", "ranks x thr", "weft GFLOP/s", "StarPU-MPI GFLOP/s", "weft/StarPU",
           "StarPU-MPI config", "weft, warm (%d reps, one attach)" % warm_reps]
    table = [hdr]
    for r in rows:
        cells = {}
        for who in ("weft", "starpu", "warm"):
            if who in r["err"]:
                cells[who] = "ERROR"
                errors.append(r["err"][who])
            elif who == "starpu" and not sp:
                cells[who] = None
            elif who == "warm":
                cells[who] = r.get("warm")
            else:
                cells[who] = summary(r[who])
        w, s = cells["weft"], cells["starpu"]
        ratio = ("%.2f" % (w[0] / s[0]) if isinstance(w, tuple) and isinstance(s, tuple)
                 else "-")
        table.append([str(r["n"]), str(r["b"]), "%dx%d" % (r["np"], r["t"]), cell(w), cell(s),
                      ratio, r["cfg"].name if r.get("cfg") else "-", cell(cells["warm"])])
    return table


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--builddir", default="build-mpi")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--layout", action="append",
                    help="RxT[,RxT]: R ranks of T threads each (default 1x1,2x1,4x1)")
    ap.add_argument("--ranks", action="append", help="N[,N]: rank counts, one thread each")
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
    layouts = parse_layouts(a, ap)
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
    trials = Trials()
    for n, b in configs:
        size_rows = [{"n": n, "b": b, "np": np_, "t": t, "weft": [], "starpu": [], "err": {}}
                     for np_, t in layouts]
        measure_rows(size_rows, exe, sp, trials, rounds, warm_reps)
        rows += size_rows
    last = rows[-1]
    trials.set_rerun("weft", "%d:%d %dx%d" % (last["n"], last["b"], last["np"], last["t"]),
                     rerun_line(last["np"], weft_env(last["t"]), WEFT_LAUNCH,
                                weft_cmd(exe, last["n"], last["b"], last["t"], 1, False)))
    trials.note("weft", "WEFT_NUM_THREADS=T, mpirun %s (its default: not pinned), one "
                "configuration" % " ".join(WEFT_LAUNCH))
    trials.note(STARPU, "STARPU_NCPU=T, OPENBLAS_NUM_THREADS=1; the binding tried first "
                "(with STARPU_SCHED=lws, its default), then in the best binding "
                "STARPU_SCHED=%s (dmda after one launch, not counted, that calibrates its "
                "models); each binding with a STARPU_HOME of its own, calibrated by one rank "
                "first (StarPU's ranks race when they recalibrate it at once)"
                % "|".join(STARPU_SCHEDS) if sp else
                "not installed (no mpi_cholesky; Debian: starpu-examples): skipped")

    print_table("Tiled Cholesky across MPI ranks (single precision, T workers and one BLAS "
                "thread per rank, %d CPUs): GFLOP/s (N^3/3), median [min-max] of %d launches "
                "each, one factorization per launch; StarPU-MPI in its best configuration per "
                "row" % (usable_cpus(), rounds), table_of(rows, sp, warm_reps, errors))
    print("weft/StarPU > 1: weft faster; measured, never asserted")
    trials.print_footer(["weft", STARPU], "How each ran (each StarPU-MPI configuration tried "
                        "once per row, one launch; the best kept for the row's launches):")

    pp_trials = Trials()
    try:
        pp = pingpong(a.builddir, pp_trials)
    except Failed as e:
        errors.append(e)
        pp = None
    if pp:
        table, best, weft8 = pp
        print_table("weft_mpi remote read vs bare MPI round trip (bench_mpi_pingpong, -np 2, "
                    "mpirun %s), us, median [min-max]" % " ".join(best.launch), table)
        print("  weft_mpi at the smallest size in each binding: " +
              ", ".join("%s %.2f us" % kv for kv in weft8.items()))
        pp_trials.print_footer(["bare MPI"], "Binding (one launch in each; the table is the "
                               "launch where bare MPI's smallest round trip was the fastest; "
                               "weft_mpi and the hand-off floor ran in the same launch):")
    errors += [Failed(f) for f in trials.failures + pp_trials.failures]

    for e in dict.fromkeys(str(x) for x in errors):  # a trial's failure is also its cell's
        print("run_mpi: ERROR: %s" % e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    try:
        run_main(main, "run_mpi")
    finally:
        HOMES.close()
