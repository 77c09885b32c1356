/* SPDX-License-Identifier: MIT */
/*
 * Pool behaviour through the public API: fork-join groups, parallel_for,
 * parallel_launch, external submission, nesting, worker indices, stats.
 * Every check is an invariant (counts, coverage, return values), never a
 * duration.
 */
#include "../common/testutil.h"

static weft_pool *g_pool;
static int g_threads;

static void setup(void)
{
  tu_clear_weft_env();
}

/* ------------------------------------------------------------ fork-join */

typedef struct fib_arg {
  int n;
  long result;
} fib_arg;

static long fib_serial(int n)
{
  return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2);
}

static int fib_task(void *p)
{
  fib_arg *f = p;
  int w = weft_current_worker();
  TU_CHECK(w >= -1 && w < g_threads, "weft_current_worker() = %d in a task", w);
  if (f->n < 2) {
    f->result = f->n;
    return 0;
  }
  fib_arg a = {f->n - 1, 0}, b = {f->n - 2, 0};
  weft_group g;
  weft_group_init(&g, g_pool);
  int rc = weft_group_spawn(&g, fib_task, &a);
  TU_CHECK(rc == 0, "spawn = %d", rc);
  rc = weft_group_spawn(&g, fib_task, &b);
  TU_CHECK(rc == 0, "spawn = %d", rc);
  rc = weft_group_wait(&g);
  TU_CHECK(rc == 0, "wait = %d", rc);
  f->result = a.result + b.result;
  return 0;
}

/* How many results fib_at checks: fib(n - 3) .. fib(n). */
enum { FIB_ROUNDS = 4 };

/* Returns how many results matched the serial ones (FIB_ROUNDS). */
static int fib_at(int threads)
{
  int n = tu_scale() >= 0.5 ? 21 : 17;
  g_threads = threads;
  g_pool = tu_pool(threads, -1);
  int matched = 0;
  for (int k = n - (FIB_ROUNDS - 1); k <= n; k++) {
    fib_arg f = {k, -1};
    weft_group g;
    weft_group_init(&g, g_pool);
    cr_assert_eq(weft_group_spawn(&g, fib_task, &f), 0);
    cr_assert_eq(weft_group_wait(&g), 0);
    cr_assert_eq(f.result, fib_serial(k), "fib(%d) = %ld at %d threads, serial says %ld", k,
                 f.result, threads, fib_serial(k));
    matched++;
  }
  tu_destroy(g_pool);
  tu_assert_no_errors();
  tu_assert_no_leaks();
  return matched;
}

Test(group, fib_1_thread, .init = setup, .timeout = TU_TIMEOUT(60))
{
  cr_assert_eq(fib_at(1), FIB_ROUNDS);
}

Test(group, fib_2_threads, .init = setup, .timeout = TU_TIMEOUT(60))
{
  cr_assert_eq(fib_at(2), FIB_ROUNDS);
}

Test(group, fib_4_threads, .init = setup, .timeout = TU_TIMEOUT(60))
{
  cr_assert_eq(fib_at(4), FIB_ROUNDS);
}

Test(group, fib_8_threads, .init = setup, .timeout = TU_TIMEOUT(60))
{
  cr_assert_eq(fib_at(8), FIB_ROUNDS);
}

static void *fib_outside(void *arg)
{
  fib_arg *f = arg;
  weft_group g;
  weft_group_init(&g, g_pool);
  int rc = weft_group_spawn(&g, fib_task, f);
  TU_CHECK(rc == 0, "spawn = %d", rc);
  rc = weft_group_wait(&g);
  TU_CHECK(rc == 0, "wait = %d", rc);
  return NULL;
}

/* Several outside threads each wait on their own group at once. */
Test(group, outside_threads_wait_concurrently, .init = setup, .timeout = TU_TIMEOUT(60))
{
  enum { K = 6 };
  int n = tu_scale() >= 0.5 ? 18 : 14;
  g_threads = 3;
  g_pool = tu_pool(3, -1);
  pthread_t t[K];
  fib_arg f[K];
  for (int i = 0; i < K; i++) {
    f[i] = (fib_arg){n - (i % 3), -1};
    cr_assert_eq(pthread_create(&t[i], NULL, fib_outside, &f[i]), 0);
  }
  for (int i = 0; i < K; i++)
    pthread_join(t[i], NULL);
  tu_assert_no_errors();
  for (int i = 0; i < K; i++)
    cr_assert_eq(f[i].result, fib_serial(f[i].n), "thread %d: fib(%d) = %ld", i, f[i].n,
                 f[i].result);
  tu_destroy(g_pool);
}

/*
 * A thread waiting on a group helps by running tasks. If it may run any
 * queued task (the oldest, say) whose own wait then helps again, its stack
 * nests once per task instead of once per level of the fork-join tree, and
 * overflows. Here the waiter is an outside thread with a 512 KiB stack:
 * fib(24) is 24 levels deep (a few KiB of frames), but ~75k tasks.
 */
typedef struct small_stack_job {
  int n;
  long result;
  int rc;
} small_stack_job;

static void *small_stack_waiter(void *arg)
{
  small_stack_job *j = arg;
  fib_arg f = {j->n, -1};
  weft_group g;
  weft_group_init(&g, g_pool);
  j->rc = weft_group_spawn(&g, fib_task, &f);
  if (j->rc == 0)
    j->rc = weft_group_wait(&g);
  j->result = f.result;
  return NULL;
}

/* Returns the waiter's fib(24), already checked against fib_serial(24). */
static long waiter_stack_bounded(int threads)
{
  g_threads = threads;
  g_pool = tu_pool(threads, -1);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  cr_assert_eq(pthread_attr_setstacksize(&attr, 512 * 1024), 0);
  small_stack_job j = {24, -1, -1};
  pthread_t t;
  /* A stack overflow here crashes the test (reported as a crash). */
  cr_assert_eq(pthread_create(&t, &attr, small_stack_waiter, &j), 0);
  pthread_join(t, NULL);
  pthread_attr_destroy(&attr);
  cr_assert_eq(j.rc, 0);
  cr_assert_eq(j.result, fib_serial(24), "fib(24) = %ld", j.result);
  tu_destroy(g_pool);
  tu_assert_no_errors();
  return j.result;
}

