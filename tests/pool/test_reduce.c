/* SPDX-License-Identifier: MIT */
/*
 * weft_parallel_reduce: the right result from every kind of caller (the
 * test's own thread, a worker, several threads at once on one pool), at
 * 1-4 threads and several grains; the deterministic mode gives the same
 * bits at every run and thread count, and keeps the range's order for a
 * combine that is not commutative; large accumulators; a body's failure;
 * bad input. Public API only.
 */
#include "../common/testutil.h"

static void setup(void)
{
  tu_clear_weft_env();
}

static int sum_body(size_t b, size_t e, void *acc, void *arg)
{
  (void)arg;
  uint64_t s = *(uint64_t *)acc;
  for (size_t i = b; i < e; i++)
    s += i;
  *(uint64_t *)acc = s;
  return 0;
}

static void sum_combine(void *acc, const void *other, void *arg)
{
  (void)arg;
  *(uint64_t *)acc += *(const uint64_t *)other;
}

static uint64_t want_sum(size_t b, size_t e)
{
  uint64_t s = 0;
  for (size_t i = b; i < e; i++)
    s += i;
  return s;
}

static const size_t grains[] = {0, 1, 7, 1000, 1u << 20};

Test(reduce, integer_sums_from_the_caller, .init = setup, .timeout = TU_TIMEOUT(120))
{
  size_t n = (size_t)tu_scaled(300000, 30000);
  for (int threads = 1; threads <= 4; threads++) {
    weft_pool *p = tu_pool(threads, -1);
    for (size_t gi = 0; gi < sizeof grains / sizeof *grains; gi++)
      for (unsigned flags = 0; flags <= WEFT_REDUCE_DETERMINISTIC; flags++) {
        uint64_t zero = 0, out = 1;
        int rc = weft_parallel_reduce(p, 5, 5 + n, grains[gi], &zero, sizeof zero, sum_body,
                                      sum_combine, NULL, &out, flags);
        cr_assert_eq(rc, 0, "reduce = %d", rc);
        cr_assert_eq(out, want_sum(5, 5 + n), "%d threads, grain %zu, flags %u: %llu", threads,
                     grains[gi], flags, (unsigned long long)out);
      }
    tu_destroy(p);
  }
}

/* From a worker (inside a task), and with the identity not zero (it is
 * combined in once, whatever the chunking). */
typedef struct task_reduce {
  weft_pool *pool;
  unsigned flags;
  uint64_t out;
  int rc;
} task_reduce;

static int reduce_in_task(void *arg)
{
  task_reduce *t = arg;
  uint64_t zero = 0;
  t->rc = weft_parallel_reduce(t->pool, 0, 100000, 0, &zero, sizeof zero, sum_body, sum_combine,
                               NULL, &t->out, t->flags);
  return 0;
}

Test(reduce, from_inside_a_task, .init = setup, .timeout = TU_TIMEOUT(60))
{
  weft_pool *p = tu_pool(2, -1);
  for (unsigned flags = 0; flags <= WEFT_REDUCE_DETERMINISTIC; flags++) {
    task_reduce t = {p, flags, 0, -1};
    weft_group g;
    weft_group_init(&g, p);
    cr_assert_eq(weft_group_spawn(&g, reduce_in_task, &t), 0);
    cr_assert_eq(weft_group_wait(&g), 0);
    cr_assert_eq(t.rc, 0);
    cr_assert_eq(t.out, want_sum(0, 100000), "flags %u", flags);
  }
  tu_destroy(p);
}

/* Several threads of their own reduce on one pool at once: each may run
 * the others' chunks while it waits (the overflow accumulator's case). */
typedef struct conc_arg {
  weft_pool *pool;
  int id;
  atomic_int *bad;
} conc_arg;

static void *concurrent_reducer(void *arg)
{
  conc_arg *c = arg;
  for (int r = 0; r < 50; r++) {
    size_t b = (size_t)c->id * 1000, e = b + 20000 + (size_t)r * 10;
    uint64_t zero = 0, out = 0;
    unsigned flags = (r % 2) ? WEFT_REDUCE_DETERMINISTIC : 0;
    int rc = weft_parallel_reduce(c->pool, b, e, 64, &zero, sizeof zero, sum_body, sum_combine,
                                  NULL, &out, flags);
    if (rc || out != want_sum(b, e))
      atomic_fetch_add(c->bad, 1);
  }
  return NULL;
}

