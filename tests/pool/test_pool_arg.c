/*
 * Arguments stored with the task (weft_pool_submit_arg,
 * weft_group_spawn_arg): each task gets its own copy of the bytes, aligned
 * as weft.h says, exactly once; up to WEFT_TASK_ARG_INLINE bytes a spawn
 * allocates nothing (counted through the library's allocation hook, the
 * one internal symbol this suite uses); larger ones are copied to the heap
 * and freed (LeakSanitizer sees a miss in the ASan build); bad input is
 * WEFT_EINVAL with nothing queued.
 */
#include "../common/testutil.h"

#include "common/alloc.h"

static void setup(void)
{
  tu_clear_weft_env();
}

/* A small argument: a tag and where to count (16 bytes). */
typedef struct small_arg {
  long tag;
  atomic_long *sum;
} small_arg;

static int small_task(void *arg)
{
  small_arg *a = arg;
  TU_CHECK((uintptr_t)arg % WEFT_ARG_ALIGN == 0, "argument at %p, not %d-aligned", arg,
           WEFT_ARG_ALIGN);
  atomic_fetch_add(a->sum, a->tag);
  a->tag = -1000000; /* the copy is the task's own: changing it changes nothing else */
  return 0;
}

Test(pool_arg, group_spawn_copies_the_bytes_each_task_once, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  weft_pool *p = tu_pool(2, -1);
  weft_group g;
  weft_group_init(&g, p);
  atomic_long sum = 0;
  long n = tu_scaled(20000, 2000), want = 0;
  small_arg a = {0, &sum};
  for (long i = 1; i <= n; i++) {
    a.tag = i; /* the same caller bytes each time: each task has its own copy */
    cr_assert_eq(weft_group_spawn_arg(&g, small_task, &a, sizeof a), 0);
    want += i;
  }
  cr_assert_eq(weft_group_wait(&g), 0);
  cr_assert_eq(atomic_load(&sum), want, "sum of tags %ld, want %ld", atomic_load(&sum), want);
  tu_assert_no_errors();
  tu_destroy(p);
}

/* Recursive fork-join through spawn_arg from the workers themselves. */
typedef struct fib_arg {
  weft_pool *pool;
  long n;
  long *out;
} fib_arg;
_Static_assert(sizeof(fib_arg) <= WEFT_TASK_ARG_INLINE, "fib's argument fits in a task");

static int fib_task(void *arg)
{
  fib_arg a = *(fib_arg *)arg;
  if (a.n < 2) {
    *a.out = a.n;
    return 0;
  }
  long x = 0, y = 0;
  weft_group g;
  weft_group_init(&g, a.pool);
  fib_arg left = {a.pool, a.n - 1, &x};
  int rc = weft_group_spawn_arg(&g, fib_task, &left, sizeof left);
  TU_CHECK(rc == 0, "spawn_arg = %d", rc);
  fib_arg right = {a.pool, a.n - 2, &y};
  fib_task(&right);
  rc = weft_group_wait(&g);
  TU_CHECK(rc == 0, "wait = %d", rc);
  *a.out = x + y;
  return 0;
}

Test(pool_arg, nested_spawns_from_workers, .init = setup, .timeout = TU_TIMEOUT(60))
{
  weft_pool *p = tu_pool(2, -1);
  long out = -1;
  weft_group g;
  weft_group_init(&g, p);
  fib_arg a = {p, 20, &out};
  cr_assert_eq(weft_group_spawn_arg(&g, fib_task, &a, sizeof a), 0);
  cr_assert_eq(weft_group_wait(&g), 0);
  tu_assert_no_errors();
  cr_assert_eq(out, 6765, "fib(20) = %ld", out);
  tu_destroy(p);
}

/* A large argument (past the inline room): 200 bytes of a pattern. */
typedef struct big_arg {
  unsigned char bytes[200];
  atomic_long *ok;
} big_arg;

