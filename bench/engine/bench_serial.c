/* SPDX-License-Identifier: MIT */
/*
 * bench_serial: the serial baselines, the same kernels with no runtime at all.
 *
 *   bench_serial --workload fib|pfor_imb|pfor_fine|chain|indep|dag|wave|pipeline
 *                --threads N --reps R [--quick]
 *
 * --threads is accepted and ignored (one thread; the JSON says threads 1).
 * The runner derives "perfect split" = serial time / threads from it.
 * fib here is the plain recursion (no spawns), the work fib(30) does.
 * chain/indep/dag/wave: the op list run in order (bench_oplist_run), no
 * runtime: the work per op (the kernel and its loads and stores), the floor
 * under every runtime's ns/op.
 * pipeline: the items in order, each through its four stages (pipeline on
 * the static slots, pipe_alloc on its own buffers: one item live at a time);
 * no pipe_bp (nothing to bound).
 * graph_dag, graph_grid, graph_tree: the nodes in index order (a
 * topological one), the work per node (the "<shape>" metric; no relaunch).
 * fanout: the tasks' bodies in a loop, the work per task.
 */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char RT[] = "serial";

/* keeps the compiler from hoisting a repetition's work out of the loop */
static volatile int fib_n = BENCH_FIB_N;

/* fib through a volatile argument, so the compiler cannot fold the call. */
static uint64_t fib_opaque(int n) {
  fib_n = n;
  return bench_fib_serial(fib_n);
}

static volatile size_t imb_n = BENCH_IMB_N, fine_n = BENCH_FINE_N;

/* pipeline: the items in order, each through its four stages */
static uint64_t pipe_rep(void *ctx, bench_pipe *P, int variant) {
  (void)ctx;
  uint64_t t0 = bench_now_ns();
  for (size_t k = 0; k < P->items; k++)
    for (int st = 0; st < 4; st++) {
      if (variant == BENCH_PIPE_STATIC)
        bench_pipe_stage(P, st, k);
      else
        bench_pipe_item_stage(P, st, k);
    }
  return bench_now_ns() - t0;
}

/* The pipeline's bound: its stages are actors (one item at a time each, in
 * order), so no runtime runs more items a second than its slowest stage
 * alone can: the stages timed one by one over the static items (3 passes,
 * the fastest per stage), as ',"stage_us":[...],"stage_bound_items_per_s":X'. */
static void pipe_stage_bound(int quick, char *out, size_t cap) {
  bench_pipe P;
  bench_pipe_make(&P, quick);
  double best[4] = {0, 0, 0, 0};
  for (int pass = 0; pass < 3; pass++) {
    uint64_t t[4] = {0, 0, 0, 0};
    bench_pipe_reset(&P);
    for (size_t k = 0; k < P.items; k++)
      for (int st = 0; st < 4; st++) {
        uint64_t t0 = bench_now_ns();
        bench_pipe_stage(&P, st, k);
        t[st] += bench_now_ns() - t0;
      }
    if (P.sink != P.expected)
      bench_fail("pipeline stage timing: sink %016llx, expected %016llx",
                 (unsigned long long)P.sink, (unsigned long long)P.expected);
    for (int st = 0; st < 4; st++)
      if (pass == 0 || (double)t[st] < best[st])
        best[st] = (double)t[st];
  }
  double slowest = 0;
  for (int st = 0; st < 4; st++)
    if (best[st] > slowest)
      slowest = best[st];
  snprintf(out, cap, ",\"stage_us\":[%.1f,%.1f,%.1f,%.1f],\"stage_bound_items_per_s\":%.0f",
           best[0] / 1e3 / (double)P.items, best[1] / 1e3 / (double)P.items,
           best[2] / 1e3 / (double)P.items, best[3] / 1e3 / (double)P.items,
           slowest > 0 ? (double)P.items * 1e9 / slowest : 0.0);
  bench_pipe_free(&P);
}

static uint64_t shape_rep(void *ctx, const bench_gshape *G, bench_gslot *s) {
  (void)ctx;
  uint64_t t0 = bench_now_ns();
  for (size_t i = 0; i < G->n; i++)
    bench_gnode_exec(G, s, i);
  return bench_now_ns() - t0;
}

