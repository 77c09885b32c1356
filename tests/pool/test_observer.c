/* SPDX-License-Identifier: MIT */
/*
 * The worker start/stop observer (weft_pool_config.observer) and the
 * config's reserved room (weft_pool_config.reserved).
 *
 * Every worker index gets exactly one START, then one STOP, both on that
 * worker's own thread (after its set-up: weft_current_worker and its name
 * are in place); every START returns before create does, so before any task
 * of the pool runs; every STOP comes after the pool's last task. A pool whose
 * create fails half way stops every worker it started. A non-NULL reserved
 * entry is refused before anything starts.
 */
#include "../common/testutil.h"

#include <limits.h>

#include "common/alloc.h"

#define MAX_W 64
#define REC_MAGIC 0x0b5e7e11

/* One pool's record; the observer's arg. Each slot is written by its worker's
 * thread only; the test thread reads after destroy (joined). */
typedef struct rec {
  int magic;
  const char *name;
  int nthreads;
  atomic_int starts[MAX_W], stops[MAX_W];
  pthread_t start_thread[MAX_W], stop_thread[MAX_W];
  long start_seq[MAX_W], stop_seq[MAX_W];
  /* Tasks: the first start and last end on the sequence, how many ran. */
  atomic_long first_task_seq, last_task_seq, tasks;
} rec;

static atomic_long g_seq; /* one order over every event of every pool */

static void observer(void *arg, weft_worker_event ev, int worker)
{
  rec *r = arg;
  TU_CHECK(r && r->magic == REC_MAGIC, "observer arg %p not passed through", arg);
  if (!r || r->magic != REC_MAGIC)
    return;
  TU_CHECK(worker >= 0 && worker < r->nthreads, "observer: worker %d of %d", worker, r->nthreads);
  if (worker < 0 || worker >= r->nthreads)
    return;
  TU_CHECK(weft_current_worker() == worker, "observer on worker %d's thread: current worker %d",
           worker, weft_current_worker());
  long seq = atomic_fetch_add(&g_seq, 1);
  if (ev == WEFT_WORKER_START) {
    TU_CHECK(atomic_load(&r->stops[worker]) == 0, "worker %d: START after STOP", worker);
    r->start_thread[worker] = pthread_self();
    r->start_seq[worker] = seq;
    /* Set up first: the thread already bears its name. */
    char want[64], comm[64];
    snprintf(want, sizeof want, "%s-w%d", r->name, worker);
    want[15] = '\0';
    tu_my_comm(comm, sizeof comm);
    TU_CHECK(strcmp(comm, want) == 0, "START of worker %d on thread \"%s\"", worker, comm);
    atomic_fetch_add(&r->starts[worker], 1);
  } else {
    TU_CHECK(ev == WEFT_WORKER_STOP, "observer event %d", (int)ev);
    TU_CHECK(atomic_load(&r->starts[worker]) == 1, "worker %d: STOP without START", worker);
    r->stop_thread[worker] = pthread_self();
    r->stop_seq[worker] = seq;
    atomic_fetch_add(&r->stops[worker], 1);
  }
}

static void rec_init(rec *r, const char *name, int nthreads)
{
  memset(r, 0, sizeof *r);
  r->magic = REC_MAGIC;
  r->name = name;
  r->nthreads = nthreads;
  atomic_init(&r->first_task_seq, LONG_MAX);
  atomic_init(&r->last_task_seq, -1);
}

static weft_pool *create_observed(rec *r)
{
  weft_pool_config cfg;
  weft_pool_config_default(&cfg);
  cfg.num_threads = r->nthreads;
  cfg.name = r->name;
  cfg.observer = observer;
  cfg.observer_arg = r;
  weft_pool *p = NULL;
  int rc = weft_pool_create(&p, &cfg);
  cr_assert_eq(rc, 0, "create(%d threads) = %d (%s)", r->nthreads, rc, weft_strerror(rc));
  return p;
}

