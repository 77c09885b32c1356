/* SPDX-License-Identifier: MIT */
/*
 * bench_weftxx: the bench workloads (harness.h) on weft's C++ API,
 * include/weft/weft.hpp, written as a C++ user writes them: lambdas,
 * weft::pool, weft::group, pool.parallel_for, engine.push(lambda,
 * weft::reads{...}, weft::writes{...}), engine.capture(...) + launch. The
 * runtime is "weft++"; bench/engine/run.py puts its rows beside bench_weft's (the
 * C API) with the ratio C++ / C.
 *
 *   bench_weftxx --workload W --threads N --reps R [--quick]
 *
 * W: fib, pfor_imb, pfor_fine, reduce, the op lists chain, indep, dag,
 * wave (with their "<workload>_replay" line), the graph shapes graph_dag,
 * graph_grid, graph_tree (with "<shape>_relaunch") and fanout. Everything else is bench_weft.c's,
 * mirrored line for line so that the only difference is the API: the same
 * harness, kernels, checks, timing rules, warm-ups and JSON.
 *
 * --threads N is a weft::pool with num_threads = N (spin count, affinity:
 * automatic, so WEFT_SPIN_COUNT / WEFT_AFFINITY apply), name "bench". The
 * timed loops of fib, pfor_imb and pfor_fine run inside one pool task:
 * main submits it (pool.submit of a lambda) and sleeps on a semaphore until
 * it is done, so exactly N threads compute. fib: a weft::group on the
 * stack, g.spawn([&x, n] { x = fib(n - 1); }), fib(n - 2) inline, g.wait().
 * pfor: pool.parallel_for(begin, end, lambda) with grain 0 (automatic).
 * reduce: pool.parallel_reduce(sum, 0, n, 0.0, body, combine), grain 0 and
 * no flags, as bench_weft's weft_parallel_reduce.
 *
 * chain, indep, dag, wave (harness.h, op lists): a weft::engine on that
 * pool (kind and max_inflight automatic), one weft::var per list var (made
 * once, reused by every repetition), one engine.push per op in list order:
 * the lambda [i] { run op i }, weft::reads{...} with its 0-2 read vars,
 * weft::writes{its var}, op_options with the workload's name, all from ONE
 * thread, two ways, each with its own warm-up, as bench_weft.c:
 *   main    the main thread (not a worker) pushes; N workers run the ops;
 *   driver  one driver op (a lambda, no vars) pushed from main pushes them
 *           all from inside the pool; main calls wait_all at once.
 * TIMED: from just before the first push to wait_all's return in main
 * (driver: the clock starts inside the driver op). The headline is the
 * main mode; the driver's samples are in "other_samples".
 * replay ("<workload>_replay"): engine.capture([] { push every op }) once
 * from main (NOT timed: "capture_ns_per_op"), BENCH_REPLAY_WARM_LAUNCHES
 * untimed launches, then each repetition is graph.launch() + wait_all()
 * from main; TIMED: from just before the launch to wait_all's return;
 * "fresh_samples" has the main mode's samples. At 1 thread one more launch
 * logs the order the worker ran the ops in and the serial loop runs them in
 * that order ("serial_in_run_order_ns_per_op").
 * BENCH_WEFT_PUSH=main, =driver or =replay runs that mode alone (for
 * profiling), as for bench_weft. The JSON has the pool's counters per op
 * ("pool_main", "pool_driver", "pool_replay") and the CPU time per op
 * ("cpu_main", "cpu_driver"), as bench_weft's.
 */
#include "harness.h"

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <weft/weft.hpp>

static const char RT[] = "weft++";
static weft::pool *pool;     /* made in main */
static weft::engine *engine; /* made by bench_dep */
static std::atomic<int> first_error{0}; /* first failure a weft call returned inside a task */

static void note_error(weft::status st) {
  if (st.ok())
    return;
  int zero = 0;
  first_error.compare_exchange_strong(zero, st.code());
}

static void check_errors(const char *what) {
  int rc = first_error.exchange(0);
  if (rc)
    bench_fail("%s: weft returned %d (%s)", what, rc, weft::status(rc).message());
}

