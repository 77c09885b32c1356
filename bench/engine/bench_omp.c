/* SPDX-License-Identifier: MIT */
/*
 * bench_gomp / bench_omp_clang: the bench workloads (harness.h) with OpenMP
 * tasks and worksharing loops. One source, two builds: gcc -fopenmp (libgomp)
 * is bench_gomp, clang -fopenmp=libomp (LLVM's libomp) is bench_omp_clang.
 *
 *   bench_gomp --workload W --threads N --reps R [--quick]
 *
 * --threads N: a team of N threads, `omp parallel num_threads(N)`.
 * fib: inside `omp single`, `omp task` for fib(n-1), fib(n-2) inline,
 *   `omp taskwait`; the other threads run tasks at the single's barrier.
 * pfor_imb: `omp for schedule(dynamic, 256) reduction(+:sum)`. Measured on
 *   the 2-core machine, both runtimes: dynamic,64 / 256 / 1024 and guided
 *   (min 64) all came within noise of the perfect split, dynamic,16 ~3-5%
 *   slower (dispatch cost); dynamic,256 keeps the tail short (<= 256
 *   iterations of <= 1000 steps, ~0.3 ms) with ~3900 dispatches. IMB_BLOCK.
 * pfor_fine: `omp for schedule(static)`, the best for uniform iterations.
 *   Both loops run in one parallel region for all repetitions (no fork per
 *   repetition, as weft's and TBB's loops run inside one task / arena); a
 *   repetition is timed from a single before the loop to one after it.
 * idle: the burst is one parallel region (fib tasks and loops); the windows
 *   start when it has ended (threads idle at the runtime's dock).
 * wake: a team of N + 1: the master (thread 0) is the submitter and never
 *   runs tasks while it waits; the N others are idle at the implicit barrier
 *   of the master's `omp single`, where they wait for tasks. The master
 *   creates one `omp task` per probe. So, as with weft and TBB, N threads can
 *   serve the task and one more thread submits it.
 * chain, indep, dag, wave (harness.h, op lists): a team of N; one thread, in
 *   `omp single`, creates one task per op in list order,
 *     #pragma omp task depend(inout: v[w]) depend(in: v[r0], v[r1])
 *   (the depend clauses on the vars' own addresses; three spellings for 0, 1
 *   and 2 reads), then `omp taskwait`. Timed in the single, from just before
 *   the first task to the taskwait's return; the other N-1 threads run tasks
 *   at the single's barrier, the creator runs them when the runtime throttles
 *   it (both runtimes make the creator run tasks once too many are queued)
 *   and at the taskwait. The team is started before (the parallel region is
 *   entered before the clock starts, in every repetition).
 * graph_dag, graph_grid, graph_tree (harness.h): the same, one task per
 *   node with depend(out) on its slot and depend(iterator, in) on its
 *   predecessors' (the "graph shapes" section below); no relaunch.
 * fanout: a team of N + 1, the single's thread creates every task, then
 *   taskwait (the "fanout" section below).
 */
#include "harness.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __clang__
static const char RT[] = "omp_clang";
#else
static const char RT[] = "gomp";
#endif

/* The loops run over blocks of iterations and call the shared chunk bodies
 * (harness.h) once per block, so the per-iteration code is the same machine
 * code as every other runtime's. `schedule(dynamic, 1)` over blocks of
 * IMB_BLOCK iterations is `schedule(dynamic, IMB_BLOCK)` over iterations. */
#ifndef IMB_BLOCK
#define IMB_BLOCK 256
#endif
#define IMB_NBLOCKS ((BENCH_IMB_N + IMB_BLOCK - 1) / IMB_BLOCK)
#define FINE_BLOCK 4096
#define FINE_NBLOCKS ((BENCH_FINE_N + FINE_BLOCK - 1) / FINE_BLOCK)
#define STR_(x) #x
#define STR(x) STR_(x)

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

/* pfor_fine's loop: schedule(static) (one contiguous run of blocks per
 * thread); must be met by the whole team. */
static void fine_loop(uint32_t *out, uint32_t seed) {
#pragma omp for schedule(static)
  for (size_t b = 0; b < FINE_NBLOCKS; b++)
    bench_fine_range(out, b * FINE_BLOCK, min_sz((b + 1) * FINE_BLOCK, BENCH_FINE_N), seed);
}