Test(group, outside_waiter_stack_bounded_1_thread, .init = setup, .timeout = TU_TIMEOUT(60))
{
  cr_assert_eq(waiter_stack_bounded(1), fib_serial(24));
}

Test(group, outside_waiter_stack_bounded_4_threads, .init = setup, .timeout = TU_TIMEOUT(60))
{
  cr_assert_eq(waiter_stack_bounded(4), fib_serial(24));
}

static atomic_long g_ran;

static int count_task(void *p)
{
  (void)p;
  atomic_fetch_add(&g_ran, 1);
  return 0;
}

static int return_arg_task(void *p)
{
  atomic_fetch_add(&g_ran, 1);
  return (int)(intptr_t)p;
}

Test(group, empty_wait_and_reuse, .init = setup, .timeout = TU_TIMEOUT(30))
{
  weft_pool *p = tu_pool(2, -1);
  weft_group g;
  weft_group_init(&g, p);
  cr_assert_eq(weft_group_wait(&g), 0, "waiting on an empty group");
  for (int round = 1; round <= 20; round++) {
    atomic_store(&g_ran, 0);
    for (int i = 0; i < round * 10; i++)
      cr_assert_eq(weft_group_spawn(&g, count_task, NULL), 0);
    cr_assert_eq(weft_group_wait(&g), 0);
    cr_assert_eq(atomic_load(&g_ran), round * 10, "round %d: %ld of %d tasks ran", round,
                 atomic_load(&g_ran), round * 10);
  }
  tu_destroy(p);
}

Test(group, wait_returns_task_error, .init = setup, .timeout = TU_TIMEOUT(30))
{
  weft_pool *p = tu_pool(2, -1);
  weft_group g;
  weft_group_init(&g, p);
  /* One failure among many successes, passed through unchanged. */
  atomic_store(&g_ran, 0);
  for (int i = 0; i < 100; i++)
    cr_assert_eq(weft_group_spawn(&g, return_arg_task, (void *)(intptr_t)(i == 37 ? -1 : 0)), 0);
  cr_assert_eq(weft_group_wait(&g), -1);
  cr_assert_eq(atomic_load(&g_ran), 100, "every task runs even when one fails");
  /* Reused after a failure: a clean round reports 0 again. */
  for (int i = 0; i < 10; i++)
    cr_assert_eq(weft_group_spawn(&g, return_arg_task, (void *)(intptr_t)0), 0);
  cr_assert_eq(weft_group_wait(&g), 0, "a reused group still reports an old failure");
  /* Several different failures: the result is one of them. */
  for (int i = 0; i < 50; i++)
    cr_assert_eq(weft_group_spawn(&g, return_arg_task, (void *)(intptr_t)(i % 5 == 0 ? 40 + i : 0)),
                 0);
  int rc = weft_group_wait(&g);
  cr_assert(rc >= 40 && rc < 90 && (rc - 40) % 5 == 0, "wait returned %d", rc);
  /* A library-looking code returned by a task is passed through too. */
  cr_assert_eq(weft_group_spawn(&g, return_arg_task, (void *)(intptr_t)WEFT_ENOMEM), 0);
  cr_assert_eq(weft_group_wait(&g), WEFT_ENOMEM);
  tu_destroy(p);
}

/* Tasks spawn more tasks into the same group; wait covers them all. */
typedef struct tree_arg {
  weft_group *g;
  int depth;
} tree_arg;

static tree_arg g_tree_args[64];

static int tree_task(void *p)
{
  tree_arg *a = p;
  atomic_fetch_add(&g_ran, 1);
  if (a->depth > 0) {
    /* g_tree_args[d] is the argument for depth d; it outlives the group. */
    for (int i = 0; i < 2; i++) {
      int rc = weft_group_spawn(a->g, tree_task, &g_tree_args[a->depth - 1]);
      TU_CHECK(rc == 0, "spawn from a task = %d", rc);
    }
  }
  return 0;
}

Test(group, tasks_spawn_into_their_own_group, .init = setup, .timeout = TU_TIMEOUT(30))
{
  const int depth = tu_scale() >= 0.5 ? 14 : 10;
  weft_pool *p = tu_pool(4, -1);
  weft_group g;
  weft_group_init(&g, p);
  for (int d = 0; d <= depth; d++)
    g_tree_args[d] = (tree_arg){&g, d};
  atomic_store(&g_ran, 0);
  cr_assert_eq(weft_group_spawn(&g, tree_task, &g_tree_args[depth]), 0);
  cr_assert_eq(weft_group_wait(&g), 0);
  cr_assert_eq(atomic_load(&g_ran), (1L << (depth + 1)) - 1, "%ld tasks ran",
               atomic_load(&g_ran));
  tu_destroy(p);
  tu_assert_no_errors();
}

/* --------------------------------------------------------- parallel_for */

typedef struct cover {
  size_t begin, end, grain;
  atomic_uint *hits;
  atomic_long calls;
  int fail_value; /* non-zero: returned by the chunk containing fail_at */
  size_t fail_at;
} cover;

static int cover_fn(size_t b, size_t e, void *p)
{
  cover *c = p;
  atomic_fetch_add(&c->calls, 1);
  int w = weft_current_worker();
  TU_CHECK(w >= -1 && w < g_threads, "weft_current_worker() = %d in parallel_for", w);
  if (!(b < e && b >= c->begin && e <= c->end)) {
    TU_CHECK(0, "chunk [%zu, %zu) outside [%zu, %zu) or empty", b, e, c->begin, c->end);
    return 0;
  }
  TU_CHECK(c->grain == 0 || e - b >= c->grain || e == c->end,
           "chunk [%zu, %zu) smaller than grain %zu and not the last", b, e, c->grain);
  for (size_t i = b; i < e; i++)
    atomic_fetch_add_explicit(&c->hits[i - c->begin], 1, memory_order_relaxed);
  if (c->fail_value && c->fail_at >= b && c->fail_at < e)
    return c->fail_value;
  return 0;
}

/* Runs parallel_for over [begin, begin + n) and checks every index was
 * covered exactly once; returns how many indices it checked (n). */
