/* SPDX-License-Identifier: MIT */
/*
 * Resource failures through the library's fault-injection hooks
 * (src/common/alloc.h): the k-th allocation or thread start from now, and
 * every later one, fails until reset.
 *
 *  - weft_pool_create fails with WEFT_ENOMEM for every k up to the number
 *    of allocations a create makes, with WEFT_EAGAIN for every failed
 *    thread start, and leaves no thread running (counted in /proc/self/task).
 *    Leaks are for the ASan build's LeakSanitizer to find.
 *  - Submission, spawn, parallel_for and parallel_launch report WEFT_ENOMEM
 *    (or manage without the memory) and never lose or duplicate work.
 */
#include "../common/testutil.h"

#include "common/alloc.h"

static void setup(void)
{
  tu_clear_weft_env();
  weft_test_fail_alloc_at(0);
  weft_test_fail_thread_at(0);
}

static void teardown(void)
{
  weft_test_fail_alloc_at(0);
  weft_test_fail_thread_at(0);
}

static atomic_long g_ran;

static int count_task(void *arg)
{
  (void)arg;
  atomic_fetch_add(&g_ran, 1);
  return 0;
}

static void cfg_for(weft_pool_config *cfg, int threads, const char *affinity)
{
  weft_pool_config_default(cfg);
  cfg->num_threads = threads;
  cfg->affinity = affinity;
}

/* The pool created after the failures works normally. */
static void use_and_destroy(weft_pool *p)
{
  long before = atomic_load(&g_ran);
  for (int i = 0; i < 200; i++)
    cr_assert_eq(weft_pool_submit(p, count_task, NULL), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&g_ran) == before + 200, TU_DEADLINE_S));
  cr_assert_eq(weft_pool_destroy(p), 0);
}

/* Returns the first k for which create succeeds with allocation k failing:
 * one more than the allocations a create makes (each was failed once). */
static long create_alloc_failures(int threads, const char *affinity)
{
  int base = tu_thread_baseline();
  weft_pool_config cfg;
  cfg_for(&cfg, threads, affinity);
  long k;
  weft_pool *p = NULL;
  for (k = 1;; k++) {
    cr_assert_lt(k, 100000, "create still failing after %ld allocations", k);
    p = NULL;
    weft_test_fail_alloc_at(k);
    int rc = weft_pool_create(&p, &cfg);
    weft_test_fail_alloc_at(0);
    if (rc == 0)
      break;
    cr_assert_eq(rc, WEFT_ENOMEM, "%d threads, allocation %ld failing: create = %d (%s)",
                 threads, k, rc, weft_strerror(rc));
    int left = tu_wait_thread_count(base);
    cr_assert_eq(left, base,
                 "%d threads, allocation %ld failing: %d threads still running after create "
                 "failed (%d before)",
                 threads, k, left, base);
  }
  cr_assert_gt(k, 1, "weft_pool_create succeeded with its first allocation failing");
  cr_assert_not_null(p);
  cr_assert_eq(weft_pool_num_threads(p), threads);
  use_and_destroy(p);
  cr_assert_eq(tu_wait_thread_count(base), base);
  tu_assert_no_leaks();
  return k;
}

Test(faults, create_enomem_1_thread, .init = setup, .fini = teardown, .timeout = TU_TIMEOUT(120))
{
  cr_assert_gt(create_alloc_failures(1, "none"), 1);
}

Test(faults, create_enomem_4_threads, .init = setup, .fini = teardown, .timeout = TU_TIMEOUT(120))
{
  cr_assert_gt(create_alloc_failures(4, "none"), 1);
}

Test(faults, create_enomem_with_affinity, .init = setup, .fini = teardown,
     .timeout = TU_TIMEOUT(120))
{
  cr_assert_gt(create_alloc_failures(2, "compact"), 1);
}

/* Returns the first k for which create succeeds with thread start k
 * failing: one more than the thread starts a create makes (each of which
 * was failed once), so more than threads. */
