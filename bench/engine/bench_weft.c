/* SPDX-License-Identifier: MIT */
/*
 * bench_weft: the bench workloads (harness.h) on weft.
 *
 *   bench_weft --workload W --threads N --reps R [--quick] [--pushers P[,P...]]
 *
 * --pushers (op lists only): several user threads push into one engine
 * instead (the "pushers" section below says how).
 *
 * --threads N is a pool with num_threads = N (spin count, affinity: automatic,
 * so WEFT_SPIN_COUNT / WEFT_AFFINITY apply). The timed loops of fib, pfor_imb
 * and pfor_fine run inside one pool task: main submits it with
 * weft_pool_submit and sleeps on a semaphore until it is done, so exactly N
 * threads compute, as with the peers. fib: weft_group on the stack, spawn
 * fib(n-1), fib(n-2) inline, weft_group_wait. pfor: weft_parallel_for with
 * grain 0 (automatic). wake: weft_pool_submit from main, a non-worker thread.
 *
 * chain, indep, dag, wave (harness.h, op lists): an engine on that pool
 * (weft_engine_config.pool; kind and max_inflight automatic, so WEFT_ENGINE
 * and WEFT_MAX_INFLIGHT apply), one weft var per list var (weft_var_new, made
 * once and reused by every repetition), one weft_push per op in list order
 * (writes = {w}, reads = its 0-2 read vars, fn = bench_op_exec on the op's
 * index), all from ONE thread, two ways, each with its own warm-up:
 *   main    the main thread (not a worker) pushes; N workers run the ops, so
 *           N + 1 threads are busy (as with StarPU's submitting thread);
 *   driver  one driver op (no vars) pushed from main pushes them all from
 *           inside the pool; main calls weft_wait_all at once (it waits for
 *           the driver and for every op the driver pushes, which count in
 *           the driver's epoch) and sleeps there. N threads in all, as
 *           OpenMP's and TBB's. (Main used to sleep on a semaphore until the
 *           pushes were done and then call weft_wait_all: its wake-up in the
 *           middle of the run took a worker's CPU for a time slice.)
 * TIMED: from just before the first push of an op to weft_wait_all's return
 * in main (driver: the clock starts inside the driver op, before its first
 * push). The headline figure is the main mode at every thread count: a
 * user's own thread pushing is how the engine is driven (MXNet's front end,
 * a serving loop); the driver mode's samples are in the JSON
 * ("other_samples") and the table's notes.
 * Then a third series, replay (its own JSON line, metric "<workload>_replay",
 * ns/op): main captures the whole list once (weft_graph_begin_capture, the
 * same pushes, weft_graph_end_capture: NOT timed, its cost per op is in
 * "capture_ns_per_op"), then each repetition (the same warm-up, check and
 * time budget, after BENCH_REPLAY_WARM_LAUNCHES untimed launches: the
 * first launches of a graph that may run in lanes try both ways, weft.h)
 * is weft_graph_launch + weft_wait_all from main; TIMED: from
 * just before the launch to weft_wait_all's return. The graph is destroyed
 * after the last repetition. That line has the main mode's samples of the
 * same run in "fresh_samples" (a fresh push of the same ops, side by side).
 * At 1 thread one more launch logs the order the worker ran the ops in, and
 * the serial loop then runs them in that order, checked:
 * "serial_in_run_order_ns_per_op" is what the ops alone cost in that order
 * (their descriptors and values visited out of index order), the part of
 * the replay's figure that is not the scheduler's.
 * BENCH_WEFT_PUSH=main, =driver or =replay in the environment runs that mode
 * alone (for profiling); the JSON then has no "other_samples" /
 * "fresh_samples", and main or driver alone print no replay line, replay
 * alone no "<workload>" line. The JSON also has the pool's counters per op
 * for each mode ("pool_main", "pool_driver", "pool_replay": tasks, steals,
 * parks, wake-ups, failed steal rounds; over the mode's repetitions, warm-up
 * included), and its CPU time per op over the same timed runs ("cpu_main",
 * "cpu_driver": every thread's, spinning included; main's also the main
 * thread's own while it pushes, the floor of that mode's time per op).
 *
 * graph_dag, graph_grid, graph_tree (harness.h, "graph shapes"): a graph
 * with explicit edges, made and launched from main, once and relaunched
 * (the "graph shapes" section below). fanout: main spawns every task into
 * one weft_group and waits for it (the "fanout" section below).
 *
 * pipeline (harness.h): main pushes each item's four stage ops in item
 * order, then weft_wait_all. Every op writes its stage's var (a stage is an
 * actor: one item at a time, in order). pipeline: the ops read the slot of the stage
 * before and write their own stage's slot k%2 (write-back: the sink), so
 * the engine's var queues give the 2-buffer back pressure. pipe_alloc: each
 * op writes the item's own var (write-back also the sink), nothing else
 * bounds the run-ahead; pipe_bp: the same on an engine with max_inflight =
 * BENCH_PIPE_MAX_INFLIGHT (main blocks in weft_push at the cap).
 */
#include "harness.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/weft.h>

static const char RT[] = "weft";
static weft_pool *pool;
static weft_engine *engine;
static atomic_int first_error; /* first error a weft call returned inside a task */

static void note_error(int rc) {
  int zero = 0;
  atomic_compare_exchange_strong(&first_error, &zero, rc);
}

static void check_errors(const char *what) {
  int rc = atomic_exchange(&first_error, 0);
  if (rc)
    bench_fail("%s: weft returned %d (%s)", what, rc, weft_strerror(rc));
}

/* ------------------------------------------------------------------- fib */

typedef struct fib_frame {
  int n;
  uint64_t r;
} fib_frame;

static int fib_task(void *arg) {
  fib_frame *f = (fib_frame *)arg;
  if (f->n < 2) {
    f->r = (uint64_t)f->n;
    return 0;
  }
  weft_group g;
  weft_group_init(&g, pool);
  fib_frame a = {f->n - 1, 0}, b = {f->n - 2, 0};
  int rc = weft_group_spawn(&g, fib_task, &a);
  if (rc) {
    note_error(rc);
    fib_task(&a);
  }
  fib_task(&b);
  rc = weft_group_wait(&g);
  if (rc)
    note_error(rc);
  f->r = a.r + b.r;
  return 0;
}

static uint64_t fib(int n) {
  fib_frame f = {n, 0};
  fib_task(&f);
  return f.r;
}

/* ---------------------------------------------------------------- pfor */

static _Atomic uint64_t imb_sum;

static int imb_chunk(size_t begin, size_t end, void *arg) {
  (void)arg;
  atomic_fetch_add_explicit(&imb_sum, bench_imb_range(begin, end), memory_order_relaxed);
  return 0;
}

typedef struct fine_arg {
  uint32_t *out;
  uint32_t seed;
} fine_arg;

static int fine_chunk(size_t begin, size_t end, void *arg) {
  fine_arg *fa = (fine_arg *)arg;
  bench_fine_range(fa->out, begin, end, fa->seed);
  return 0;
}

static void run_fine(uint32_t *out, uint32_t seed) {
  fine_arg fa = {out, seed};
  int rc = weft_parallel_for(pool, 0, BENCH_FINE_N, 0, fine_chunk, &fa);
  if (rc)
    note_error(rc);
}

/* ---------------------------------------------------------------- reduce */

static int reduce_body(size_t b, size_t e, void *acc, void *arg) {
  *(double *)acc += bench_reduce_range((const double *)arg, b, e);
  return 0;
}

static void reduce_combine(void *acc, const void *other, void *arg) {
  (void)arg;
  *(double *)acc += *(const double *)other;
}

static double run_reduce(const double *x) {
  double zero = 0, sum = -1;
  int rc = weft_parallel_reduce(pool, 0, BENCH_REDUCE_N, 0, &zero, sizeof zero, reduce_body,
                                reduce_combine, (void *)x, &sum, 0);
  if (rc)
    note_error(rc);
  return sum;
}

