/* SPDX-License-Identifier: MIT */
/*
 * Idle workers, parking and waking, and shutdown.
 *
 * Work conservation: as many tasks as workers, each waiting at a barrier
 * that only opens once all of them run at the same time. A pool that
 * leaves a worker asleep while a task waits in a queue never opens it; the
 * barrier's deadline turns that into a failure instead of a hang.
 */
#include "../common/testutil.h"

static void setup(void)
{
  tu_clear_weft_env();
}

/* -------------------------------------------------------- work conservation */

typedef struct barrier_round {
  weft_pool *pool;
  int n;
  int from_worker; /* the first task submits the other n-1 from a worker */
  atomic_int arrived;
  atomic_int finished;
  atomic_int timed_out;
  atomic_int ids[64]; /* how many tasks ran on each worker index */
  atomic_int bad_id;
  atomic_int submit_failed;
} barrier_round;

static int barrier_task(void *arg)
{
  barrier_round *r = arg;
  int w = weft_current_worker();
  if (w < 0 || w >= r->n)
    atomic_store(&r->bad_id, 1);
  else
    atomic_fetch_add(&r->ids[w], 1);
  atomic_fetch_add(&r->arrived, 1);
  if (!TU_WAIT_UNTIL(atomic_load(&r->arrived) >= r->n, 20.0 * WEFT_TEST_TIMEOUT_MULT))
    atomic_store(&r->timed_out, 1);
  atomic_fetch_add(&r->finished, 1);
  return 0;
}

static int barrier_seed_task(void *arg)
{
  barrier_round *r = arg;
  for (int i = 1; i < r->n; i++)
    if (weft_pool_submit(r->pool, barrier_task, r) != 0)
      atomic_store(&r->submit_failed, 1);
  return barrier_task(arg);
}

static long conservation_rounds(void)
{
  return tu_scaled(80, 5);
}

/* Returns how many barrier rounds opened, each with its n tasks on n
 * distinct workers (conservation_rounds()). */
static long work_conservation(int n, int spin)
{
  weft_pool *p = tu_pool(n, spin);
  const long rounds = conservation_rounds();
  long opened = 0;
  barrier_round *r = calloc(1, sizeof *r);
  cr_assert_not_null(r);
  for (long round = 0; round < rounds; round++) {
    memset(r, 0, sizeof *r);
    r->pool = p;
    r->n = n;
    r->from_worker = (int)(round % 2);
    if (r->from_worker) {
      cr_assert_eq(weft_pool_submit(p, barrier_seed_task, r), 0);
    } else {
      for (int i = 0; i < n; i++)
        cr_assert_eq(weft_pool_submit(p, barrier_task, r), 0);
    }
    bool done = TU_WAIT_UNTIL(atomic_load(&r->finished) == n, TU_DEADLINE_S);
    cr_assert(done, "round %ld: only %d of %d barrier tasks finished", round,
              atomic_load(&r->finished), n);
    cr_assert_eq(atomic_load(&r->submit_failed), 0);
    cr_assert_eq(atomic_load(&r->timed_out), 0,
                 "round %ld (%s, %d workers, spin %d): the %d tasks never all ran at once "
                 "(%d arrived): a worker stayed asleep while work was queued",
                 round, r->from_worker ? "submitted from a worker" : "submitted from outside",
                 n, spin, n, atomic_load(&r->arrived));
    cr_assert_eq(atomic_load(&r->bad_id), 0, "a barrier task ran off the pool's workers");
    /* n tasks blocked at once occupy n distinct workers. */
    for (int w = 0; w < n; w++)
      cr_assert_eq(atomic_load(&r->ids[w]), 1, "round %ld: worker %d ran %d barrier tasks",
                   round, w, atomic_load(&r->ids[w]));
    opened++;
    /* Sometimes let the workers go idle and park before the next round. */
    if (round % 3 == 2)
      tu_sleep_us(3000);
  }
  free(r);
  tu_destroy(p);
  return opened;
}

Test(conservation, workers_2_spin_0, .init = setup, .timeout = TU_TIMEOUT(90))
{
  cr_assert_eq(work_conservation(2, 0), conservation_rounds());
}

Test(conservation, workers_4_spin_0, .init = setup, .timeout = TU_TIMEOUT(90))
{
  cr_assert_eq(work_conservation(4, 0), conservation_rounds());
}

