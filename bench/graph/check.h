/* SPDX-License-Identifier: MIT */
/*
 * What the standalone weft programs of the bench (bench_graph_edges.c,
 * bench_graph_stencil.c: no harness) share: a failed weft call ends the
 * run, naming the program, the call and weft_strerror's text.
 */
#ifndef WEFT_BENCH_CHECK_H
#define WEFT_BENCH_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "weft/weft.h"

static inline void bench_check_fail(const char *prog, const char *what, int rc)
{
  fprintf(stderr, "%s: %s: %s\n", prog, what, weft_strerror(rc));
  exit(1);
}

/* BENCH_PROG: the program's name, defined before including this. */
#define CHECK(call)                                                                        \
  do {                                                                                     \
    int rc_ = (call);                                                                      \
    if (rc_)                                                                               \
      bench_check_fail(BENCH_PROG, #call, rc_);                                            \
  } while (0)

/* The monotonic clock, ns. */
static inline int64_t bench_mono_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif /* WEFT_BENCH_CHECK_H */