/* ------------------------------------------------------------------- fib */

static uint64_t fib(int n) {
  if (n < 2)
    return (uint64_t)n;
  uint64_t x = 0;
  weft::group g(*pool);
  weft::status st = g.spawn([&x, n] { x = fib(n - 1); });
  if (!st) {
    note_error(st);
    x = fib(n - 1);
  }
  uint64_t y = fib(n - 2);
  note_error(g.wait());
  return x + y;
}

/* ---------------------------------------------------------------- pfor */

static std::atomic<uint64_t> imb_sum{0};

static void run_fine(uint32_t *out, uint32_t seed) {
  note_error(pool->parallel_for(0, BENCH_FINE_N, [out, seed](size_t begin, size_t end) {
    bench_fine_range(out, begin, end, seed);
  }));
}

/* ---------------------------------------------------------------- reduce */

static double run_reduce(const double *x) {
  double sum = -1;
  note_error(pool->parallel_reduce(
    sum, 0, BENCH_REDUCE_N, 0.0,
    [x](size_t begin, size_t end, double &acc) { acc += bench_reduce_range(x, begin, end); },
    [](double &acc, const double &other) { acc += other; }));
  return sum;
}

/* ------------------------------------------------------ driver in the pool */

struct driver {
  const bench_args *a;
  void (*body)(driver *);
  uint32_t *fine_out;
  double *reduce_in;
  bench_event done;
};

/* Runs d->body inside one pool task; main blocks until it is over. */
static void run_in_pool(driver *d) {
  bench_event_init(&d->done);
  weft::status st = pool->submit([d] {
    if (weft::current_worker() < 0)
      bench_fail("driver task runs outside the pool");
    d->body(d);
    bench_event_post(&d->done);
  });
  if (!st) {
    bench_fail("pool.submit: %s", st.message());
    bench_event_destroy(&d->done);
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
    imb_sum.store(0);
    uint64_t t0 = bench_now_ns();
    weft::status st = pool->parallel_for(begin, BENCH_IMB_N, [](size_t b, size_t e) {
      imb_sum.fetch_add(bench_imb_range(b, e), std::memory_order_relaxed);
    });
    uint64_t t1 = bench_now_ns();
    note_error(st);
    check_errors("pfor_imb");
    if (r < 0)
      continue;
    bench_check_u64("pfor_imb sum", imb_sum.load(), want);
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
    if (bench_reduce_timed(&r, warm0)) // after the warm-up (harness.h)
      bench_series_add(&s, (double)(t1 - t0) / 1e6);
  }
  bench_emit(RT, "reduce", d->a->threads, "ms", &s, ",\"grain\":\"auto\"");
  bench_series_free(&s);
}

/* ------------------------------------------------------------- op lists */

struct dep_state {
  const bench_oplist *L;
  bench_slot *vals;      /* this repetition's values (the ops run on them) */
  const weft::var *vars; /* one per list var */
  int from_driver;       /* 0: main pushes; 1: a driver op pushes */
  uint64_t t0;           /* when the first push began */
  /* Set for one extra launch at 1 thread: each op appends its index, so
   * that the serial loop can run the ops in the order the worker did. */
  size_t *order;
  std::atomic<size_t> norder;
  /* CPU time over the timed part of a mode's repetitions (warm-up
   * included), summed: every thread's, and (main mode) the main thread's
   * own while it pushes (push_all, before wait_all). */
  uint64_t cpu_all_ns, cpu_pusher_ns;
  unsigned cpu_reps;
};

static dep_state dep;

/* Op i of the list: what every operator's lambda runs. */
static inline void dep_op(size_t i) {
  bench_op_exec(dep.vals, dep.L->ops, i);
  if (dep.order) {
    size_t k = dep.norder.fetch_add(1, std::memory_order_relaxed);
    if (k < dep.L->nops)
      dep.order[k] = i;
  }
}

static weft::graph *dep_graph; /* the replay's graph (bench_dep) */
/* Untimed launches before the replay's warm-up and samples (bench_weft.c). */
#define BENCH_REPLAY_WARM_LAUNCHES 8