Test(conservation, workers_8_spin_0, .init = setup, .timeout = TU_TIMEOUT(90))
{
  cr_assert_eq(work_conservation(8, 0), conservation_rounds());
}

Test(conservation, workers_2_spin_default, .init = setup, .timeout = TU_TIMEOUT(90))
{
  cr_assert_eq(work_conservation(2, -1), conservation_rounds());
}

Test(conservation, workers_4_spin_default, .init = setup, .timeout = TU_TIMEOUT(90))
{
  cr_assert_eq(work_conservation(4, -1), conservation_rounds());
}

Test(conservation, workers_8_spin_default, .init = setup, .timeout = TU_TIMEOUT(90))
{
  cr_assert_eq(work_conservation(8, -1), conservation_rounds());
}

/* ---------------------------------------------------- park/unpark torture */

typedef struct torture {
  weft_pool *pool;
  atomic_long submitted;
  atomic_long ran;
  atomic_long failed;
  long bursts;
  uint64_t seed;
} torture;

static int torture_task(void *arg)
{
  torture *t = arg;
  /* Some tasks submit a child from the worker (the worker's own deque):
   * the other workers must be woken to steal it or it waits its turn. */
  uint64_t x = (uint64_t)atomic_load_explicit(&t->ran, memory_order_relaxed) * 0x9E3779B97F4A7C15ull;
  if ((x >> 60) == 0) {
    atomic_fetch_add(&t->submitted, 1);
    if (weft_pool_submit(t->pool, torture_task, t) != 0) {
      atomic_fetch_add(&t->failed, 1);
      atomic_fetch_sub(&t->submitted, 1);
    }
  }
  atomic_fetch_add(&t->ran, 1);
  return 0;
}

typedef struct burster {
  torture *t;
  uint64_t seed;
} burster;

static void *burst_thread(void *arg)
{
  burster *b = arg;
  torture *t = b->t;
  uint64_t rng = b->seed;
  for (long i = 0; i < t->bursts; i++) {
    long k = 1 + (long)(tu_rand(&rng) % 64);
    for (long j = 0; j < k; j++) {
      atomic_fetch_add(&t->submitted, 1);
      if (weft_pool_submit(t->pool, torture_task, t) != 0) {
        atomic_fetch_add(&t->failed, 1);
        atomic_fetch_sub(&t->submitted, 1);
      }
    }
    /* Long enough, often, for every worker to run out of spinning and park;
     * sometimes short, to land in the middle of parking. */
    long pause_us = (tu_rand(&rng) % 4 == 0) ? (long)(tu_rand(&rng) % 300) : 2000 + (long)(tu_rand(&rng) % 3000);
    tu_sleep_us(pause_us);
  }
  return NULL;
}

/* Returns how many tasks ran (every one submitted, none lost). */
static long park_torture(int workers, int spin, int submitters)
{
  weft_pool *p = tu_pool(workers, spin);
  torture *t = calloc(1, sizeof *t);
  cr_assert_not_null(t);
  t->pool = p;
  t->bursts = tu_scaled(150, 10);
  pthread_t th[8];
  burster b[8];
  for (int i = 0; i < submitters; i++) {
    b[i] = (burster){t, 0xb0b0 + (uint64_t)i * 77 + (uint64_t)workers};
    cr_assert_eq(pthread_create(&th[i], NULL, burst_thread, &b[i]), 0);
  }
  for (int i = 0; i < submitters; i++)
    pthread_join(th[i], NULL);
  cr_assert_eq(atomic_load(&t->failed), 0, "%ld submissions failed", atomic_load(&t->failed));
  /* A child is counted as submitted before its parent counts as run, so
   * ran == submitted means nothing is outstanding. */
  bool all = TU_WAIT_UNTIL(atomic_load(&t->ran) == atomic_load(&t->submitted), TU_DEADLINE_S);
  cr_assert(all, "%ld of %ld tasks ran (workers %d, spin %d): a wake-up was lost",
            atomic_load(&t->ran), atomic_load(&t->submitted), workers, spin);
  long total = atomic_load(&t->submitted);
  cr_assert(TU_WAIT_UNTIL(TU_STATS_SUM(p, tasks_run) == total, TU_DEADLINE_S),
            "stats tasks_run sums to %lld, %ld tasks ran", TU_STATS_SUM(p, tasks_run), total);
  /* Workers slept between bursts and were woken for the next one. */
  cr_assert(TU_WAIT_UNTIL(TU_STATS_SUM(p, parks) > 0 && TU_STATS_SUM(p, wakeups) > 0, 10.0),
            "after %ld bursts separated by sleeps: parks %lld, wakeups %lld", t->bursts,
            TU_STATS_SUM(p, parks), TU_STATS_SUM(p, wakeups));
  tu_destroy(p);
  cr_assert_eq(atomic_load(&t->ran), total, "destroy ran tasks that were never submitted?");
  free(t);
  return total;
}