static uint64_t fib(int n) {
  if (n < 2)
    return (uint64_t)n;
  uint64_t x = 0, y;
#pragma omp task shared(x) firstprivate(n)
  x = fib(n - 1);
  y = fib(n - 2);
#pragma omp taskwait
  return x + y;
}

static void bench_fib(const bench_args *a) {
  bench_series s;
  bench_series_init(&s, a->reps);
#pragma omp parallel num_threads(a->threads)
  {
    if (omp_get_num_threads() != a->threads)
      bench_fail("team has %d threads, asked for %d", omp_get_num_threads(), a->threads);
#pragma omp single
    bench_time_fib(a, &s, fib, NULL);
  }
  char extra[64];
  snprintf(extra, sizeof extra, ",\"spawns\":%u", BENCH_FIB_SPAWNS);
  bench_emit(RT, "fib", a->threads, "ms", &s, extra);
  bench_series_free(&s);
}

static void bench_imb(const bench_args *a) {
  uint64_t want = bench_imb_expected();
  bench_series s;
  bench_series_init(&s, a->reps);
  uint64_t sum = 0, t0 = 0;
#pragma omp parallel num_threads(a->threads)
  for (int r = -1; r < a->reps; r++) {
    size_t first = r < 0 ? BENCH_IMB_WARM_BEGIN / IMB_BLOCK : 0;
#pragma omp single
    {
      sum = 0;
      t0 = bench_now_ns();
    }
#pragma omp for schedule(dynamic, 1) reduction(+ : sum)
    for (size_t b = first; b < IMB_NBLOCKS; b++)
      sum += bench_imb_range(b * IMB_BLOCK, min_sz((b + 1) * IMB_BLOCK, BENCH_IMB_N));
#pragma omp single
    {
      uint64_t t1 = bench_now_ns();
      if (r >= 0) {
        bench_check_u64("pfor_imb sum", sum, want);
        bench_series_add(&s, (double)(t1 - t0) / 1e6);
      }
    }
  }
  bench_emit(RT, "pfor_imb", a->threads, "ms", &s, ",\"schedule\":\"dynamic," STR(IMB_BLOCK) "\"");
  bench_series_free(&s);
}

/* reduce: `omp for reduction(+:sum) schedule(static)` over blocks of the
 * same kernel. */
#define REDUCE_BLOCK 4096
#define REDUCE_NBLOCKS ((BENCH_REDUCE_N + REDUCE_BLOCK - 1) / REDUCE_BLOCK)

static void bench_reduce(const bench_args *a) {
  double *x = bench_reduce_alloc();
  double want = bench_reduce_expected();
  bench_series s;
  bench_series_init(&s, a->reps);
  uint64_t warm0 = bench_now_ns();
  for (int r = -1; r < a->reps; r++) {
    double sum = 0;
    uint64_t t0 = bench_now_ns();
#pragma omp parallel for num_threads(a->threads) reduction(+ : sum) schedule(static)
    for (size_t b = 0; b < REDUCE_NBLOCKS; b++)
      sum += bench_reduce_range(x, b * REDUCE_BLOCK, min_sz((b + 1) * REDUCE_BLOCK, BENCH_REDUCE_N));
    uint64_t t1 = bench_now_ns();
    if (sum != want)
      bench_fail("reduce: sum %.17g, want %.17g", sum, want);
    if (bench_reduce_timed(&r, warm0)) /* after the warm-up (harness.h) */
      bench_series_add(&s, (double)(t1 - t0) / 1e6);
  }
  bench_emit(RT, "reduce", a->threads, "ms", &s, ",\"schedule\":\"static\"");
  bench_series_free(&s);
  free(x);
}

static void bench_fine(const bench_args *a) {
  uint32_t *out = bench_fine_alloc();
  bench_series s;
  bench_series_init(&s, a->reps);
  uint64_t t0 = 0;
#pragma omp parallel num_threads(a->threads)
  for (int r = -1; r < a->reps; r++) {
    uint32_t seed = bench_fine_seed(r + 1);
#pragma omp single
    t0 = bench_now_ns();
    fine_loop(out, seed);
#pragma omp single
    {
      uint64_t t1 = bench_now_ns();
      size_t bad = bench_fine_check(out, seed);
      if (bad)
        bench_fail("pfor_fine: %zu of %u slots wrong", bad, BENCH_FINE_N);
      if (r >= 0)
        bench_series_add(&s, (double)(t1 - t0) / 1e6);
    }
  }
  bench_emit(RT, "pfor_fine", a->threads, "ms", &s, ",\"schedule\":\"static\"");
  bench_series_free(&s);
  free(out);
}