/* Pushes every op of the list, in order, as a user's loop would: one
 * lambda per op, its reads and its write; the first error stops it. */
static weft::status push_all(void) {
  const bench_oplist *L = dep.L;
  weft::engine &eng = *engine;
  const weft::var *vars = dep.vars;
  const weft::op_options opt = weft::op_options{}.with_name(L->workload);
  for (size_t i = 0; i < L->nops; i++) {
    const bench_op &o = L->ops[i];
    auto op = [i] { dep_op(i); };
    weft::status st;
    switch (o.nr) {
    case 0:
      st = eng.push(op, weft::writes{vars[o.w]}, opt);
      break;
    case 1:
      st = eng.push(op, weft::reads{vars[o.r[0]]}, weft::writes{vars[o.w]}, opt);
      break;
    default:
      st = eng.push(op, weft::reads{vars[o.r[0]], vars[o.r[1]]}, weft::writes{vars[o.w]}, opt);
      break;
    }
    if (!st)
      return st;
  }
  return weft::status();
}

/* The floor of a replay at 1 thread, apart from the scheduler (as
 * bench_weft.c's): one more launch logs the order the worker ran the ops
 * in, then the serial loop runs them in that order (3 times, checked).
 * Returns the median ns/op, or -1. */
static double replay_order_floor(const bench_oplist *L, bench_slot *vals) {
  std::vector<size_t> order(L->nops);
  bench_vars_init(L, vals);
  dep.L = L;
  dep.vals = vals;
  dep.norder.store(0, std::memory_order_relaxed);
  dep.order = order.data();
  weft::status rc = dep_graph->launch();
  weft::status rc2 = engine->wait_all();
  dep.order = nullptr;
  double best[3];
  int n = 0;
  size_t ran = dep.norder.load(std::memory_order_relaxed);
  if (!rc || !rc2 || ran != L->nops) {
    bench_fail("replay order log: launch %d, wait %d, %zu of %zu ops", rc.code(), rc2.code(),
               ran, L->nops);
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
  if (n < 3)
    return -1;
  double t; /* the median of three */
  if (best[0] > best[1]) { t = best[0]; best[0] = best[1]; best[1] = t; }
  if (best[1] > best[2]) { t = best[1]; best[1] = best[2]; best[2] = t; }
  if (best[0] > best[1]) { t = best[0]; best[0] = best[1]; best[1] = t; }
  return best[1];
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
    weft::status st = push_all();
    dep.cpu_pusher_ns += bench_thread_cpu_ns() - me0;
    note_error(st);
    st = engine->wait_all();
    t1 = bench_now_ns();
    note_error(st);
  } else {
    weft::status st = engine->push(
      [](const weft::run_ctx &rc) {
        if (rc.worker < 0)
          bench_fail("driver op runs outside the pool (worker %d)", rc.worker);
        dep.t0 = bench_now_ns();
        note_error(push_all());
      },
      weft::reads{}, weft::writes{}, weft::op_options{}.with_name("driver"));
    if (!st) {
      note_error(st);
      t1 = dep.t0 = 0;
    } else {
      st = engine->wait_all(); /* the driver's t0 is read after it */
      t1 = bench_now_ns();
      note_error(st);
    }
  }
  dep.cpu_all_ns += bench_cpu_ns() - cpu0;
  dep.cpu_reps++;
  check_errors(L->workload);
  return t1 - dep.t0;
}

/* replay: the list captured once into a graph (bench_dep, not timed); one
 * repetition launches it from main and waits. The ops read dep.vals, so
 * the recorded ops run on this repetition's values. */
static uint64_t dep_replay_rep(void *ctx, const bench_oplist *L, bench_slot *vals) {
  (void)ctx;
  dep.L = L;
  dep.vals = vals;
  uint64_t t0 = bench_now_ns();
  weft::status st = dep_graph->launch();
  note_error(st);
  weft::status st2 = engine->wait_all();
  uint64_t t1 = bench_now_ns();
  note_error(st2);
  check_errors(L->workload);
  return t1 - t0;
}