Test(park, torture_2_workers_spin_0, .init = setup, .timeout = TU_TIMEOUT(90))
{
  cr_assert_gt(park_torture(2, 0, 2), 0);
}

Test(park, torture_4_workers_spin_0, .init = setup, .timeout = TU_TIMEOUT(90))
{
  cr_assert_gt(park_torture(4, 0, 3), 0);
}

Test(park, torture_4_workers_spin_default, .init = setup, .timeout = TU_TIMEOUT(90))
{
  cr_assert_gt(park_torture(4, -1, 2), 0);
}

Test(park, torture_8_workers_spin_5, .init = setup, .timeout = TU_TIMEOUT(90))
{
  cr_assert_gt(park_torture(8, 5, 4), 0);
}

/* One task at a time into an idle pool, each after everyone parked: every
 * one of them needs a wake-up. */
static atomic_long g_single;

static int single_task(void *arg)
{
  (void)arg;
  atomic_fetch_add(&g_single, 1);
  return 0;
}

Test(park, single_tasks_into_parked_pool, .init = setup, .timeout = TU_TIMEOUT(60))
{
  weft_pool *p = tu_pool(4, 0);
  const long n = tu_scaled(100, 20);
  for (long i = 0; i < n; i++) {
    cr_assert_eq(weft_pool_submit(p, single_task, NULL), 0);
    cr_assert(TU_WAIT_UNTIL(atomic_load(&g_single) == i + 1, TU_DEADLINE_S),
              "task %ld never ran: lost wake-up", i);
    if (i % 4 == 0)
      tu_sleep_us(1000);
  }
  cr_assert_gt(TU_STATS_SUM(p, wakeups), 0, "no wake-ups counted");
  tu_destroy(p);
}

/* Ping-pong: submit one task, wait until it ran, submit the next at once.
 * Each submission lands while the worker that ran the previous one is
 * going from searching to parked: exactly the window in which a wake-up
 * gets lost when the parking side does not re-check the queues. */
static atomic_long g_pong;

static int pong_task(void *arg)
{
  (void)arg;
  atomic_fetch_add(&g_pong, 1);
  return 0;
}

/* A backstop only: a lost wake-up fails its round at TU_DEADLINE_S. 100,000
 * round trips took over 60 s with two CPU-bound processes beside the suite
 * (every trip a wake-up and a context switch on a contended core). */
#define PING_PONG_LIMIT_S 300

static long ping_pong_rounds(void)
{
  return tu_scaled(100000, 2000);
}

/* Returns how many round trips completed (ping_pong_rounds()). */
static long ping_pong(int workers, int spin)
{
  weft_pool *p = tu_pool(workers, spin);
  const long n = ping_pong_rounds();
  uint64_t rng = 7;
  for (long i = 0; i < n; i++) {
    cr_assert_eq(weft_pool_submit(p, pong_task, NULL), 0);
    bool ran = false;
    for (unsigned k = 0; k < 1000000 && !ran; k++)
      ran = atomic_load(&g_pong) == i + 1;
    if (!ran)
      ran = TU_WAIT_UNTIL(atomic_load(&g_pong) == i + 1, TU_DEADLINE_S);
    cr_assert(ran, "ping-pong %ld (%d workers, spin %d): the task never ran: lost wake-up", i,
              workers, spin);
    /* Vary the moment of the next submission a little. */
    for (unsigned k = (unsigned)(tu_rand(&rng) % 1024); k > 0; k--)
      atomic_signal_fence(memory_order_seq_cst);
  }
  tu_destroy(p);
  return atomic_load(&g_pong);
}

Test(park, ping_pong_1_worker_spin_0, .init = setup, .timeout = TU_TIMEOUT(PING_PONG_LIMIT_S))
{
  cr_assert_eq(ping_pong(1, 0), ping_pong_rounds());
}