/* ------------------------------------------------------ driver in the pool */

typedef struct driver {
  const bench_args *a;
  void (*body)(struct driver *);
  uint32_t *fine_out;
  double *reduce_in;
  bench_event done;
} driver;

static int driver_task(void *arg) {
  driver *d = (driver *)arg;
  if (weft_current_worker() < 0)
    bench_fail("driver task runs outside the pool");
  d->body(d);
  bench_event_post(&d->done);
  return 0;
}

/* Runs d->body inside one pool task; main blocks until it is over. */
static void run_in_pool(driver *d) {
  bench_event_init(&d->done);
  int rc = weft_pool_submit(pool, driver_task, d);
  if (rc) {
    bench_fail("weft_pool_submit: %s", weft_strerror(rc));
    return;
  }
  /* no timeout: a run may legitimately be slow; a hang is the runner's timeout */
  while (bench_event_wait(&d->done, 3600ull * 1000000000ull)) {
  }
  bench_event_destroy(&d->done);
}

static void check_fib_errors(void) { check_errors("fib"); }

static void body_fib(driver *d) {
  bench_series s;
  bench_series_init(&s, d->a->reps);
  bench_time_fib(d->a, &s, fib, check_fib_errors);
  char extra[64];
  snprintf(extra, sizeof extra, ",\"spawns\":%u", BENCH_FIB_SPAWNS);
  bench_emit(RT, "fib", d->a->threads, "ms", &s, extra);
  bench_series_free(&s);
}

static void body_imb(driver *d) {
  uint64_t want = bench_imb_expected();
  bench_series s;
  bench_series_init(&s, d->a->reps);
  for (int r = -1; r < d->a->reps; r++) {
    size_t begin = r < 0 ? BENCH_IMB_WARM_BEGIN : 0;
    atomic_store(&imb_sum, 0);
    uint64_t t0 = bench_now_ns();
    int rc = weft_parallel_for(pool, begin, BENCH_IMB_N, 0, imb_chunk, NULL);
    uint64_t t1 = bench_now_ns();
    if (rc)
      note_error(rc);
    check_errors("pfor_imb");
    if (r < 0)
      continue;
    bench_check_u64("pfor_imb sum", atomic_load(&imb_sum), want);
    bench_series_add(&s, (double)(t1 - t0) / 1e6);
  }
  bench_emit(RT, "pfor_imb", d->a->threads, "ms", &s, ",\"grain\":\"auto\"");
  bench_series_free(&s);
}

static void body_fine(driver *d) {
  bench_series s;
  bench_series_init(&s, d->a->reps);
  for (int r = -1; r < d->a->reps; r++) {
    uint32_t seed = bench_fine_seed(r + 1);
    uint64_t t0 = bench_now_ns();
    run_fine(d->fine_out, seed);
    uint64_t t1 = bench_now_ns();
    check_errors("pfor_fine");
    size_t bad = bench_fine_check(d->fine_out, seed);
    if (bad)
      bench_fail("pfor_fine: %zu of %u slots wrong", bad, BENCH_FINE_N);
    if (r >= 0)
      bench_series_add(&s, (double)(t1 - t0) / 1e6);
  }
  bench_emit(RT, "pfor_fine", d->a->threads, "ms", &s, ",\"grain\":\"auto\"");
  bench_series_free(&s);
}

static void body_reduce(driver *d) {
  double want = bench_reduce_expected();
  bench_series s;
  bench_series_init(&s, d->a->reps);
  uint64_t warm0 = bench_now_ns();
  for (int r = -1; r < d->a->reps; r++) {
    uint64_t t0 = bench_now_ns();
    double got = run_reduce(d->reduce_in);
    uint64_t t1 = bench_now_ns();
    check_errors("reduce");
    if (got != want)
      bench_fail("reduce: sum %.17g, want %.17g", got, want);
    if (bench_reduce_timed(&r, warm0)) /* after the warm-up (harness.h) */
      bench_series_add(&s, (double)(t1 - t0) / 1e6);
  }
  bench_emit(RT, "reduce", d->a->threads, "ms", &s, ",\"grain\":\"auto\"");
  bench_series_free(&s);
}

/* idle: the burst is a few fibs and loops inside the pool */
static void body_burst(driver *d) {
  static int round;
  for (int k = 0; k < 5; k++) {
    bench_check_u64("burst fib", fib(BENCH_BURST_FIB_N), BENCH_BURST_FIB_RESULT);
    uint32_t seed = bench_fine_seed(round++);
    run_fine(d->fine_out, seed);
    if (bench_fine_check(d->fine_out, seed))
      bench_fail("burst pfor_fine: wrong slots");
  }
  check_errors("idle burst");
}

static void burst(void *ctx) { run_in_pool((driver *)ctx); }

static int submit(void *ctx, bench_task_fn fn, void *arg) {
  (void)ctx;
  return weft_pool_submit(pool, fn, arg);
}

/* ------------------------------------------------------------- op lists */

typedef struct dep_state {
  const bench_oplist *L;
  bench_slot *vals;  /* this repetition's values (the ops run on them) */
  weft_var **vars;   /* one per list var */
  int from_driver;   /* 0: main pushes; 1: a driver op pushes */
  uint64_t t0;       /* when the first push began */
  /* Set for one extra launch at 1 thread: each op appends its index, so
   * that the serial loop can run the ops in the order the worker did. */
  size_t *order;
  _Atomic size_t norder;
  /* CPU time over the timed part of a mode's repetitions (warm-up
   * included), summed: every thread's, and (main mode) the main thread's
   * own while it pushes (push_all, before weft_wait_all). */
  uint64_t cpu_all_ns, cpu_pusher_ns;
  unsigned cpu_reps;
} dep_state;

static dep_state dep;

static int dep_op(const weft_run_ctx *rc, void *arg) {
  (void)rc;
  bench_op_exec(dep.vals, dep.L->ops, (size_t)(uintptr_t)arg);
  if (dep.order) {
    size_t k = atomic_fetch_add_explicit(&dep.norder, 1, memory_order_relaxed);
    if (k < dep.L->nops)
      dep.order[k] = (size_t)(uintptr_t)arg;
  }
  return 0;
}

static weft_graph *dep_graph; /* the replay's graph (bench_dep) */
/* Untimed launches before the replay's warm-up and samples (above). */
#define BENCH_REPLAY_WARM_LAUNCHES 8

/* The floor of a replay at 1 thread, apart from the scheduler: one more
 * launch logs the order the worker ran the ops in, then the serial loop
 * runs them in that order (3 times, checked as every repetition is: the
 * order is a valid one, or the values differ). The ops' own cost in that
 * order (their descriptors and values visited out of index order) is
 * part of every replay's figure. Returns the median ns/op, or -1. */
static double replay_order_floor(const bench_oplist *L, bench_slot *vals) {
  size_t *order = malloc(sizeof *order * L->nops);
  if (!order)
    return -1;
  bench_vars_init(L, vals);
  dep.L = L;
  dep.vals = vals;
  atomic_store_explicit(&dep.norder, 0, memory_order_relaxed);
  dep.order = order;
  int rc = weft_graph_launch(dep_graph);
  int rc2 = weft_wait_all(engine);
  dep.order = NULL;
  double best[3];
  int n = 0;
  if (rc || rc2 || atomic_load_explicit(&dep.norder, memory_order_relaxed) != L->nops) {
    bench_fail("replay order log: launch %d, wait %d, %zu of %zu ops", rc, rc2,
               atomic_load_explicit(&dep.norder, memory_order_relaxed), L->nops);
  } else {
    for (; n < 3; n++) {
      bench_vars_init(L, vals);
      uint64_t t0 = bench_now_ns();
      for (size_t k = 0; k < L->nops; k++)
        bench_op_exec(vals, L->ops, order[k]);
      best[n] = (double)(bench_now_ns() - t0) / (double)L->nops;
      if (bench_oplist_verify(L, vals, "serial in the replay's order"))
        break;
    }
  }
  free(order);
  if (n < 3)
    return -1;
  double t; /* the median of three */
  if (best[0] > best[1]) { t = best[0]; best[0] = best[1]; best[1] = t; }
  if (best[1] > best[2]) { t = best[1]; best[1] = best[2]; best[2] = t; }
  if (best[0] > best[1]) { t = best[0]; best[0] = best[1]; best[1] = t; }
  return best[1];
}