Test(reduce, several_threads_on_one_pool, .init = setup, .timeout = TU_TIMEOUT(120))
{
  weft_pool *p = tu_pool(2, -1);
  atomic_int bad = 0;
  enum { T = 4 };
  pthread_t th[T];
  conc_arg a[T];
  for (int i = 0; i < T; i++) {
    a[i] = (conc_arg){p, i, &bad};
    cr_assert_eq(pthread_create(&th[i], NULL, concurrent_reducer, &a[i]), 0);
  }
  for (int i = 0; i < T; i++)
    pthread_join(th[i], NULL);
  tu_destroy(p);
  cr_assert_eq(atomic_load(&bad), 0, "%d wrong reductions", atomic_load(&bad));
}

/* Floating point: the deterministic mode's bits do not move. */
static int fsum_body(size_t b, size_t e, void *acc, void *arg)
{
  const double *x = arg;
  double s = *(double *)acc;
  for (size_t i = b; i < e; i++)
    s += x[i];
  *(double *)acc = s;
  return 0;
}

static void fsum_combine(void *acc, const void *other, void *arg)
{
  (void)arg;
  *(double *)acc += *(const double *)other;
}

Test(reduce, deterministic_floating_point_is_bitwise_stable, .init = setup,
     .timeout = TU_TIMEOUT(120))
{
  size_t n = (size_t)tu_scaled(1000000, 100000);
  double *x = malloc(n * sizeof *x);
  cr_assert_not_null(x);
  uint64_t rs = 3;
  for (size_t i = 0; i < n; i++) /* magnitudes far apart: the grouping shows in the bits */
    x[i] = (double)(tu_rand(&rs) % 1000000) * ((i % 3) ? 1e-8 : 1e8);
  for (size_t gi = 0; gi < 3; gi++) {
    size_t grain = grains[gi * 2]; /* 0, 7, 1 << 20 */
    double first = 0;
    bool have = false;
    for (int threads = 1; threads <= 4; threads++) {
      weft_pool *p = tu_pool(threads, -1);
      for (int r = 0; r < 3; r++) {
        double zero = 0, out = 0;
        cr_assert_eq(weft_parallel_reduce(p, 0, n, grain, &zero, sizeof zero, fsum_body,
                                          fsum_combine, x, &out, WEFT_REDUCE_DETERMINISTIC),
                     0);
        if (!have) {
          first = out;
          have = true;
        }
        cr_assert(memcmp(&out, &first, sizeof out) == 0,
                  "grain %zu, %d threads, run %d: %.17g, first %.17g", grain, threads, r, out,
                  first);
      }
      tu_destroy(p);
    }
  }
  free(x);
}

/* A combine that is not commutative: the ranges must come in order. */
typedef struct span {
  long lo, hi; /* [lo, hi) covered; lo == hi == -1: empty */
  long bad;    /* combines out of order */
} span;

static int span_body(size_t b, size_t e, void *acc, void *arg)
{
  (void)arg;
  span *s = acc;
  if (s->lo == -1) {
    s->lo = (long)b;
  } else if (s->hi != (long)b) {
    s->bad++;
  }
  s->hi = (long)e;
  return 0;
}

static void span_combine(void *acc, const void *other, void *arg)
{
  (void)arg;
  span *a = acc;
  const span *o = other;
  a->bad += o->bad;
  if (o->lo == -1)
    return;
  if (a->lo == -1) {
    a->lo = o->lo;
  } else if (a->hi != o->lo) {
    a->bad++;
  }
  a->hi = o->hi;
}

Test(reduce, deterministic_keeps_the_range_order, .init = setup, .timeout = TU_TIMEOUT(60))
{
  for (int threads = 1; threads <= 4; threads++) {
    weft_pool *p = tu_pool(threads, -1);
    for (size_t gi = 0; gi < sizeof grains / sizeof *grains; gi++) {
      span id = {-1, -1, 0}, out = {0, 0, 99};
      cr_assert_eq(weft_parallel_reduce(p, 3, 50003, grains[gi], &id, sizeof id, span_body,
                                        span_combine, NULL, &out, WEFT_REDUCE_DETERMINISTIC),
                   0);
      cr_assert_eq(out.bad, 0, "%d threads, grain %zu: %ld combines out of order", threads,
                   grains[gi], out.bad);
      cr_assert_eq(out.lo, 3);
      cr_assert_eq(out.hi, 50003);
    }
    tu_destroy(p);
  }
}