static long create_thread_failures(int threads)
{
  int base = tu_thread_baseline();
  weft_pool_config cfg;
  cfg_for(&cfg, threads, "none");
  long k;
  weft_pool *p = NULL;
  for (k = 1;; k++) {
    cr_assert_lt(k, 1000, "create still failing after %ld thread starts", k);
    p = NULL;
    weft_test_fail_thread_at(k);
    int rc = weft_pool_create(&p, &cfg);
    weft_test_fail_thread_at(0);
    if (rc == 0)
      break;
    cr_assert_eq(rc, WEFT_EAGAIN, "%d threads, thread start %ld failing: create = %d (%s)",
                 threads, k, rc, weft_strerror(rc));
    int left = tu_wait_thread_count(base);
    cr_assert_eq(left, base,
                 "%d threads, thread start %ld failing: %d threads running after create failed "
                 "(%d before)",
                 threads, k, left, base);
  }
  /* Every worker start goes through the hook. */
  cr_assert_gt(k, threads, "create with %d workers succeeded with thread start %ld failing",
               threads, k);
  use_and_destroy(p);
  cr_assert_eq(tu_wait_thread_count(base), base);
  tu_assert_no_leaks();
  return k;
}

Test(faults, create_eagain_1_thread, .init = setup, .fini = teardown, .timeout = TU_TIMEOUT(60))
{
  cr_assert_gt(create_thread_failures(1), 1);
}

Test(faults, create_eagain_4_threads, .init = setup, .fini = teardown, .timeout = TU_TIMEOUT(60))
{
  cr_assert_gt(create_thread_failures(4), 4);
}

Test(faults, create_eagain_8_threads, .init = setup, .fini = teardown, .timeout = TU_TIMEOUT(60))
{
  cr_assert_gt(create_thread_failures(8), 8);
}

/* Both at once: allocation k and thread start j. */
Test(faults, create_both_hooks, .init = setup, .fini = teardown, .timeout = TU_TIMEOUT(120))
{
  int base = tu_thread_baseline();
  weft_pool_config cfg;
  cfg_for(&cfg, 3, "none");
  for (long j = 1; j <= 3; j++) {
    for (long k = 1; k <= 40; k += 3) {
      weft_pool *p = NULL;
      weft_test_fail_alloc_at(k);
      weft_test_fail_thread_at(j);
      int rc = weft_pool_create(&p, &cfg);
      weft_test_fail_alloc_at(0);
      weft_test_fail_thread_at(0);
      if (rc == 0) {
        use_and_destroy(p);
        continue;
      }
      cr_assert(rc == WEFT_ENOMEM || rc == WEFT_EAGAIN, "alloc %ld / thread %ld: create = %d", k,
                j, rc);
      cr_assert_eq(tu_wait_thread_count(base), base, "alloc %ld / thread %ld: threads left", k,
                   j);
    }
  }
  tu_assert_no_leaks();
}

/* --------------------------------------------------------- after create */

Test(faults, submit_enomem_loses_nothing, .init = setup, .fini = teardown,
     .timeout = TU_TIMEOUT(60))
{
  weft_pool *p = tu_pool(2, -1);
  long accepted = 0, refused = 0;
  atomic_store(&g_ran, 0);
  for (long k = 1; k <= 30; k++) {
    weft_test_fail_alloc_at(k);
    for (int i = 0; i < 3000; i++) {
      int rc = weft_pool_submit(p, count_task, NULL);
      if (rc == 0)
        accepted++;
      else {
        refused++;
        cr_assert_eq(rc, WEFT_ENOMEM, "submit under allocation failure = %d (%s)", rc,
                     weft_strerror(rc));
      }
    }
    weft_test_fail_alloc_at(0);
    cr_assert(TU_WAIT_UNTIL(atomic_load(&g_ran) == accepted, TU_DEADLINE_S),
              "%ld submissions accepted, %ld ran", accepted, atomic_load(&g_ran));
  }
  cr_log_info("submit: %ld accepted, %ld refused with WEFT_ENOMEM", accepted, refused);
  /* Still healthy. */
  for (int i = 0; i < 100; i++)
    cr_assert_eq(weft_pool_submit(p, count_task, NULL), 0);
  cr_assert_eq(weft_pool_destroy(p), 0);
  cr_assert_eq(atomic_load(&g_ran), accepted + 100);
  tu_assert_no_leaks();
}