typedef struct burst_ctx {
  int threads;
  uint32_t *out;
  int round;
} burst_ctx;

static void burst(void *p) {
  burst_ctx *b = (burst_ctx *)p;
#pragma omp parallel num_threads(b->threads)
  for (int k = 0; k < 5; k++) {
#pragma omp single
    bench_check_u64("burst fib", fib(BENCH_BURST_FIB_N), BENCH_BURST_FIB_RESULT);
    uint32_t seed = bench_fine_seed(b->round + k);
    fine_loop(b->out, seed);
#pragma omp single
    if (bench_fine_check(b->out, seed))
      bench_fail("burst pfor_fine: wrong slots");
  }
  b->round += 5;
}

/* Called by the master inside its `omp single`: an orphaned task construct. */
static int submit(void *ctx, bench_task_fn fn, void *arg) {
  (void)ctx;
#pragma omp task firstprivate(fn, arg)
  fn(arg);
  return 0;
}

static void bench_wake(const bench_args *a) {
#pragma omp parallel num_threads(a->threads + 1)
  {
    if (omp_get_num_threads() != a->threads + 1)
      bench_fail("team has %d threads, asked for %d", omp_get_num_threads(), a->threads + 1);
#pragma omp master
    bench_wake_run(RT, a, submit, NULL,
                   "team of N+1: master submits omp task, N threads idle at the barrier");
#pragma omp barrier
  }
}

/* ----------------------------------------------------------- op lists */

static uint64_t dep_rep(void *ctx, const bench_oplist *L, bench_slot *vals) {
  const int threads = *(const int *)ctx;
  const bench_op *ops = L->ops;
  const size_t nops = L->nops;
  uint64_t t0 = 0, t1 = 0;
#pragma omp parallel num_threads(threads)
  {
    if (omp_get_num_threads() != threads)
      bench_fail("team has %d threads, asked for %d", omp_get_num_threads(), threads);
#pragma omp single
    {
      t0 = bench_now_ns();
      for (size_t i = 0; i < nops; i++) {
        const bench_op *o = &ops[i];
        bench_slot *w = &vals[o->w];
        switch (o->nr) {
        case 0:
#pragma omp task firstprivate(i) depend(inout : w[0])
          bench_op_exec(vals, ops, i);
          (void)w; /* gcc 12 calls a pointer used only in depend() unused */
          break;
        case 1: {
          bench_slot *r0 = &vals[o->r[0]];
#pragma omp task firstprivate(i) depend(inout : w[0]) depend(in : r0[0])
          bench_op_exec(vals, ops, i);
          (void)r0;
          break;
        }
        default: {
          bench_slot *r0 = &vals[o->r[0]], *r1 = &vals[o->r[1]];
#pragma omp task firstprivate(i) depend(inout : w[0]) depend(in : r0[0], r1[0])
          bench_op_exec(vals, ops, i);
          (void)r0;
          (void)r1;
          break;
        }
        }
      }
#pragma omp taskwait
      t1 = bench_now_ns();
    }
  }
  return t1 - t0;
}

static void bench_dep(const bench_args *a) {
  bench_oplist L;
  bench_oplist_make(&L, a->workload, a->quick);
  bench_slot *vals = bench_vars_alloc(L.nvars);
  bench_series s;
  bench_series_init(&s, a->reps);
  int threads = a->threads;
  bench_dep_time(RT, a, &L, vals, dep_rep, &threads, &s);
  bench_dep_emit(RT, a, &L, &s,
                 ",\"push\":\"omp single + task depend(inout/in), taskwait\"");
  bench_series_free(&s);
  bench_vars_free(vals);
  bench_oplist_free(&L);
}

/* ------------------------------------------------------- graph shapes */

/* graph_dag, graph_grid, graph_tree (harness.h, "graph shapes"): a team of
 * N; one thread, in `omp single`, creates one task per node in node order,
 *   #pragma omp task depend(out: s[i]) depend(iterator(k = 0:np), in: s[p[k]])
 * (OpenMP 5.0's iterator over the node's np predecessors p[0..np); the
 * slots' own addresses as the dependences), then `omp taskwait`. TIMED in
 * the single, from just before the first task to the taskwait's return;
 * the other N-1 threads run tasks at the single's barrier, the creator
 * when the runtime throttles it and at the taskwait (as the op lists).
 * OpenMP cannot run a graph of tasks again: no "<shape>_relaunch". */