static size_t check_cover(weft_pool *p, size_t begin, size_t n, size_t grain)
{
  cover c = {.begin = begin, .end = begin + n, .grain = grain};
  c.hits = calloc(n ? n : 1, sizeof *c.hits);
  cr_assert_not_null(c.hits);
  int rc = weft_parallel_for(p, begin, begin + n, grain, cover_fn, &c);
  cr_assert_eq(rc, 0, "parallel_for(%zu, %zu, grain %zu) = %d", begin, begin + n, grain, rc);
  tu_assert_no_errors();
  size_t checked = 0;
  for (size_t i = 0; i < n; i++) {
    cr_assert_eq(atomic_load(&c.hits[i]), 1,
                 "parallel_for(%zu, %zu, grain %zu): index %zu covered %u times", begin,
                 begin + n, grain, begin + i, atomic_load(&c.hits[i]));
    checked++;
  }
  if (n == 0)
    cr_assert_eq(atomic_load(&c.calls), 0, "fn was called for an empty range");
  if (grain >= n && n > 0)
    cr_assert_eq(atomic_load(&c.calls), 1, "grain %zu >= range %zu but fn called %ld times",
                 grain, n, atomic_load(&c.calls));
  free(c.hits);
  return checked;
}

/* Returns how many ranges it checked, each covered exactly once. */
static int cover_suite(int threads)
{
  g_threads = threads;
  weft_pool *p = tu_pool(threads, -1);
  const size_t big = (size_t)tu_scaled(200000, 20000);
  const size_t sizes[] = {0, 1, 2, 3, 7, 64, 1000, 4097, big};
  const size_t grains[] = {0, 1, 3, 100, 5000};
  int ranges = 0;
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (size_t g = 0; g < sizeof grains / sizeof grains[0]; g++) {
      if (sizes[s] == big && grains[g] == 1 && tu_scale() < 1.0)
        continue;
      cr_assert_eq(check_cover(p, 0, sizes[s], grains[g]), sizes[s]);
      cr_assert_eq(check_cover(p, 1000003, sizes[s], grains[g]), sizes[s]);
      ranges += 2;
    }
  /* Grain larger than the range, equal to it, and huge. */
  cr_assert_eq(check_cover(p, 10, 100, 101), 100);
  cr_assert_eq(check_cover(p, 10, 100, 100), 100);
  cr_assert_eq(check_cover(p, 10, 100, SIZE_MAX), 100);
  ranges += 3;
  tu_destroy(p);
  tu_assert_no_leaks();
  return ranges;
}

Test(parallel_for, covers_each_index_once_1_thread, .init = setup, .timeout = TU_TIMEOUT(60))
{
  cr_assert_gt(cover_suite(1), 0);
}

Test(parallel_for, covers_each_index_once_4_threads, .init = setup, .timeout = TU_TIMEOUT(60))
{
  cr_assert_gt(cover_suite(4), 0);
}

/* Ranges at the top of size_t: splitting must not overflow (b + e). */
Test(parallel_for, range_near_size_max, .init = setup, .timeout = TU_TIMEOUT(30))
{
  g_threads = 4;
  weft_pool *p = tu_pool(4, -1);
  cr_assert_eq(check_cover(p, SIZE_MAX - 5000, 5000, 1), 5000);
  cr_assert_eq(check_cover(p, SIZE_MAX - 5000, 5000, 0), 5000);
  cr_assert_eq(check_cover(p, SIZE_MAX - 1, 1, 0), 1);
  cr_assert_eq(check_cover(p, SIZE_MAX / 2 - 777, 3000, 7), 3000);
  tu_destroy(p);
}

/* Ranges too large to iterate: fn only records its chunk, and the chunks
 * must tile [begin, end) exactly, each at least grain long but the last.
 * Grains above SIZE_MAX / 2 catch overflow in "2 * grain" style checks. */
typedef struct chunks {
  pthread_mutex_t mu;
  size_t n;
  size_t b[4096], e[4096];
  bool overflow;
} chunks;

static int record_chunk(size_t b, size_t e, void *arg)
{
  chunks *c = arg;
  pthread_mutex_lock(&c->mu);
  if (c->n < 4096) {
    c->b[c->n] = b;
    c->e[c->n] = e;
    c->n++;
  } else {
    c->overflow = true;
  }
  pthread_mutex_unlock(&c->mu);
  return 0;
}

static int cmp_chunk(const void *x, const void *y)
{
  const size_t *a = x, *b = y;
  return a[0] < b[0] ? -1 : a[0] > b[0];
}

/* Runs the loop and describes the first problem with its chunks into err;
 * returns whether there was none. Usable from any thread. */
static bool tiling_ok(weft_pool *p, size_t begin, size_t end, size_t grain, size_t max_chunks,
                      char *err, size_t errsize)
{
  chunks *c = calloc(1, sizeof *c);
  size_t(*pairs)[2] = malloc(4096 * sizeof *pairs);
  if (!c || !pairs) {
    snprintf(err, errsize, "out of memory");
    free(c);
    free(pairs);
    return false;
  }
  pthread_mutex_init(&c->mu, NULL);
  bool ok = false;
  int rc = weft_parallel_for(p, begin, end, grain, record_chunk, c);
  if (rc != 0) {
    snprintf(err, errsize, "parallel_for(%zu, %zu, grain %zu) = %d", begin, end, grain, rc);
    goto out;
  }
  if (c->overflow) {
    snprintf(err, errsize, "parallel_for(%zu, %zu, grain %zu): over 4096 chunks", begin, end,
             grain);
    goto out;
  }
  for (size_t i = 0; i < c->n; i++) {
    pairs[i][0] = c->b[i];
    pairs[i][1] = c->e[i];
  }
  qsort(pairs, c->n, sizeof *pairs, cmp_chunk);
  size_t at = begin;
  for (size_t i = 0; i < c->n; i++) {
    size_t b = pairs[i][0], e = pairs[i][1];
    if (b != at) {
      snprintf(err, errsize, "grain %zu: chunk %zu starts at %zu, expected %zu (gap or overlap)",
               grain, i, b, at);
      goto out;
    }
    if (e <= b) {
      snprintf(err, errsize, "grain %zu: empty or reversed chunk [%zu, %zu) (one of %zu chunks)",
               grain, b, e, c->n);
      goto out;
    }
    if (e - b < grain && e != end) {
      snprintf(err, errsize, "grain %zu: chunk [%zu, %zu) too small and not the last", grain, b,
               e);
      goto out;
    }
    at = e;
  }
  if (at != end) {
    snprintf(err, errsize, "grain %zu: chunks stop at %zu, range ends at %zu", grain, at, end);
    goto out;
  }
  if (c->n > max_chunks) {
    snprintf(err, errsize, "parallel_for(%zu, %zu, grain %zu): %zu chunks, at most %zu", begin,
             end, grain, c->n, max_chunks);
    goto out;
  }
  ok = true;
out:
  pthread_mutex_destroy(&c->mu);
  free(c);
  free(pairs);
  return ok;
}