Test(faults, spawn_enomem_loses_nothing, .init = setup, .fini = teardown,
     .timeout = TU_TIMEOUT(60))
{
  weft_pool *p = tu_pool(2, -1);
  for (long k = 1; k <= 30; k++) {
    atomic_store(&g_ran, 0);
    long accepted = 0;
    weft_group g;
    weft_group_init(&g, p);
    weft_test_fail_alloc_at(k);
    for (int i = 0; i < 2000; i++) {
      int rc = weft_group_spawn(&g, count_task, NULL);
      if (rc == 0)
        accepted++;
      else
        cr_assert_eq(rc, WEFT_ENOMEM, "spawn under allocation failure = %d", rc);
    }
    weft_test_fail_alloc_at(0);
    int rc = weft_group_wait(&g);
    cr_assert(rc == 0 || rc == WEFT_ENOMEM, "wait = %d", rc);
    cr_assert_eq(atomic_load(&g_ran), accepted, "k=%ld: %ld spawns accepted, %ld ran", k,
                 accepted, atomic_load(&g_ran));
  }
  cr_assert_eq(weft_pool_destroy(p), 0);
  tu_assert_no_leaks();
}

typedef struct cover {
  size_t n;
  atomic_uint *hits;
} cover;

static int cover_fn(size_t b, size_t e, void *arg)
{
  cover *c = arg;
  for (size_t i = b; i < e && i < c->n; i++)
    atomic_fetch_add(&c->hits[i], 1);
  return 0;
}

static int launch_fn(void *arg, int id, int n)
{
  (void)n;
  cover *c = arg;
  atomic_fetch_add(&c->hits[id], 1);
  return 0;
}

Test(faults, parallel_loops_under_enomem, .init = setup, .fini = teardown,
     .timeout = TU_TIMEOUT(60))
{
  weft_pool *p = tu_pool(3, -1);
  const size_t n = 5000;
  cover c = {n, calloc(n, sizeof(atomic_uint))};
  cr_assert_not_null(c.hits);
  for (long k = 1; k <= 40; k++) {
    for (int which = 0; which < 2; which++) {
      memset(c.hits, 0, n * sizeof *c.hits);
      weft_test_fail_alloc_at(k);
      int rc = which == 0 ? weft_parallel_for(p, 0, n, 1, cover_fn, &c)
                          : weft_parallel_launch(p, launch_fn, &c, (int)n);
      weft_test_fail_alloc_at(0);
      const char *what = which == 0 ? "parallel_for" : "parallel_launch";
      cr_assert(rc == 0 || rc == WEFT_ENOMEM, "%s with allocation %ld failing = %d (%s)", what,
                k, rc, weft_strerror(rc));
      for (size_t i = 0; i < n; i++) {
        unsigned h = atomic_load(&c.hits[i]);
        if (rc == 0)
          cr_assert_eq(h, 1, "%s returned 0 with allocation %ld failing, index %zu ran %u times",
                       what, k, i, h);
        else
          cr_assert_leq(h, 1, "%s: index %zu ran %u times", what, i, h);
      }
    }
  }
  free(c.hits);
  cr_assert_eq(weft_pool_destroy(p), 0);
  tu_assert_no_leaks();
}

/* Destroy needs no memory: with every allocation failing it still drains
 * and joins. */
Test(faults, destroy_under_enomem, .init = setup, .fini = teardown, .timeout = TU_TIMEOUT(60))
{
  int base = tu_thread_baseline();
  weft_pool *p = tu_pool(2, -1);
  atomic_store(&g_ran, 0);
  for (int i = 0; i < 5000; i++)
    cr_assert_eq(weft_pool_submit(p, count_task, NULL), 0);
  weft_test_fail_alloc_at(1);
  int rc = weft_pool_destroy(p);
  weft_test_fail_alloc_at(0);
  cr_assert_eq(rc, 0, "destroy with allocations failing = %d", rc);
  cr_assert_eq(atomic_load(&g_ran), 5000);
  cr_assert_eq(tu_wait_thread_count(base), base);
  tu_assert_no_leaks();
}

Test(faults, hook_counts_calls, .init = setup, .fini = teardown, .timeout = TU_TIMEOUT(30))
{
  weft_test_fail_alloc_at(0);
  weft_test_fail_thread_at(0);
  weft_pool *p = tu_pool(3, -1);
  cr_assert_geq(weft_test_thread_calls(), 3, "3 workers started, %ld thread starts counted",
                weft_test_thread_calls());
  cr_assert_gt(weft_test_alloc_calls(), 0, "a pool was created without one allocation counted");
  cr_assert_eq(weft_pool_destroy(p), 0);
}