Test(park, ping_pong_2_workers_spin_0, .init = setup, .timeout = TU_TIMEOUT(PING_PONG_LIMIT_S))
{
  cr_assert_eq(ping_pong(2, 0), ping_pong_rounds());
}

Test(park, ping_pong_2_workers_spin_3, .init = setup, .timeout = TU_TIMEOUT(PING_PONG_LIMIT_S))
{
  cr_assert_eq(ping_pong(2, 3), ping_pong_rounds());
}

Test(park, ping_pong_4_workers_spin_default, .init = setup, .timeout = TU_TIMEOUT(PING_PONG_LIMIT_S))
{
  cr_assert_eq(ping_pong(4, -1), ping_pong_rounds());
}

/* ------------------------------------------------------------- shutdown */

static atomic_long g_ran;
static weft_pool *g_pool;

static int count_task(void *arg)
{
  (void)arg;
  atomic_fetch_add(&g_ran, 1);
  return 0;
}

/* Resubmits itself depth times. */
static int chain_task(void *arg)
{
  intptr_t left = (intptr_t)arg;
  atomic_fetch_add(&g_ran, 1);
  if (left > 0) {
    int rc = weft_pool_submit(g_pool, chain_task, (void *)(left - 1));
    TU_CHECK(rc == 0, "a task resubmitting itself during destroy got %d", rc);
  }
  return 0;
}

/* Binary fan-out during drain. */
static int tree_task(void *arg)
{
  intptr_t depth = (intptr_t)arg;
  atomic_fetch_add(&g_ran, 1);
  for (int i = 0; i < 2 && depth > 0; i++) {
    int rc = weft_pool_submit(g_pool, tree_task, (void *)(depth - 1));
    TU_CHECK(rc == 0, "submit during destroy = %d", rc);
  }
  return 0;
}

/* Spawns a group and waits for it inside a task, during drain. */
static int group_in_task(void *arg)
{
  (void)arg;
  weft_group g;
  weft_group_init(&g, g_pool);
  for (int i = 0; i < 50; i++) {
    int rc = weft_group_spawn(&g, count_task, NULL);
    TU_CHECK(rc == 0, "spawn during destroy = %d", rc);
  }
  int rc = weft_group_wait(&g);
  TU_CHECK(rc == 0, "group wait during destroy = %d", rc);
  atomic_fetch_add(&g_ran, 1);
  return 0;
}

/* Holds a worker until released, so the work behind it is still queued
 * when destroy is called. */
static atomic_int g_release;

static int blocker_task(void *arg)
{
  (void)arg;
  TU_CHECK(TU_WAIT_UNTIL(atomic_load(&g_release), 30.0), "blocker never released");
  atomic_fetch_add(&g_ran, 1);
  return 0;
}

static void *releaser(void *arg)
{
  (void)arg;
  tu_sleep_us(20000);
  atomic_store(&g_release, 1);
  return NULL;
}

/* Returns how many tasks destroy ran to completion (all that were queued
 * or submitted during the drain). */
static long destroy_with_pending(int threads, int spin, bool block)
{
  int base = tu_thread_baseline();
  g_pool = tu_pool(threads, spin);
  atomic_store(&g_ran, 0);
  atomic_store(&g_release, 0);
  const long plain = tu_scaled(20000, 2000);
  const long chains = 50, depth = tu_scaled(200, 20);
  const int tree_depth = 10;
  const long groups = 20;
  long expected = 0;
  if (block) {
    for (int i = 0; i < threads; i++)
      cr_assert_eq(weft_pool_submit(g_pool, blocker_task, NULL), 0);
    expected += threads;
  }
  for (long i = 0; i < plain; i++)
    cr_assert_eq(weft_pool_submit(g_pool, count_task, NULL), 0);
  expected += plain;
  for (long i = 0; i < chains; i++)
    cr_assert_eq(weft_pool_submit(g_pool, chain_task, (void *)(intptr_t)depth), 0);
  expected += chains * (depth + 1);
  cr_assert_eq(weft_pool_submit(g_pool, tree_task, (void *)(intptr_t)tree_depth), 0);
  expected += (1L << (tree_depth + 1)) - 1;
  for (long i = 0; i < groups; i++)
    cr_assert_eq(weft_pool_submit(g_pool, group_in_task, NULL), 0);
  expected += groups * 51;
  pthread_t rel;
  if (block)
    cr_assert_eq(pthread_create(&rel, NULL, releaser, NULL), 0);
  /* With blockers, nearly all of it is still queued here. */
  tu_destroy(g_pool);
  if (block)
    pthread_join(rel, NULL);
  tu_assert_no_errors();
  cr_assert_eq(atomic_load(&g_ran), expected,
               "destroy (%d threads, spin %d) returned after %ld of %ld tasks ran", threads, spin,
               atomic_load(&g_ran), expected);
  int left = tu_wait_thread_count(base);
  cr_assert_eq(left, base, "%d threads before the pool, %d after destroy", base, left);
  tu_assert_no_leaks();
  return atomic_load(&g_ran);
}

