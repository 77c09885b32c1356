#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The bench's one entry point: one suite, or all of them in turn.

    python3 bench/bench.py SUITE [ARGS...]
    python3 bench/bench.py --help              this text

Suites (one folder of bench/ each, bench/README.md):
  engine        the pool and the engine against the peers, the machine's
                floors in its first lines: bench/engine/run.py ARGS
  floors        the machine's floors alone: bench_xfer ARGS, then
                bench_skeleton ARGS (ARGS: --rounds R)
  graph         explicit-edge graphs, weft alone: bench_graph_edges ARGS,
                then bench_graph_stencil ARGS (the options both take:
                --threads N[,N...] --reps R; each program's header says the
                rest: run it directly for those)
  pthreadpool   weft's libpthreadpool.so.0 under XNNPACK:
                bench/pthreadpool/run.py ARGS
  cholesky      tiled Cholesky: bench/cholesky/run.py ARGS
  cholesky_gpu  tiled Cholesky on a GPU: bench/cholesky/run_gpu.py ARGS
  mpi           MPI: bench/mpi/run.py ARGS
  gpu           the GPU layer against CUDA's floors: bench_gpu ARGS
                (exit 77: skipped, no CUDA)
  all           what scripts/bench.sh runs, in its order: engine with ARGS,
                then pthreadpool, cholesky and mpi with --builddir and, if
                ARGS has it, --quick, then, where nvidia-smi -L lists a GPU,
                gpu with --quick if given ("no GPU: bench_gpu skipped"
                otherwise)

A suite with a runner (engine, pthreadpool, cholesky, cholesky_gpu, mpi)
gets ARGS as they are: the runner's own options and defaults (SUITE --help
lists them; each runner also runs directly, python3 bench/<suite>/run.py).
The others, and all, take --builddir DIR (default build-bench; the
programs are in DIR/bench/) and pass the rest of ARGS on.

Exit status: the suite's (a runner's, or the first failed program's; gpu:
bench_gpu's). all: as scripts/bench.sh's: the engine's if it failed, 1 if a
later suite failed (gpu: an exit status other than 0 and 77), else 0.

    python3 bench/bench.py engine --builddir build-bench --quick --only fib,chain --threads 1,2
    python3 bench/bench.py pthreadpool --builddir build-bench --quick
    python3 bench/bench.py graph --builddir build-bench --threads 1,2 --reps 3
    python3 bench/bench.py all --quick
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# suite: its runner, relative to bench/
RUNNERS = {
    "engine": "engine/run.py",
    "pthreadpool": "pthreadpool/run.py",
    "cholesky": "cholesky/run.py",
    "cholesky_gpu": "cholesky/run_gpu.py",
    "mpi": "mpi/run.py",
}
# suite: its programs, in <builddir>/bench/, run in this order
PROGRAMS = {
    "floors": ["bench_xfer", "bench_skeleton"],
    "graph": ["bench_graph_edges", "bench_graph_stencil"],
    "gpu": ["bench_gpu"],
}
SUITES = ["engine", "floors", "graph", "pthreadpool", "cholesky", "cholesky_gpu", "mpi", "gpu",
          "all"]


def status(rc):
    """A child's exit status as the shell reports it (128 + N: killed by signal N)."""
    return rc if rc >= 0 else 128 - rc


def run(cmd):
    sys.stdout.flush()
    sys.stderr.flush()
    return status(subprocess.run(cmd).returncode)


def run_runner(suite, args):
    return run([sys.executable, os.path.join(HERE, RUNNERS[suite])] + args)


def take_builddir(args):
    """(builddir, the other arguments): --builddir DIR or --builddir=DIR, the
    last one given; default build-bench."""
    builddir, rest, i = "build-bench", [], 0
    while i < len(args):
        if args[i] == "--builddir" and i + 1 < len(args):
            builddir = args[i + 1]
            i += 2
            continue
        if args[i].startswith("--builddir="):
            builddir = args[i].split("=", 1)[1]
        else:
            rest.append(args[i])
        i += 1
    return builddir, rest


def run_programs(suite, builddir, args):
    """Each of the suite's programs with args; 0, or the first failure's status."""
    rc = 0
    for name in PROGRAMS[suite]:
        exe = os.path.join(builddir, "bench", name)
        if not os.access(exe, os.X_OK):
            print("bench.py: no %s (not built; build first: meson setup build-bench "
                  "-Dtests=disabled -Dbench=true && ninja -C build-bench)" % exe, file=sys.stderr)
            r = 127
        else:
            r = run([exe] + args)
        if r and not rc:
            rc = r
    return rc


def have_gpu():
    """Whether nvidia-smi -L lists a GPU (scripts/bench.sh's test)."""
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
    except OSError:
        return False
    return any(line.startswith("GPU") for line in out.splitlines())


def run_all(args):
    builddir, rest = take_builddir(args)
    quick = ["--quick"] if "--quick" in rest else []
    bd = ["--builddir", builddir]
    rc = run_runner("engine", bd + rest)
    for suite in ("pthreadpool", "cholesky", "mpi"):
        if run_runner(suite, bd + quick):
            rc = 1
    if have_gpu():
        # 77: a build without CUDA (where a GPU is present, bench_gpu fails,
        # exit 1, rather than skip when CUDA finds no device)
        if run_programs("gpu", builddir, quick) not in (0, 77):
            rc = 1
    else:
        print("no GPU: bench_gpu skipped", flush=True)
    return rc


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    suite, args = argv[0], argv[1:]
    if suite not in SUITES:
        print("bench.py: unknown suite %r (one of %s; bench.py --help)" % (suite, ", ".join(SUITES)),
              file=sys.stderr)
        return 2
    if suite == "all":
        return run_all(args)
    if suite in RUNNERS:
        return run_runner(suite, args)
    builddir, rest = take_builddir(args)
    return run_programs(suite, builddir, rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
