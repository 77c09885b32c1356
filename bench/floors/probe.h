/* SPDX-License-Identifier: MIT */
/*
 * What the floor probes (bench_xfer.c, bench_skeleton.c) share: their clock
 * and their one option. Each is a standalone program (no harness): it
 * measures one primitive cost of this machine, checks it, and prints one
 * JSON line.
 */
#ifndef BENCH_PROBE_H
#define BENCH_PROBE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline long probe_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* The probe's rounds: dflt without arguments, R for "--rounds R" with R in
 * 1..1000; anything else prints name's usage on stderr and returns -1. */
static inline int probe_rounds(int argc, char **argv, int dflt, const char *name) {
  if (argc == 1)
    return dflt;
  if (argc == 3 && !strcmp(argv[1], "--rounds")) {
    char *end;
    long r = strtol(argv[2], &end, 10);
    if (*argv[2] && !*end && r >= 1 && r <= 1000)
      return (int)r;
  }
  fprintf(stderr, "usage: %s [--rounds 1..1000]\n", name);
  return -1;
}

#endif /* BENCH_PROBE_H */
