#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""weft bench runner: weft against every peer that was built, one table.

Build, then run (from the repository root):

    meson setup build-bench -Dtests=disabled && ninja -C build-bench
    python3 bench/engine/run.py --quick --builddir build-bench    # ~4.5 min on 2 cores
    python3 bench/engine/run.py --builddir build-bench            # full: ~7.5 min, plus the trials

Options:
    --quick            5 repetitions of the pool workloads, 3 of the op lists
                       (StarPU 2; full: 3), smaller op lists, fewer wake
                       samples, and idle only at the largest thread count
                       (~3.5 min on the 2-vCPU VM: 2.4 min of runs, 1.2 of
                       the peers' configuration trials; the graph shapes and
                       fanout add ~1 min, 1.5 in the full mode)
    --only W[,W...]    workloads: fib, pfor_imb, pfor_fine, idle, wake (the
                       pool), chain, indep, dag, wave (the dependency engine),
                       pipeline (a 4-stage pipeline, back pressure),
                       graph_dag, graph_grid, graph_tree (Taskflow's graph
                       shapes with explicit edges), fanout (131,072 tasks
                       spawned from main into one group), pushers (several
                       user threads pushing into one engine, weft only)
    --threads N[,N]    thread counts (repeatable; default 1 and 2)
    --rt RT[,RT...]    runtimes: weft, weft++ (weft's C++ API), tbb, gomp,
                       omp_clang, starpu (default: all built); e.g. --rt
                       weft,weft++ for the C API against the C++ one alone
    --reps R           repetitions for every workload (overrides the defaults)
    --json FILE        every record (all samples) and the table rows, as JSON
    --csv FILE         one row per runtime, metric and thread count
    --plot FILE        the PNG (gnuplot): one panel per workload, each peer
                       relative to weft; default: next to --json (.png), else
                       <builddir>/bench.png
    --builddir DIR     the meson build directory (executables in DIR/bench/);
                       default: build-bench, then build
    --cxx-rounds K     weft's and weft++'s cells run K times each (default 1),
                       alternating which goes first, their samples pooled;
                       weft++/weft's [min-max] is then over the K rounds (the
                       ratio of each round's two medians)

Executables (bench/engine/meson.build): bench_weft, bench_weftxx (weft++), bench_tbb,
bench_gomp, bench_omp_clang, bench_starpu (op lists only), bench_serial, all
taking
    --workload W --threads N --reps R [--quick]
and printing one JSON object per line and metric (bench/harness/harness.h):
    {"rt":"weft","workload":"fib","threads":2,"unit":"ms","samples":[...],"check":"ok"}

The op-list workloads (bench/harness/harness.h, "op lists"): chain (100k ops on one
var), indep (1M ops, op i writes var i mod 1024), dag (200k ops over 256 vars,
each writes one and reads 0-2 others), wave (a 512x512 grid, cell (i,j) reads
(i-1,j) and (i,j-1), row by row); --quick: 20k, 200k, 50k, 256x256. Every
runtime runs the same list with the same kernel (~11 ns of work per op, the
serial column), pushed from one thread; its final values are checked against
the sequential run. Figures are ns per op, from the first push to the
runtime's wait-for-all. weft pushes from main (the user's own thread: the
figure shown) and from a driver op inside the pool (in the notes); OpenMP: omp single + task depend(inout/in);
oneTBB: flow graph with explicit edges (construction timed); StarPU: implicit
data dependencies, STARPU_RW/STARPU_R, tasks submitted from main.
Replay rows (<w>_replay, weft and oneTBB only): the same list recorded once
outside the timed region and run again each repetition, from the launch to
the wait-for-all: weft a captured graph (weft_graph_launch + weft_wait_all
from main), oneTBB the flow graph built once and reused (try_put to its
sources + wait_for_all); the notes give weft's fresh push from main in the
same run and fresh/replay.

The table shows each metric's median [min-max] over the repetitions for weft
and each peer, weft / best peer (lower is better everywhere, so < 1 means weft
wins), all taken in this one run; for fib the ns per spawn and 2T/1T, for
pfor_imb the ratio to the perfect split (serial time / threads, serial measured
in this run), for the op lists weft's driver-mode figure, main/driver and
2T/1T (replay rows: weft's fresh push from main and fresh/replay), and the
target set for weft with yes/NO.
Every peer at its best (bench/harness/peers.py): weft runs with its
defaults (WEFT_AFFINITY unset: its workers are not pinned). For each
workload and thread count, gomp and omp_clang are tried once (--reps 1)
unbound (OMP_PROC_BIND unset), with OMP_PROC_BIND=close and, with fewer
threads than cores, spread (both OMP_PLACES=cores), and starpu with
STARPU_SCHED lws, dmda and eager; the best by the workload's first metric
runs the cell's repetitions. oneTBB has one configuration (its arena sized
to the threads). The footer under the table names each cell's winner with
the trial figures and gives a command that reruns a cell by hand; --json
keeps the trials too ("trials", "trial_runs").

Graph shapes (bench/harness/harness.h, "graph shapes"; Taskflow's CPU benchmarks
where its peers compete): graph_dag (a random layered DAG of 65,536 nodes,
~0.7 us of work a node), graph_grid (a 256x256 wavefront of empty blocks),
graph_tree (a binary tree of 2^18 empty nodes), each node computing its
value from its predecessors' (checked against the serial run). weft: a
graph with explicit edges (weft_graph_add, weft_graph_edge, launched from
main); oneTBB: a flow graph (continue_node, make_edge); OpenMP: tasks with
depend clauses. "<shape>" is built and run once, construction timed;
"<shape>_relaunch" (weft and oneTBB) the graph built once and run again.
fanout: main spawns 131,072 tiny tasks into one group and waits (weft
weft_group_spawn + weft_group_wait, oneTBB task_group, OpenMP single + task
+ taskwait in a team of N+1).

Pushers rows (weft only; bench_weft --pushers, bench_weft.c): the op list
split into P segments, pushed by P user threads (main and P-1 more) into one
engine, each pusher over its own vars (<w>_p<P>) or all over the same vars
(<w>_p<P>_shared); --quick: indep at P = 1, 2; full: indep and dag at P = 1,
2, 4. Every P runs in turn within each repetition round, so the ratio to one
pusher (its throughput: the 1-pusher ns/op / this row's) is taken round by
round, side by side: median [min-max] over the rounds, in the notes.

weft++ (bench_weftxx.cpp; fib, pfor_imb, pfor_fine and the op lists with
their replay): the same workloads written on weft's C++ API,
include/weft/weft.hpp, as a user writes them (lambdas, weft::group,
pool.parallel_for, engine.push(lambda, weft::reads{...}, weft::writes{...}),
engine.capture + launch), mirroring bench_weft.c (pool setup, warm-ups,
kernels, checks, timing). It is not a peer: each of its cells runs right
after weft's, and its columns are weft++ (next to weft), weft++/weft (C++ /
C repetition by repetition, sample k of each: the median [min-max] of those
ratios) and its target, within 1.1x of the C row. With --cxx-rounds K both
cells run K times in alternation (the processes vary more than the
repetitions within one), and the ratios are round by round, of each round's
two medians.

