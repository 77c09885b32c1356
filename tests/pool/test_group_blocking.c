/*
 * weft_group_wait_blocking: the waiting thread runs none of the group's
 * tasks (only the pool's workers compute), waits for all of them (nested
 * spawns too), returns the first failure, leaves the group reusable, and
 * refuses to block a worker or a thread inside one of the pool's tasks.
 * Public API only.
 */
#include "../common/testutil.h"

static void setup(void)
{
  tu_clear_weft_env();
}

typedef struct blk {
  weft_group *g;
  pthread_t waiter;
  atomic_long ran, on_waiter;
  int depth;
} blk;

static int leaf(void *arg)
{
  blk *b = arg;
  if (pthread_equal(pthread_self(), b->waiter))
    atomic_fetch_add(&b->on_waiter, 1);
  atomic_fetch_add(&b->ran, 1);
  return 0;
}

/* Spawns two more into the same group, down to depth 0. */
typedef struct node {
  blk *b;
  int depth;
} node;

static int tree(void *arg)
{
  node *n = arg;
  leaf(n->b);
  if (n->depth > 0) {
    node kid = {n->b, n->depth - 1};
    for (int k = 0; k < 2; k++)
      TU_CHECK(weft_group_spawn_arg(n->b->g, tree, &kid, sizeof kid) == 0, "spawn");
  }
  return 0;
}

Test(group_blocking, the_waiter_runs_nothing, .init = setup, .timeout = TU_TIMEOUT(120))
{
  for (int threads = 1; threads <= 2; threads++) {
    weft_pool *p = tu_pool(threads, -1);
    weft_group g;
    weft_group_init(&g, p);
    blk b = {&g, pthread_self(), 0, 0, 0};
    long n = tu_scaled(20000, 2000);
    for (int round = 0; round < 3; round++) { /* the group is reusable */
      atomic_store(&b.ran, 0);
      for (long i = 0; i < n; i++)
        cr_assert_eq(weft_group_spawn(&g, leaf, &b), 0);
      node root = {&b, 10};
      cr_assert_eq(weft_group_spawn_arg(&g, tree, &root, sizeof root), 0);
      cr_assert_eq(weft_group_wait_blocking(&g), 0);
      tu_assert_no_errors();
      cr_assert_eq(atomic_load(&b.ran), n + 2047, "%d threads, round %d: %ld of %ld ran",
                   threads, round, atomic_load(&b.ran), n + 2047);
    }
    cr_assert_eq(atomic_load(&b.on_waiter), 0, "%d threads: %ld tasks ran on the waiting thread",
                 threads, atomic_load(&b.on_waiter));
    tu_destroy(p);
  }
}

static int fail_once(void *arg)
{
  return *(int *)arg;
}

Test(group_blocking, returns_the_first_failure, .init = setup, .timeout = TU_TIMEOUT(60))
{
  weft_pool *p = tu_pool(2, -1);
  weft_group g;
  weft_group_init(&g, p);
  int ok = 0, bad = -31;
  for (int i = 0; i < 100; i++)
    cr_assert_eq(weft_group_spawn(&g, fail_once, i == 50 ? &bad : &ok), 0);
  cr_assert_eq(weft_group_wait_blocking(&g), -31);
  cr_assert_eq(weft_group_spawn(&g, fail_once, &ok), 0);
  cr_assert_eq(weft_group_wait_blocking(&g), 0, "the status was reset");
  cr_assert_eq(weft_group_wait_blocking(&g), 0, "an empty group returns at once");
  tu_destroy(p);
}

/* From a worker: refused, the group still waitable the usual way. */
typedef struct from_worker {
  weft_pool *pool;
  int blocking_rc, wait_rc;
  atomic_long ran;
} from_worker;

static int count(void *arg)
{
  atomic_fetch_add((atomic_long *)arg, 1);
  return 0;
}

static int worker_waits(void *arg)
{
  from_worker *f = arg;
  weft_group g;
  weft_group_init(&g, f->pool);
  for (int i = 0; i < 10; i++)
    TU_CHECK(weft_group_spawn(&g, count, &f->ran) == 0, "spawn");
  f->blocking_rc = weft_group_wait_blocking(&g);
  f->wait_rc = weft_group_wait(&g);
  return 0;
}

Test(group_blocking, refused_on_a_worker, .init = setup, .timeout = TU_TIMEOUT(60))
{
  weft_pool *p = tu_pool(1, -1);
  from_worker f = {p, 1, 1, 0};
  weft_group g;
  weft_group_init(&g, p);
  cr_assert_eq(weft_group_spawn(&g, worker_waits, &f), 0);
  cr_assert_eq(weft_group_wait_blocking(&g), 0);
  tu_assert_no_errors();
  cr_assert_eq(f.blocking_rc, WEFT_EDEADLK, "a worker may not block: %d", f.blocking_rc);
  cr_assert_eq(f.wait_rc, 0);
  cr_assert_eq(atomic_load(&f.ran), 10);
  tu_destroy(p);
}

static void *other_thread_waits(void *arg)
{
  return (void *)(intptr_t)weft_group_wait_blocking(arg);
}

Test(group_blocking, bad_input, .init = setup, .timeout = TU_TIMEOUT(60))
{
  weft_pool *p = tu_pool(1, -1);
  cr_assert_eq(weft_group_wait_blocking(NULL), WEFT_EINVAL);
  weft_group g;
  memset(&g, 0, sizeof g);
  cr_assert_eq(weft_group_wait_blocking(&g), WEFT_EINVAL, "never initialised");
  weft_group_init(&g, p);
  pthread_t th;
  void *rc = NULL;
  cr_assert_eq(pthread_create(&th, NULL, other_thread_waits, &g), 0);
  pthread_join(th, &rc);
  cr_assert_eq((int)(intptr_t)rc, WEFT_EINVAL, "only the initialising thread waits");
  cr_assert_eq(weft_group_wait_blocking(&g), 0);
  tu_destroy(p);
}