static int big_task(void *arg)
{
  big_arg *a = arg;
  TU_CHECK((uintptr_t)arg % WEFT_ARG_ALIGN == 0, "big argument at %p", arg);
  unsigned char seed = a->bytes[0];
  for (int i = 0; i < 200; i++)
    if (a->bytes[i] != (unsigned char)(seed + i)) {
      TU_CHECK(0, "byte %d is %u, want %u", i, a->bytes[i], (unsigned char)(seed + i));
      return 1;
    }
  atomic_fetch_add(a->ok, 1);
  return 0;
}

Test(pool_arg, large_arguments_are_copied_whole, .init = setup, .timeout = TU_TIMEOUT(60))
{
  weft_pool *p = tu_pool(2, -1);
  atomic_long ok = 0;
  big_arg a;
  a.ok = &ok;
  long n = tu_scaled(2000, 200);
  weft_group g;
  weft_group_init(&g, p);
  for (long i = 0; i < n; i++) {
    for (int k = 0; k < 200; k++)
      a.bytes[k] = (unsigned char)(i + k);
    cr_assert_eq(weft_group_spawn_arg(&g, big_task, &a, sizeof a), 0);
    cr_assert_eq(weft_pool_submit_arg(p, big_task, &a, sizeof a), 0);
  }
  cr_assert_eq(weft_group_wait(&g), 0);
  tu_destroy(p); /* runs every submitted task first */
  tu_assert_no_errors();
  cr_assert_eq(atomic_load(&ok), 2 * n, "%ld of %ld tasks saw their bytes", atomic_load(&ok),
               2 * n);
}

static atomic_int null_seen;

static int null_task(void *arg)
{
  if (arg == NULL)
    atomic_fetch_add(&null_seen, 1);
  return 0;
}

Test(pool_arg, submit_arg_runs_once_and_size_zero_passes_null, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  weft_pool *p = tu_pool(2, -1);
  atomic_long sum = 0;
  small_arg a = {7, &sum};
  cr_assert_eq(weft_pool_submit_arg(p, small_task, &a, sizeof a), 0);
  atomic_store(&null_seen, 0);
  cr_assert_eq(weft_pool_submit_arg(p, null_task, NULL, 0), 0);
  cr_assert_eq(weft_pool_submit_arg(p, null_task, &a, 0), 0); /* data ignored */
  weft_group g;
  weft_group_init(&g, p);
  cr_assert_eq(weft_group_spawn_arg(&g, null_task, NULL, 0), 0);
  cr_assert_eq(weft_group_wait(&g), 0);
  tu_destroy(p);
  tu_assert_no_errors();
  cr_assert_eq(atomic_load(&sum), 7);
  cr_assert_eq(a.tag, 7, "the caller's bytes are untouched");
  cr_assert_eq(atomic_load(&null_seen), 3);
}

static int fail_task(void *arg)
{
  return *(int *)arg;
}

Test(pool_arg, a_task_status_reaches_the_wait, .init = setup, .timeout = TU_TIMEOUT(60))
{
  weft_pool *p = tu_pool(2, -1);
  weft_group g;
  weft_group_init(&g, p);
  int status = -77;
  cr_assert_eq(weft_group_spawn_arg(&g, fail_task, &status, sizeof status), 0);
  status = 0; /* the task has its own copy of -77 */
  cr_assert_eq(weft_group_wait(&g), -77);
  tu_destroy(p);
}

