#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks a trace written by WEFT_PROFILE (tests/api/test_profile.c runs it).

    check_trace.py TRACE WORKERS [--count NAME=N ...] [--require NAME ...]
                   [--max-events N] [--dropped]

Checks: valid JSON in Trace Event Format's object form; a process_name and
exactly one thread_name per worker (tids 0..WORKERS-1, "<name> worker <i>"),
every track named once; every span ("ph":"X") has name, ts, dur >= 0, pid and
tid, and spans on one track are properly nested or disjoint (never partial
overlap); every instant ("ph":"i") has name, ts, pid, tid and thread scope;
--count NAME=N: exactly N spans named NAME; --count-on SUBSTR:NAME=N: exactly
N spans named NAME on the tracks whose name contains SUBSTR (e.g. GPU stream
tracks); --require NAME: at least one event
named NAME; --max-events: no track has more events; --dropped: otherData
counts dropped events (> 0). Exit 0 when all hold, else prints the first
problem and exits 1.
"""
import argparse
import json
from decimal import Decimal
import sys
from collections import defaultdict


def fail(msg):
    print("check_trace: " + msg)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("workers", type=int)
    ap.add_argument("--count", action="append", default=[])
    ap.add_argument("--count-on", action="append", default=[])
    ap.add_argument("--require", action="append", default=[])
    ap.add_argument("--max-events", type=int)
    ap.add_argument("--dropped", action="store_true")
    a = ap.parse_args()

    with open(a.trace, encoding="utf-8") as f:
        try:
            doc = json.load(f, parse_float=Decimal)  # exact ns: no rounding in ts + dur
        except ValueError as e:
            fail("not valid JSON: %s" % e)
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        fail("no traceEvents list")
    evs = doc["traceEvents"]

    names = {}  # tid -> thread name
    procs = 0
    spans = defaultdict(list)  # tid -> [(ts, end, name)]
    per_track = defaultdict(int)
    by_name = defaultdict(int)
    pids = set()
    for e in evs:
        for k in ("name", "ph", "pid", "tid"):
            if k not in e:
                fail("event without %r: %r" % (k, e))
        pids.add(e["pid"])
        ph = e["ph"]
        if ph == "M":
            if e["name"] == "thread_name":
                if e["tid"] in names:
                    fail("two thread_name events for tid %r" % e["tid"])
                names[e["tid"]] = e["args"]["name"]
            elif e["name"] == "process_name":
                procs += 1
            continue
        if not isinstance(e.get("ts"), (int, Decimal)):
            fail("event without a numeric ts: %r" % e)
        by_name[e["name"]] += ph == "X" or ph == "i"
        per_track[e["tid"]] += 1
        if ph == "X":
            if not isinstance(e.get("dur"), (int, Decimal)) or e["dur"] < 0:
                fail("span without a dur >= 0: %r" % e)
            spans[e["tid"]].append((e["ts"], e["ts"] + e["dur"], e["name"]))
        elif ph == "i":
            if e.get("s") != "t":
                fail("instant without thread scope: %r" % e)
        else:
            fail("unexpected phase %r" % ph)
    if len(pids) != 1:
        fail("events in %d processes, expected one" % len(pids))
    if procs != 1:
        fail("%d process_name events, expected 1" % procs)
    for i in range(a.workers):
        if i not in names:
            fail("no thread_name for worker %d" % i)
        if not names[i].endswith("worker %d" % i):
            fail("tid %d is named %r, expected '... worker %d'" % (i, names[i], i))
    workers = [t for t, n in names.items() if " worker " in n]
    if len(workers) != a.workers:
        fail("%d worker tracks, expected %d" % (len(workers), a.workers))
    for tid in per_track:
        if tid not in names:
            fail("events on tid %r, which has no thread_name" % tid)

    # Nesting: sorted by start (longer first on ties), each span must end
    # before the innermost open span that contains its start ends.
    for tid, lst in spans.items():
        lst.sort(key=lambda s: (s[0], -(s[1] - s[0])))
        stack = []
        for s in lst:
            while stack and stack[-1][1] <= s[0]:
                stack.pop()
            if stack and s[1] > stack[-1][1]:
                fail("tid %r: span %r partially overlaps %r" % (tid, s, stack[-1]))
            stack.append(s)

    for c in a.count:
        name, n = c.rsplit("=", 1)
        got = sum(1 for lst in spans.values() for s in lst if s[2] == name)
        if got != int(n):
            fail("%d spans named %r, expected %s" % (got, name, n))
    for c in a.count_on:
        where, rest = c.split(":", 1)
        name, n = rest.rsplit("=", 1)
        tids = [t for t, tn in names.items() if where in tn]
        if not tids:
            fail("no track named with %r" % where)
        got = sum(1 for t in tids for s in spans.get(t, []) if s[2] == name)
        if got != int(n):
            fail("%d spans named %r on the %r tracks, expected %s" % (got, name, where, n))
    for r in a.require:
        if by_name[r] == 0:
            fail("no event named %r" % r)
    if a.max_events is not None:
        for tid, n in per_track.items():
            if n > a.max_events:
                fail("tid %r has %d events, cap %d" % (tid, n, a.max_events))
    other = doc.get("otherData", {})
    if "dropped_events" not in other:
        fail("otherData has no dropped_events")
    if a.dropped and not other["dropped_events"] > 0:
        fail("no dropped events counted: %r" % other)
    print("check_trace: ok: %d events, %d tracks" % (len(evs), len(names)))


if __name__ == "__main__":
    main()