/* Pushes every op of the list, in order; the first error stops it. */
static int push_all(void) {
  const bench_oplist *L = dep.L;
  weft_var *w[1], *r[2];
  weft_op_desc d;
  memset(&d, 0, sizeof d);
  d.fn = dep_op;
  d.writes = w;
  d.num_writes = 1;
  d.reads = r;
  d.ctx.type = WEFT_DEV_CPU;
  d.prop = WEFT_PROP_NORMAL;
  d.name = L->workload;
  for (size_t i = 0; i < L->nops; i++) {
    const bench_op *o = &L->ops[i];
    w[0] = dep.vars[o->w];
    r[0] = dep.vars[o->r[0]];
    r[1] = dep.vars[o->r[1]];
    d.num_reads = o->nr;
    d.arg = (void *)(uintptr_t)i;
    int rc = weft_push(engine, &d);
    if (rc)
      return rc;
  }
  return 0;
}

static int driver_op(const weft_run_ctx *rc, void *arg) {
  (void)arg;
  if (rc->worker < 0)
    bench_fail("driver op runs outside the pool (worker %d)", rc->worker);
  dep.t0 = bench_now_ns();
  int err = push_all();
  if (err)
    note_error(err);
  return 0;
}

static uint64_t dep_rep(void *ctx, const bench_oplist *L, bench_slot *vals) {
  (void)ctx;
  dep.L = L;
  dep.vals = vals;
  uint64_t t1;
  uint64_t cpu0 = bench_cpu_ns(); /* the engine is idle: nothing runs between here and t0 */
  if (!dep.from_driver) {
    uint64_t me0 = bench_thread_cpu_ns();
    dep.t0 = bench_now_ns();
    int rc = push_all();
    dep.cpu_pusher_ns += bench_thread_cpu_ns() - me0;
    if (rc)
      note_error(rc);
    rc = weft_wait_all(engine);
    t1 = bench_now_ns();
    if (rc)
      note_error(rc);
  } else {
    weft_op_desc d;
    memset(&d, 0, sizeof d);
    d.fn = driver_op;
    d.ctx.type = WEFT_DEV_CPU;
    d.name = "driver";
    int rc = weft_push(engine, &d);
    if (rc) {
      note_error(rc);
      t1 = dep.t0 = 0;
    } else {
      rc = weft_wait_all(engine); /* the driver's t0 is read after it */
      t1 = bench_now_ns();
      if (rc)
        note_error(rc);
    }
  }
  dep.cpu_all_ns += bench_cpu_ns() - cpu0;
  dep.cpu_reps++;
  check_errors(L->workload);
  return t1 - dep.t0;
}

/* replay: the list captured once into a graph (bench_dep, not timed); one
 * repetition launches it from main and waits. dep_op reads dep.vals, so the
 * recorded ops run on this repetition's values. */

static uint64_t dep_replay_rep(void *ctx, const bench_oplist *L, bench_slot *vals) {
  (void)ctx;
  dep.L = L;
  dep.vals = vals;
  uint64_t t0 = bench_now_ns();
  int rc = weft_graph_launch(dep_graph);
  if (rc)
    note_error(rc);
  int rc2 = weft_wait_all(engine);
  uint64_t t1 = bench_now_ns();
  if (rc2)
    note_error(rc2);
  check_errors(L->workload);
  return t1 - t0;
}

/* The pool's counters summed over its workers (weft_pool_stats). */
static weft_worker_stats pool_totals(void) {
  weft_worker_stats w[64], t;
  memset(&t, 0, sizeof t);
  int n = weft_pool_stats(pool, w, 64);
  for (int i = 0; i < n; i++) {
    t.tasks_run += w[i].tasks_run;
    t.steals += w[i].steals;
    t.failed_steal_rounds += w[i].failed_steal_rounds;
    t.parks += w[i].parks;
    t.wakeups += w[i].wakeups;
  }
  return t;
}

/* ',"pool_<mode>":{...}': the pool's counters per op over a mode's
 * repetitions (warm-up included), nops = ops run in them. */
static void pool_stats_json(char *buf, size_t cap, const char *mode,
                            const weft_worker_stats *before, const weft_worker_stats *after,
                            double nops) {
  snprintf(buf, cap,
           ",\"pool_%s\":{\"tasks_per_op\":%.3f,\"steals_per_op\":%.4f,"
           "\"parks_per_op\":%.4f,\"wakeups_per_op\":%.4f,"
           "\"failed_steal_rounds_per_op\":%.4f}",
           mode, (double)(after->tasks_run - before->tasks_run) / nops,
           (double)(after->steals - before->steals) / nops,
           (double)(after->parks - before->parks) / nops,
           (double)(after->wakeups - before->wakeups) / nops,
           (double)(after->failed_steal_rounds - before->failed_steal_rounds) / nops);
}

/* ',"cpu_<mode>":{...}': CPU time per op over the timed part of a mode's
 * repetitions (dep_state.cpu_*), nops = ops run in them: every thread's
 * ("all": workers, spinning included, and the pusher), and in main mode
 * the main thread's own while it pushed ("pusher"). Main mode's time per
 * op cannot fall below the pusher's: it is the floor of that mode, however
 * many workers run the ops. */
static void cpu_json(char *buf, size_t cap, const char *mode, double nops) {
  if (nops <= 0)
    return;
  int len = snprintf(buf, cap, ",\"cpu_%s\":{\"all_ns_per_op\":%.4g", mode,
                     (double)dep.cpu_all_ns / nops);
  if (!dep.from_driver)
    len += snprintf(buf + len, cap - (size_t)len, ",\"pusher_ns_per_op\":%.4g",
                    (double)dep.cpu_pusher_ns / nops);
  snprintf(buf + len, cap - (size_t)len, "}");
}

/* Appends s's samples and the closing ']' to buf; returns the length added. */
static int samples_json(char *buf, size_t cap, const bench_series *s) {
  int len = 0;
  for (int i = 0; i < s->n && len < (int)cap - 32; i++)
    len += snprintf(buf + len, cap - (size_t)len, "%s%.6g", i ? "," : "", s->v[i]);
  len += snprintf(buf + len, cap - (size_t)len, "]");
  return len;
}

/* ------------------------------------------------------------- pushers */

/* --pushers P[,P...] (op lists): instead of the main, driver and replay
 * series, several user threads push into ONE engine (on the pool of
 * --threads workers). Pusher 0 is main; pushers 1..P-1 are threads made
 * once, each asleep on its own semaphore between repetitions. A
 * repetition of P pushers splits the list into P segments of consecutive
 * ops ([p*nops/P, (p+1)*nops/P)); pusher p pushes segment p, in list
 * order, from its own thread. Two ways:
 *   disjoint  pusher p has a var set of its own (a copy of the list's
 *             vars, its own weft vars and values): segment p runs on it
 *             with the workload's kernel (bench_op_exec), and its values
 *             must equal the serial run of that segment (computed once,
 *             untimed), as every op list's are;
 *   shared    every pusher over the same weft vars (copy 0): segment p's
 *             ops with the same reads and writes, so several pushers queue
 *             on each var; an op adds its own term (the kernel of its
 *             index alone) to its written var, so the final values are
 *             checkable whatever the interleaving (the sum of the terms of
 *             the var's ops, from the initial value: a lost or doubled
 *             update shows), and it checks that it follows the last op of
 *             its own pusher on that var (writes in each pusher's program
 *             order).
 * TIMED: from just before main releases the pushers (their start
 * barrier) to the return of main's weft_wait_all, which main calls once
 * every pusher has pushed its segment; ns/op = that / nops (the whole
 * list, whatever P). Each repetition round runs every P of the list, both
 * ways, in turn (a warm-up round first, untimed), so the figures for
 * different P are taken side by side. Metrics "<w>_p<P>" (disjoint) and
 * "<w>_p<P>_shared", with "cpu_all_ns_per_op": every thread's CPU time
 * over the timed repetitions (spinning included), per op, and
 * "cpu_pushers_ns_per_op": the pushers' own while they pushed (a pusher
 * that runs all the time spends P x the wall time per op). The engine:
 * kind and max_inflight automatic, as in the other series. */