Test(pool_arg, bad_input, .init = setup, .timeout = TU_TIMEOUT(60))
{
  weft_pool *p = tu_pool(1, -1);
  long x = 1;
  cr_assert_eq(weft_pool_submit_arg(NULL, null_task, &x, sizeof x), WEFT_EINVAL);
  cr_assert_eq(weft_pool_submit_arg(p, NULL, &x, sizeof x), WEFT_EINVAL);
  cr_assert_eq(weft_pool_submit_arg(p, null_task, NULL, 8), WEFT_EINVAL);
  cr_assert_eq(weft_group_spawn_arg(NULL, null_task, &x, sizeof x), WEFT_EINVAL);
  weft_group g;
  memset(&g, 0, sizeof g); /* never initialised */
  cr_assert_eq(weft_group_spawn_arg(&g, null_task, &x, sizeof x), WEFT_EINVAL);
  weft_group_init(&g, p);
  cr_assert_eq(weft_group_spawn_arg(&g, NULL, &x, sizeof x), WEFT_EINVAL);
  cr_assert_eq(weft_group_spawn_arg(&g, null_task, NULL, 300), WEFT_EINVAL);
  cr_assert_eq(weft_group_wait(&g), 0, "nothing was queued");
  tu_destroy(p);
}

/* ------------------------------------------------ allocations, counted */

static int count_task(void *arg)
{
  small_arg *a = arg;
  atomic_fetch_add(a->sum, 1);
  return 0;
}

/* Batches of spawns from a worker (a task that spawns n and waits) and
 * from the test's own thread. */
typedef struct spawner_arg {
  weft_pool *pool;
  long n;
  atomic_long *sum;
  size_t size; /* of the argument each spawn copies */
} spawner_arg;

static int spawner(void *arg)
{
  spawner_arg *s = arg;
  weft_group g;
  weft_group_init(&g, s->pool);
  struct {
    small_arg a;
    unsigned char pad[64];
  } x = {{0, s->sum}, {0}};
  for (long i = 0; i < s->n; i++)
    TU_CHECK(weft_group_spawn_arg(&g, count_task, &x, s->size) == 0, "spawn %ld", i);
  TU_CHECK(weft_group_wait(&g) == 0, "wait");
  return 0;
}

static long allocations_in_spawns(size_t size, long *ran)
{
  weft_pool *p = tu_pool(2, -1);
  atomic_long sum = 0;
  long n = tu_scaled(5000, 1000);
  spawner_arg s = {p, n, &sum, size};
  long calls = 0;
  for (int round = 0; round < 4; round++) {
    if (round == 2)
      weft_test_fail_alloc_at(0); /* two warm-up rounds, then count */
    weft_group g;
    weft_group_init(&g, p);
    cr_assert_eq(weft_group_spawn(&g, spawner, &s), 0);
    spawner(&s); /* and from the test's own thread */
    cr_assert_eq(weft_group_wait(&g), 0);
  }
  calls = weft_test_alloc_calls();
  tu_destroy(p);
  tu_assert_no_errors();
  *ran = atomic_load(&sum);
  cr_assert_eq(*ran, 4 * 2 * n, "%ld of %ld spawned tasks ran", *ran, 4 * 2 * n);
  return calls / 2; /* per counted round */
}

Test(pool_arg, inline_arguments_allocate_nothing, .init = setup, .timeout = TU_TIMEOUT(60))
{
  long ran;
  long calls = allocations_in_spawns(WEFT_TASK_ARG_INLINE, &ran);
  /* Slabs of task records while every worker's cache settles (see
   * test_engine_alloc.c): a few, never one per spawn. */
  cr_assert_leq(calls, 16, "%ld allocations a round of %ld spawns of %d-byte arguments", calls,
                ran / 4, WEFT_TASK_ARG_INLINE);
}

Test(pool_arg, larger_arguments_allocate_once_each, .init = setup, .timeout = TU_TIMEOUT(60))
{
  long ran;
  long calls = allocations_in_spawns(WEFT_TASK_ARG_INLINE + 1, &ran);
  long per_round = ran / 4;
  cr_assert_geq(calls, per_round, "%ld allocations a round of %ld spawns of %d-byte arguments",
                calls, per_round, WEFT_TASK_ARG_INLINE + 1);
  cr_assert_leq(calls, per_round + 16, "%ld allocations a round of %ld spawns", calls, per_round);
}

/* Every size up to the inline room and a little past it: the task sees
 * exactly the bytes given (the copy moves words that may overlap). */