typedef struct tiling_case {
  size_t begin, end, grain, max_chunks;
} tiling_case;

static const tiling_case g_tilings[] = {
    {0, SIZE_MAX, SIZE_MAX / 2 + 1, 2},
    {0, SIZE_MAX, SIZE_MAX / 2, 3},
    {1, SIZE_MAX, SIZE_MAX / 2, 2},
    {0, SIZE_MAX, SIZE_MAX / 3, 4},
    {0, SIZE_MAX, SIZE_MAX / 1000, 1001},
    {12345, SIZE_MAX - 12345, SIZE_MAX / 100 + 7, 101},
    {0, SIZE_MAX, SIZE_MAX, 1},
};
enum { N_TILINGS = sizeof g_tilings / sizeof g_tilings[0] };

typedef struct tiling_job {
  weft_pool *p;
  bool ok;
  char err[256];
  atomic_int done;
} tiling_job;

static int tiling_task(void *arg)
{
  tiling_job *j = arg;
  j->ok = true;
  for (int i = 0; i < N_TILINGS && j->ok; i++)
    j->ok = tiling_ok(j->p, g_tilings[i].begin, g_tilings[i].end, g_tilings[i].grain,
                      g_tilings[i].max_chunks, j->err, sizeof j->err);
  atomic_store(&j->done, 1);
  return 0;
}

/* From an outside thread and from inside a task (where a worker splits
 * whenever its deque is empty, so the split path always runs). */
Test(parallel_for, huge_ranges_tile_exactly, .init = setup, .timeout = TU_TIMEOUT(30))
{
  g_threads = 4;
  weft_pool *p = tu_pool(4, -1);
  char err[256];
  for (int rep = 0; rep < 20; rep++) {
    for (int i = 0; i < N_TILINGS; i++)
      cr_assert(tiling_ok(p, g_tilings[i].begin, g_tilings[i].end, g_tilings[i].grain,
                          g_tilings[i].max_chunks, err, sizeof err),
                "from outside the pool: %s", err);
    /* Submitted, not spawned: a group waiter could run it on this thread. */
    tiling_job j = {p, false, "", 0};
    cr_assert_eq(weft_pool_submit(p, tiling_task, &j), 0);
    cr_assert(TU_WAIT_UNTIL(atomic_load(&j.done), TU_DEADLINE_S));
    cr_assert(j.ok, "from inside a task: %s", j.err);
  }
  tu_destroy(p);
}

Test(parallel_for, empty_range_does_not_call_fn, .init = setup, .timeout = TU_TIMEOUT(30))
{
  g_threads = 2;
  weft_pool *p = tu_pool(2, -1);
  cover c = {.begin = 0, .end = 0};
  cr_assert_eq(weft_parallel_for(p, 0, 0, 0, cover_fn, &c), 0);
  cr_assert_eq(weft_parallel_for(p, 42, 42, 1, cover_fn, &c), 0);
  cr_assert_eq(weft_parallel_for(p, SIZE_MAX, SIZE_MAX, 0, cover_fn, &c), 0);
  cr_assert_eq(atomic_load(&c.calls), 0, "fn called %ld times for empty ranges",
               atomic_load(&c.calls));
  tu_destroy(p);
}

Test(parallel_for, returns_first_nonzero, .init = setup, .timeout = TU_TIMEOUT(30))
{
  g_threads = 4;
  weft_pool *p = tu_pool(4, -1);
  const size_t n = 10000;
  const int values[] = {7, -1, -3, 12345, WEFT_EINVAL};
  for (size_t v = 0; v < sizeof values / sizeof values[0]; v++) {
    for (size_t grain = 0; grain <= 64; grain += 64) {
      cover c = {.begin = 0, .end = n, .grain = grain, .fail_value = values[v],
                 .fail_at = (v * 3571) % n};
      c.hits = calloc(n, sizeof *c.hits);
      cr_assert_not_null(c.hits);
      int rc = weft_parallel_for(p, 0, n, grain, cover_fn, &c);
      cr_assert_eq(rc, values[v], "fn returned %d for index %zu, parallel_for returned %d",
                   values[v], c.fail_at, rc);
      /* Chunks may be skipped after the failure, but none may run twice. */
      for (size_t i = 0; i < n; i++)
        cr_assert_leq(atomic_load(&c.hits[i]), 1, "index %zu covered twice", i);
      cr_assert_eq(atomic_load(&c.hits[c.fail_at]), 1);
      free(c.hits);
    }
  }
  tu_destroy(p);
  tu_assert_no_errors();
}

static int multi_fail_fn(size_t b, size_t e, void *p)
{
  (void)e;
  (void)p;
  return (int)(b % 5) + 1;
}

Test(parallel_for, several_failures_return_one_of_them, .init = setup, .timeout = TU_TIMEOUT(30))
{
  weft_pool *p = tu_pool(4, -1);
  for (int r = 0; r < 20; r++) {
    int rc = weft_parallel_for(p, 0, 1000, 1, multi_fail_fn, NULL);
    cr_assert(rc >= 1 && rc <= 5, "parallel_for returned %d", rc);
  }
  tu_destroy(p);
}

/* Six outside threads run parallel_for on one pool at once (more than
 * the pool keeps guest slots for). */
typedef struct ext_pfor {
  weft_pool *p;
  int rc;
  int bad;
} ext_pfor;

static void *ext_pfor_thread(void *arg)
{
  ext_pfor *x = arg;
  const size_t n = 20000;
  for (int r = 0; r < 5 && !x->bad; r++) {
    cover c = {.begin = 0, .end = n, .grain = (size_t)(r % 3)};
    c.hits = calloc(n, sizeof *c.hits);
    x->rc = weft_parallel_for(x->p, 0, n, c.grain, cover_fn, &c);
    if (x->rc != 0)
      x->bad = 1;
    for (size_t i = 0; i < n && !x->bad; i++)
      if (atomic_load(&c.hits[i]) != 1)
        x->bad = 2;
    free(c.hits);
  }
  return NULL;
}