Targets are for information: speed is measured, never asserted. A run during
which other processes kept the machine busy (from /proc/stat: before the run
and during it) is marked NOISY in the notes, with a warning under the table.
The exit status is non-zero when any check failed (a wrong fib value, a wrong
loop sum, a task that never ran, an op list whose final values differ from the
sequential run), an executable crashed or timed out, or bench_weft is missing.
"""

import argparse
import csv
import datetime
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

# peers.py and runutil.py, the runners' shared code, are in bench/harness/
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))

from peers import Config, Trials, omp_configs, shell, starpu_sched_configs

DEP_WORKLOADS = ["chain", "indep", "dag", "wave"]
# Taskflow's CPU benchmark shapes (bench/harness/harness.h, "graph shapes"): a graph
# with explicit edges built and run once ("<shape>") and run again
# ("<shape>_relaunch", the runtimes in RELAUNCH_RTS)
GRAPH_WORKLOADS = ["graph_dag", "graph_grid", "graph_tree"]
WORKLOADS = ["fib", "pfor_imb", "pfor_fine", "reduce", "idle", "wake"] + DEP_WORKLOADS + [
    "pipeline"] + GRAPH_WORKLOADS + ["fanout", "pushers"]
METRICS = {
    "fib": ["fib"],
    "pfor_imb": ["pfor_imb"],
    "pfor_fine": ["pfor_fine"],
    "reduce": ["reduce"],
    "idle": ["idle_s1", "idle_s2"],
    "wake": ["wake_block", "wake_busy", "wake_hot"],
}
# "<w>_replay": the same op list recorded once and run again each repetition
# (weft: a captured graph launched from main; oneTBB: the flow graph built
# once and reused), printed only by the runtimes in REPLAY_RTS
REPLAY_METRICS = {_w + "_replay": _w for _w in DEP_WORKLOADS}
REPLAY_RTS = {"weft", "weft++", "tbb"}
for _w in DEP_WORKLOADS:
    METRICS[_w] = [_w, _w + "_replay"]
# "<shape>_relaunch": the graph built once outside the timed region, then
# run again each repetition (weft: weft_graph_launch + weft_wait_all from
# main; oneTBB: the flow graph reused); OpenMP has no such thing
RELAUNCH_METRICS = {_w + "_relaunch": _w for _w in GRAPH_WORKLOADS}
RELAUNCH_RTS = {"weft", "weft++", "tbb"}
for _w in GRAPH_WORKLOADS:
    METRICS[_w] = [_w, _w + "_relaunch"]
METRICS["fanout"] = ["fanout"]
METRICS["pipeline"] = ["pipeline", "pipe_alloc", "pipe_alloc_mem", "pipe_bp", "pipe_bp_mem"]
# pushers (weft only): bench_weft --workload <list> --pushers 1,2[,4] prints
# "<list>_p<P>" (each pusher its own vars) and "<list>_p<P>_shared" (all
# over the same vars); the lists and counts run (quick / full):
PUSHERS_LISTS = {True: ["indep"], False: ["indep", "dag"]}
PUSHERS_COUNTS = {True: [1, 2], False: [1, 2, 4]}
# The pushers' targets (information only): indep, own vars, P
# pushers at >= this many times one pusher's throughput: P -> (times, the
# CPUs the run needs, the engine's threads or None for any). 2: on 2 vCPUs,
# 2 threads; 4: on a 16-core machine.
PUSHERS_TARGET = {2: (1.6, 2, 2), 4: (3.0, 16, None)}


def pushers_metrics(quick):
    return ["%s_p%d%s" % (w, p, sh) for w in PUSHERS_LISTS[quick] for sh in ("", "_shared")
            for p in PUSHERS_COUNTS[quick]]


METRICS["pushers"] = pushers_metrics(False)
SERIAL_WORKLOADS = ["fib", "pfor_imb", "pfor_fine"] + DEP_WORKLOADS + ["pipeline"] + \
    GRAPH_WORKLOADS + ["fanout"]
# metrics where higher is better (throughput): best peer = the highest, and
# the ratio column is best peer / weft, so < 1 still means weft is ahead
HIGHER_BETTER = {"pipeline", "pipe_alloc", "pipe_bp"}
PIPE_TARGET_VS_PEER = 1.3  # pipeline at 2 threads, against the best peer
RUNTIMES = ["weft", "weft++", "tbb", "gomp", "omp_clang", "starpu"]
PEERS = ["tbb", "gomp", "omp_clang", "starpu"]
EXE = {
    "weft": "bench_weft",
    "weft++": "bench_weftxx",
    "tbb": "bench_tbb",
    "gomp": "bench_gomp",
    "omp_clang": "bench_omp_clang",
    "starpu": "bench_starpu",
    "serial": "bench_serial",
}
# the workloads a runtime implements (absent: all)
SUPPORTS = {"starpu": DEP_WORKLOADS + ["pipeline"],
            "weft++": ["fib", "pfor_imb", "pfor_fine", "reduce"] + DEP_WORKLOADS +
            GRAPH_WORKLOADS + ["fanout"]}
ENABLE = {
    "weft": "bench_weft is always built: rebuild (does libweft link?)",
    "weft++": "weft's C++ API (bench_weftxx): a C++ compiler, apt install g++, then reconfigure",
    "tbb": "oneTBB: apt install libtbb-dev g++, then reconfigure",
    "gomp": "gcc OpenMP (libgomp): build with gcc as the C compiler",
    "omp_clang": "clang + LLVM libomp: apt install clang libomp-dev, then reconfigure",
    "starpu": "StarPU 1.3: apt install libstarpu-dev, then reconfigure",
    "serial": "bench_serial is always built: rebuild",
}


# Every peer at its best (bench/harness/peers.py). weft runs with its
# defaults (WEFT_AFFINITY unset: workers not pinned; WEFT_SPIN_COUNT built in).
PEER_NOTES = {
    "weft": "its defaults: WEFT_AFFINITY unset (workers not pinned), one configuration",
    "weft++": "bench_weftxx, weft's C++ API (include/weft/weft.hpp) on weft's workloads, "
              "pool setup and defaults; one configuration, run right after weft's cell",
    "tbb": "task_arena(N) (one slot for main; wake: task_arena(N, 0), N workers; fanout: "
           "task_arena(N+1, 1), N workers + main) and global_control: the arena sized to the "
           "threads, one configuration (oneTBB pins nothing, as weft here)",
    "gomp": "omp_set_num_threads(N); the binding tried per cell",
    "omp_clang": "omp_set_num_threads(N); the binding tried per cell",
    "starpu": "STARPU_NCPU=N, STARPU_CALIBRATE=0 (its codelets have no performance "
              "models); StarPU pins its workers to cores 0..N-1; the scheduler tried per cell",
}


def peer_configs(rt, threads):
    """The configurations a runtime is tried in (one: no trial)."""
    if rt in ("gomp", "omp_clang"):
        return omp_configs(threads)
    if rt == "starpu":
        return starpu_sched_configs()
    return [Config("default")]


def supports(rt, workload):
    if workload == "pushers":
        return rt == "weft"
    return workload in SUPPORTS.get(rt, WORKLOADS)


def emits(rt, metric):
    """Whether rt prints metric when it runs the metric's workload."""
    if metric in RELAUNCH_METRICS:
        return rt in RELAUNCH_RTS
    return metric not in REPLAY_METRICS or rt in REPLAY_RTS

FIB_SPAWNS = 1346268
# bench/harness/harness.h: BENCH_PIPE_MAX_INFLIGHT, BENCH_PIPE_TOKENS
PIPE_MAX_INFLIGHT = 8
PIPE_TOKENS = 4
# One item's buffers (bench/harness/harness.h, BENCH_PIPE_ITEM_BYTES: 384 KiB), MiB:
# an unbounded run that never held more than one has run nothing ahead, and
# there is nothing for back pressure to bound (1 thread: one item at a time).
PIPE_ITEM_MIB = 384 / 1024

# repetitions: full run / --quick
REPS_FULL = {"fib": 21, "pfor_imb": 9, "pfor_fine": 31, "reduce": 31, "idle": 5, "wake": 10,
             "chain": 9, "indep": 5, "dag": 7, "wave": 7, "pipeline": 7, "pushers": 7,
             "graph_dag": 9, "graph_grid": 9, "graph_tree": 9, "fanout": 21}
REPS_QUICK = {w: (3 if w in DEP_WORKLOADS + GRAPH_WORKLOADS else 5) for w in WORKLOADS}
REPS_QUICK["pushers"] = 5  # rounds: each one every P, both ways (~0.1 s a round)
# By runtime: StarPU is ~10-30x slower per op than the others (1M indep ops
# take ~7 s a repetition): fewer repetitions keep the runs short (quick: the
# whole suite under 2 min).
REPS_FULL_RT = {("starpu", w): 3 for w in DEP_WORKLOADS}
REPS_QUICK_RT = {("starpu", w): 2 for w in DEP_WORKLOADS}
TIMEOUT_S = {"fib": 300, "pfor_imb": 300, "pfor_fine": 120, "reduce": 120, "idle": 300, "wake": 300,
             "chain": 300, "indep": 300, "dag": 300, "wave": 300, "pipeline": 300,
             "pushers": 300, "graph_dag": 300, "graph_grid": 300, "graph_tree": 300,
             "fanout": 120}