/* A task: on a worker whose START was seen on this very thread. */
static int task(void *arg)
{
  rec *r = arg;
  long s = atomic_fetch_add(&g_seq, 1);
  long cur = atomic_load(&r->first_task_seq);
  while (s < cur && !atomic_compare_exchange_weak(&r->first_task_seq, &cur, s))
    ;
  int w = weft_current_worker();
  TU_CHECK(w >= 0 && w < r->nthreads, "task on worker %d", w);
  if (w >= 0 && w < r->nthreads) {
    TU_CHECK(atomic_load(&r->starts[w]) == 1, "worker %d runs a task before its START", w);
    TU_CHECK(pthread_equal(r->start_thread[w], pthread_self()),
             "worker %d runs a task off the thread of its START", w);
  }
  for (volatile int i = 0; i < 200; i++)
    ;
  atomic_fetch_add(&r->tasks, 1);
  long e = atomic_fetch_add(&g_seq, 1);
  cur = atomic_load(&r->last_task_seq);
  while (e > cur && !atomic_compare_exchange_weak(&r->last_task_seq, &cur, e))
    ;
  return 0;
}

static void check_rec(const rec *r, long ntasks)
{
  cr_assert_eq(atomic_load(&r->tasks), ntasks, "%s: %ld of %ld tasks ran", r->name,
               atomic_load(&r->tasks), ntasks);
  for (int i = 0; i < r->nthreads; i++) {
    cr_assert_eq(atomic_load(&r->starts[i]), 1, "%s: worker %d got %d STARTs", r->name, i,
                 atomic_load(&r->starts[i]));
    cr_assert_eq(atomic_load(&r->stops[i]), 1, "%s: worker %d got %d STOPs", r->name, i,
                 atomic_load(&r->stops[i]));
    cr_assert(pthread_equal(r->start_thread[i], r->stop_thread[i]),
              "%s: worker %d's START and STOP on different threads", r->name, i);
    for (int j = 0; j < i; j++)
      cr_assert(!pthread_equal(r->start_thread[i], r->start_thread[j]),
                "%s: workers %d and %d on one thread", r->name, j, i);
    cr_assert_lt(r->start_seq[i], atomic_load(&r->first_task_seq),
                 "%s: worker %d's START after a task of the pool ran", r->name, i);
    cr_assert_gt(r->stop_seq[i], atomic_load(&r->last_task_seq),
                 "%s: worker %d's STOP before the pool's last task ended", r->name, i);
  }
}

Test(observer, start_then_stop_once_per_worker_on_its_thread, .init = tu_clear_weft_env,
     .timeout = TU_TIMEOUT(60))
{
  const int counts[] = {1, 2, 3, 5, 8};
  static const char *names[] = {"obs1", "obs2", "obs3", "obs5", "obs8"};
  enum { NP = sizeof counts / sizeof counts[0] };
  static rec recs[NP];
  weft_pool *pools[NP];
  long ntasks = tu_scaled(2000, 100);
  /* Several pools alive at once, each with its own arg. */
  for (int k = 0; k < NP; k++) {
    rec_init(&recs[k], names[k], counts[k]);
    pools[k] = create_observed(&recs[k]);
    /* create returned: every START of this pool has returned. */
    for (int i = 0; i < counts[k]; i++)
      cr_assert_eq(atomic_load(&recs[k].starts[i]), 1, "%s: worker %d not STARTed by create",
                   names[k], i);
  }
  for (long n = 0; n < ntasks; n++)
    for (int k = 0; k < NP; k++)
      cr_assert_eq(weft_pool_submit(pools[k], task, &recs[k]), 0);
  for (int k = NP - 1; k >= 0; k--)
    tu_destroy(pools[k]);
  tu_assert_no_errors();
  for (int k = 0; k < NP; k++)
    check_rec(&recs[k], ntasks);
}

/* Tasks that submit more tasks from the workers (their own deques): STOP
 * still comes after every one, since destroy drains them first. */
typedef struct spawn_arg {
  rec *r;
  weft_pool *pool;
} spawn_arg;

static int spawner(void *arg)
{
  spawn_arg *a = arg;
  for (int i = 0; i < 4; i++)
    TU_CHECK(weft_pool_submit(a->pool, task, a->r) == 0, "nested submit failed");
  return task(a->r);
}

Test(observer, stop_after_tasks_submitted_by_tasks, .init = tu_clear_weft_env,
     .timeout = TU_TIMEOUT(60))
{
  static rec r;
  rec_init(&r, "obs-nest", 3);
  weft_pool *p = create_observed(&r);
  spawn_arg a = {&r, p};
  long n = tu_scaled(1000, 50);
  for (long i = 0; i < n; i++)
    cr_assert_eq(weft_pool_submit(p, spawner, &a), 0);
  tu_destroy(p);
  tu_assert_no_errors();
  check_rec(&r, 5 * n);
}