static uint64_t shape_rep(void *ctx, const bench_gshape *G, bench_gslot *s) {
  const int threads = *(const int *)ctx;
  const size_t n = G->n;
  uint64_t t0 = 0, t1 = 0;
#pragma omp parallel num_threads(threads)
  {
    if (omp_get_num_threads() != threads)
      bench_fail("team has %d threads, asked for %d", omp_get_num_threads(), threads);
#pragma omp single
    {
      t0 = bench_now_ns();
      for (size_t i = 0; i < n; i++) {
        const uint32_t *p = &G->pred[G->pred0[i]];
        int np = (int)(G->pred0[i + 1] - G->pred0[i]);
        bench_gslot *me = &s[i];
#pragma omp task firstprivate(i) depend(out : me[0]) depend(iterator(k = 0 : np), in : s[p[k]])
        bench_gnode_exec(G, s, i);
        (void)me; /* gcc calls a pointer used only in depend() unused */
        (void)p;
        (void)np;
      }
#pragma omp taskwait
      t1 = bench_now_ns();
    }
  }
  return t1 - t0;
}

static void bench_shape(const bench_args *a) {
  bench_gshape G;
  bench_gshape_make(&G, a->workload);
  bench_gslot *s = bench_gslots_alloc(G.n);
  int threads = a->threads;
  bench_graph_mode m = {G.workload, shape_rep, &threads, {0}};
  bench_graph_time(RT, a, &G, s, &m, 1);
  bench_graph_emit(RT, a, &G, &m,
                   ",\"push\":\"omp single + task depend(out: own slot) "
                   "depend(iterator, in: the predecessors' slots), taskwait\"");
  free(s);
  bench_gshape_free(&G);
}

/* ------------------------------------------------------------- fanout */

/* fanout (harness.h): a team of N + 1 (weft's N workers + main): the thread
 * that takes the `omp single`, a team thread (OpenMP has no spawner outside
 * the team), creates every task (`omp task`), then `omp taskwait`, in which
 * it runs tasks; the N others run them at the single's barrier. TIMED in
 * the single, from the first task to the taskwait's return. */
typedef struct fanout_ctx {
  int team;
} fanout_ctx;

static uint64_t fanout_rep(void *ctx, uint32_t *slots, uint32_t seed) {
  const int team = ((const fanout_ctx *)ctx)->team;
  uint64_t t0 = 0, t1 = 0;
#pragma omp parallel num_threads(team)
  {
    if (omp_get_num_threads() != team)
      bench_fail("team has %d threads, asked for %d", omp_get_num_threads(), team);
#pragma omp single
    {
      t0 = bench_now_ns();
      for (size_t k = 0; k < BENCH_FANOUT_TASKS; k++) {
#pragma omp task firstprivate(k)
        bench_fanout_task(slots, k, seed);
      }
#pragma omp taskwait
      t1 = bench_now_ns();
    }
  }
  return t1 - t0;
}

/* ----------------------------------------------------------- pipeline */

/* One thread (omp single) creates each item's four stage tasks in item
 * order, then taskwait. Every stage task has depend(inout) on its stage's
 * state (a stage handles one item at a time, in order, like an actor).
 * pipeline: depend(in) on the slot of the stage before, depend(out) on its
 * own stage's slot k%2 (the 2-buffer back pressure comes from the WAR
 * dependencies). pipe_alloc / pipe_bp: depend(inout) on the item, and load
 * and write-back on a token slot k % T: T = the item count (no bound) or
 * BENCH_PIPE_TOKENS (load(k) waits for write-back(k - T): back pressure). */
typedef struct pipe_ctx {
  int threads;
  char *tok; /* token slots (only their addresses matter) */
} pipe_ctx;