#define PUSHERS_MAX 16

typedef struct pushers_state {
  const bench_oplist *L;
  int maxp;                /* the largest P asked for */
  weft_var **vars;         /* [maxp * nvars]: pusher p's copy at p * nvars */
  bench_slot *vals;        /* [maxp * nvars] likewise */
  bench_slot *ref;         /* [maxp * nvars]: this P's serial segments' values */
  uint64_t *shared_ref;    /* [nvars]: the shared way's expected values */
  uint64_t *last;          /* [maxp * nvars]: shared, pusher p's last op on a var, + 1 */
  atomic_int order_bad;    /* shared: an op ran before an earlier one of its pusher */
  /* this repetition */
  int P, shared;
  pthread_t thr[PUSHERS_MAX];
  bench_event go[PUSHERS_MAX], done[PUSHERS_MAX];
  atomic_int quit;
  int rc[PUSHERS_MAX];     /* a pusher's first weft_push error */
  uint64_t push_cpu[PUSHERS_MAX]; /* a pusher's own CPU time while it pushed */
} pushers_state;

static pushers_state ps;

/* The term a shared-way op adds to its var: its index's alone. */
static inline uint64_t shared_term(size_t i) { return bench_op_kernel(0, 0, 0, (uint64_t)i); }

static size_t seg_begin(size_t nops, int P, int p) { return nops * (size_t)p / (size_t)P; }

static int pushers_disjoint_op(const weft_run_ctx *rc, void *arg) {
  (void)rc;
  uintptr_t x = (uintptr_t)arg; /* op index << 4 | pusher */
  int p = (int)(x & 15);
  bench_op_exec(ps.vals + (size_t)p * ps.L->nvars, ps.L->ops, (size_t)(x >> 4));
  return 0;
}

static int pushers_shared_op(const weft_run_ctx *rc, void *arg) {
  (void)rc;
  uintptr_t x = (uintptr_t)arg;
  int p = (int)(x & 15);
  size_t i = (size_t)(x >> 4);
  uint32_t w = ps.L->ops[i].w;
  uint64_t *last = &ps.last[(size_t)p * ps.L->nvars + w];
  if (*last > i)
    atomic_store_explicit(&ps.order_bad, 1, memory_order_relaxed);
  *last = (uint64_t)i + 1;
  ps.vals[w].v += shared_term(i);
  return 0;
}

/* Pushes pusher p's segment; returns the first error. */
static int pushers_push(int p) {
  const bench_oplist *L = ps.L;
  weft_var **vars = ps.vars + (ps.shared ? 0 : (size_t)p * L->nvars);
  weft_var *w[1], *r[2];
  weft_op_desc d;
  memset(&d, 0, sizeof d);
  d.fn = ps.shared ? pushers_shared_op : pushers_disjoint_op;
  d.writes = w;
  d.num_writes = 1;
  d.reads = r;
  d.ctx.type = WEFT_DEV_CPU;
  d.prop = WEFT_PROP_NORMAL;
  d.name = L->workload;
  size_t end = seg_begin(L->nops, ps.P, p + 1);
  for (size_t i = seg_begin(L->nops, ps.P, p); i < end; i++) {
    const bench_op *o = &L->ops[i];
    w[0] = vars[o->w];
    r[0] = vars[o->r[0]];
    r[1] = vars[o->r[1]];
    d.num_reads = o->nr;
    d.arg = (void *)(uintptr_t)((i << 4) | (size_t)p);
    int rc = weft_push(engine, &d);
    if (rc)
      return rc;
  }
  return 0;
}

static void *pusher_main(void *arg) {
  int p = (int)(intptr_t)arg;
  for (;;) {
    while (bench_event_wait(&ps.go[p], 3600ull * 1000000000ull)) {
    }
    if (atomic_load(&ps.quit))
      return NULL;
    uint64_t c0 = bench_thread_cpu_ns();
    ps.rc[p] = pushers_push(p);
    ps.push_cpu[p] = bench_thread_cpu_ns() - c0;
    bench_event_post(&ps.done[p]);
  }
}

/* CPU time of the whole process over a repetition's timed part (every
 * thread's, spinning included), summed per P and way (bench_pushers). */
static uint64_t pushers_cpu_ns;
/* The pushers' own CPU time while they pushed, summed, likewise. */
static uint64_t pushers_push_cpu_ns;

/* One repetition of P pushers, one way: returns the timed ns. */
static uint64_t pushers_rep(int P, int shared) {
  const bench_oplist *L = ps.L;
  ps.P = P;
  ps.shared = shared;
  for (int p = 0; p < (shared ? 1 : P); p++)
    bench_vars_init(L, ps.vals + (size_t)p * L->nvars);
  if (shared)
    memset(ps.last, 0, sizeof *ps.last * (size_t)P * L->nvars);
  atomic_store(&ps.order_bad, 0);
  uint64_t cpu0 = bench_cpu_ns(); /* the engine is idle: nothing runs between here and t0 */
  uint64_t t0 = bench_now_ns();
  for (int p = 1; p < P; p++)
    bench_event_post(&ps.go[p]);
  uint64_t c0 = bench_thread_cpu_ns();
  int rc = pushers_push(0);
  ps.push_cpu[0] = bench_thread_cpu_ns() - c0;
  if (rc)
    note_error(rc);
  for (int p = 1; p < P; p++) {
    while (bench_event_wait(&ps.done[p], 3600ull * 1000000000ull)) {
    }
    if (ps.rc[p])
      note_error(ps.rc[p]);
  }
  rc = weft_wait_all(engine);
  uint64_t t1 = bench_now_ns();
  pushers_cpu_ns = bench_cpu_ns() - cpu0;
  pushers_push_cpu_ns = 0;
  for (int p = 0; p < P; p++)
    pushers_push_cpu_ns += ps.push_cpu[p];
  if (rc)
    note_error(rc);
  check_errors(shared ? "pushers (shared)" : "pushers (disjoint)");
  return t1 - t0;
}

/* Checks a repetition's values: 0 when right (else reported). */
static int pushers_verify(int P, int shared) {
  const bench_oplist *L = ps.L;
  size_t bad = 0, first = 0;
  int firstp = 0;
  if (shared) {
    for (size_t v = 0; v < L->nvars; v++)
      if (ps.vals[v].v != ps.shared_ref[v] && bad++ == 0)
        first = v;
    if (atomic_load(&ps.order_bad))
      bench_fail("%s, %d pushers (shared vars): an op ran before an earlier op of its pusher "
                 "on the same var", L->workload, P);
  } else {
    for (int p = 0; p < P; p++)
      for (size_t v = 0; v < L->nvars; v++) {
        size_t k = (size_t)p * L->nvars + v;
        if (ps.vals[k].v != ps.ref[k].v && bad++ == 0) {
          first = v;
          firstp = p;
        }
      }
  }
  if (bad)
    bench_fail("%s, %d pushers (%s vars): %zu values differ from the serial run (first: "
               "pusher %d, var %zu)",
               L->workload, P, shared ? "shared" : "disjoint", bad, firstp, first);
  return bad != 0 || atomic_load(&ps.order_bad);
}