# The targets set for weft (information only). metric -> (limit, unit text)
TARGET_ABS = {
    "idle_s1": 0.5,
    "idle_s2": 0.1,
    "wake_block": 20.0,
    "wake_busy": 100.0,
    "wake_hot": 2.0,
}
# The targets set for weft on the op lists, pushed from the
# main thread: at 2 threads within DEP_TARGET_MAIN_VS_DRIVER x of the driver
# mode and at least DEP_TARGET_AHEAD x faster than oneTBB's flow graph; at 1
# thread at most DEP_TARGET_NS_1T ns/op (the driver mode: one thread in all,
# as the peers).
DEP_TARGET_MAIN_VS_DRIVER = 1.25
DEP_TARGET_AHEAD = 2.0
DEP_TARGET_NS_1T = 30.0
# The targets set for weft's graph replay ("<w>_replay": the list captured
# once, then weft_graph_launch + weft_wait_all from main): at 1 thread at most
# REPLAY_TARGET_NS_1T ns/op, and at least REPLAY_TARGET_VS_FRESH x faster than
# a fresh push of the same ops from main (the main mode's samples of the same
# run, "fresh_samples"), at every thread count.
REPLAY_TARGET_NS_1T = 15.0
REPLAY_TARGET_VS_FRESH = 3.0
# weft's C++ API (weft++, bench_weftxx: the same workloads written on
# include/weft/weft.hpp) against the C API (weft): every row's median within
# this factor of the C row's (information only, as every target).
CXX_TARGET_VS_C = 1.1
CXX = "weft++"


def dash():
    enc = (sys.stdout.encoding or "").lower()
    return "\u2014" if "utf" in enc else "-"


def fmt_num(x):
    if x is None:
        return dash()
    ax = abs(x)
    if ax >= 100:
        return "%.0f" % x
    if ax >= 10:
        return "%.1f" % x
    if ax >= 1:
        return "%.2f" % x
    if ax >= 0.01:
        return "%.3f" % x
    return "%.2g" % x


def summarize(samples):
    if not samples:
        return None
    return {
        "median": statistics.median(samples),
        "min": min(samples),
        "max": max(samples),
        "n": len(samples),
    }


def fmt_stat(st):
    if st is None:
        return dash()
    return "%s [%s-%s]" % (fmt_num(st["median"]), fmt_num(st["min"]), fmt_num(st["max"]))


def find_bindir(builddir, here):
    cands = []
    if builddir:
        cands = [builddir]
    else:
        root = os.path.dirname(os.path.dirname(here))  # here: bench/engine
        for d in ("build-bench", "build"):
            cands += [os.path.join(os.getcwd(), d), os.path.join(root, d)]
    for d in cands:
        for b in (os.path.join(d, "bench"), d):
            if os.path.isfile(os.path.join(b, EXE["weft"])) or os.path.isfile(
                os.path.join(b, EXE["serial"])
            ):
                return b
    return None


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def system_busy_s():
    """CPU seconds the whole machine has been busy (all CPUs, steal included),
    from /proc/stat; None where there is no /proc."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = v[3] + (v[4] if len(v) > 4 else 0)  # idle + iowait
    return (sum(v[:8]) - idle) / float(os.sysconf("SC_CLK_TCK"))


def children_cpu_s():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


# A run during which other processes used more than this share of the machine
# (all CPUs) is flagged: its timings are not to be trusted. /proc/stat counts
# in ticks (10 ms), so a short run is judged mostly by the 0.1 s just before it.
FOREIGN_LOAD_FLAG = 0.05
FOREIGN_MIN_S = 0.03
PRE_WINDOW_S = 0.1


def machine_load(window_s):
    """Share of the machine (all CPUs) busy over window_s from now, or None."""
    b0, t0 = system_busy_s(), time.monotonic()
    time.sleep(window_s)
    b1, t1 = system_busy_s(), time.monotonic()
    if b0 is None or b1 is None:
        return None
    return max(0.0, b1 - b0) / ((t1 - t0) * (os.cpu_count() or 1))


def floor_probe(bindir, name, fmt):
    """A floor probe's (bench_xfer's, bench_skeleton's) median [min-max] ns,
    formatted with fmt, or None (missing, or its check failed)."""
    exe = os.path.join(bindir, name)
    if not os.access(exe, os.X_OK):
        return None
    try:
        out = subprocess.run([exe], capture_output=True, text=True, timeout=60).stdout
        rec = json.loads(out.strip().splitlines()[-1])
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return None
    if rec.get("check") != "ok" or not rec.get("samples"):
        return None
    s = sorted(rec["samples"])
    return (fmt + " [" + fmt + "-" + fmt + "]") % (statistics.median(s), s[0], s[-1])


def cache_line_transfer(bindir):
    """bench_xfer's median [min-max] ns per cache-line move, or None."""
    return floor_probe(bindir, "bench_xfer", "%.0f")