/* A histogram of 1000 counters (8000 bytes an accumulator: allocated). */
enum { BINS = 1000 };

static int hist_body(size_t b, size_t e, void *acc, void *arg)
{
  (void)arg;
  long *h = acc;
  for (size_t i = b; i < e; i++)
    h[(i * 7919) % BINS]++;
  return 0;
}

static void hist_combine(void *acc, const void *other, void *arg)
{
  (void)arg;
  long *h = acc;
  const long *o = other;
  for (int k = 0; k < BINS; k++)
    h[k] += o[k];
}

Test(reduce, large_accumulators, .init = setup, .timeout = TU_TIMEOUT(60))
{
  weft_pool *p = tu_pool(3, -1);
  static long id[BINS], out[BINS], want[BINS];
  size_t n = 200000;
  for (size_t i = 0; i < n; i++)
    want[(i * 7919) % BINS]++;
  for (unsigned flags = 0; flags <= WEFT_REDUCE_DETERMINISTIC; flags++) {
    memset(out, 0xff, sizeof out);
    cr_assert_eq(weft_parallel_reduce(p, 0, n, 0, id, sizeof id, hist_body, hist_combine, NULL,
                                      out, flags),
                 0);
    cr_assert(memcmp(out, want, sizeof out) == 0, "flags %u: histogram differs", flags);
  }
  tu_destroy(p);
}

static int failing_body(size_t b, size_t e, void *acc, void *arg)
{
  (void)acc;
  (void)arg;
  return b <= 5000 && 5000 < e ? -42 : 0;
}

Test(reduce, a_body_failure_is_returned, .init = setup, .timeout = TU_TIMEOUT(60))
{
  weft_pool *p = tu_pool(2, -1);
  for (unsigned flags = 0; flags <= WEFT_REDUCE_DETERMINISTIC; flags++) {
    uint64_t zero = 0, out = 0;
    cr_assert_eq(weft_parallel_reduce(p, 0, 100000, 10, &zero, sizeof zero, failing_body,
                                      sum_combine, NULL, &out, flags),
                 -42, "flags %u", flags);
  }
  tu_destroy(p);
}

Test(reduce, empty_range_and_bad_input, .init = setup, .timeout = TU_TIMEOUT(60))
{
  weft_pool *p = tu_pool(1, -1);
  uint64_t seven = 7, out = 0;
  cr_assert_eq(weft_parallel_reduce(p, 4, 4, 0, &seven, sizeof seven, sum_body, sum_combine,
                                    NULL, &out, 0),
               0);
  cr_assert_eq(out, 7, "an empty range gives the identity");
  cr_assert_eq(weft_parallel_reduce(NULL, 0, 1, 0, &seven, 8, sum_body, sum_combine, NULL, &out,
                                    0),
               WEFT_EINVAL);
  cr_assert_eq(weft_parallel_reduce(p, 0, 1, 0, NULL, 8, sum_body, sum_combine, NULL, &out, 0),
               WEFT_EINVAL);
  cr_assert_eq(weft_parallel_reduce(p, 0, 1, 0, &seven, 0, sum_body, sum_combine, NULL, &out,
                                    0),
               WEFT_EINVAL);
  cr_assert_eq(weft_parallel_reduce(p, 0, 1, 0, &seven, 8, NULL, sum_combine, NULL, &out, 0),
               WEFT_EINVAL);
  cr_assert_eq(weft_parallel_reduce(p, 0, 1, 0, &seven, 8, sum_body, NULL, NULL, &out, 0),
               WEFT_EINVAL);
  cr_assert_eq(weft_parallel_reduce(p, 0, 1, 0, &seven, 8, sum_body, sum_combine, NULL, NULL,
                                    0),
               WEFT_EINVAL);
  cr_assert_eq(weft_parallel_reduce(p, 2, 1, 0, &seven, 8, sum_body, sum_combine, NULL, &out,
                                    0),
               WEFT_EINVAL);
  cr_assert_eq(weft_parallel_reduce(p, 0, 1, 0, &seven, 8, sum_body, sum_combine, NULL, &out,
                                    1u << 5),
               WEFT_EINVAL, "an unknown flag");
  tu_destroy(p);
}