Test(parallel_for, concurrent_callers, .init = setup, .timeout = TU_TIMEOUT(60))
{
  g_threads = 2;
  weft_pool *p = tu_pool(2, -1);
  enum { K = 6 };
  pthread_t t[K];
  ext_pfor x[K];
  for (int i = 0; i < K; i++) {
    x[i] = (ext_pfor){p, 0, 0};
    cr_assert_eq(pthread_create(&t[i], NULL, ext_pfor_thread, &x[i]), 0);
  }
  for (int i = 0; i < K; i++)
    pthread_join(t[i], NULL);
  for (int i = 0; i < K; i++) {
    cr_assert_eq(x[i].rc, 0, "caller %d: parallel_for = %d", i, x[i].rc);
    cr_assert_eq(x[i].bad, 0, "caller %d: coverage wrong", i);
  }
  tu_destroy(p);
  tu_assert_no_errors();
}

/* parallel_for inside group tasks, and parallel_for inside parallel_for. */
typedef struct nested {
  weft_pool *p;
  cover c;
} nested;

static int nested_group_task(void *arg)
{
  nested *x = arg;
  int rc = weft_parallel_for(x->p, x->c.begin, x->c.end, x->c.grain, cover_fn, &x->c);
  TU_CHECK(rc == 0, "nested parallel_for = %d", rc);
  return rc;
}

Test(parallel_for, nested_in_group_tasks, .init = setup, .timeout = TU_TIMEOUT(60))
{
  g_threads = 4;
  weft_pool *p = tu_pool(4, -1);
  enum { K = 12 };
  const size_t n = (size_t)tu_scaled(20000, 2000);
  nested *x = calloc(K, sizeof *x);
  cr_assert_not_null(x);
  weft_group g;
  weft_group_init(&g, p);
  for (int i = 0; i < K; i++) {
    x[i].p = p;
    x[i].c.begin = (size_t)i * 1000;
    x[i].c.end = x[i].c.begin + n;
    x[i].c.grain = (size_t)(i % 4);
    x[i].c.hits = calloc(n, sizeof *x[i].c.hits);
    cr_assert_not_null(x[i].c.hits);
    cr_assert_eq(weft_group_spawn(&g, nested_group_task, &x[i]), 0);
  }
  cr_assert_eq(weft_group_wait(&g), 0);
  tu_assert_no_errors();
  for (int i = 0; i < K; i++) {
    for (size_t j = 0; j < n; j++)
      cr_assert_eq(atomic_load(&x[i].c.hits[j]), 1, "task %d index %zu covered %u times", i, j,
                   atomic_load(&x[i].c.hits[j]));
    free(x[i].c.hits);
  }
  free(x);
  tu_destroy(p);
}

typedef struct outer {
  weft_pool *p;
  size_t inner_n;
  atomic_uint *hits; /* outer_n * inner_n */
} outer;

typedef struct inner_arg {
  outer *o;
  size_t row;
} inner_arg;

static int inner_fn(size_t b, size_t e, void *arg)
{
  inner_arg *ia = arg;
  for (size_t j = b; j < e; j++)
    atomic_fetch_add(&ia->o->hits[ia->row * ia->o->inner_n + j], 1);
  return 0;
}

static int outer_fn(size_t b, size_t e, void *arg)
{
  outer *o = arg;
  for (size_t i = b; i < e; i++) {
    inner_arg ia = {o, i};
    int rc = weft_parallel_for(o->p, 0, o->inner_n, 1, inner_fn, &ia);
    TU_CHECK(rc == 0, "inner parallel_for = %d", rc);
  }
  return 0;
}

Test(parallel_for, nested_in_parallel_for, .init = setup, .timeout = TU_TIMEOUT(60))
{
  weft_pool *p = tu_pool(4, -1);
  const size_t on = 64, in = (size_t)tu_scaled(500, 50);
  outer o = {p, in, calloc(on * in, sizeof(atomic_uint))};
  cr_assert_not_null(o.hits);
  cr_assert_eq(weft_parallel_for(p, 0, on, 1, outer_fn, &o), 0);
  tu_assert_no_errors();
  for (size_t k = 0; k < on * in; k++)
    cr_assert_eq(atomic_load(&o.hits[k]), 1, "cell %zu covered %u times", k,
                 atomic_load(&o.hits[k]));
  free(o.hits);
  tu_destroy(p);
}

/* ------------------------------------------------------- parallel_launch */

typedef struct launch {
  int num_tasks;
  atomic_uint *hits;
  int fail_id;
  int fail_value;
} launch;

static int launch_fn(void *arg, int id, int num_tasks)
{
  launch *l = arg;
  TU_CHECK(num_tasks == l->num_tasks, "fn got num_tasks %d, expected %d", num_tasks,
           l->num_tasks);
  if (id < 0 || id >= l->num_tasks) {
    TU_CHECK(0, "fn got task_id %d of %d", id, l->num_tasks);
    return 0;
  }
  atomic_fetch_add(&l->hits[id], 1);
  return id == l->fail_id ? l->fail_value : 0;
}

/* Runs parallel_launch with num_tasks ids and checks each ran exactly once;
 * returns how many ids it checked (num_tasks). */
static int check_launch(weft_pool *p, int num_tasks)
{
  launch l = {num_tasks, calloc((size_t)num_tasks + 1, sizeof(atomic_uint)), -1, 0};
  cr_assert_not_null(l.hits);
  int rc = weft_parallel_launch(p, launch_fn, &l, num_tasks);
  cr_assert_eq(rc, 0, "parallel_launch(%d) = %d", num_tasks, rc);
  tu_assert_no_errors();
  int checked = 0;
  for (int i = 0; i < num_tasks; i++) {
    cr_assert_eq(atomic_load(&l.hits[i]), 1, "parallel_launch(%d): id %d ran %u times",
                 num_tasks, i, atomic_load(&l.hits[i]));
    checked++;
  }
  free(l.hits);
  return checked;
}

static int never_called_launch(void *arg, int id, int num_tasks)
{
  (void)id;
  (void)num_tasks;
  atomic_fetch_add((atomic_long *)arg, 1);
  return 99;
}