Test(shutdown, destroy_runs_pending_1_thread, .init = setup, .timeout = TU_TIMEOUT(60))
{
  cr_assert_gt(destroy_with_pending(1, -1, false), 0);
  cr_assert_gt(destroy_with_pending(1, 0, true), 0);
}

Test(shutdown, destroy_runs_pending_2_threads, .init = setup, .timeout = TU_TIMEOUT(60))
{
  cr_assert_gt(destroy_with_pending(2, 0, false), 0);
  cr_assert_gt(destroy_with_pending(2, -1, true), 0);
}

Test(shutdown, destroy_runs_pending_4_threads, .init = setup, .timeout = TU_TIMEOUT(60))
{
  cr_assert_gt(destroy_with_pending(4, -1, false), 0);
  cr_assert_gt(destroy_with_pending(4, 0, true), 0);
}

/* Create and destroy again and again, idle or barely used, parked or not:
 * destroy must wake every sleeper and join it. */
Test(shutdown, create_destroy_cycles, .init = setup, .timeout = TU_TIMEOUT(90))
{
  int base = tu_thread_baseline();
  const long cycles = tu_scaled(40, 8);
  for (long c = 0; c < cycles; c++) {
    int threads = 1 + (int)(c % 8);
    int spin = (c % 3 == 0) ? 0 : -1;
    weft_pool *p = tu_pool(threads, spin);
    atomic_store(&g_ran, 0);
    long k = c % 4 == 0 ? 0 : c * 3;
    for (long i = 0; i < k; i++)
      cr_assert_eq(weft_pool_submit(p, count_task, NULL), 0);
    if (c % 5 == 1)
      tu_sleep_us(2000); /* let them park first */
    tu_destroy(p);
    cr_assert_eq(atomic_load(&g_ran), k, "cycle %ld: %ld of %ld tasks ran", c,
                 atomic_load(&g_ran), k);
  }
  int left = tu_wait_thread_count(base);
  cr_assert_eq(left, base, "%d threads before, %d after %ld create/destroy cycles", base, left,
               cycles);
  tu_assert_no_leaks();
}

/* ------------------------------------------------------------ park_idle */

static int nop_task(void *arg)
{
  atomic_fetch_add((atomic_int *)arg, 1);
  return 0;
}

/* A worker spinning out a spin count of 100 s parks as soon as it is
 * asked, and spins again after its next task. */
Test(park, park_idle_parks_a_spinning_worker_now, .init = setup, .timeout = TU_TIMEOUT(90))
{
  cr_assert_eq(weft_pool_park_idle(NULL), WEFT_EINVAL);
  weft_pool *p = tu_pool(1, 100000000);
  atomic_int ran = 0;
  cr_assert_eq(weft_pool_submit(p, nop_task, &ran), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&ran) == 1, TU_DEADLINE_S));
  tu_sleep_us(20000);
  cr_assert_eq(TU_STATS_SUM(p, parks), 0, "the worker should still be spinning");
  cr_assert_eq(weft_pool_park_idle(p), 0);
  cr_assert(TU_WAIT_UNTIL(TU_STATS_SUM(p, parks) == 1, TU_DEADLINE_S),
            "asked to park, the worker kept spinning");
  /* Woken by a task, it spins again: no second park. */
  cr_assert_eq(weft_pool_submit(p, nop_task, &ran), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&ran) == 2, TU_DEADLINE_S));
  tu_sleep_us(20000);
  cr_assert_eq(TU_STATS_SUM(p, parks), 1, "the request held past its idle period");
  tu_destroy(p);
}
