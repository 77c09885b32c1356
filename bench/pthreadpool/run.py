#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""weft's libpthreadpool.so.0 against the stock one, under XNNPACK: one table.

    python3 bench/pthreadpool/run.py --builddir build-bench [--quick]

Runs <builddir>/bench/bench_xnnpack (bench/pthreadpool/bench_xnnpack.c: MobileNet v1, a
1x1 convolution 7x7x1024->1024, a depthwise 3x3 on 112x112x32, a fully
connected 1024->1000, and pthreadpool_parallelize_1d with an empty body over
1, 100 and 10k items) once on the system's libpthreadpool.so.0 and once on
weft's (<builddir>/src/compat/pthreadpool, through LD_LIBRARY_PATH), in
alternation, `--rounds` times each (default 3; the order flips every
round), at each thread count (default 1, 2, and 4, 8, 16 up to the CPU
count; --threads N[,N]). Each run
reports which library it had; a run on the wrong one is an error.

The table: per case and thread count, the median over the rounds of each
round's median (min-max of those), for stock and weft, the p99 likewise,
and stock / weft (> 1: weft faster), with the target set for weft: parity for
the network and the large operators, 1.2x for the small operator (fc,
under 100 us at one thread), below stock for the empty loops. Speed is
measured, never asserted; the exit status is non-zero only when a run
failed its own checks (bench_xnnpack verifies every output) or had the
wrong library.

Options: --quick (fewer samples per run), --threads, --rounds, --json FILE.

The peer at its best: the stock libpthreadpool has one
configuration, the thread count XNNPACK passes to pthreadpool_create (it
reads no environment and pins nothing), and weft's drop-in runs with weft's
defaults (WEFT_AFFINITY unset: not pinned either); the footer says so and
gives the commands that rerun a cell by hand.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

# peers.py and runutil.py, the runners' shared code, are in bench/harness/
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))

from peers import Trials, shell
from runutil import print_table, run_main

SMALL_US = 100.0  # an operator under this at one thread (stock) is "small"


def lib_env(libdir, stock_libdir):
    """LD_LIBRARY_PATH for a run: weft's drop-in first (libdir), then where
    the stock libraries are when they are not installed."""
    path = [d for d in (libdir, stock_libdir) if d]
    return {"LD_LIBRARY_PATH": ":".join(path)} if path else {}


def xnn_cmd(exe, threads, quick):
    return [exe, "--threads", str(threads)] + (["--quick"] if quick else [])


def run_once(exe, threads, quick, libdir, stock_libdir=None):
    env = dict(os.environ)
    env.pop("LD_LIBRARY_PATH", None)
    env.update(lib_env(libdir, stock_libdir))
    cmd = xnn_cmd(exe, threads, quick)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError("%s (%s): exit %d: %s" % (" ".join(cmd), libdir or "stock",
                                                     p.returncode, p.stderr.strip()[-500:]))
    recs = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    for r in recs:
        ours = libdir is not None and r["lib"].startswith(libdir)
        if ours != (libdir is not None):
            raise RuntimeError("%s ran on %s, expected %s" % (r["case"], r["lib"],
                                                            libdir or "the stock library"))
    return recs


def fmt(x):
    if x >= 1000:
        return "%.0f" % x
    if x >= 10:
        return "%.1f" % x
    return "%.2f" % x


