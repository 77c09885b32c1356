/* SPDX-License-Identifier: MIT */
/*
 * A group is waited for by the thread that initialised it (weft.h:
 * weft_group_wait returns WEFT_EINVAL "from another thread than the one
 * that called init"), whatever that thread is: outside the pool, one of
 * its workers, or a worker of another pool. A refused wait leaves the group
 * alone: the initialising thread's wait still returns the tasks' failure.
 * Public API only; every check is a return value or a count.
 */
#include "../common/testutil.h"

static void setup(void)
{
  tu_clear_weft_env();
}

static atomic_long g_ran;

static int ret_task(void *p)
{
  atomic_fetch_add(&g_ran, 1);
  return (int)(intptr_t)p;
}

/* Spawns n tasks into g, one of them returning fail. */
static void spawn_some(weft_group *g, int n, int fail)
{
  for (int i = 0; i < n; i++)
    cr_assert_eq(weft_group_spawn(g, ret_task, (void *)(intptr_t)(i == n / 2 ? fail : 0)), 0);
}

typedef struct waiter {
  weft_group *g;
  int rc;
} waiter;

static void *wait_thread(void *arg)
{
  waiter *w = arg;
  w->rc = weft_group_wait(w->g);
  return NULL;
}

static int wait_from_thread(weft_group *g)
{
  waiter w = {g, 12345};
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, wait_thread, &w), 0);
  cr_assert_eq(pthread_join(t, NULL), 0);
  return w.rc;
}

/* Initialised outside the pool (the review's case: no owner was recorded,
 * so any thread's wait was taken, and reset the failure). */
Test(group_thread, outside_init_other_thread_refused, .init = setup, .timeout = TU_TIMEOUT(60))
{
  weft_pool *p = tu_pool(2, -1);
  weft_group g;
  for (int round = 0; round < 20; round++) {
    atomic_store(&g_ran, 0);
    weft_group_init(&g, p);
    spawn_some(&g, 10, -7 - round);
    int other = wait_from_thread(&g);
    cr_assert_eq(other, WEFT_EINVAL, "round %d: a wait from another thread returned %d", round,
                 other);
    int rc = weft_group_wait(&g);
    cr_assert_eq(rc, -7 - round, "round %d: the initialising thread's wait returned %d", round,
                 rc);
    cr_assert_eq(atomic_load(&g_ran), 10);
  }
  /* Still refused once done (and reset for reuse). */
  cr_assert_eq(wait_from_thread(&g), WEFT_EINVAL);
  cr_assert_eq(weft_group_wait(&g), 0);
  tu_destroy(p);
}

/* A re-init moves the group to the calling thread. */
typedef struct reinit {
  weft_group *g;
  weft_pool *p;
  int first, second;
} reinit;

static void *reinit_thread(void *arg)
{
  reinit *r = arg;
  weft_group_init(r->g, r->p);
  for (int i = 0; i < 5; i++)
    TU_CHECK(weft_group_spawn(r->g, ret_task, (void *)(intptr_t)(i == 2 ? 9 : 0)) == 0,
             "spawn failed");
  r->first = weft_group_wait(r->g);
  return NULL;
}

Test(group_thread, reinit_moves_the_group, .init = setup, .timeout = TU_TIMEOUT(60))
{
  weft_pool *p = tu_pool(2, -1);
  weft_group g;
  weft_group_init(&g, p);
  cr_assert_eq(weft_group_wait(&g), 0);
  reinit r = {&g, p, 12345, 12345};
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, reinit_thread, &r), 0);
  cr_assert_eq(pthread_join(t, NULL), 0);
  tu_assert_no_errors();
  cr_assert_eq(r.first, 9, "the new initialiser's wait returned %d", r.first);
  cr_assert_eq(weft_group_wait(&g), WEFT_EINVAL, "the old initialiser's wait was taken");
  weft_group_init(&g, p);
  cr_assert_eq(weft_group_wait(&g), 0);
  tu_destroy(p);
}

/* Runs fn(arg) on one of pool's workers (a submitted task: the test thread
 * never runs it, as it would a group's task while helping) and waits for it
 * without helping. */
typedef struct on_worker {
  int (*fn)(void *);
  void *arg;
  atomic_int done;
} on_worker;

