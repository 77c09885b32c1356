# SPDX-License-Identifier: MIT
"""Peers at their best: each peer's configurations, a short trial
of each per table row, the best kept, and the footer under the table.

A lead over a peer counts only against that peer's best configuration on
the machine at hand. So, for each row of a table, Trials.pick runs the peer
once in each of its configurations (a trial: the row's own command with one
repetition), keeps the best by the row's own figure, and remembers every
trial figure; the caller then runs the row's repetitions in the winner.
Trials.footer prints, under the table, each peer's configurations, the
winner of every row with the trial figures, and one shell command that
reruns one cell by hand.

Used by the runners bench/engine/run.py, bench/cholesky/run.py,
bench/mpi/run.py and bench/pthreadpool/run.py; the configurations of a kind of peer (OpenMP's binding, StarPU's scheduler)
are made here so that every table tries the same ones.
"""

import os
import shlex


class Config:
    """One way to run a peer: a short name (the footer's), what it adds to
    the environment, the launcher's arguments where there is one (mpirun's
    binding), and a few words on what it means."""

    def __init__(self, name, env=None, launch=None, what="", launcher="mpirun"):
        self.name = name
        self.env = dict(env or {})
        self.launch = list(launch or [])
        self.what = what
        self.launcher = launcher  # only named in describe()

    def describe(self):
        launch = [self.launcher] + self.launch if self.launch else []
        parts = [" ".join("%s=%s" % kv for kv in self.env.items()), " ".join(launch)]
        how = " ".join(p for p in parts if p)
        if not how:
            return "%s: %s" % (self.name, self.what or "no setting")
        return "%s: %s%s" % (self.name, how, " (%s)" % self.what if self.what else "")


def shell(env, argv):
    """One line a shell runs as the bench did: VAR=value ... argv."""
    return " ".join(["%s=%s" % (k, shlex.quote(str(v))) for k, v in env.items()] +
                    [shlex.quote(str(a)) for a in argv])


def usable_cpus():
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1)


def physical_cores():
    """Cores among the usable CPUs (SMT siblings counted once)."""
    cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()
    seen = set()
    for c in cpus:
        try:
            with open("/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list" % c) as f:
                seen.add(f.read().strip())
        except OSError:
            seen.add(str(c))
    return len(seen) or usable_cpus()


def omp_configs(threads):
    """OpenMP's thread binding: unbound (the default, OMP_PROC_BIND unset:
    the threads float, as weft's workers do with WEFT_AFFINITY unset), close
    and spread over OMP_PLACES=cores. spread is tried only where it places
    the threads otherwise than close does (more than one thread, fewer
    than the cores)."""
    out = [Config("unbound", {}, what="OMP_PROC_BIND unset: threads float"),
           Config("close", {"OMP_PROC_BIND": "close", "OMP_PLACES": "cores"})]
    if 1 < threads < physical_cores():
        out.append(Config("spread", {"OMP_PROC_BIND": "spread", "OMP_PLACES": "cores"}))
    return out


# StarPU's schedulers worth trying on CPUs alone: lws (1.3's default, per
# worker queues with stealing), dmda (performance models; it calibrates
# them on its first runs), eager (one central queue).
STARPU_SCHEDS = ("lws", "dmda", "eager")


def starpu_sched_configs(scheds=STARPU_SCHEDS):
    return [Config(s, {"STARPU_SCHED": s}) for s in scheds]


def fmt_fig(x):
    if x >= 100:
        return "%.0f" % x
    if x >= 10:
        return "%.1f" % x
    return "%.3g" % x


class Trials:
    """The configurations tried for each (peer, row), and their figures."""

    def __init__(self):
        self.rows = []  # (peer, row, winner name, [(config name, figure | error text)], unit)
        self.configs = {}  # peer -> {name: Config}, in the order first met
        self.notes = {}  # peer -> the setting every configuration shares
        self.rerun = {}  # peer -> (row, command line)
        self.failures = []  # every failed trial, for the caller's exit status

    def note(self, peer, text):
        """What every configuration of peer has in common (one line)."""
        self.notes[peer] = text

    def pick(self, peer, row, configs, measure, higher_better=True, unit="", known=None,
             listed=True):
        """measure(config) -> the row's figure (raises on a failed run).
        Returns (the best config, its trial figure). One configuration:
        returned without a trial (figure None). Otherwise each is run once,
        except those in known (name -> a figure measured already); a failed
        one is noted and passed over; if every one failed, the last error is
        raised. listed=False: the configurations are not spelled out in the
        footer's "tried" line (the caller's note describes them)."""
        seen = self.configs.setdefault(peer, {})
        for c in configs if listed else []:
            seen.setdefault(c.name, c)
        if len(configs) == 1:
            self.rows.append((peer, row, configs[0].name, [], unit))
            return configs[0], None
        figs, best, last_err = [], None, None
        for c in configs:
            try:
                x = known[c.name] if known and c.name in known else measure(c)
            except Exception as e:  # any failed run: noted, the others decide
                last_err = e
                figs.append((c.name, "FAILED"))
                self.failures.append("%s %s, trial of %s: %s" % (peer, row, c.name, e))
                continue
            figs.append((c.name, x))
            if best is None or (x > best[1] if higher_better else x < best[1]):
                best = (c, x)
        if best is None:
            self.rows.append((peer, row, "none, every trial failed", figs, unit))
            raise last_err
        self.rows.append((peer, row, best[0].name, figs, unit))
        return best

    def set_rerun(self, peer, row, cmdline):
        """The command that reruns peer's cell `row` by hand (the last one set is shown)."""
        self.rerun[peer] = (row, cmdline)

    def footer(self, peers, intro=None):
        """Lines for under the table: per peer, how it ran and each row's winner."""
        out = [intro or "How each peer ran (each configuration tried once per row, one "
               "repetition; the best kept for the row's figures):"]
        for p in peers:
            cfgs = list(self.configs.get(p, {}).values())
            if not cfgs and p not in self.notes:
                continue
            head = "  %s: " % p
            if self.notes.get(p):
                out.append(head + self.notes[p])
                head = "    "
            if len(cfgs) > 1:
                out.append(head + "tried " + "; ".join(c.describe() for c in cfgs))
            elif cfgs and (cfgs[0].env or cfgs[0].launch):  # else the note says it all
                out.append(head + "one configuration, " + cfgs[0].describe())
            for _, row, w, figs, unit in (r for r in self.rows if r[0] == p and r[3]):
                tried = ", ".join("%s %s" % (n, x if isinstance(x, str) else fmt_fig(x))
                                  for n, x in figs)
                out.append("    %s: %s (%s%s)" % (row, w, tried, " " + unit if unit else ""))
        if self.rerun:
            out.append("Rerun one cell by hand (from the repository root):")
            for p in peers:
                if p in self.rerun:
                    row, cmd = self.rerun[p]
                    out.append("  %s, %s: %s" % (p, row, cmd))
        return out

    def print_footer(self, peers, intro=None):
        for line in self.footer(peers, intro):
            print(line)