class Runner:
    def __init__(self, bindir, quick, reps_override):
        self.bindir = bindir
        self.quick = quick
        self.reps_override = reps_override
        self.records = []  # every JSON record, with rt/threads/workload
        self.failures = []  # text lines
        self.runs = []  # one per process: rt, workload, threads, rc, seconds
        self.trial_runs = []  # the peers' configuration trials, likewise
        self.trials = Trials()  # which configuration each peer's cell ran in

    def exe(self, rt):
        p = os.path.join(self.bindir, EXE[rt])
        return p if os.path.isfile(p) and os.access(p, os.X_OK) else None

    def reps(self, workload, rt=None):
        if self.reps_override:
            return self.reps_override
        by_rt = REPS_QUICK_RT if self.quick else REPS_FULL_RT
        if (rt, workload) in by_rt:
            return by_rt[(rt, workload)]
        return (REPS_QUICK if self.quick else REPS_FULL)[workload]

    def cmd(self, rt, workload, threads, reps=None, oplist=None):
        """oplist: for workload "pushers", the op list bench_weft runs."""
        cmd = [self.exe(rt), "--workload", oplist or workload, "--threads", str(threads),
               "--reps", str(reps or self.reps(workload, rt))]
        if workload == "pushers":
            cmd += ["--pushers", ",".join(str(p) for p in PUSHERS_COUNTS[self.quick])]
        return cmd + (["--quick"] if self.quick else [])

    def run(self, rt, workload, threads, cfg=None, reps=None, trial=False, oplist=None):
        """One process: its records (by metric). cfg: the peer's
        configuration (its environment); trial: a configuration trial
        (bench/harness/peers.py), whose records are returned but not kept (its
        failures are); oplist: for workload "pushers", the op list."""
        cmd = self.cmd(rt, workload, threads, reps, oplist)
        expect = METRICS[workload] if rt != "serial" else [workload]
        if workload == "pushers":
            expect = [m for m in pushers_metrics(self.quick) if m.startswith(oplist + "_p")]
        env = dict(os.environ)
        env.update(cfg.env if cfg else {})
        log("  %-10s %-9s threads=%d reps=%d%s%s" % (
            rt, workload, threads, reps or self.reps(workload, rt),
            (" (trial: %s)" if trial else " (%s)") % cfg.name if cfg and (trial or cfg.env)
            else "",
            " (%s, pushers %s)" % (oplist, cmd[cmd.index("--pushers") + 1]) if oplist else ""))
        what = "%s %s T%d%s" % (rt, oplist or workload, threads,
                                " (trial: %s)" % cfg.name if trial else "")
        pre = machine_load(PRE_WINDOW_S)
        t0 = datetime.datetime.now()
        busy0, kids0 = system_busy_s(), children_cpu_s()
        try:
            cp = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                universal_newlines=True, timeout=TIMEOUT_S[workload])
            out, err, rc = cp.stdout, cp.stderr, cp.returncode
        except subprocess.TimeoutExpired as e:
            out = e.stdout or ""
            if isinstance(out, bytes):
                out = out.decode(errors="replace")
            err, rc = "timed out after %d s" % TIMEOUT_S[workload], None
        secs = (datetime.datetime.now() - t0).total_seconds()
        busy1, kids1 = system_busy_s(), children_cpu_s()
        # CPU time used by anything but this bench process (and the runner):
        # other people's compilers and tests on a shared machine
        foreign = None
        if busy0 is not None and busy1 is not None and secs > 0:
            fs = max(0.0, (busy1 - busy0) - (kids1 - kids0))
            foreign = fs / (secs * (os.cpu_count() or 1))
            if fs < FOREIGN_MIN_S:
                foreign = 0.0  # within the ticks' resolution
            if pre is not None and pre > 2 * FOREIGN_LOAD_FLAG:
                foreign = max(foreign, pre)
            if foreign > FOREIGN_LOAD_FLAG:
                log("    (machine busy: other processes used %.0f%% of the CPUs)" % (100 * foreign))
        got = {}
        for line in out.splitlines():
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                self.failures.append("%s: bad output line: %s" % (what, line[:120]))
                continue
            rec["rt"] = rt
            rec["threads_arg"] = threads
            rec["bench_workload"] = workload
            rec["foreign_load"] = None if foreign is None else round(foreign, 3)
            rec["config"] = cfg.name if cfg else None
            got[rec.get("workload")] = rec
            if not trial:
                self.records.append(rec)
            if rec.get("check") != "ok":
                self.failures.append("%s: check failed: %s" % (what, rec.get("check")))
        for m in expect:
            if m not in got and emits(rt, m):
                self.failures.append("%s: no result for %s" % (what, m))
        if rc != 0:
            tail = " | ".join((err or "").strip().splitlines()[-3:])
            self.failures.append("%s: exit status %s%s"
                                 % (what, rc, (": " + tail) if tail else ""))
        (self.trial_runs if trial else self.runs).append({
            "rt": rt, "workload": workload, "threads": threads, "rc": rc,
            "seconds": round(secs, 2), "cmd": cmd, "config": cfg.name if cfg else None,
            "env": cfg.env if cfg else {},
            "foreign_load": None if foreign is None else round(foreign, 3)})
        return got

    def run_best(self, rt, workload, threads):
        """A peer's cell in its best configuration (bench/harness/peers.py): each of
        its configurations tried once (--reps 1), the best by the workload's
        first metric kept for the cell's repetitions."""
        metric = METRICS[workload][0]
        row = "%s T%d" % (workload, threads)

        def measure(cfg):
            rec = self.run(rt, workload, threads, cfg, reps=1, trial=True).get(metric)
            if not rec or rec.get("check") != "ok" or not rec.get("samples"):
                raise RuntimeError("no checked %s figure" % metric)
            return statistics.median(rec["samples"])

        configs = peer_configs(rt, threads)
        try:
            cfg, _ = self.trials.pick(rt, row, configs, measure,
                                      higher_better=metric in HIGHER_BETTER,
                                      unit=self.unit(metric))
        except RuntimeError:  # every trial failed (in self.failures): the cell shows it too
            cfg = configs[0]
        self.run(rt, workload, threads, cfg)
        self.trials.set_rerun(rt, row, shell(cfg.env, self.cmd(rt, workload, threads)))

    def pool_rounds(self, rts, workload, threads):
        """Several runs of one cell (--cxx-rounds) made one record per
        runtime and metric: the samples pooled in order (other_samples and
        fresh_samples too), each run's own in "rounds"."""
        for rt in rts:
            recs = [x for x in self.records if x["rt"] == rt and x["bench_workload"] == workload
                    and x["threads_arg"] == threads]
            for m in {x.get("workload") for x in recs}:
                same = [x for x in recs if x.get("workload") == m]
                first = same[0]
                first["rounds"] = [x.get("samples") or [] for x in same]
                for key in ("samples", "other_samples", "fresh_samples"):
                    if any(key in x for x in same):
                        first[key] = [v for x in same for v in (x.get(key) or [])]
                loads = [x["foreign_load"] for x in same if x.get("foreign_load") is not None]
                first["foreign_load"] = max(loads) if loads else None
                if any(x.get("check") != "ok" for x in same):
                    first["check"] = next(x.get("check") for x in same if x.get("check") != "ok")
                self.records = [x for x in self.records if not any(x is y for y in same[1:])]

    def stat(self, rt, metric, threads):
        for rec in self.records:
            if rec["rt"] == rt and rec.get("workload") == metric and \
               (rt == "serial" or rec["threads_arg"] == threads):
                return summarize(rec.get("samples") or [])
        return None

    def unit(self, metric):
        for rec in self.records:
            if rec.get("workload") == metric:
                return rec.get("unit", "")
        return ""

    def record(self, rt, metric, threads):
        for rec in self.records:
            if rec["rt"] == rt and rec.get("workload") == metric and rec["threads_arg"] == threads:
                return rec
        return None


def yes_no(ok):
    return "yes" if ok else "NO"


def pushers_note(r, row, metric, t, ncpu):
    """A pushers row's ratio to one pusher, round by round, and its target."""
    rec = r.record("weft", metric, t) or {}
    p = rec.get("pushers")
    if rec.get("cpu_all_ns_per_op") is not None:
        row["notes"].append("CPU/op %s" % fmt_num(rec["cpu_all_ns_per_op"]))
    if not p or p == 1:
        return
    base_metric = metric.replace("_p%d" % p, "_p1", 1)
    base = (r.record("weft", base_metric, t) or {}).get("samples") or []
    mine = rec.get("samples") or []
    if not base or not mine:
        return
    # sample k of every P comes from round k (bench_weft.c): side by side
    ratios = [b / m for b, m in zip(base, mine) if m > 0]
    if not ratios:
        return
    q = statistics.median(ratios)
    row["vs_one_pusher"] = q
    row["notes"].append("x%.2f one pusher's throughput [%.2f-%.2f] (round by round; medians: "
                        "%.2f)" % (q, min(ratios), max(ratios),
                                   statistics.median(base) / statistics.median(mine)))
    tg = PUSHERS_TARGET.get(p)
    if tg and metric.startswith("indep_") and not metric.endswith("_shared") and \
            tg[2] in (None, t):
        if ncpu >= tg[1]:
            row["target"] = ">=%gx 1 pusher: %s" % (tg[0], yes_no(q >= tg[0]))
        else:
            row["target"] = ">=%gx 1 pusher on %d+ CPUs: n/a here" % (tg[0], tg[1])


def graph_note(r, row, metric, w, t, peers):
    """A graph shape's or fanout's notes: graph_dag against the perfect split
    (serial / threads, serial measured in this run), a relaunch row against
    the same runtime's build-and-run-once row (once/relaunch), T/1T."""
    weft = row["stats"].get("weft")
    ser = row["stats"].get("serial")
    if w == "graph_dag" and ser:
        perfect = ser["median"] / t
        row["perfect_split"] = perfect
        parts = ["%s %.2f" % (rt, row["stats"][rt]["median"] / perfect)
                 for rt in ["weft"] + peers if row["stats"].get(rt)]
        row["notes"].append("perfect %s ns/node; x perfect: %s" % (fmt_num(perfect),
                                                                  " ".join(parts)))
    if metric in RELAUNCH_METRICS:
        parts = []
        for rt in ["weft"] + peers:
            mine = row["stats"].get(rt)
            once = r.stat(rt, w, t) if mine else None
            if mine and once and mine["median"] > 0:
                parts.append("%s %.2f" % (rt, once["median"] / mine["median"]))
        if parts:
            row["notes"].append("once/relaunch: " + " ".join(parts))
    one = r.stat("weft", metric, 1)
    if t > 1 and one and one["median"] > 0:
        row["notes"].append("%dT/1T %.2f" % (t, weft["median"] / one["median"]))