static int on_worker_task(void *arg)
{
  on_worker *o = arg;
  TU_CHECK(weft_current_worker() >= 0, "a submitted task ran outside the pool's workers");
  o->fn(o->arg);
  atomic_store_explicit(&o->done, 1, memory_order_release);
  return 0;
}

static void run_on_worker(weft_pool *pool, int (*fn)(void *), void *arg)
{
  on_worker o = {fn, arg, 0};
  cr_assert_eq(weft_pool_submit(pool, on_worker_task, &o), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load_explicit(&o.done, memory_order_acquire), TU_DEADLINE_S),
            "a submitted task did not run");
  tu_assert_no_errors();
}

/* Initialised outside the pool, waited for by one of its workers. */
static int probe_task(void *arg)
{
  weft_group *g = ((void **)arg)[0];
  int *rc = ((void **)arg)[1];
  *rc = weft_group_wait(g);
  return 0;
}

Test(group_thread, outside_init_worker_refused, .init = setup, .timeout = TU_TIMEOUT(60))
{
  weft_pool *p = tu_pool(2, -1);
  for (int round = 0; round < 20; round++) {
    atomic_store(&g_ran, 0);
    weft_group g;
    weft_group_init(&g, p);
    spawn_some(&g, 10, -3);
    int prc = 12345;
    void *args[2] = {&g, &prc};
    run_on_worker(p, probe_task, args);
    cr_assert_eq(prc, WEFT_EINVAL, "round %d: a worker's wait returned %d", round, prc);
    int rc = weft_group_wait(&g);
    cr_assert_eq(rc, -3, "round %d: the initialising thread's wait returned %d", round, rc);
    cr_assert_eq(atomic_load(&g_ran), 10);
  }
  tu_destroy(p);
}

/* Initialised on a worker (of the group's pool, or of another pool): that
 * worker's wait is taken, the test thread's is not. */
typedef struct inner {
  weft_pool *pool; /* the group's */
  weft_group g;
  int rc;
} inner;

static int init_task(void *arg)
{
  inner *in = arg;
  weft_group_init(&in->g, in->pool);
  for (int i = 0; i < 10; i++)
    TU_CHECK(weft_group_spawn(&in->g, ret_task, (void *)(intptr_t)(i == 4 ? 5 : 0)) == 0,
             "spawn failed");
  return 0;
}

static int wait_task(void *arg)
{
  inner *in = arg;
  in->rc = weft_group_wait(&in->g);
  return 0;
}

/* What the waits of a group inited on a worker of worker_pool returned. */
typedef struct worker_init_result {
  int test_thread_wait; /* the test thread's (refused) */
  int worker_wait;      /* the initialising worker's */
  long ran;             /* the group's tasks that ran */
} worker_init_result;

static worker_init_result init_on_worker(weft_pool *group_pool, weft_pool *worker_pool)
{
  atomic_store(&g_ran, 0);
  inner in = {group_pool, {{0}}, 12345};
  worker_init_result r;
  /* worker_pool has one thread: the same worker inits, then (after the
   * test thread's refused wait) waits. */
  run_on_worker(worker_pool, init_task, &in);
  r.test_thread_wait = weft_group_wait(&in.g);
  run_on_worker(worker_pool, wait_task, &in);
  r.worker_wait = in.rc;
  r.ran = atomic_load(&g_ran);
  return r;
}

Test(group_thread, worker_init, .init = setup, .timeout = TU_TIMEOUT(60))
{
  weft_pool *p = tu_pool(1, -1);
  worker_init_result r = init_on_worker(p, p);
  cr_assert_eq(r.test_thread_wait, WEFT_EINVAL, "the test thread's wait was taken");
  cr_assert_eq(r.worker_wait, 5, "the initialising worker's wait returned %d", r.worker_wait);
  cr_assert_eq(r.ran, 10);
  tu_destroy(p);
}

Test(group_thread, other_pool_worker_init, .init = setup, .timeout = TU_TIMEOUT(60))
{
  weft_pool *p = tu_pool(2, -1), *q = tu_pool(1, -1);
  worker_init_result r = init_on_worker(p, q);
  cr_assert_eq(r.test_thread_wait, WEFT_EINVAL, "the test thread's wait was taken");
  cr_assert_eq(r.worker_wait, 5, "the initialising worker's wait returned %d", r.worker_wait);
  cr_assert_eq(r.ran, 10);
  tu_destroy(q);
  tu_destroy(p);
}