def footer(a, exe, libdir, threads):
    """How each ran, and the commands for one cell (the largest thread count)."""
    trials = Trials()
    stock = os.path.abspath(a.stock_libdir) if a.stock_libdir else None
    t = threads[-1]
    trials.note("stock", "libpthreadpool.so.0 (%s): pthreadpool_create(T) from XNNPACK, one "
                "configuration (it reads no environment and pins nothing)"
                % (stock or "the system's"))
    trials.note("weft", "weft's drop-in (%s): weft's defaults, WEFT_AFFINITY unset (workers "
                "not pinned), one configuration" % libdir)
    trials.set_rerun("stock", "T%d" % t, shell(lib_env(None, stock), xnn_cmd(exe, t, a.quick)))
    trials.set_rerun("weft", "T%d" % t, shell(lib_env(libdir, stock), xnn_cmd(exe, t, a.quick)))
    trials.print_footer(["stock", "weft"], "How each ran:")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--builddir", default="build-bench")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", action="append")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json")
    ap.add_argument("--stock-libdir",
                    help="where the stock libpthreadpool.so.0 and XNNPACK's libraries are, "
                         "when not installed (a carried bundle: scripts/device.sh)")
    a = ap.parse_args()
    exe = os.path.join(a.builddir, "bench", "bench_xnnpack")
    libdir = os.path.abspath(os.path.join(a.builddir, "src", "compat", "pthreadpool"))
    if not os.path.exists(exe) or not os.path.exists(os.path.join(libdir, "libpthreadpool.so.0")):
        print("run_pthreadpool: no %s or no weft libpthreadpool.so.0 (Debian: libxnnpack-dev)"
              % exe, file=sys.stderr)
        return 1
    default = [1, 2] + [t for t in (4, 8, 16) if t <= (os.cpu_count() or 1)]
    threads = ([int(t) for ts in a.threads for t in ts.split(",")] if a.threads else default)
    # samples[(case, threads, lib)] = list of (median, p99) per round
    samples, unit = {}, {}
    for t in threads:
        for rnd in range(a.rounds):
            order = [None, libdir] if rnd % 2 == 0 else [libdir, None]
            for lib in order:
                stock = os.path.abspath(a.stock_libdir) if a.stock_libdir else None
                for r in run_once(exe, t, a.quick, lib, stock):
                    u = r["unit"]
                    unit[r["case"]] = u
                    key = (r["case"], t, "weft" if lib else "stock")
                    samples.setdefault(key, []).append((r["median_" + u], r["p99_" + u]))
            print("run_pthreadpool: %d threads, round %d done" % (t, rnd + 1), file=sys.stderr)

    cases = list(dict.fromkeys(k[0] for k in samples))
    stock1 = {c: statistics.median(m for m, _ in samples.get((c, 1, "stock"), [(0, 0)]))
              for c in cases}
    hdr = ("case", "thr", "unit", "stock median [min-max]", "weft median [min-max]",
           "stock p99", "weft p99", "stock/weft", "target", "met")
    rows = []
    for c in cases:
        for t in threads:
            s, w = samples[(c, t, "stock")], samples[(c, t, "weft")]
            sm, wm = [m for m, _ in s], [m for m, _ in w]
            ratio = statistics.median(sm) / statistics.median(wm)
            if c.startswith("pfor_empty"):
                target, goal = "> 1 (below stock)", 1.0 + 1e-9
            elif c != "mobilenet_v1" and stock1.get(c, 0) and stock1[c] < SMALL_US:
                target, goal = ">= 1.2 (small op)", 1.2
            else:
                target, goal = ">= 1.0 (parity)", 1.0
            rows.append({
                "case": c, "threads": t, "unit": unit[c],
                "stock": [statistics.median(sm), min(sm), max(sm)],
                "weft": [statistics.median(wm), min(wm), max(wm)],
                "stock_p99": statistics.median(p for _, p in s),
                "weft_p99": statistics.median(p for _, p in w),
                "ratio": ratio, "target": target, "met": ratio >= goal})
    table = [hdr] + [(r["case"], str(r["threads"]), r["unit"],
                      "%s [%s-%s]" % tuple(fmt(x) for x in r["stock"]),
                      "%s [%s-%s]" % tuple(fmt(x) for x in r["weft"]),
                      fmt(r["stock_p99"]), fmt(r["weft_p99"]), "%.2f" % r["ratio"], r["target"],
                      "yes" if r["met"] else "NO") for r in rows]
    print_table("pthreadpool under XNNPACK: stock libpthreadpool.so.0 vs weft's drop-in "
                "(%d rounds each, alternating; medians of the rounds' medians)" % a.rounds, table)
    footer(a, exe, libdir, threads)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rows": rows, "samples": {"|".join(map(str, k)): v
                                                 for k, v in samples.items()}}, f, indent=1)
    return 0


if __name__ == "__main__":
    run_main(main, "run_pthreadpool")