def cxx_vs_c(r, row, metric, t, w):
    """weft++ (the C++ API) against weft (the C API) on one row: C++ / C
    (items/s: C / C++) repetition by repetition (sample k of each, in the
    order they ran), or with --cxx-rounds round by round (the ratio of each
    round's two medians): their median [min-max], and the target on that
    median (within CXX_TARGET_VS_C). Without pairs, the ratio of the
    medians."""
    weft, cxx = row["stats"].get("weft"), row["stats"].get(CXX)
    if not weft or not cxx or weft["median"] <= 0 or cxx["median"] <= 0:
        return
    hb = metric in HIGHER_BETTER
    q = weft["median"] / cxx["median"] if hb else cxx["median"] / weft["median"]
    crec, wrec = r.record(CXX, metric, t) or {}, r.record("weft", metric, t) or {}
    cr, wr = crec.get("rounds") or [], wrec.get("rounds") or []
    if len(cr) > 1 and len(cr) == len(wr) and all(cr) and all(wr):
        # --cxx-rounds: round by round, the ratio of the two runs' medians
        cs = [statistics.median(x) for x in cr]
        ws = [statistics.median(x) for x in wr]
        row["cxx_rounds"] = len(cr)
    else:
        cs, ws = crec.get("samples") or [], wrec.get("samples") or []
    per = [(b / a if hb else a / b) for a, b in zip(cs, ws) if a > 0 and b > 0]
    if per:  # the median of the same ratios as the [min-max]
        q = statistics.median(per)
    row["cxx_vs_c"] = {"median": q, "min": min(per) if per else None,
                       "max": max(per) if per else None, "ratios": per,
                       "of_medians": cxx["median"] / weft["median"] if not hb
                       else weft["median"] / cxx["median"]}
    row["cxx_target"] = "within %gx: %s" % (CXX_TARGET_VS_C, yes_no(q <= CXX_TARGET_VS_C))
    if metric == w and w in DEP_WORKLOADS:
        # the driver mode (other_samples) of both, for the notes
        co = (r.record(CXX, metric, t) or {}).get("other_samples") or []
        wo = (r.record("weft", metric, t) or {}).get("other_samples") or []
        if co and wo:
            cm, wm = statistics.median(co), statistics.median(wo)
            if wm > 0:
                row["notes"].append("%s from driver: %s (C++/C %.2f)" % (CXX, fmt_num(cm),
                                                                        cm / wm))


def fmt_cxx_ratio(st):
    if not st:
        return dash()
    if st.get("min") is None:
        return "%.2f" % st["median"]
    return "%.2f [%.2f-%.2f]" % (st["median"], st["min"], st["max"])


def build_rows(r, workloads, threads_list, rts, idle_threads, ncpu=1):
    rows = []
    peers = [p for p in PEERS if p in rts]
    for w in workloads:
        tl = idle_threads if w == "idle" else threads_list
        for metric in METRICS[w]:
            for t in tl:
                row = {"metric": metric, "threads": t, "unit": r.unit(metric), "stats": {},
                       "notes": [], "target": ""}
                row["failed"] = []
                for rt in rts:
                    ran = r.exe(rt) and supports(rt, w) and emits(rt, metric)
                    row["stats"][rt] = r.stat(rt, metric, t) if ran else None
                    rec = r.record(rt, metric, t)
                    if ran and (rec is None or rec.get("check") != "ok"):
                        row["failed"].append(rt)
                if w in SERIAL_WORKLOADS:
                    # a replay (relaunch) row runs the same ops (nodes): the
                    # workload's serial figure
                    base = REPLAY_METRICS.get(metric, RELAUNCH_METRICS.get(metric, metric))
                    row["stats"]["serial"] = (r.stat("serial", base, t)
                                              if r.exe("serial") else None)
                weft = row["stats"].get("weft")
                best = None
                hb = metric in HIGHER_BETTER
                for p in peers:
                    st = row["stats"].get(p)
                    if st and (best is None or (st["median"] > best[1]["median"] if hb
                                                else st["median"] < best[1]["median"])):
                        best = (p, st)
                row["best_peer"] = best[0] if best else None
                busy = []
                for rt in list(rts) + ["serial"]:
                    rec = r.record(rt, metric, t) if rt != "serial" else \
                        next((x for x in r.records if x["rt"] == "serial"
                              and x.get("workload") == metric), None)
                    fl = (rec or {}).get("foreign_load")
                    if fl is not None and fl > FOREIGN_LOAD_FLAG:
                        busy.append("%s %.0f%%" % (rt, 100 * fl))
                row["busy_machine"] = busy
                if metric in HIGHER_BETTER:
                    row["ratio"] = (best[1]["median"] / weft["median"]
                                    if weft and best and weft["median"] > 0 else None)
                else:
                    row["ratio"] = (weft["median"] / best[1]["median"]
                                    if weft and best and best[1]["median"] > 0 else None)
                if CXX in rts:
                    cxx_vs_c(r, row, metric, t, w)
                ser = row["stats"].get("serial")
                if metric == "fib" and weft:
                    ns = weft["median"] * 1e6 / FIB_SPAWNS
                    row["ns_per_spawn"] = ns
                    row["notes"].append("%.1f ns/spawn" % ns)
                    one = r.stat("weft", "fib", 1)
                    if t == 1:
                        row["target"] = "<=30 ns/spawn: %s" % yes_no(ns <= 30)
                    else:
                        tg = []
                        if t == 2:
                            tg.append("<=27 ms: %s" % yes_no(weft["median"] <= 27))
                        if one:
                            q = weft["median"] / one["median"]
                            row["notes"].append("%dT/1T %.2f" % (t, q))
                            tg.append("not slower than 1T: %s" % yes_no(q <= 1.0))
                        row["target"] = ", ".join(tg)
                if metric == "pfor_imb" and weft and ser:
                    perfect = ser["median"] / t
                    q = weft["median"] / perfect
                    row["perfect_split"] = perfect
                    row["weft_vs_perfect"] = q
                    parts = ["weft %.3f" % q]
                    for p in peers:
                        st = row["stats"].get(p)
                        if st:
                            parts.append("%s %.3f" % (p, st["median"] / perfect))
                    row["notes"].append("perfect %s ms; x perfect: %s" % (fmt_num(perfect), " ".join(parts)))
                    row["target"] = "within 2%% of perfect: %s" % yes_no(q <= 1.02)
                if metric == "pfor_fine" and weft:
                    tbb = row["stats"].get("tbb")
                    if tbb:
                        q = weft["median"] / tbb["median"]
                        row["notes"].append("weft/tbb %.2f" % q)
                        row["target"] = "<= oneTBB: %s" % yes_no(q <= 1.0)
                    else:
                        row["target"] = "<= oneTBB: n/a (no bench_tbb)"
                if metric in TARGET_ABS and weft:
                    lim = TARGET_ABS[metric]
                    row["target"] = "<=%g %s: %s" % (lim, row["unit"].replace("cpu_", "CPU "),
                                                      yes_no(weft["median"] <= lim))
                if w in DEP_WORKLOADS + GRAPH_WORKLOADS:
                    for rt in rts:
                        tb = (r.record(rt, metric, t) or {}).get("time_budget")
                        if tb:
                            row["notes"].append("%s: %s" % (rt, tb))
                if metric == w and w in DEP_WORKLOADS and weft:
                    rec = r.record("weft", metric, t) or {}
                    other = rec.get("other_samples") or []
                    drv = statistics.median(other) if other else None
                    if rec.get("push_from"):
                        note = "weft pushed from %s" % rec["push_from"]
                        if drv:
                            note += "; from %s: %s" % (rec.get("other_push_from", "?"), fmt_num(drv))
                            if rec.get("push_from") == "main":
                                row["main_vs_driver"] = weft["median"] / drv
                                note += "; main/driver %.2f" % row["main_vs_driver"]
                        row["notes"].append(note)
                    # CPU ns/op over the timed runs (bench_weft.c, cpu_json):
                    # all threads, and main mode's pusher alone (that mode's
                    # floor, whatever the workers do).
                    cm, cd = rec.get("cpu_main") or {}, rec.get("cpu_driver") or {}
                    if cm.get("all_ns_per_op") is not None:
                        note = "CPU/op: main %s (its pusher %s)" % (
                            fmt_num(cm["all_ns_per_op"]), fmt_num(cm.get("pusher_ns_per_op")))
                        if cd.get("all_ns_per_op") is not None:
                            note += ", driver %s" % fmt_num(cd["all_ns_per_op"])
                        row["notes"].append(note)
                    one = r.stat("weft", metric, 1)
                    tg = []
                    if t == 1 and drv is not None:
                        tg.append("driver <=%g ns/op: %s" % (DEP_TARGET_NS_1T,
                                                            yes_no(drv <= DEP_TARGET_NS_1T)))
                    if t == 2:
                        if "main_vs_driver" in row:
                            tg.append("main <=%gx driver: %s"
                                      % (DEP_TARGET_MAIN_VS_DRIVER,
                                         yes_no(row["main_vs_driver"] <= DEP_TARGET_MAIN_VS_DRIVER)))
                        tbb = row["stats"].get("tbb")
                        if tbb:
                            tg.append(">=%gx oneTBB: %s"
                                      % (DEP_TARGET_AHEAD,
                                         yes_no(weft["median"] * DEP_TARGET_AHEAD <= tbb["median"])))
                    if t > 1 and one:
                        q = weft["median"] / one["median"]
                        row["notes"].append("%dT/1T %.2f" % (t, q))
                    row["target"] = ", ".join(tg)
                if metric in REPLAY_METRICS and weft:
                    rec = r.record("weft", metric, t) or {}
                    fresh_s = rec.get("fresh_samples") or []
                    fresh = statistics.median(fresh_s) if fresh_s else None
                    if fresh is None:  # replay ran alone: the main line, if any
                        st = r.stat("weft", w, t)
                        fresh = st["median"] if st else None
                    tg = []
                    if t == 1:
                        tg.append("replay <=%g ns/op: %s" % (REPLAY_TARGET_NS_1T,
                                                            yes_no(weft["median"] <= REPLAY_TARGET_NS_1T)))
                    if fresh and weft["median"] > 0:
                        row["fresh_vs_replay"] = fresh / weft["median"]
                        row["notes"].append("weft fresh push (main): %s; fresh/replay %.2f"
                                            % (fmt_num(fresh), row["fresh_vs_replay"]))
                        tg.append(">=%gx fresh push: %s"
                                  % (REPLAY_TARGET_VS_FRESH,
                                     yes_no(row["fresh_vs_replay"] >= REPLAY_TARGET_VS_FRESH)))
                    one = r.stat("weft", metric, 1)
                    if t > 1 and one:
                        row["notes"].append("%dT/1T %.2f" % (t, weft["median"] / one["median"]))
                    row["target"] = ", ".join(tg)
                if w == "pipeline" and weft:
                    if metric in HIGHER_BETTER and ser:
                        row["notes"].append("weft x serial %.2f" % (weft["median"] / ser["median"]))
                    if metric == "pipeline":
                        # the stages are actors: none of the runtimes can pass the
                        # slowest stage's own rate (bench_serial times each stage)
                        srec = r.record("serial", "pipeline", 1) or {}
                        bound = srec.get("stage_bound_items_per_s")
                        if bound:
                            row["notes"].append("slowest stage alone: %s items/s, weft at %.0f%%"
                                                % (fmt_num(bound), 100.0 * weft["median"] / bound))
                        if t == 1 and ser:
                            row["target"] = ">= serial: %s" % yes_no(weft["median"] >= ser["median"])
                        best = row.get("best_peer")
                        peer = row["stats"].get(best) if best else None
                        if t == 2 and peer:
                            row["target"] = ">=%gx best peer: %s%s" % (
                                PIPE_TARGET_VS_PEER,
                                yes_no(weft["median"] >= PIPE_TARGET_VS_PEER * peer["median"]),
                                " (above the slowest stage's rate)" if bound and
                                PIPE_TARGET_VS_PEER * peer["median"] > bound else "")
                    if metric == "pipe_bp":
                        row["notes"].append("weft max_inflight %d ops, peers %d items"
                                            % (PIPE_MAX_INFLIGHT, PIPE_TOKENS))
                    if metric == "pipe_bp_mem":
                        un = r.stat("weft", "pipe_alloc_mem", t)
                        if un:
                            q = weft["median"] / un["median"] if un["median"] > 0 else 0.0
                            row["notes"].append("weft bp/unbounded %.2f" % q)
                            if un["median"] <= PIPE_ITEM_MIB:
                                row["target"] = ("bounded (<= 1/4 of unbounded): n/a (unbounded "
                                                 "held one item: nothing ran ahead)")
                            else:
                                row["target"] = "bounded (<= 1/4 of unbounded): %s" % yes_no(
                                    q <= 0.25)
                if w in GRAPH_WORKLOADS + ["fanout"] and weft:
                    graph_note(r, row, metric, w, t, peers)
                if w == "pushers" and weft:
                    pushers_note(r, row, metric, t, ncpu)
                if metric.startswith("idle") and weft:
                    rec = r.record("weft", metric, t)
                    main = (rec or {}).get("main_thread_cpu_ms")
                    if main:
                        row["notes"].append("measuring thread apart: %s"
                                            % fmt_num(statistics.median(main)))
                rows.append(row)
    return rows