Test(parallel_launch, runs_each_id_once, .init = setup, .timeout = TU_TIMEOUT(60))
{
  weft_pool *p = tu_pool(4, -1);
  atomic_long calls = 0;
  cr_assert_eq(weft_parallel_launch(p, never_called_launch, &calls, 0), 0);
  cr_assert_eq(atomic_load(&calls), 0, "num_tasks 0 called fn");
  const int counts[] = {1, 2, 3, 4, 5, 8, 17, 100, 1000, (int)tu_scaled(20000, 2000)};
  for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
    for (int rep = 0; rep < 3; rep++)
      cr_assert_eq(check_launch(p, counts[k]), counts[k]);
  tu_destroy(p);
}

Test(parallel_launch, one_thread_pool, .init = setup, .timeout = TU_TIMEOUT(30))
{
  weft_pool *p = tu_pool(1, -1);
  cr_assert_eq(check_launch(p, 1), 1);
  cr_assert_eq(check_launch(p, 7), 7);
  cr_assert_eq(check_launch(p, 1000), 1000);
  tu_destroy(p);
}

Test(parallel_launch, returns_first_nonzero, .init = setup, .timeout = TU_TIMEOUT(30))
{
  weft_pool *p = tu_pool(4, -1);
  const int values[] = {1, -1, 77, WEFT_ESHUTDOWN};
  for (size_t v = 0; v < sizeof values / sizeof values[0]; v++) {
    for (int n = 1; n <= 64; n *= 4) {
      launch l = {n, calloc((size_t)n, sizeof(atomic_uint)), (int)(v * 7) % n, values[v]};
      int rc = weft_parallel_launch(p, launch_fn, &l, n);
      cr_assert_eq(rc, values[v], "id %d returned %d of %d tasks; launch returned %d",
                   l.fail_id, values[v], n, rc);
      for (int i = 0; i < n; i++)
        cr_assert_leq(atomic_load(&l.hits[i]), 1, "id %d ran twice", i);
      free(l.hits);
    }
  }
  tu_destroy(p);
  tu_assert_no_errors();
}

/* launch from inside a task (the caller is then a worker). */
typedef struct launch_in_task {
  weft_pool *p;
  int n;
  atomic_uint *hits;
  atomic_int done;
  int rc;
} launch_in_task;

static int launch_in_task_fn(void *arg, int id, int num_tasks)
{
  launch_in_task *x = arg;
  (void)num_tasks;
  atomic_fetch_add(&x->hits[id], 1);
  return 0;
}

static int launch_from_task(void *arg)
{
  launch_in_task *x = arg;
  x->rc = weft_parallel_launch(x->p, launch_in_task_fn, x, x->n);
  atomic_store(&x->done, 1);
  return 0;
}

Test(parallel_launch, from_inside_a_task, .init = setup, .timeout = TU_TIMEOUT(30))
{
  weft_pool *p = tu_pool(2, -1);
  launch_in_task x = {.p = p, .n = 500};
  x.hits = calloc(500, sizeof *x.hits);
  cr_assert_eq(weft_pool_submit(p, launch_from_task, &x), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&x.done), TU_DEADLINE_S), "launch inside a task never returned");
  cr_assert_eq(x.rc, 0);
  for (int i = 0; i < 500; i++)
    cr_assert_eq(atomic_load(&x.hits[i]), 1, "id %d ran %u times", i, atomic_load(&x.hits[i]));
  free(x.hits);
  tu_destroy(p);
}

/* ---------------------------------------------------- external submission */

typedef struct submitter {
  weft_pool *p;
  long count;
  long failed;
} submitter;

static atomic_long g_on_worker, g_off_worker;

static int tally_task(void *p)
{
  (void)p;
  int w = weft_current_worker();
  if (w >= 0 && w < g_threads)
    atomic_fetch_add(&g_on_worker, 1);
  else
    atomic_fetch_add(&g_off_worker, 1);
  atomic_fetch_add(&g_ran, 1);
  return 0;
}

static void *submitter_thread(void *arg)
{
  submitter *s = arg;
  for (long i = 0; i < s->count; i++)
    if (weft_pool_submit(s->p, tally_task, NULL) != 0)
      s->failed++;
  return NULL;
}

/* Outside submitting threads, and the tasks each of them submits. */
enum { EXT_SUBMITTERS = 4 };

static long ext_per_submitter(void)
{
  return tu_scaled(25000, 2500);
}

/* Returns how many of the submitted tasks ran (all of them, checked here). */
static long external_submitters(int threads)
{
  g_threads = threads;
  weft_pool *p = tu_pool(threads, -1);
  enum { K = EXT_SUBMITTERS };
  const long per = ext_per_submitter();
  atomic_store(&g_ran, 0);
  pthread_t t[K];
  submitter s[K];
  for (int i = 0; i < K; i++) {
    s[i] = (submitter){p, per, 0};
    cr_assert_eq(pthread_create(&t[i], NULL, submitter_thread, &s[i]), 0);
  }
  for (int i = 0; i < K; i++)
    pthread_join(t[i], NULL);
  for (int i = 0; i < K; i++)
    cr_assert_eq(s[i].failed, 0, "submitter %d: %ld submissions failed", i, s[i].failed);
  /* All of it must run without destroy's help (no lost wake-up). */
  bool all = TU_WAIT_UNTIL(atomic_load(&g_ran) == K * per, TU_DEADLINE_S);
  cr_assert(all, "%ld of %ld externally submitted tasks ran", atomic_load(&g_ran), K * per);
  cr_assert_eq(atomic_load(&g_off_worker), 0, "%ld tasks ran off the pool's workers",
               atomic_load(&g_off_worker));
  /* Stats: every task counted once, once the pool is idle. */
  bool counted = TU_WAIT_UNTIL(TU_STATS_SUM(p, tasks_run) == K * per, TU_DEADLINE_S);
  cr_assert(counted, "stats tasks_run sums to %lld, %ld tasks were submitted",
            TU_STATS_SUM(p, tasks_run), K * per);
  tu_destroy(p);
  cr_assert_eq(atomic_load(&g_ran), K * per, "destroy ran extra tasks?");
  tu_assert_no_leaks();
  return atomic_load(&g_ran);
}

Test(submit, external_threads_100k_tasks_2_workers, .init = setup, .timeout = TU_TIMEOUT(90))
{
  cr_assert_eq(external_submitters(2), EXT_SUBMITTERS * ext_per_submitter());
}

