/* SPDX-License-Identifier: MIT */
/*
 * What the standalone weft programs of the bench (bench_graph_edges.c,
 * bench_graph_stencil.c: no harness) share: a failed weft call ends the
 * run, naming the program, the call and weft_strerror's text; the clock;
 * an engine on a pool of its own.
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

/* A pool of threads workers (*pool) and an engine on it (the defaults
 * otherwise: kind and max_inflight from the environment). */
#define BENCH_ENGINE_ON_POOL(threads, pool, eng)                                           \
  do {                                                                                     \
    weft_pool_config pc_;                                                                  \
    weft_pool_config_default(&pc_);                                                        \
    pc_.num_threads = (threads);                                                           \
    CHECK(weft_pool_create(&(pool), &pc_));                                                \
    weft_engine_config ec_;                                                                \
    weft_engine_config_default(&ec_);                                                      \
    ec_.pool = (pool);                                                                     \
    CHECK(weft_engine_create(&(eng), &ec_));                                               \
  } while (0)

#endif /* WEFT_BENCH_CHECK_H */