/* The serial run of P's segments, each on its own copy from the initial
 * values, into ps.ref. */
static void pushers_make_ref(int P) {
  const bench_oplist *L = ps.L;
  for (int p = 0; p < P; p++) {
    bench_slot *r = ps.ref + (size_t)p * L->nvars;
    bench_vars_init(L, r);
    bench_oplist_run(r, L->ops, seg_begin(L->nops, P, p), seg_begin(L->nops, P, p + 1));
  }
}

static void bench_pushers(const bench_args *a, const bench_oplist *L, const int *plist, int np) {
  memset(&ps, 0, sizeof ps);
  ps.L = L;
  for (int k = 0; k < np; k++)
    if (plist[k] > ps.maxp)
      ps.maxp = plist[k];
  size_t nv = (size_t)ps.maxp * L->nvars;
  ps.vars = (weft_var **)calloc(nv, sizeof *ps.vars);
  ps.last = (uint64_t *)calloc(nv, sizeof *ps.last);
  ps.shared_ref = (uint64_t *)calloc(L->nvars, sizeof *ps.shared_ref);
  if (!ps.vars || !ps.last || !ps.shared_ref) {
    fprintf(stderr, "bench_weft: out of memory\n");
    exit(1);
  }
  ps.vals = bench_vars_alloc(nv);
  ps.ref = bench_vars_alloc(nv);
  for (size_t v = 0; v < nv && !bench_failed(); v++) {
    int rc = weft_var_new(engine, &ps.vars[v]);
    if (rc)
      bench_fail("weft_var_new: %s", weft_strerror(rc));
  }
  { /* the shared way's expected values: the initial ones plus every term */
    bench_slot *init = ps.ref; /* scratch, before any segment reference */
    bench_vars_init(L, init);
    for (size_t v = 0; v < L->nvars; v++)
      ps.shared_ref[v] = init[v].v;
    for (size_t i = 0; i < L->nops; i++)
      ps.shared_ref[L->ops[i].w] += shared_term(i);
  }
  for (int p = 1; p < ps.maxp; p++) {
    bench_event_init(&ps.go[p]);
    bench_event_init(&ps.done[p]);
    if (pthread_create(&ps.thr[p], NULL, pusher_main, (void *)(intptr_t)p)) {
      fprintf(stderr, "bench_weft: pthread_create failed\n");
      exit(1);
    }
  }
  bench_series s[PUSHERS_MAX][2];
  /* CPU ns over the timed repetitions: every thread's, the pushers' */
  double cpu[PUSHERS_MAX][2] = {{0}}, pcpu[PUSHERS_MAX][2] = {{0}};
  for (int k = 0; k < np; k++)
    for (int sh = 0; sh < 2; sh++)
      bench_series_init(&s[k][sh], a->reps);
  /* Rounds: every P, both ways, in turn; round -1 is the warm-up. */
  for (int r = -1; r < a->reps && !bench_failed(); r++)
    for (int k = 0; k < np && !bench_failed(); k++) {
      int P = plist[k];
      pushers_make_ref(P);
      for (int sh = 0; sh < 2 && !bench_failed(); sh++) {
        uint64_t ns = pushers_rep(P, sh);
        if (pushers_verify(P, sh) || bench_failed())
          break;
        if (r >= 0) {
          bench_series_add(&s[k][sh], (double)ns / (double)L->nops);
          cpu[k][sh] += (double)pushers_cpu_ns;
          pcpu[k][sh] += (double)pushers_push_cpu_ns;
        }
      }
    }
  for (int k = 0; k < np; k++)
    for (int sh = 0; sh < 2; sh++) {
      char metric[64], extra[512];
      snprintf(metric, sizeof metric, "%s_p%d%s", L->workload, plist[k], sh ? "_shared" : "");
      snprintf(extra, sizeof extra,
               ",\"pushers\":%d,\"pusher_vars\":\"%s\",\"push_from\":\"%d user threads (main "
               "and %d more), one segment of the list each\",\"cpu_all_ns_per_op\":%.4g,"
               "\"cpu_pushers_ns_per_op\":%.4g",
               plist[k], sh ? "shared" : "disjoint", plist[k], plist[k] - 1,
               s[k][sh].n ? cpu[k][sh] / ((double)L->nops * s[k][sh].n) : 0.0,
               s[k][sh].n ? pcpu[k][sh] / ((double)L->nops * s[k][sh].n) : 0.0);
      bench_dep_emit_metric(RT, a, L, metric, &s[k][sh], extra);
      bench_series_free(&s[k][sh]);
    }
  atomic_store(&ps.quit, 1);
  for (int p = 1; p < ps.maxp; p++) {
    bench_event_post(&ps.go[p]);
    pthread_join(ps.thr[p], NULL);
    bench_event_destroy(&ps.go[p]);
    bench_event_destroy(&ps.done[p]);
  }
  for (size_t v = 0; v < nv; v++)
    if (ps.vars[v]) {
      int rc = weft_var_delete(engine, ps.vars[v]);
      if (rc)
        bench_fail("weft_var_delete: %s", weft_strerror(rc));
    }
  free(ps.vars);
  free(ps.last);
  free(ps.shared_ref);
  bench_vars_free(ps.vals);
  bench_vars_free(ps.ref);
}

/* The engine on the pool, with the default configuration; 0 (and a
 * failure reported) when it cannot be made. */
static int create_engine(void) {
  weft_engine_config ec;
  weft_engine_config_default(&ec);
  ec.pool = pool;
  int rc = weft_engine_create(&engine, &ec);
  if (rc)
    bench_fail("weft_engine_create: %s", weft_strerror(rc));
  return rc == 0;
}

/* --pushers P[,P...] (main): the pusher counts to run, in order. */
static int pushers_list[PUSHERS_MAX];
static int pushers_n;

/* The pushers series alone (--pushers): its own engine on the pool. */
static void bench_dep_pushers(const bench_args *a) {
  if (!create_engine())
    return;
  int rc;
  bench_oplist L;
  bench_oplist_make(&L, a->workload, a->quick);
  bench_pushers(a, &L, pushers_list, pushers_n);
  rc = weft_engine_destroy(engine);
  if (rc)
    bench_fail("weft_engine_destroy: %s", weft_strerror(rc));
  engine = NULL;
  bench_oplist_free(&L);
}