Test(observer, empty_pool_still_starts_and_stops, .init = tu_clear_weft_env,
     .timeout = TU_TIMEOUT(30))
{
  static rec r;
  rec_init(&r, "obs-idle", 4);
  weft_pool *p = create_observed(&r);
  tu_destroy(p);
  tu_assert_no_errors();
  check_rec(&r, 0);
}

Test(observer, failed_create_stops_every_started_worker, .init = tu_clear_weft_env,
     .timeout = TU_TIMEOUT(30))
{
  int base = tu_thread_baseline();
  for (int fail_at = 1; fail_at <= 4; fail_at++) {
    static rec r;
    rec_init(&r, "obs-fail", 4);
    weft_pool_config cfg;
    weft_pool_config_default(&cfg);
    cfg.num_threads = 4;
    cfg.name = r.name;
    cfg.observer = observer;
    cfg.observer_arg = &r;
    weft_pool *p = NULL;
    weft_test_fail_thread_at(fail_at); /* the fail_at-th worker thread fails to start */
    int rc = weft_pool_create(&p, &cfg);
    weft_test_fail_thread_at(0);
    cr_assert_eq(rc, WEFT_EAGAIN, "create with thread %d failing = %d", fail_at, rc);
    cr_assert_null(p);
    tu_assert_no_errors();
    for (int i = 0; i < 4; i++) {
      int want = i < fail_at - 1 ? 1 : 0; /* workers 0 .. fail_at - 2 started */
      cr_assert_eq(atomic_load(&r.starts[i]), want, "fail at %d: worker %d got %d STARTs",
                   fail_at, i, atomic_load(&r.starts[i]));
      cr_assert_eq(atomic_load(&r.stops[i]), want, "fail at %d: worker %d got %d STOPs",
                   fail_at, i, atomic_load(&r.stops[i]));
      if (want)
        cr_assert(pthread_equal(r.start_thread[i], r.stop_thread[i]));
    }
    cr_assert_eq(tu_wait_thread_count(base), base, "fail at %d: threads left behind", fail_at);
  }
  tu_assert_no_leaks();
}

Test(observer, config_default_zeroes_observer_and_reserved, .init = tu_clear_weft_env,
     .timeout = TU_TIMEOUT(10))
{
  weft_pool_config cfg;
  memset(&cfg, 0x5a, sizeof cfg);
  weft_pool_config_default(&cfg);
  cr_assert(cfg.observer == NULL, "observer not zeroed");
  cr_assert_null(cfg.observer_arg);
  for (size_t k = 0; k < sizeof cfg.reserved / sizeof cfg.reserved[0]; k++)
    cr_assert_null(cfg.reserved[k], "reserved[%zu] not zeroed", k);
}

Test(observer, reserved_non_null_is_einval, .init = tu_clear_weft_env, .timeout = TU_TIMEOUT(30))
{
  int base = tu_thread_baseline();
  for (size_t k = 0; k < 8; k++) {
    static rec r;
    rec_init(&r, "obs-res", 2);
    weft_pool_config cfg;
    weft_pool_config_default(&cfg);
    cfg.num_threads = 2;
    cfg.observer = observer;
    cfg.observer_arg = &r;
    cfg.reserved[k] = &r;
    weft_pool *p = (weft_pool *)&r; /* must be reset to NULL */
    tu_capture cap;
    char err[4096];
    tu_capture_begin(&cap);
    int rc = weft_pool_create(&p, &cfg);
    tu_capture_end(&cap, err, sizeof err);
    cr_assert_eq(rc, WEFT_EINVAL, "reserved[%zu] set: create = %d (%s)", k, rc, weft_strerror(rc));
    cr_assert_null(p);
    char field[64];
    snprintf(field, sizeof field, "weft_pool_config.reserved[%zu]", k);
    cr_assert(tu_line_has_all(err, "weft: ", field, NULL), "no line naming %s; stderr was \"%s\"",
              field, err);
    int lines = 0;
    for (const char *c = err; *c; c++)
      lines += *c == '\n';
    cr_assert_eq(lines, 1, "reserved[%zu]: %d lines on stderr: \"%s\"", k, lines, err);
    for (int i = 0; i < 2; i++)
      cr_assert_eq(atomic_load(&r.starts[i]), 0, "reserved[%zu]: a worker started", k);
    cr_assert_eq(tu_wait_thread_count(base), base, "reserved[%zu]: threads left behind", k);
  }
  tu_assert_no_leaks();
}