typedef struct sized {
  unsigned char len;
  unsigned char bytes[WEFT_TASK_ARG_INLINE + 8];
} sized;

static atomic_long sized_ok;

static int sized_task(void *arg)
{
  const unsigned char *b = arg;
  /* the first byte is the length; the rest a pattern of it */
  size_t len = b[0];
  for (size_t i = 1; i < len; i++)
    if (b[i] != (unsigned char)(len * 17 + i)) {
      TU_CHECK(0, "size %zu: byte %zu is %u", len, i, b[i]);
      return 1;
    }
  atomic_fetch_add(&sized_ok, 1);
  return 0;
}

Test(pool_arg, every_small_size_arrives_intact, .init = setup, .timeout = TU_TIMEOUT(60))
{
  weft_pool *p = tu_pool(2, -1);
  atomic_store(&sized_ok, 0);
  unsigned char buf[WEFT_TASK_ARG_INLINE + 9];
  long n = 0;
  weft_group g;
  weft_group_init(&g, p);
  for (int round = 0; round < 50; round++)
    for (size_t len = 1; len <= WEFT_TASK_ARG_INLINE + 8; len++) {
      memset(buf, 0xa5, sizeof buf); /* what lies past len must not matter */
      buf[0] = (unsigned char)len;
      for (size_t i = 1; i < len; i++)
        buf[i] = (unsigned char)(len * 17 + i);
      cr_assert_eq(weft_group_spawn_arg(&g, sized_task, buf, len), 0);
      n++;
    }
  cr_assert_eq(weft_group_wait(&g), 0);
  tu_assert_no_errors();
  cr_assert_eq(atomic_load(&sized_ok), n, "%ld of %ld arrived intact", atomic_load(&sized_ok), n);
  tu_destroy(p);
}

/* A thread outside the pools keeps a cache of task records per store
 * (common/objstore.h): it spawns into one pool, then another, then the
 * first again after it was destroyed and a new one made, and exits; every
 * task runs once, and the sanitizer builds see no record lost or used
 * after its pool is gone. */
typedef struct alternate_arg {
  atomic_long *ran;
  int rounds;
} alternate_arg;

static int count_run(void *arg)
{
  atomic_fetch_add((atomic_long *)arg, 1);
  return 0;
}

static void *alternate_pools(void *arg)
{
  alternate_arg *a = arg;
  for (int r = 0; r < a->rounds; r++) {
    weft_pool *p1 = NULL, *p2 = NULL;
    weft_pool_config c;
    weft_pool_config_default(&c);
    c.num_threads = 1;
    TU_CHECK(weft_pool_create(&p1, &c) == 0, "create");
    c.num_threads = 2;
    TU_CHECK(weft_pool_create(&p2, &c) == 0, "create");
    if (!p1 || !p2)
      return NULL;
    for (int k = 0; k < 3; k++) {
      weft_pool *p = k == 1 ? p2 : p1;
      weft_group g;
      weft_group_init(&g, p);
      for (int i = 0; i < 1000; i++)
        TU_CHECK(weft_group_spawn(&g, count_run, a->ran) == 0, "spawn");
      TU_CHECK(weft_group_wait(&g) == 0, "wait");
    }
    TU_CHECK(weft_pool_destroy(p2) == 0, "destroy");
    TU_CHECK(weft_pool_destroy(p1) == 0, "destroy"); /* this thread's cache may hold its records */
  }
  return NULL;
}

Test(pool_arg, outside_threads_alternate_pools_and_exit, .init = setup, .timeout = TU_TIMEOUT(120))
{
  atomic_long ran = 0;
  alternate_arg a = {&ran, 5};
  pthread_t th[2];
  for (int i = 0; i < 2; i++)
    cr_assert_eq(pthread_create(&th[i], NULL, alternate_pools, &a), 0);
  for (int i = 0; i < 2; i++)
    pthread_join(th[i], NULL);
  tu_assert_no_errors();
  cr_assert_eq(atomic_load(&ran), 2L * 5 * 3 * 1000);
}