def print_table(rows, rts, any_serial):
    cxx = CXX in rts
    cols = ["metric", "thr", "unit"] + rts + (["serial"] if any_serial else []) + \
        ["weft/best"] + (["%s/weft" % CXX, "%s target" % CXX] if cxx else []) + \
        ["notes", "weft target"]
    table = []
    for row in rows:
        line = [row["metric"], str(row["threads"]), row["unit"]]
        for rt in rts:
            cell = fmt_stat(row["stats"].get(rt))
            if rt in row["failed"]:
                cell = "FAIL " + cell if row["stats"].get(rt) else "FAIL"
            line.append(cell)
        if any_serial:
            line.append(fmt_stat(row["stats"].get("serial")) if "serial" in row["stats"] else "")
        if row["ratio"] is not None:
            line.append("%.2f (%s)" % (row["ratio"], row["best_peer"]))
        else:
            line.append(dash())
        if cxx:
            line.append(fmt_cxx_ratio(row.get("cxx_vs_c")))
            line.append(row.get("cxx_target", ""))
        notes = list(row["notes"])
        if row.get("busy_machine"):
            notes.append("NOISY, other load: " + ", ".join(row["busy_machine"]))
        line.append("; ".join(notes))
        line.append(row["target"])
        table.append(line)
    widths = [max(len(c), *(len(l[i]) for l in table)) if table else len(c)
              for i, c in enumerate(cols)]
    sep = "  "
    print(sep.join(c.ljust(widths[i]) for i, c in enumerate(cols)).rstrip())
    print(sep.join("-" * widths[i] for i in range(len(cols))))
    for l in table:
        print(sep.join(v.ljust(widths[i]) for i, v in enumerate(l)).rstrip())