Test(submit, external_threads_100k_tasks_4_workers, .init = setup, .timeout = TU_TIMEOUT(90))
{
  cr_assert_eq(external_submitters(4), EXT_SUBMITTERS * ext_per_submitter());
}

/* Tasks submitting from workers (their own deques), fanning out. */
static atomic_long g_fan_budget;

static int fan_task(void *arg)
{
  weft_pool *p = arg;
  atomic_fetch_add(&g_ran, 1);
  for (int i = 0; i < 3; i++) {
    if (atomic_fetch_sub(&g_fan_budget, 1) <= 0)
      break;
    int rc = weft_pool_submit(p, fan_task, p);
    TU_CHECK(rc == 0, "submit from a worker = %d", rc);
  }
  return 0;
}

Test(submit, from_workers_fan_out, .init = setup, .timeout = TU_TIMEOUT(60))
{
  g_threads = 4;
  weft_pool *p = tu_pool(4, -1);
  const long total = tu_scaled(100000, 10000);
  atomic_store(&g_ran, 0);
  atomic_store(&g_fan_budget, total - 1);
  cr_assert_eq(weft_pool_submit(p, fan_task, p), 0);
  bool all = TU_WAIT_UNTIL(atomic_load(&g_ran) == total, TU_DEADLINE_S);
  cr_assert(all, "%ld of %ld tasks ran", atomic_load(&g_ran), total);
  bool counted = TU_WAIT_UNTIL(TU_STATS_SUM(p, tasks_run) == total, TU_DEADLINE_S);
  cr_assert(counted, "stats tasks_run sums to %lld, expected %ld", TU_STATS_SUM(p, tasks_run),
            total);
  tu_destroy(p);
  tu_assert_no_errors();
}

/* ------------------------------------------------------ worker identity */

typedef struct ident {
  int threads;
  atomic_int seen_bad;
  atomic_long ran;
} ident;

static int ident_task(void *arg)
{
  ident *x = arg;
  int w = weft_current_worker();
  if (w < 0 || w >= x->threads)
    atomic_store(&x->seen_bad, w < 0 ? w : w + 1000);
  atomic_fetch_add(&x->ran, 1);
  return 0;
}

static void *outside_thread(void *arg)
{
  *(int *)arg = weft_current_worker();
  return NULL;
}

Test(pool, current_worker, .init = setup, .timeout = TU_TIMEOUT(30))
{
  cr_assert_eq(weft_current_worker(), -1, "before any pool exists");
  for (int threads = 1; threads <= 8; threads *= 2) {
    weft_pool *p = tu_pool(threads, -1);
    cr_assert_eq(weft_current_worker(), -1, "on the creating thread");
    int other = 12345;
    pthread_t t;
    pthread_create(&t, NULL, outside_thread, &other);
    pthread_join(t, NULL);
    cr_assert_eq(other, -1, "on an unrelated thread");
    ident x = {.threads = threads};
    for (int i = 0; i < 1000; i++)
      cr_assert_eq(weft_pool_submit(p, ident_task, &x), 0);
    cr_assert(TU_WAIT_UNTIL(atomic_load(&x.ran) == 1000, TU_DEADLINE_S));
    cr_assert_eq(atomic_load(&x.seen_bad), 0,
                 "a task saw weft_current_worker() = %d (values >= 1000 are index + 1000)",
                 atomic_load(&x.seen_bad));
    tu_destroy(p);
    cr_assert_eq(weft_current_worker(), -1, "after destroy");
  }
}

/* Two pools at once: each worker reports its index in its own pool. */
Test(pool, two_pools_at_once, .init = setup, .timeout = TU_TIMEOUT(30))
{
  weft_pool *a = tu_pool(2, -1), *b = tu_pool(3, -1);
  ident xa = {.threads = 2}, xb = {.threads = 3};
  for (int i = 0; i < 2000; i++) {
    cr_assert_eq(weft_pool_submit(a, ident_task, &xa), 0);
    cr_assert_eq(weft_pool_submit(b, ident_task, &xb), 0);
  }
  cr_assert(TU_WAIT_UNTIL(atomic_load(&xa.ran) == 2000 && atomic_load(&xb.ran) == 2000,
                          TU_DEADLINE_S));
  cr_assert_eq(atomic_load(&xa.seen_bad), 0);
  cr_assert_eq(atomic_load(&xb.seen_bad), 0);
  tu_destroy(a);
  tu_destroy(b);
}

/* ----------------------------------------------------------------- stats */

Test(stats, bounds_and_counts, .init = setup, .timeout = TU_TIMEOUT(30))
{
  g_threads = 3;
  weft_pool *p = tu_pool(3, -1);
  weft_worker_stats st[8];
  memset(st, 0xff, sizeof st);
  cr_assert_eq(weft_pool_stats(p, NULL, 0), 0, "max 0 with NULL out");
  cr_assert_eq(weft_pool_stats(p, st, 0), 0);
  cr_assert_eq(weft_pool_stats(p, st, 1), 1);
  cr_assert_eq(weft_pool_stats(p, st, 3), 3);
  cr_assert_eq(weft_pool_stats(p, st, 8), 3, "more room than workers");
  /* Nothing ran yet. */
  for (int i = 0; i < 3; i++)
    cr_assert_eq(st[i].tasks_run, 0, "worker %d ran %llu tasks before any was submitted", i,
                 (unsigned long long)st[i].tasks_run);
  /* Only min(max, workers) entries are written. */
  uint64_t canary;
  memset(&canary, 0xff, sizeof canary);
  cr_assert_eq(st[3].tasks_run, canary, "stats wrote past the workers");

  const long n = tu_scaled(30000, 3000);
  atomic_store(&g_ran, 0);
  for (long i = 0; i < n; i++)
    cr_assert_eq(weft_pool_submit(p, tally_task, NULL), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&g_ran) == n, TU_DEADLINE_S));
  cr_assert(TU_WAIT_UNTIL(TU_STATS_SUM(p, tasks_run) == n, TU_DEADLINE_S),
            "tasks_run sums to %lld after %ld tasks", TU_STATS_SUM(p, tasks_run), n);
  /* Counters never run backwards and do not move on an idle pool's task count. */
  tu_sleep_us(20000);
  cr_assert_eq(TU_STATS_SUM(p, tasks_run), n);
  tu_destroy(p);
}

