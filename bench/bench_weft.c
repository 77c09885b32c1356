/*
 * bench_weft: the bench workloads (harness.h) on weft.
 *
 *   bench_weft --workload W --threads N --reps R [--quick]
 *
 * --threads N is a pool with num_threads = N (spin count, affinity: automatic,
 * so WEFT_SPIN_COUNT / WEFT_AFFINITY apply). The timed loops of fib, pfor_imb
 * and pfor_fine run inside one pool task: main submits it with
 * weft_pool_submit and sleeps on a semaphore until it is done, so exactly N
 * threads compute, as with the peers. fib: weft_group on the stack, spawn
 * fib(n-1), fib(n-2) inline, weft_group_wait. pfor: weft_parallel_for with
 * grain 0 (automatic). wake: weft_pool_submit from main, a non-worker thread.
 */
#include "harness.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/weft.h>

static const char RT[] = "weft";
static weft_pool *pool;
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

/* ------------------------------------------------------ driver in the pool */

typedef struct driver {
  const bench_args *a;
  void (*body)(struct driver *);
  uint32_t *fine_out;
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

int main(int argc, char **argv) {
  static const char *const supported[] = {"fib", "pfor_imb", "pfor_fine", "idle", "wake", NULL};
  bench_args a;
  bench_parse_args(argc, argv, RT, supported, &a);

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
  } else if (!strcmp(a.workload, "idle")) {
    d.fine_out = bench_fine_alloc();
    d.body = body_burst;
    bench_idle_run(RT, &a, burst, &d);
  } else if (!strcmp(a.workload, "wake")) {
    bench_wake_run(RT, &a, submit, NULL, "weft_pool_submit from main (non-worker)");
  }

  rc = weft_pool_destroy(pool);
  if (rc)
    bench_fail("weft_pool_destroy: %s", weft_strerror(rc));
  free(d.fine_out);
  return bench_exit_code();
}