static void bench_dep(const bench_args *a) {
  if (!create_engine())
    return;
  int rc;
  bench_oplist L;
  bench_oplist_make(&L, a->workload, a->quick);
  bench_slot *vals = bench_vars_alloc(L.nvars);
  dep.vars = (weft_var **)calloc(L.nvars, sizeof *dep.vars);
  if (!dep.vars) {
    fprintf(stderr, "bench_weft: out of memory\n");
    exit(1);
  }
  for (size_t v = 0; v < L.nvars && !bench_failed(); v++) {
    rc = weft_var_new(engine, &dep.vars[v]);
    if (rc)
      bench_fail("weft_var_new: %s", weft_strerror(rc));
  }

  /* the two push modes, main first, then replay; each bench_dep_time has its
   * own warm-up */
  static const char *const mode_name[3] = {"main", "driver", "replay"};
  const char *only = getenv("BENCH_WEFT_PUSH");
  int only_mode = -1;
  if (only && *only) {
    only_mode = !strcmp(only, "main")     ? 0
                : !strcmp(only, "driver") ? 1
                : !strcmp(only, "replay") ? 2
                                          : -2;
    if (only_mode == -2) {
      fprintf(stderr, "bench_weft: BENCH_WEFT_PUSH must be main, driver or replay, not '%s'\n",
              only);
      exit(2);
    }
  }
  bench_series s[3];
  char stats[3][256] = {"", "", ""};
  char cpu[2][160] = {"", ""};
  for (int m = 0; m < 3; m++)
    bench_series_init(&s[m], a->reps);
  for (int m = 0; m < 2; m++) {
    if (bench_failed() || (only_mode >= 0 && m != only_mode))
      continue;
    dep.from_driver = m;
    dep.cpu_all_ns = dep.cpu_pusher_ns = 0;
    dep.cpu_reps = 0;
    weft_worker_stats before = pool_totals();
    bench_dep_time(RT, a, &L, vals, dep_rep, NULL, &s[m]);
    weft_worker_stats after = pool_totals();
    pool_stats_json(stats[m], sizeof stats[m], mode_name[m], &before, &after,
                    (double)L.nops * (double)(s[m].n + 1));
    cpu_json(cpu[m], sizeof cpu[m], mode_name[m], (double)L.nops * dep.cpu_reps);
  }
  if (only_mode != 2) {
    /* The headline: main (a user's thread pushing), unless one mode ran alone. */
    int best = only_mode >= 0 ? only_mode : 0;
    char extra[2048];
    int len = snprintf(extra, sizeof extra, ",\"push_from\":\"%s\"", mode_name[best]);
    if (only_mode < 0) {
      len += snprintf(extra + len, sizeof extra - (size_t)len,
                      ",\"other_push_from\":\"%s\",\"other_samples\":[", mode_name[1 - best]);
      len += samples_json(extra + len, sizeof extra - (size_t)len, &s[1 - best]);
    }
    snprintf(extra + len, sizeof extra - (size_t)len, "%s%s%s%s", stats[0], stats[1], cpu[0],
             cpu[1]);
    bench_dep_emit(RT, a, &L, &s[best], extra);
  }

  /* replay: the whole list captured once from main (not timed), then each
   * repetition launches the graph from main and waits (weft_wait_all). Its
   * own JSON line, "<workload>_replay", with the main mode's samples of
   * this run ("fresh_samples") beside it. */
  if (only_mode < 0 || only_mode == 2) {
    double capture_ns = 0, order_floor = -1;
    if (!bench_failed()) {
      dep.L = &L;
      dep.vals = vals;
      uint64_t c0 = bench_now_ns();
      rc = weft_graph_begin_capture(engine);
      if (rc) {
        bench_fail("weft_graph_begin_capture: %s", weft_strerror(rc));
      } else {
        int prc = push_all();
        rc = weft_graph_end_capture(engine, &dep_graph);
        capture_ns = (double)(bench_now_ns() - c0) / (double)L.nops;
        if (prc)
          bench_fail("weft_push while capturing: %s", weft_strerror(prc));
        if (rc)
          bench_fail("weft_graph_end_capture: %s", weft_strerror(rc));
        else if (!dep_graph)
          bench_fail("weft_graph_end_capture: no graph");
      }
    }
    /* A training loop's first steps, untimed: a graph that may run in
     * lanes tries them and one lane in its first launches and keeps the
     * faster (weft_graph_launch in weft.h); the samples are the launches
     * after that. Each warm launch's result is checked as a timed one's. */
    for (int w = 0; w < BENCH_REPLAY_WARM_LAUNCHES && !bench_failed(); w++) {
      bench_vars_init(&L, vals);
      (void)dep_replay_rep(NULL, &L, vals);
      if (!bench_failed())
        bench_oplist_verify(&L, vals, RT);
    }
    if (!bench_failed()) {
      weft_worker_stats before = pool_totals();
      bench_dep_time(RT, a, &L, vals, dep_replay_rep, NULL, &s[2]);
      weft_worker_stats after = pool_totals();
      pool_stats_json(stats[2], sizeof stats[2], mode_name[2], &before, &after,
                      (double)L.nops * (double)(s[2].n + 1));
      if (a->threads == 1 && !bench_failed())
        order_floor = replay_order_floor(&L, vals);
    }
    if (dep_graph) {
      rc = weft_graph_destroy(dep_graph);
      if (rc)
        bench_fail("weft_graph_destroy: %s", weft_strerror(rc));
      dep_graph = NULL;
    }
    char extra[2048];
    int len = snprintf(extra, sizeof extra,
                       ",\"push_from\":\"replay\",\"replay\":\"captured once from main (not "
                       "timed), launched %d times untimed, then weft_graph_launch + "
                       "weft_wait_all from main\","
                       "\"capture_ns_per_op\":%.1f",
                       BENCH_REPLAY_WARM_LAUNCHES, capture_ns);
    if (order_floor >= 0) /* 1 thread: the ops alone, in the order the worker ran them */
      len += snprintf(extra + len, sizeof extra - (size_t)len,
                      ",\"serial_in_run_order_ns_per_op\":%.2f", order_floor);
    if (only_mode < 0) {
      len += snprintf(extra + len, sizeof extra - (size_t)len,
                      ",\"fresh_push_from\":\"%s\",\"fresh_samples\":[", mode_name[0]);
      len += samples_json(extra + len, sizeof extra - (size_t)len, &s[0]);
    }
    snprintf(extra + len, sizeof extra - (size_t)len, "%s", stats[2]);
    char metric[64];
    snprintf(metric, sizeof metric, "%s_replay", L.workload);
    bench_dep_emit_metric(RT, a, &L, metric, &s[2], extra);
  }

  for (size_t v = 0; v < L.nvars; v++)
    if (dep.vars[v]) {
      rc = weft_var_delete(engine, dep.vars[v]);
      if (rc)
        bench_fail("weft_var_delete: %s", weft_strerror(rc));
    }
  rc = weft_engine_destroy(engine);
  if (rc)
    bench_fail("weft_engine_destroy: %s", weft_strerror(rc));
  engine = NULL;
  for (int m = 0; m < 3; m++)
    bench_series_free(&s[m]);
  free(dep.vars);
  bench_vars_free(vals);
  bench_oplist_free(&L);
}

/* --------------------------------------------------------- graph shapes */

/* graph_dag, graph_grid, graph_tree (harness.h, "graph shapes"): an engine
 * on the pool (kind automatic), a graph with explicit edges and no vars:
 * weft_graph_create, weft_graph_add of every node in index order (fn =
 * bench_gnode_exec on the node's index), then weft_graph_edge of every
 * edge (pred, node), all from main; weft_graph_launch, weft_wait_all.
 *   "<shape>"           once: TIMED from weft_graph_create to
 *                       weft_wait_all's return in main (the graph's
 *                       destroy after it, not timed: "destroy_ns_per_node").
 *   "<shape>_relaunch"  the same graph made once (not timed), launched
 *                       BENCH_REPLAY_WARM_LAUNCHES times untimed (each
 *                       checked: the lanes' first launches, weft.h), then
 *                       each repetition weft_graph_launch + weft_wait_all
 *                       from main, TIMED.
 * The two modes' repetitions alternate (bench_graph_time). N workers run
 * the nodes; main builds, launches and waits (as in the op lists). */

static struct {
  const bench_gshape *G;
  bench_gslot *s;             /* this repetition's slots */
  weft_graph *relaunch_graph; /* made once for "<shape>_relaunch" */
  double destroy_ns;          /* the last "once" graph's destroy, ns/node */
} gsh;

static int gnode_op(const weft_run_ctx *rc, void *arg) {
  (void)rc;
  bench_gnode_exec(gsh.G, gsh.s, (size_t)(uintptr_t)arg);
  return 0;
}

/* The graph of G: every node, then every edge; 0 or the first error. */
static int graph_make(const bench_gshape *G, weft_graph **out) {
  weft_graph *g = NULL;
  int rc = weft_graph_create(engine, &g);
  if (rc)
    return rc;
  weft_op_desc d;
  memset(&d, 0, sizeof d);
  d.fn = gnode_op;
  d.ctx.type = WEFT_DEV_CPU;
  d.prop = WEFT_PROP_NORMAL;
  d.name = G->workload;
  for (size_t i = 0; i < G->n && !rc; i++) {
    d.arg = (void *)(uintptr_t)i;
    rc = weft_graph_add(g, &d, NULL);
  }
  for (size_t i = 0; i < G->n && !rc; i++)
    for (uint32_t k = G->pred0[i]; k < G->pred0[i + 1] && !rc; k++)
      rc = weft_graph_edge(g, G->pred[k], i);
  *out = g;
  return rc;
}