/* The pool's counters summed over its workers (pool.stats). */
static weft_worker_stats pool_totals(void) {
  weft_worker_stats w[64], t;
  memset(&t, 0, sizeof t);
  int n = 0;
  if (!pool->stats(w, &n))
    n = 0;
  for (int i = 0; i < n; i++) {
    t.tasks_run += w[i].tasks_run;
    t.steals += w[i].steals;
    t.failed_steal_rounds += w[i].failed_steal_rounds;
    t.parks += w[i].parks;
    t.wakeups += w[i].wakeups;
  }
  return t;
}

/* ',"pool_<mode>":{...}': as bench_weft.c's. */
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

/* ',"cpu_<mode>":{...}': as bench_weft.c's. */
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

static void bench_dep(const bench_args *a) {
  weft::engine eng(*pool); /* kind and max_inflight automatic */
  if (!eng.ok()) {
    bench_fail("weft::engine: %s", eng.init_status().message());
    return;
  }
  engine = &eng;
  bench_oplist L;
  bench_oplist_make(&L, a->workload, a->quick);
  bench_slot *vals = bench_vars_alloc(L.nvars);
  std::vector<weft::var> vars;
  vars.reserve(L.nvars);
  for (size_t v = 0; v < L.nvars && !bench_failed(); v++) {
    vars.emplace_back(eng);
    if (!vars.back().ok())
      bench_fail("weft::var: %s", vars.back().init_status().message());
  }
  dep.vars = vars.data();

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
      fprintf(stderr, "bench_weftxx: BENCH_WEFT_PUSH must be main, driver or replay, not '%s'\n",
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
    bench_dep_time(RT, a, &L, vals, dep_rep, nullptr, &s[m]);
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
   * repetition launches the graph from main and waits. */
  if (only_mode < 0 || only_mode == 2) {
    double capture_ns = 0, order_floor = -1;
    weft::graph graph;
    if (!bench_failed()) {
      dep.L = &L;
      dep.vals = vals;
      uint64_t c0 = bench_now_ns();
      graph = eng.capture([] { return push_all(); });
      capture_ns = (double)(bench_now_ns() - c0) / (double)L.nops;
      if (!graph.init_status())
        bench_fail("engine.capture: %s", graph.init_status().message());
      else if (!graph.ok())
        bench_fail("engine.capture: no graph");
    }
    dep_graph = &graph;
    /* A training loop's first steps, untimed (bench_weft.c): each warm
     * launch's result is checked as a timed one's. */
    for (int w = 0; w < BENCH_REPLAY_WARM_LAUNCHES && !bench_failed(); w++) {
      bench_vars_init(&L, vals);
      (void)dep_replay_rep(nullptr, &L, vals);
      if (!bench_failed())
        bench_oplist_verify(&L, vals, RT);
    }
    if (!bench_failed()) {
      weft_worker_stats before = pool_totals();
      bench_dep_time(RT, a, &L, vals, dep_replay_rep, nullptr, &s[2]);
      weft_worker_stats after = pool_totals();
      pool_stats_json(stats[2], sizeof stats[2], mode_name[2], &before, &after,
                      (double)L.nops * (double)(s[2].n + 1));
      if (a->threads == 1 && !bench_failed())
        order_floor = replay_order_floor(&L, vals);
    }
    if (graph.ok()) {
      weft::status st = graph.destroy();
      if (!st)
        bench_fail("graph.destroy: %s", st.message());
    }
    dep_graph = nullptr;
    char extra[2048];
    int len = snprintf(extra, sizeof extra,
                       ",\"push_from\":\"replay\",\"replay\":\"captured once from main (not "
                       "timed: engine.capture), launched %d times untimed, then graph.launch() "
                       "+ engine.wait_all() from main\","
                       "\"capture_ns_per_op\":%.1f",
                       BENCH_REPLAY_WARM_LAUNCHES, capture_ns);
    if (order_floor >= 0)
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

  for (weft::var &v : vars) {
    weft::status st = v.destroy();
    if (!st)
      bench_fail("var.destroy: %s", st.message());
  }
  weft::status st = eng.destroy();
  if (!st)
    bench_fail("engine.destroy: %s", st.message());
  engine = nullptr;
  dep.vars = nullptr;
  for (int m = 0; m < 3; m++)
    bench_series_free(&s[m]);
  bench_vars_free(vals);
  bench_oplist_free(&L);
}

/* --------------------------------------------------------- graph shapes */

/* graph_dag, graph_grid, graph_tree (harness.h), as bench_weft.c's: a
 * weft::engine on the pool, eng.make_graph(), graph.add of one lambda per
 * node in index order ([i] { run node i }, no vars, op_options with the
 * shape's name), then graph.edge of every edge, all from main; launch() +
 * wait_all(). "<shape>": TIMED from make_graph to wait_all's return (the
 * graph's destroy after it, not timed); "<shape>_relaunch": the graph made
 * once, BENCH_REPLAY_WARM_LAUNCHES untimed launches (checked), then
 * launch() + wait_all(), TIMED. The two alternate (bench_graph_time). */

static struct {
  const bench_gshape *G;
  bench_gslot *s;
  weft::graph *relaunch_graph;
  double destroy_ns;
} gsh;

/* Every node, then every edge, as a user's loops would; the first error. */
static weft::status graph_fill(weft::graph &g, const bench_gshape *G) {
  const weft::op_options opt = weft::op_options{}.with_name(G->workload);
  for (size_t i = 0; i < G->n; i++) {
    weft::status st = g.add([i] { bench_gnode_exec(gsh.G, gsh.s, i); }, {}, {}, opt);
    if (!st)
      return st;
  }
  for (size_t i = 0; i < G->n; i++)
    for (uint32_t k = G->pred0[i]; k < G->pred0[i + 1]; k++) {
      weft::status st = g.edge(G->pred[k], i);
      if (!st)
        return st;
    }
  return weft::status();
}

static uint64_t graph_once_rep(void *, const bench_gshape *G, bench_gslot *s) {
  gsh.G = G;
  gsh.s = s;
  uint64_t t0 = bench_now_ns(), t1;
  {
    weft::graph g = engine->make_graph();
    weft::status st = g.init_status();
    if (st)
      st = graph_fill(g, G);
    if (st)
      st = g.launch();
    if (!st)
      bench_fail("%s: the graph: %s", G->workload, st.message());
    weft::status st2 = engine->wait_all();
    t1 = bench_now_ns();
    if (!st2)
      bench_fail("%s: wait_all: %s", G->workload, st2.message());
  } /* destroyed here */
  gsh.destroy_ns = (double)(bench_now_ns() - t1) / (double)G->n;
  return t1 - t0;
}

static uint64_t graph_relaunch_rep(void *, const bench_gshape *G, bench_gslot *s) {
  gsh.G = G;
  gsh.s = s;
  uint64_t t0 = bench_now_ns();
  weft::status st = gsh.relaunch_graph->launch();
  if (!st)
    bench_fail("%s: launch: %s", G->workload, st.message());
  weft::status st2 = engine->wait_all();
  uint64_t t1 = bench_now_ns();
  if (!st2)
    bench_fail("%s: wait_all: %s", G->workload, st2.message());
  return t1 - t0;
}

static void bench_graph(const bench_args *a) {
  weft::engine eng(*pool);
  if (!eng.ok()) {
    bench_fail("weft::engine: %s", eng.init_status().message());
    return;
  }
  engine = &eng;
  bench_gshape G;
  bench_gshape_make(&G, a->workload);
  bench_gslot *s = bench_gslots_alloc(G.n);
  std::string relaunch_metric = std::string(G.workload) + "_relaunch";
  double make_ns = 0;
  {
    uint64_t m0 = bench_now_ns();
    weft::graph rg = eng.make_graph();
    weft::status st = rg.init_status();
    if (st)
      st = graph_fill(rg, &G);
    make_ns = (double)(bench_now_ns() - m0) / (double)G.n;
    if (!st)
      bench_fail("%s: the graph: %s", G.workload, st.message());
    gsh.relaunch_graph = &rg;
    for (int w = 0; w < BENCH_REPLAY_WARM_LAUNCHES && !bench_failed(); w++) {
      bench_gslots_reset(&G, s);
      (void)graph_relaunch_rep(nullptr, &G, s);
      bench_gshape_verify(&G, s, RT, relaunch_metric.c_str());
    }
    bench_graph_mode modes[2] = {{G.workload, graph_once_rep, nullptr, {}},
                                 {relaunch_metric.c_str(), graph_relaunch_rep, nullptr, {}}};
    if (!bench_failed())
      bench_graph_time(RT, a, &G, s, modes, 2);
    else
      for (auto &m : modes)
        bench_series_init(&m.s, 1);
    char extra[512];
    snprintf(extra, sizeof extra,
             ",\"push\":\"engine.make_graph(), graph.add of a lambda a node, graph.edge of "
             "every edge, launch() + wait_all() from main\",\"destroy_ns_per_node\":%.1f",
             gsh.destroy_ns);
    bench_graph_emit(RT, a, &G, &modes[0], extra);
    snprintf(extra, sizeof extra,
             ",\"push\":\"the graph made once (not timed: make_ns_per_node), launched %d "
             "times untimed, then launch() + wait_all() from main\",\"make_ns_per_node\":%.1f",
             BENCH_REPLAY_WARM_LAUNCHES, make_ns);
    bench_graph_emit(RT, a, &G, &modes[1], extra);
    gsh.relaunch_graph = nullptr;
  } /* rg destroyed here */
  weft::status st = eng.destroy();
  if (!st)
    bench_fail("engine.destroy: %s", st.message());
  engine = nullptr;
  free(s);
  bench_gshape_free(&G);
}

/* --------------------------------------------------------------- fanout */

/* fanout (harness.h), as bench_weft.c's: main makes a weft::group and
 * spawns one lambda a task ([k] { task k }), then g.wait(), in which it
 * helps. TIMED: from the first spawn to wait's return. */
static struct {
  uint32_t *slots;
  uint32_t seed;
} fan;

static uint64_t fanout_rep(void *, uint32_t *slots, uint32_t seed) {
  fan.slots = slots;
  fan.seed = seed;
  weft::group g(*pool);
  uint64_t t0 = bench_now_ns();
  weft::status st;
  for (size_t k = 0; k < BENCH_FANOUT_TASKS && st; k++)
    st = g.spawn([k] { bench_fanout_task(fan.slots, k, fan.seed); });
  if (!st)
    bench_fail("fanout: spawn: %s", st.message());
  weft::status st2 = g.wait();
  uint64_t t1 = bench_now_ns();
  if (!st2)
    bench_fail("fanout: wait: %s", st2.message());
  return t1 - t0;
}

int main(int argc, char **argv) {
  static const char *const supported[] = {"fib",       "pfor_imb",   "pfor_fine",  "reduce",
                                          "chain",     "indep",      "dag",        "wave",
                                          "graph_dag", "graph_grid", "graph_tree", "fanout",
                                          nullptr};
  bench_args a;
  bench_parse_args(argc, argv, RT, supported, &a);

  weft_pool_config cfg = weft::pool::default_config();
  cfg.num_threads = a.threads;
  cfg.name = "bench";
  weft::pool p(&cfg);
  if (!p.ok()) {
    fprintf(stderr, "bench_weftxx: weft::pool: %s\n", p.init_status().message());
    return 1;
  }
  pool = &p;
  if (p.num_threads() != a.threads)
    bench_fail("pool has %d threads, asked for %d", p.num_threads(), a.threads);

  driver d = {};
  d.a = &a;
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
  } else if (bench_is_graph_workload(a.workload)) {
    bench_graph(&a);
  } else if (!strcmp(a.workload, "fanout")) {
    bench_fanout_run(RT, &a, fanout_rep, nullptr,
                     ",\"push\":\"weft::group g(pool); g.spawn of a lambda a task from main "
                     "(non-worker), g.wait() (it helps): N workers + main\"");
  } else {
    bench_dep(&a);
  }

  weft::status st = p.destroy();
  if (!st)
    bench_fail("pool.destroy: %s", st.message());
  pool = nullptr;
  free(d.fine_out);
  free(d.reduce_in);
  return bench_exit_code();
}