static uint64_t pipe_rep(void *ctx, bench_pipe *P, int variant) {
  pipe_ctx *c = (pipe_ctx *)ctx;
  const size_t items = P->items;
  const size_t T = variant == BENCH_PIPE_BP ? BENCH_PIPE_TOKENS : items;
  char st[4 * 64]; /* the stages' state: st[64 * s], a cache line each */
  char *tok = c->tok;
  (void)st; /* gcc calls an array used only in depend() unused */
  uint64_t t0 = 0, t1 = 0;
#pragma omp parallel num_threads(c->threads)
  {
    if (omp_get_num_threads() != c->threads)
      bench_fail("team has %d threads, asked for %d", omp_get_num_threads(), c->threads);
#pragma omp single
    {
      t0 = bench_now_ns();
      for (size_t k = 0; k < items; k++) {
        if (variant == BENCH_PIPE_STATIC) {
          uint64_t *L = P->slot[0][k & 1], *Q = P->slot[1][k & 1], *C = P->slot[2][k & 1];
#pragma omp task firstprivate(k) depend(inout : st[0]) depend(out : L[0])
          bench_pipe_stage(P, BENCH_PIPE_LOAD, k);
#pragma omp task firstprivate(k) depend(inout : st[64]) depend(in : L[0]) depend(out : Q[0])
          bench_pipe_stage(P, BENCH_PIPE_PRE, k);
#pragma omp task firstprivate(k) depend(inout : st[128]) depend(in : Q[0]) depend(out : C[0])
          bench_pipe_stage(P, BENCH_PIPE_COMPUTE, k);
#pragma omp task firstprivate(k) depend(inout : st[192]) depend(in : C[0])
          bench_pipe_stage(P, BENCH_PIPE_WB, k);
          (void)L;
          (void)Q;
          (void)C;
        } else {
          bench_pipe_item *it = &P->item[k];
          char *tk = &tok[k % T];
#pragma omp task firstprivate(k) depend(inout : st[0], it[0], tk[0])
          bench_pipe_item_stage(P, BENCH_PIPE_LOAD, k);
#pragma omp task firstprivate(k) depend(inout : st[64], it[0])
          bench_pipe_item_stage(P, BENCH_PIPE_PRE, k);
#pragma omp task firstprivate(k) depend(inout : st[128], it[0])
          bench_pipe_item_stage(P, BENCH_PIPE_COMPUTE, k);
#pragma omp task firstprivate(k) depend(inout : st[192], it[0], tk[0])
          bench_pipe_item_stage(P, BENCH_PIPE_WB, k);
          (void)it;
          (void)tk;
        }
      }
#pragma omp taskwait
      t1 = bench_now_ns();
    }
  }
  return t1 - t0;
}

static void bench_pipeline(const bench_args *a) {
  pipe_ctx c = {a->threads, NULL};
  c.tok = (char *)calloc(BENCH_PIPE_ITEMS, 1);
  if (!c.tok) {
    fprintf(stderr, "%s: out of memory\n", RT);
    exit(1);
  }
  char extra[160];
  snprintf(extra, sizeof extra,
           ",\"push\":\"omp single + task depend on stage, slots / item + token\","
           "\"tokens_bp\":%u",
           BENCH_PIPE_TOKENS);
  bench_pipe_run(RT, a, pipe_rep, &c, 1, extra, NULL);
  free(c.tok);
}

int main(int argc, char **argv) {
  static const char *const supported[] = {"fib",        "pfor_imb",   "pfor_fine", "reduce",
                                          "idle",       "wake",       "chain",     "indep",
                                          "dag",        "wave",       "pipeline",  "graph_dag",
                                          "graph_grid", "graph_tree", "fanout",    NULL};
  bench_args a;
  bench_parse_args(argc, argv, RT, supported, &a);
  if (!strcmp(a.workload, "pipeline")) {
    bench_pipeline(&a);
  } else if (bench_is_graph_workload(a.workload)) {
    bench_shape(&a);
  } else if (!strcmp(a.workload, "fanout")) {
    fanout_ctx c = {a.threads + 1};
    bench_fanout_run(RT, &a, fanout_rep, &c,
                     ",\"push\":\"team of N+1: omp single (a team thread) creates every omp "
                     "task, then taskwait; N threads run them at the barrier\"");
  } else if (!strcmp(a.workload, "fib")) {
    bench_fib(&a);
  } else if (!strcmp(a.workload, "pfor_imb")) {
    bench_imb(&a);
  } else if (!strcmp(a.workload, "pfor_fine")) {
    bench_fine(&a);
  } else if (!strcmp(a.workload, "reduce")) {
    bench_reduce(&a);
  } else if (!strcmp(a.workload, "idle")) {
    burst_ctx b = {a.threads, bench_fine_alloc(), 0};
    bench_idle_run(RT, &a, burst, &b);
    free(b.out);
  } else if (!strcmp(a.workload, "wake")) {
    bench_wake(&a);
  } else {
    bench_dep(&a);
  }
  return bench_exit_code();
}