/* ------------------------------------------------------ injection batches */

/* Tasks submitted from outside the pool go through the injection queue; a
 * worker takes them a share at a time (src/pool/search.c), running the first
 * and putting the rest on its own deque. With one worker held while they
 * queue up, it must still run each exactly once and in submission order
 * (its deque gives back the oldest first), also past the queue's ring
 * (WEFT_INJECT_RING, 1024), where they wait in its overflow list. */
enum { INJ_N = 3000 };
static atomic_int g_inj_open, g_inj_next, g_inj_bad;
static atomic_int g_inj_hits[INJ_N];
static int g_inj_ids[INJ_N];

static int inj_gate_task(void *p)
{
  (void)p;
  TU_WAIT_UNTIL(atomic_load(&g_inj_open), TU_DEADLINE_S);
  return 0;
}

static atomic_int g_inj_open2; /* task INJ_GATE2 holds its worker until set */
enum { INJ_GATE2 = 10 };

static int inj_task(void *p)
{
  int id = *(int *)p;
  if (id == INJ_GATE2)
    TU_WAIT_UNTIL(atomic_load(&g_inj_open2), TU_DEADLINE_S);
  atomic_fetch_add(&g_inj_hits[id], 1);
  /* One worker: tasks run one at a time, so "next" is a plain sequence. */
  if (atomic_fetch_add(&g_inj_next, 1) != id)
    atomic_store(&g_inj_bad, 1);
  return 0;
}

Test(inject, a_held_worker_runs_a_queued_batch_once_and_in_order, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  weft_pool *p = tu_pool(1, -1);
  for (int round = 0; round < 3; round++) {
    atomic_store(&g_inj_open, 0);
    atomic_store(&g_inj_next, 0);
    atomic_store(&g_inj_bad, 0);
    for (int i = 0; i < INJ_N; i++) {
      atomic_store(&g_inj_hits[i], 0);
      g_inj_ids[i] = i;
    }
    atomic_store(&g_inj_open2, round == 0); /* round 0: no second gate */
    cr_assert_eq(weft_pool_submit(p, inj_gate_task, NULL), 0);
    tu_sleep_us(2000); /* the worker takes the gate and holds */
    /* Past the ring: the rest waits in the overflow list. */
    for (int i = 0; i < INJ_N / 2; i++)
      cr_assert_eq(weft_pool_submit(p, inj_task, &g_inj_ids[i]), 0);
    atomic_store(&g_inj_open, 1);
    /* Rounds 1 and 2: the worker takes a first batch, which frees room in
     * the ring while older tasks still wait in the list, and holds at
     * INJ_GATE2; what comes now must still queue behind those. */
    tu_sleep_us(2000);
    for (int i = INJ_N / 2; i < INJ_N; i++)
      cr_assert_eq(weft_pool_submit(p, inj_task, &g_inj_ids[i]), 0);
    atomic_store(&g_inj_open2, 1);
    cr_assert(TU_WAIT_UNTIL(atomic_load(&g_inj_next) == INJ_N, TU_DEADLINE_S),
              "%d of %d tasks ran", atomic_load(&g_inj_next), INJ_N);
    for (int i = 0; i < INJ_N; i++)
      cr_assert_eq(atomic_load(&g_inj_hits[i]), 1, "task %d ran %d times", i,
                   atomic_load(&g_inj_hits[i]));
    cr_assert_eq(atomic_load(&g_inj_bad), 0, "round %d: tasks ran out of submission order",
                 round);
  }
  tu_destroy(p);
}

Test(inject, outside_submissions_spread_over_workers, .init = setup, .timeout = TU_TIMEOUT(60))
{
  /* Many tasks from outside onto 2 workers: every one runs exactly once
   * (batches taken onto one worker's deque can be stolen by the other). */
  weft_pool *p = tu_pool(2, -1);
  const long n = tu_scaled(100000, 10000);
  atomic_store(&g_ran, 0);
  for (long i = 0; i < n; i++)
    cr_assert_eq(weft_pool_submit(p, tally_task, NULL), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&g_ran) == n, TU_DEADLINE_S), "%ld of %ld ran",
            atomic_load(&g_ran), n);
  tu_sleep_us(20000);
  cr_assert_eq(atomic_load(&g_ran), n, "a task ran twice");
  tu_destroy(p);
}

/* ------------------------------------------------------------ fairness */

/* A task that submits its own successor (onto the worker's deque, which it
 * pops newest first) keeps one worker busy as long as the chain goes on.
 * A task submitted from outside meanwhile must still run while the chain
 * goes on: the worker looks at the injection queue now and then
 * (WEFT_FAIR_TICKS), not only when its deque runs dry. */
typedef struct fair_chain {
  weft_pool *pool;
  atomic_long links;    /* chain tasks run */
  atomic_long links_at; /* links when the outsider ran; -1 before */
  long cap;             /* the chain ends here at the latest */
} fair_chain;

static int fair_link(void *arg)
{
  fair_chain *c = arg;
  long n = atomic_fetch_add(&c->links, 1) + 1;
  if (n < c->cap && atomic_load(&c->links_at) < 0)
    TU_CHECK(weft_pool_submit(c->pool, fair_link, c) == 0, "the chain's submit failed");
  return 0;
}

static int fair_outsider(void *arg)
{
  fair_chain *c = arg;
  atomic_store(&c->links_at, atomic_load(&c->links));
  return 0;
}

Test(fairness, a_task_chain_on_the_deque_lets_outside_tasks_in, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  fair_chain c = {tu_pool(1, -1), 0, -1, 20 * 1000 * 1000};
  cr_assert_eq(weft_pool_submit(c.pool, fair_link, &c), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&c.links) > 1000, TU_DEADLINE_S), "the chain did not start");
  cr_assert_eq(weft_pool_submit(c.pool, fair_outsider, &c), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&c.links_at) >= 0, TU_DEADLINE_S), "the outsider never ran");
  tu_destroy(c.pool); /* runs what is left: the chain ends at once */
  long at = atomic_load(&c.links_at);
  cr_assert_lt(at, c.cap, "the outside task ran only once the chain of %ld tasks had ended", c.cap);
  tu_assert_no_errors();
}