static volatile size_t fanout_n = BENCH_FANOUT_TASKS;

static uint64_t fanout_rep(void *ctx, uint32_t *slots, uint32_t seed) {
  (void)ctx;
  uint64_t t0 = bench_now_ns();
  for (size_t k = 0, n = fanout_n; k < n; k++)
    bench_fanout_task(slots, k, seed);
  return bench_now_ns() - t0;
}

static uint64_t serial_rep(void *ctx, const bench_oplist *L, bench_slot *vals) {
  (void)ctx;
  uint64_t t0 = bench_now_ns();
  bench_oplist_run(vals, L->ops, 0, L->nops);
  return bench_now_ns() - t0;
}

int main(int argc, char **argv) {
  static const char *const supported[] = {"fib",       "pfor_imb",   "pfor_fine",  "chain",
                                          "indep",     "dag",        "wave",       "pipeline",
                                          "graph_dag", "graph_grid", "graph_tree", "fanout",
                                          NULL};
  bench_args a;
  bench_parse_args(argc, argv, RT, supported, &a);
  bench_series s;
  bench_series_init(&s, a.reps);

  if (!strcmp(a.workload, "pipeline")) {
    a.threads = 1;
    char extra[256];
    int len = snprintf(extra, sizeof extra, ",\"push\":\"items in order, no runtime\"");
    pipe_stage_bound(a.quick, extra + len, sizeof extra - (size_t)len);
    bench_pipe_run(RT, &a, pipe_rep, NULL, 0, extra, NULL);
  } else if (bench_is_graph_workload(a.workload)) {
    bench_gshape G;
    bench_gshape_make(&G, a.workload);
    bench_gslot *gs = bench_gslots_alloc(G.n);
    a.threads = 1;
    bench_graph_mode m = {G.workload, shape_rep, NULL, {0}};
    bench_graph_time(RT, &a, &G, gs, &m, 1);
    bench_graph_emit(RT, &a, &G, &m, ",\"push\":\"the nodes in index order, no runtime\"");
    free(gs);
    bench_gshape_free(&G);
  } else if (!strcmp(a.workload, "fanout")) {
    a.threads = 1;
    bench_fanout_run(RT, &a, fanout_rep, NULL, ",\"push\":\"the tasks' bodies in a loop\"");
  } else if (bench_is_dep_workload(a.workload)) {
    bench_oplist L;
    bench_oplist_make(&L, a.workload, a.quick);
    bench_slot *vals = bench_vars_alloc(L.nvars);
    a.threads = 1;
    bench_dep_time(RT, &a, &L, vals, serial_rep, NULL, &s);
    bench_dep_emit(RT, &a, &L, &s, NULL);
    bench_vars_free(vals);
    bench_oplist_free(&L);
  } else if (!strcmp(a.workload, "fib")) {
    bench_time_fib(&a, &s, fib_opaque, NULL);
    bench_emit(RT, "fib", 1, "ms", &s, NULL);
  } else if (!strcmp(a.workload, "pfor_imb")) {
    uint64_t want = bench_imb_expected();
    for (int r = 0; r < a.reps; r++) {
      uint64_t t0 = bench_now_ns();
      uint64_t v = bench_imb_range(0, imb_n);
      uint64_t t1 = bench_now_ns();
      bench_check_u64("pfor_imb sum", v, want);
      bench_series_add(&s, (double)(t1 - t0) / 1e6);
    }
    bench_emit(RT, "pfor_imb", 1, "ms", &s, NULL);
  } else {
    uint32_t *out = bench_fine_alloc();
    for (int r = -1; r < a.reps; r++) {
      uint32_t seed = bench_fine_seed(r + 1);
      uint64_t t0 = bench_now_ns();
      bench_fine_range(out, 0, fine_n, seed);
      uint64_t t1 = bench_now_ns();
      size_t bad = bench_fine_check(out, seed);
      if (bad)
        bench_fail("pfor_fine: %zu of %u slots wrong", bad, BENCH_FINE_N);
      if (r >= 0)
        bench_series_add(&s, (double)(t1 - t0) / 1e6);
    }
    bench_emit(RT, "pfor_fine", 1, "ms", &s, NULL);
    free(out);
  }
  bench_series_free(&s);
  return bench_exit_code();
}