static uint64_t graph_once_rep(void *ctx, const bench_gshape *G, bench_gslot *s) {
  (void)ctx;
  gsh.G = G;
  gsh.s = s;
  weft_graph *g = NULL;
  uint64_t t0 = bench_now_ns();
  int rc = graph_make(G, &g);
  if (rc)
    bench_fail("%s: making the graph: %s", G->workload, weft_strerror(rc));
  else if ((rc = weft_graph_launch(g)))
    bench_fail("%s: weft_graph_launch: %s", G->workload, weft_strerror(rc));
  int rc2 = weft_wait_all(engine);
  uint64_t t1 = bench_now_ns();
  if (rc2)
    bench_fail("%s: weft_wait_all: %s", G->workload, weft_strerror(rc2));
  if (g) {
    rc = weft_graph_destroy(g);
    if (rc)
      bench_fail("weft_graph_destroy: %s", weft_strerror(rc));
    gsh.destroy_ns = (double)(bench_now_ns() - t1) / (double)G->n;
  }
  return t1 - t0;
}

static uint64_t graph_relaunch_rep(void *ctx, const bench_gshape *G, bench_gslot *s) {
  (void)ctx;
  gsh.G = G;
  gsh.s = s;
  uint64_t t0 = bench_now_ns();
  int rc = weft_graph_launch(gsh.relaunch_graph);
  if (rc)
    bench_fail("%s: weft_graph_launch: %s", G->workload, weft_strerror(rc));
  int rc2 = weft_wait_all(engine);
  uint64_t t1 = bench_now_ns();
  if (rc2)
    bench_fail("%s: weft_wait_all: %s", G->workload, weft_strerror(rc2));
  return t1 - t0;
}

static void bench_graph(const bench_args *a) {
  if (!create_engine())
    return;
  int rc;
  bench_gshape G;
  bench_gshape_make(&G, a->workload);
  bench_gslot *s = bench_gslots_alloc(G.n);
  char relaunch_metric[64];
  snprintf(relaunch_metric, sizeof relaunch_metric, "%s_relaunch", G.workload);
  /* the relaunched graph: made once, then its warm launches, untimed */
  uint64_t m0 = bench_now_ns();
  rc = graph_make(&G, &gsh.relaunch_graph);
  double make_ns = (double)(bench_now_ns() - m0) / (double)G.n;
  if (rc)
    bench_fail("%s: making the graph: %s", G.workload, weft_strerror(rc));
  for (int w = 0; w < BENCH_REPLAY_WARM_LAUNCHES && !bench_failed(); w++) {
    bench_gslots_reset(&G, s);
    (void)graph_relaunch_rep(NULL, &G, s);
    bench_gshape_verify(&G, s, RT, relaunch_metric);
  }
  bench_graph_mode modes[2] = {{G.workload, graph_once_rep, NULL, {0}},
                               {relaunch_metric, graph_relaunch_rep, NULL, {0}}};
  if (!bench_failed())
    bench_graph_time(RT, a, &G, s, modes, 2);
  else
    for (int m = 0; m < 2; m++)
      bench_series_init(&modes[m].s, 1);
  char extra[512];
  snprintf(extra, sizeof extra,
           ",\"push\":\"weft_graph_create, weft_graph_add of every node, weft_graph_edge of "
           "every edge, weft_graph_launch + weft_wait_all from main\","
           "\"destroy_ns_per_node\":%.1f",
           gsh.destroy_ns);
  bench_graph_emit(RT, a, &G, &modes[0], extra);
  snprintf(extra, sizeof extra,
           ",\"push\":\"the graph made once (not timed: make_ns_per_node), launched %d times "
           "untimed, then weft_graph_launch + weft_wait_all from main\","
           "\"make_ns_per_node\":%.1f",
           BENCH_REPLAY_WARM_LAUNCHES, make_ns);
  bench_graph_emit(RT, a, &G, &modes[1], extra);
  if (gsh.relaunch_graph) {
    rc = weft_graph_destroy(gsh.relaunch_graph);
    if (rc)
      bench_fail("weft_graph_destroy: %s", weft_strerror(rc));
    gsh.relaunch_graph = NULL;
  }
  rc = weft_engine_destroy(engine);
  if (rc)
    bench_fail("weft_engine_destroy: %s", weft_strerror(rc));
  engine = NULL;
  free(s);
  bench_gshape_free(&G);
}

/* --------------------------------------------------------------- fanout */

/* fanout (harness.h): main, not a pool worker, spawns every task into one
 * weft_group it initialised (weft_group_spawn, arg = the task's index:
 * from outside the pool they go to its injection queue), then
 * weft_group_wait, in which main helps run them. N workers + main. TIMED:
 * from the first spawn to weft_group_wait's return. */

static struct {
  uint32_t *slots;
  uint32_t seed;
} fan;

static int fanout_task(void *arg) {
  bench_fanout_task(fan.slots, (size_t)(uintptr_t)arg, fan.seed);
  return 0;
}

static uint64_t fanout_rep(void *ctx, uint32_t *slots, uint32_t seed) {
  (void)ctx;
  fan.slots = slots;
  fan.seed = seed;
  weft_group g;
  weft_group_init(&g, pool);
  uint64_t t0 = bench_now_ns();
  int rc = 0;
  for (size_t k = 0; k < BENCH_FANOUT_TASKS && !rc; k++)
    rc = weft_group_spawn(&g, fanout_task, (void *)(uintptr_t)k);
  if (rc)
    bench_fail("fanout: weft_group_spawn: %s", weft_strerror(rc));
  int rc2 = weft_group_wait(&g);
  uint64_t t1 = bench_now_ns();
  if (rc2)
    bench_fail("fanout: weft_group_wait: %s", weft_strerror(rc2));
  return t1 - t0;
}

/* ------------------------------------------------------------- pipeline */

/* Two engines on the pool: [0] unbounded (max_inflight 0) runs pipeline and
 * pipe_alloc, [1] max_inflight = BENCH_PIPE_MAX_INFLIGHT runs pipe_bp. Each
 * has its own vars: the six slots (L, P, C x 2), the sink, one per item. */
typedef struct pipe_engine {
  weft_engine *eng;
  weft_var *slot[3][2], *stage[4], **item; /* stage[3]: write-back's, the sink */
} pipe_engine;

static struct {
  bench_pipe *P;
  int variant;
  pipe_engine pe[2];
} pipe;

static int pipe_op(const weft_run_ctx *rc, void *arg) {
  (void)rc;
  uintptr_t x = (uintptr_t)arg;
  int s = (int)(x & 3);
  size_t k = (size_t)(x >> 2);
  if (pipe.variant == BENCH_PIPE_STATIC)
    bench_pipe_stage(pipe.P, s, k);
  else
    bench_pipe_item_stage(pipe.P, s, k);
  return 0;
}

/* Pushes item k's four stages with their dependencies. Every stage writes
 * its stage var S (the actor's state: a stage handles one item at a time, in
 * item order; write-back's is the sink), and
 *   static: load  w{L[b]}              pre     r{L[b]} w{P[b]}
 *           comp  r{P[b]} w{C[b]}      wb      r{C[b]}             (b = k%2)
 *   alloc, bp: the item's var. */