def plot_png(path, rows, workloads, rts):
    """One panel per workload: each peer's median relative to weft's, as
    'peer time / weft time' (items/s: weft / peer; MiB: peer / weft), so > 1
    means weft is ahead, one bar group per metric and thread count, log y.
    Returns None when written, else why not (one line)."""
    import shutil
    import tempfile
    gp = shutil.which("gnuplot")
    if not gp:
        return "gnuplot not found (Debian: gnuplot-nox): no plot"
    peers = [p for p in PEERS if p in rts]
    panels = []
    for w in workloads:
        groups = []
        for row in rows:
            if row["metric"] not in METRICS[w]:
                continue
            weft = row["stats"].get("weft")
            vals = []
            for p in peers:
                st = row["stats"].get(p)
                v = None
                if weft and st and weft["median"] > 0 and st["median"] > 0:
                    v = (weft["median"] / st["median"] if row["metric"] in HIGHER_BETTER
                         else st["median"] / weft["median"])
                vals.append(v)
            if any(v is not None for v in vals):
                groups.append(("%s T%d" % (row["metric"], row["threads"]), vals))
        if groups:
            panels.append((w, groups))
    if not panels or not peers:
        return "nothing to plot (no weft and peer figures)"
    tmp = tempfile.mkdtemp(prefix="weft-plot-")
    cols = 2 if len(panels) > 1 else 1
    nrows = (len(panels) + cols - 1) // cols
    colors = {"tbb": "#1f77b4", "gomp": "#2ca02c", "omp_clang": "#d62728", "starpu": "#9467bd"}
    script = ['set terminal pngcairo size %d,%d font "sans,10"' % (800 * cols, 330 * nrows),
              'set output "%s"' % path.replace('"', '\\"'),
              'set datafile separator "\\t"',
              'set datafile missing "NaN"',
              'set termoption noenhanced',
              'set style data histograms',
              'set style histogram clustered gap 1',
              'set style fill solid 0.85 border -1',
              'set logscale y 10',
              'set grid ytics',
              'set key top left horizontal font ",9"',
              'set xtics rotate by -20 font ",8" nomirror',
              'set ylabel "peer / weft (> 1: weft ahead)"',
              'set multiplot layout %d,%d title "weft vs peers: peer time / weft time '
              '(items/s: weft/peer; MiB: peer/weft), median, log scale" font ",12"'
              % (nrows, cols)]
    for i, (w, groups) in enumerate(panels):
        f = os.path.join(tmp, "p%d.tsv" % i)
        allv = [v for _, vals in groups for v in vals if v is not None]
        lo = min(allv + [1.0]) / 1.6
        hi = max(allv + [1.0]) * 1.6
        with open(f, "w") as fh:
            for label, vals in groups:
                fh.write(label + "\t" + "\t".join("NaN" if v is None else "%.6g" % v
                                                    for v in vals) + "\n")
        script.append('set title "%s"' % w)
        script.append('set yrange [%g:%g]' % (lo, hi))
        script.append('set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead '
                      'lw 2 lc rgb "black" dt 2')
        plots = []
        for j, p in enumerate(peers):
            plots.append('"%s" using %d:xtic(1) title "%s" lc rgb "%s"'
                         % (f, j + 2, p, colors.get(p, "gray")))
        script.append("plot " + ", ".join(plots))
    script.append("unset multiplot")
    sp = os.path.join(tmp, "plot.gp")
    with open(sp, "w") as fh:
        fh.write("\n".join(script) + "\n")
    try:
        cp = subprocess.run([gp, sp], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            universal_newlines=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return "gnuplot failed: %s" % e
    if cp.returncode != 0 or not os.path.isfile(path):
        return "gnuplot failed: %s" % " | ".join(cp.stderr.strip().splitlines()[-2:])
    return None


def split_list(values):
    out = []
    for v in values or []:
        out += [x.strip() for x in v.split(",") if x.strip()]
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description="weft bench runner (see the comment at the top)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", action="append")
    ap.add_argument("--threads", action="append")
    ap.add_argument("--rt", action="append")
    ap.add_argument("--reps", type=int)
    ap.add_argument("--json")
    ap.add_argument("--csv")
    ap.add_argument("--builddir")
    ap.add_argument("--plot")
    ap.add_argument("--cxx-rounds", type=int, default=1)
    a = ap.parse_args()

    workloads = split_list(a.only) or list(WORKLOADS)
    for w in workloads:
        if w not in WORKLOADS:
            ap.error("unknown workload %r (one of %s)" % (w, ", ".join(WORKLOADS)))
    try:
        threads_list = [int(x) for x in split_list(a.threads)] or [1, 2]
    except ValueError:
        ap.error("--threads takes integers")
    if any(t < 1 for t in threads_list):
        ap.error("--threads must be >= 1")
    rts = split_list(a.rt) or list(RUNTIMES)
    for rt in rts:
        if rt not in RUNTIMES:
            ap.error("unknown runtime %r (one of %s)" % (rt, ", ".join(RUNTIMES)))
    # weft first, weft++ (its C++ API) right after it: the two run side by
    # side, cell by cell, and stand next to each other in the table
    front = [x for x in ("weft", CXX) if x in rts]
    rts = front + [x for x in rts if x not in front]
    if a.reps is not None and a.reps < 1:
        ap.error("--reps must be >= 1")
    if a.cxx_rounds < 1:
        ap.error("--cxx-rounds must be >= 1")

    bindir = find_bindir(a.builddir, here)
    if not bindir:
        print("run.py: no bench executables found (%s); build first:\n"
              "  meson setup build-bench -Dtests=disabled && ninja -C build-bench"
              % (a.builddir or "build-bench, build"), file=sys.stderr)
        return 2
    ncpu = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    r = Runner(bindir, a.quick, a.reps)
    # quick: idle (2 s a repetition) only at the largest thread count
    idle_threads = [max(threads_list)] if a.quick else threads_list

    missing = [rt for rt in rts + ["serial"] if not r.exe(rt)]
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0, 0, 0)
    log("weft bench: %s, %d CPUs usable, load %.2f; executables in %s; %s"
        % (platform.node(), ncpu, load[0], bindir, "quick" if a.quick else "full"))
    if max(threads_list) > ncpu:
        log("note: more threads than usable CPUs: timings include oversubscription")
    xfer = cache_line_transfer(bindir)
    if xfer:
        log("cache-line transfer between two threads (bench_xfer, the floor under every "
            "hand-over): %s ns" % xfer)
    elif os.path.isfile(os.path.join(bindir, "bench_xfer")):
        r.failures.append("bench_xfer failed its check")
    skeleton = floor_probe(bindir, "bench_skeleton", "%.1f")
    if skeleton:
        log("locked steps of one operator at one thread (bench_skeleton, the floor under the "
            "1-thread ns/op, docs/one-thread-cost.md): %s ns" % skeleton)
    elif os.path.isfile(os.path.join(bindir, "bench_skeleton")):
        r.failures.append("bench_skeleton failed its check")
    if r.exe("weft") is None and "weft" in rts:
        r.failures.append("bench_weft not found in %s" % bindir)

    started = datetime.datetime.now()
    for w in workloads:
        if w in SERIAL_WORKLOADS and r.exe("serial"):
            r.run("serial", w, 1)
        for t in (idle_threads if w == "idle" else threads_list):
            for rt in rts:
                if r.exe(rt) and supports(rt, w):
                    if w == "pushers":
                        for ol in PUSHERS_LISTS[a.quick]:
                            r.run(rt, w, t, oplist=ol)
                    else:
                        r.run_best(rt, w, t)
                if rt == CXX and a.cxx_rounds > 1 and supports(CXX, w) and r.exe(CXX) \
                        and r.exe("weft") and "weft" in rts:
                    # more rounds of the two, alternating who goes first,
                    # right after the first: their samples pooled
                    for k in range(1, a.cxx_rounds):
                        for x in ([CXX, "weft"] if k % 2 else ["weft", CXX]):
                            r.run(x, w, t)
                    r.pool_rounds(["weft", CXX], w, t)
    elapsed = (datetime.datetime.now() - started).total_seconds()

    any_serial = any(w in SERIAL_WORKLOADS for w in workloads)
    METRICS["pushers"] = pushers_metrics(a.quick)
    rows = build_rows(r, workloads, threads_list, rts, idle_threads, ncpu)
    print()
    print("weft bench (%s; reps: %s), %s, %d CPUs, %.0f s"
          % ("quick" if a.quick else "full",
             ", ".join("%s %d" % (w, r.reps(w)) for w in workloads)
             + ("; starpu %d" % r.reps(DEP_WORKLOADS[0], "starpu")
                if a.reps is None and "starpu" in rts
                and any(w in DEP_WORKLOADS for w in workloads) else ""),
             platform.node(), ncpu, elapsed))
    print("median [min-max]; lower is better (items/s: higher); weft/best = weft median / best "
          "peer median (items/s: best peer / weft), so < 1 means weft is ahead")
    print()
    print_table(rows, rts, any_serial)
    print()
    for rt in missing:
        if rt in rts or rt == "serial":
            print("%s %s: not built (%s)" % (dash(), rt, ENABLE[rt]))
    if "wake" in workloads:
        print("wake: weft/tbb submit from main (outside the pool/arena) to N workers; OpenMP: "
              "a team of N+1, the master submits, N threads wait at a barrier.")
        print("      wake_hot: 0.2 ms after the previous task ended (actual gap in the JSON, "
              "idle_gap_us_median).")
    if "idle" in workloads:
        print("idle: CPU time of the runtime's threads (the process less the sleeping, measuring "
              "main thread) in the 1st / 2nd second after a burst%s." % (" (quick: only at %d threads)" % idle_threads[0] if a.quick else ""))
    if "pfor_imb" in workloads:
        print("pfor_imb: perfect split = serial median / threads; OpenMP uses schedule(dynamic,256), "
              "TBB auto_partitioner, weft grain 0 (automatic).")
    if any(w in DEP_WORKLOADS for w in workloads):
        print("op lists (%s): ns/op from the first push to the wait-for-all; serial = the list run "
              "in order (the work per op). weft: one thread pushes, from main (N workers + main:"
              % ", ".join(w for w in DEP_WORKLOADS if w in workloads))
        print("      shown) or from a driver op (N threads: in the notes). OpenMP: omp single + "
              "task depend(inout/in), taskwait. tbb: flow graph, explicit edges, built inside")
        print("      the timed region (teardown not timed). starpu: main submits, implicit "
              "dependencies (STARPU_RW/STARPU_R), N CPU workers. At 1 thread libomp runs each")
        print("      task of a one-thread (serialized) team at once and skips dependence tracking, "
              "so omp_clang T1 is the loop plus task creation.")
        print("      *_replay: the same list recorded once, outside the timed region, then run "
              "again each repetition: weft captures the pushes into a graph")
        print("      (weft_graph_launch + weft_wait_all from main), tbb builds the flow graph once "
              "(try_put to the sources + wait_for_all); no other peer has it.")
        print("      'weft fresh push (main)' is the main-mode figure of the same run; "
              "fresh/replay = that / weft replay.")

    if CXX in rts and r.exe(CXX) and any(supports(CXX, w) for w in workloads):
        print("%s: bench_weftxx, weft's workloads written on its C++ API (include/weft/weft.hpp: "
              "lambdas, weft::group, pool.parallel_for," % CXX)
        print("      engine.push with weft::reads / weft::writes, engine.capture + launch); the "
              "same pool setup, kernels, checks and timing as bench_weft,")
        print("      each cell run right after weft's%s. %s/weft = %s / weft %s: the ratios' "
              "median [min-max]; target:"
              % (" (%d rounds each, alternating, samples pooled)" % a.cxx_rounds
                 if a.cxx_rounds > 1 else "", CXX, CXX,
                 "round by round (the two runs' medians)" if a.cxx_rounds > 1
                 else "repetition by repetition"))
        print("      within %gx of the C API's row." % CXX_TARGET_VS_C)
    if "pushers" in workloads:
        print("pushers (weft only): <list>_p<P>: the list split into P segments, pushed by P "
              "user threads (main + P-1) into one engine on N workers,")
        print("      each pusher its own vars (a copy of the list's); _shared: all over the same "
              "vars (each op adds its own term to its var: checkable in any")
        print("      order; each pusher's ops on a var checked in its order). ns/op over the "
              "whole list, from the pushers' start to main's weft_wait_all. The")
        print("      ratio to one pusher is taken round by round (every P runs in each round).")
    if any(w in GRAPH_WORKLOADS for w in workloads):
        print("graph shapes (Taskflow's CPU benchmarks, bench/harness/harness.h): graph_dag, a random "
              "layered DAG of 65,536 nodes (256 layers of 256, 1-4 out-edges each to")
        print("      the next layer, one fixed seed), ~0.7 us of work a node (750 steps of a "
              "multiply chain); graph_grid, a 256x256 wavefront, each block after its left")
        print("      and upper ones; graph_tree, a binary tree of 2^18 nodes, each before its "
              "two children; grid and tree nodes empty (a mix of the predecessors' values).")
        print("      Each node's value is computed from its predecessors' and checked against "
              "the serial run, with its run count. ns/node. <shape>: built and run once,")
        print("      construction timed (weft: weft_graph_create/add/edge, launch, "
              "weft_wait_all from main, N workers + main; tbb: continue_node + make_edge,")
        print("      try_put to the sources, wait_for_all, in task_arena(N); OpenMP: omp "
              "single + task depend(out: own slot) depend(iterator, in: predecessors'),")
        print("      taskwait, team of N). <shape>_relaunch: the same graph built once, "
              "outside the timed region, then run again (weft weft_graph_launch; tbb the")
        print("      flow graph reused); OpenMP has none. serial: the nodes in order. The two "
              "rows' repetitions alternate within each process.")
    if "fanout" in workloads:
        print("fanout: the main thread spawns 131,072 tiny tasks (each adds a value to its own "
              "slot: every slot checked) into one group and waits; ns/task. weft:")
        print("      weft_group_spawn from main (not a worker), weft_group_wait (main helps): N "
              "workers + main; tbb: task_group::run + wait from main in task_arena(N+1, 1);")
        print("      OpenMP: a team of N+1, omp single + task + taskwait: its spawner is a team "
              "thread (OpenMP has no other), the N others run tasks at the barrier;")
        print("      libgomp runs a task at once in its creator while more than 64 x the team's "
              "threads are queued. serial: the tasks' bodies in a loop.")
    if "pipeline" in workloads:
        print("pipeline: %s items through load -> preprocess -> compute -> write-back (128 KB "
              "buffers; compute ~2/3 of the work), every stage one item at a time, in order."
              % ("32" if a.quick else "256"))
        print("      pipeline: 2 buffers a stage, item k uses slot k%2 (weft: vars, tbb: flow "
              "graph edges, OpenMP: depend, starpu: handles). pipe_alloc: load allocates the")
        print("      item's 384 KB, write-back frees it, nothing bounds the run-ahead (tbb: "
              "parallel_pipeline with tokens = items). pipe_bp: weft max_inflight %d ops;"
              % PIPE_MAX_INFLIGHT)
        print("      peers %d items in flight (tbb tokens; OpenMP/starpu: load(k) waits for "
              "write-back(k-%d) on a token slot). *_mem: peak bytes live in item buffers,"
              % (PIPE_TOKENS, PIPE_TOKENS))
        print("      counted by the workload (not RSS), MiB. serial: the items in order. "
              "bench_weft's malloc is jemalloc (linked by libweft), the peers' glibc's.")

    for rt in rts:
        if any(x["rt"] == rt for x in r.runs):  # only the runtimes that ran a cell
            r.trials.note(rt, PEER_NOTES[rt])
    r.trials.print_footer(rts, "How each runtime ran (a peer with several configurations: "
                          "each tried once per cell, --reps 1, the best by the workload's "
                          "first metric kept for the cell's repetitions):")

    noisy = [x for x in r.runs if x["foreign_load"] is not None
             and x["foreign_load"] > FOREIGN_LOAD_FLAG]
    if noisy:
        print("warning: other processes used > %d%% of the CPUs during %d of %d runs "
              "(marked NOISY): rerun on a quiet machine for numbers to quote."
              % (100 * FOREIGN_LOAD_FLAG, len(noisy), len(r.runs)))

    if a.plot:
        png = a.plot
    elif a.json:
        png = os.path.splitext(a.json)[0] + ".png"
    else:
        png = os.path.join(os.path.dirname(os.path.abspath(bindir)) if
                           os.path.basename(os.path.normpath(bindir)) == "bench" else bindir,
                           "bench.png")
    why = plot_png(png, rows, workloads, rts)
    print("plot: %s" % png if why is None else "plot: %s" % why)

    if a.json:
        with open(a.json, "w") as f:
            json.dump({
                "meta": {"date": started.isoformat(timespec="seconds"), "host": platform.node(),
                         "cpus": ncpu, "quick": a.quick, "argv": sys.argv, "bindir": bindir,
                         "elapsed_s": round(elapsed, 1), "missing": missing},
                "records": r.records,
                "runs": r.runs,
                "trial_runs": r.trial_runs,
                "trials": [{"rt": p, "cell": row, "chosen": w, "tried": figs}
                           for p, row, w, figs, _ in r.trials.rows],
                "rows": rows,
                "failures": r.failures,
            }, f, indent=1)
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            wr = csv.writer(f)
            wr.writerow(["rt", "metric", "threads", "unit", "n", "median", "min", "max", "check"])
            for rec in r.records:
                st = summarize(rec.get("samples") or [])
                wr.writerow([rec["rt"], rec.get("workload"), rec.get("threads"), rec.get("unit"),
                             st["n"] if st else 0,
                             "%.6g" % st["median"] if st else "",
                             "%.6g" % st["min"] if st else "",
                             "%.6g" % st["max"] if st else "", rec.get("check")])

    if r.failures:
        print()
        print("FAILED (%d):" % len(r.failures))
        for f in r.failures:
            print("  " + f)
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