static int pipe_push_item(pipe_engine *pe, int variant, size_t k) {
  static const char *const names[4] = {"load", "preprocess", "compute", "write-back"};
  int b = (int)(k & 1);
  for (int s = 0; s < 4; s++) {
    weft_var *r[1], *w[2];
    weft_op_desc d;
    memset(&d, 0, sizeof d);
    d.fn = pipe_op;
    d.arg = (void *)(uintptr_t)((k << 2) | (size_t)s);
    d.ctx.type = WEFT_DEV_CPU;
    d.name = names[s];
    d.reads = r;
    d.writes = w;
    w[d.num_writes++] = pe->stage[s];
    if (variant == BENCH_PIPE_STATIC) {
      if (s > 0)
        r[d.num_reads++] = pe->slot[s - 1][b];
      if (s < 3)
        w[d.num_writes++] = pe->slot[s][b];
    } else {
      w[d.num_writes++] = pe->item[k];
    }
    int rc = weft_push(pe->eng, &d);
    if (rc)
      return rc;
  }
  return 0;
}

static uint64_t pipe_rep(void *ctx, bench_pipe *P, int variant) {
  (void)ctx;
  pipe.P = P;
  pipe.variant = variant;
  pipe_engine *pe = &pipe.pe[variant == BENCH_PIPE_BP];
  uint64_t t0 = bench_now_ns();
  int rc = 0;
  for (size_t k = 0; k < P->items && !rc; k++)
    rc = pipe_push_item(pe, variant, k);
  if (rc)
    note_error(rc);
  rc = weft_wait_all(pe->eng);
  uint64_t t1 = bench_now_ns();
  if (rc)
    note_error(rc);
  check_errors("pipeline");
  return t1 - t0;
}

static void bench_pipeline(const bench_args *a) {
  size_t items = a->quick ? BENCH_PIPE_ITEMS_QUICK : BENCH_PIPE_ITEMS;
  for (int e = 0; e < 2; e++) {
    pipe_engine *pe = &pipe.pe[e];
    weft_engine_config ec;
    weft_engine_config_default(&ec);
    ec.pool = pool;
    ec.max_inflight = e ? BENCH_PIPE_MAX_INFLIGHT : 0; /* explicit: the environment is not read */
    int rc = weft_engine_create(&pe->eng, &ec);
    if (rc) {
      bench_fail("weft_engine_create: %s", weft_strerror(rc));
      return;
    }
    pe->item = (weft_var **)calloc(items, sizeof *pe->item);
    if (!pe->item) {
      fprintf(stderr, "bench_weft: out of memory\n");
      exit(1);
    }
    for (int s = 0; s < 3 && !rc; s++)
      for (int b = 0; b < 2 && !rc; b++)
        rc = weft_var_new(pe->eng, &pe->slot[s][b]);
    for (int s = 0; s < 4 && !rc; s++)
      rc = weft_var_new(pe->eng, &pe->stage[s]);
    for (size_t k = 0; k < items && !rc; k++)
      rc = weft_var_new(pe->eng, &pe->item[k]);
    if (rc) {
      bench_fail("weft_var_new: %s", weft_strerror(rc));
      return;
    }
  }
  char extra[256];
  snprintf(extra, sizeof extra,
           ",\"push\":\"main pushes 4 ops an item; vars: one a stage, 2 slots a stage "
           "(pipeline), one an item (alloc, bp)\",\"max_inflight_bp\":%d",
           BENCH_PIPE_MAX_INFLIGHT);
  bench_pipe_run(RT, a, pipe_rep, NULL, 1, extra, NULL);
  for (int e = 0; e < 2; e++) {
    pipe_engine *pe = &pipe.pe[e];
    weft_var *all[10] = {pe->slot[0][0], pe->slot[0][1], pe->slot[1][0], pe->slot[1][1],
                         pe->slot[2][0], pe->slot[2][1], pe->stage[0], pe->stage[1],
                         pe->stage[2],   pe->stage[3]};
    for (int v = 0; v < 10; v++)
      if (all[v] && weft_var_delete(pe->eng, all[v]))
        bench_fail("weft_var_delete failed");
    for (size_t k = 0; k < items; k++)
      if (pe->item[k] && weft_var_delete(pe->eng, pe->item[k]))
        bench_fail("weft_var_delete failed");
    int rc = weft_engine_destroy(pe->eng);
    if (rc)
      bench_fail("weft_engine_destroy: %s", weft_strerror(rc));
    free(pipe.pe[e].item);
  }
}

int main(int argc, char **argv) {
  static const char *const supported[] = {"fib",       "pfor_imb",   "pfor_fine",  "reduce",
                                          "idle",      "wake",       "chain",      "indep",
                                          "dag",       "wave",       "pipeline",   "graph_dag",
                                          "graph_grid", "graph_tree", "fanout",     NULL};
  /* --pushers P[,P...] is bench_weft's own (the op lists): taken out
   * before the common command line is parsed. */
  int nargs = 0;
  for (int i = 0; i < argc; i++) {
    if (i > 0 && !strcmp(argv[i], "--pushers") && i + 1 < argc) {
      char *list = argv[++i], *end;
      for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        long p = strtol(tok, &end, 10);
        if (*end || p < 1 || p >= PUSHERS_MAX || pushers_n == PUSHERS_MAX) {
          fprintf(stderr, "bench_weft: --pushers takes counts 1-%d, comma-separated\n",
                  PUSHERS_MAX - 1);
          return 2;
        }
        pushers_list[pushers_n++] = (int)p;
      }
      continue;
    }
    argv[nargs++] = argv[i];
  }
  argc = nargs;
  bench_args a;
  bench_parse_args(argc, argv, RT, supported, &a);
  if (pushers_n > 0 && !bench_is_dep_workload(a.workload)) {
    fprintf(stderr, "bench_weft: --pushers is for the op lists (chain, indep, dag, wave)\n");
    return 2;
  }

  weft_pool_config cfg;
  weft_pool_config_default(&cfg);
  cfg.num_threads = a.threads;
  cfg.name = "bench";
  int rc = weft_pool_create(&pool, &cfg);
  if (rc) {
    fprintf(stderr, "bench_weft: weft_pool_create: %s\n", weft_strerror(rc));
    return 1;
  }
  if (weft_pool_num_threads(pool) != a.threads)
    bench_fail("pool has %d threads, asked for %d", weft_pool_num_threads(pool), a.threads);

  driver d = {.a = &a};
  if (!strcmp(a.workload, "fib")) {
    d.body = body_fib;
    run_in_pool(&d);
  } else if (!strcmp(a.workload, "pfor_imb")) {
    d.body = body_imb;
    run_in_pool(&d);
  } else if (!strcmp(a.workload, "pfor_fine")) {
    d.fine_out = bench_fine_alloc();
    d.body = body_fine;
    run_in_pool(&d);
  } else if (!strcmp(a.workload, "reduce")) {
    d.reduce_in = bench_reduce_alloc();
    d.body = body_reduce;
    run_in_pool(&d);
  } else if (!strcmp(a.workload, "idle")) {
    d.fine_out = bench_fine_alloc();
    d.body = body_burst;
    bench_idle_run(RT, &a, burst, &d);
  } else if (!strcmp(a.workload, "wake")) {
    bench_wake_run(RT, &a, submit, NULL, "weft_pool_submit from main (non-worker)");
  } else if (!strcmp(a.workload, "pipeline")) {
    bench_pipeline(&a);
  } else if (bench_is_graph_workload(a.workload)) {
    bench_graph(&a);
  } else if (!strcmp(a.workload, "fanout")) {
    bench_fanout_run(RT, &a, fanout_rep, NULL,
                     ",\"push\":\"weft_group_spawn from main (non-worker) into one group, "
                     "weft_group_wait from main (it helps): N workers + main\"");
  } else if (pushers_n > 0) {
    bench_dep_pushers(&a);
  } else {
    bench_dep(&a);
  }

  rc = weft_pool_destroy(pool);
  if (rc)
    bench_fail("weft_pool_destroy: %s", weft_strerror(rc));
  free(d.fine_out);
  free(d.reduce_in);
  return bench_exit_code();
}
