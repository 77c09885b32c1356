/* SPDX-License-Identifier: MIT */
/*
 * Every bad input returns its code, and the codes have names: NULL
 * pointers, negative counts, begin > end, bad config fields, malformed
 * environment variables (with one "weft: " line on stderr naming the
 * variable and the value), destroy from inside a task, submission after
 * destroy began.
 */
#include "../common/testutil.h"

#include <limits.h>

static void setup(void)
{
  tu_clear_weft_env();
}

static int noop_task(void *arg)
{
  (void)arg;
  return 0;
}

static int noop_range(size_t b, size_t e, void *arg)
{
  (void)b;
  (void)e;
  (void)arg;
  return 0;
}

static int noop_launch(void *arg, int id, int n)
{
  (void)arg;
  (void)id;
  (void)n;
  return 0;
}

/* ---------------------------------------------------------------- strerror */

/* The codes, names and messages as WEFT_ERRNO_MAP lists them: what
 * weft_strerror and weft_err_name must cover, no more and no less. */
typedef struct map_entry {
  int code;
  const char *name; /* "WEFT_ENOMEM" */
  const char *msg;  /* the map's message, without the name */
} map_entry;

static const map_entry the_map[] = {
#define MAP_ENTRY(name, code, msg) {(code), "WEFT_" #name, (msg)},
    WEFT_ERRNO_MAP(MAP_ENTRY)
#undef MAP_ENTRY
};
#define MAP_COUNT (sizeof the_map / sizeof the_map[0])

static const map_entry *map_find(int code)
{
  for (size_t i = 0; i < MAP_COUNT; i++)
    if (the_map[i].code == code)
      return &the_map[i];
  return NULL;
}

/* Checks one code the library knows: its message is "<map message>
 * (WEFT_<NAME>)", its name round-trips, both are stable static strings. */
static void check_known(int code, const map_entry *e)
{
  const char *s = weft_strerror(code);
  const char *n = weft_err_name(code);
  cr_assert_not_null(e, "weft_strerror(%d) = \"%s\", weft_err_name = \"%s\": not in WEFT_ERRNO_MAP",
                     code, s, n ? n : "(null)");
  cr_assert_not_null(n, "weft_err_name(%d) is NULL, the map names it %s", code, e->name);
  cr_assert_str_eq(n, e->name, "weft_err_name(%d)", code);
  char want[512];
  snprintf(want, sizeof want, "%s (%s)", e->msg, e->name);
  cr_assert_str_eq(s, want, "weft_strerror(%d)", code);
  cr_assert_not_null(strstr(s, n), "weft_strerror(%d) = \"%s\" does not contain its name %s", code,
                     s, n);
  cr_assert_eq(weft_strerror(code), s, "weft_strerror(%d) is not one static string", code);
  cr_assert_eq(weft_err_name(code), n, "weft_err_name(%d) is not one static string", code);
}

Test(strerror, the_map_is_sound, .timeout = TU_TIMEOUT(10))
{
  cr_assert_gt(MAP_COUNT, 0);
  cr_assert_geq(WEFT_ERRNO_FIRST_, WEFT_ERRNO_LAST_);
  cr_assert_lt(WEFT_ERRNO_FIRST_, 0);
  for (size_t i = 0; i < MAP_COUNT; i++) {
    const map_entry *e = &the_map[i];
    cr_assert_lt(e->code, 0, "%s = %d is not negative", e->name, e->code);
    cr_assert(e->code <= WEFT_ERRNO_FIRST_ && e->code >= WEFT_ERRNO_LAST_,
              "%s = %d lies outside [WEFT_ERRNO_LAST_ %d, WEFT_ERRNO_FIRST_ %d]", e->name, e->code,
              WEFT_ERRNO_LAST_, WEFT_ERRNO_FIRST_);
    cr_assert_gt(strlen(e->msg), 0, "%s has an empty message", e->name);
    for (size_t j = 0; j < i; j++) {
      cr_assert_neq(e->code, the_map[j].code, "%s and %s share the value %d", e->name,
                    the_map[j].name, e->code);
      cr_assert_str_neq(e->name, the_map[j].name, "two entries are named %s", e->name);
      cr_assert_str_neq(e->msg, the_map[j].msg, "%s and %s share the message \"%s\"", e->name,
                        the_map[j].name, e->msg);
    }
  }
  /* The enum is generated from the map too. */
  cr_assert_eq(map_find(WEFT_EINVAL)->code, WEFT_EINVAL);
  cr_assert_str_eq(map_find(WEFT_ENOMEM)->name, "WEFT_ENOMEM");
  cr_assert_str_eq(map_find(WEFT_EDEVICE)->name, "WEFT_EDEVICE");
}

/* One scan of a range of ints: the known codes are recorded in seen[] (by
 * map index), anything else must be unknown. Returns how many it found. */
static size_t scan(long lo, long hi, int seen[MAP_COUNT], const char *unknown)
{
  size_t found = 0;
  for (long c = lo; c <= hi; c++) {
    int code = (int)c;
    const char *s = weft_strerror(code);
    cr_assert_not_null(s, "weft_strerror(%d) is NULL", code);
    if (code == 0) {
      cr_assert_str_eq(s, "success");
      cr_assert_str_eq(weft_err_name(0), "0");
      continue;
    }
    if (strcmp(s, unknown) == 0) {
      cr_assert_null(weft_err_name(code), "weft_err_name(%d) = \"%s\" but weft_strerror says \"%s\"",
                     code, weft_err_name(code), s);
      cr_assert_null(map_find(code), "%s = %d: weft_strerror says \"%s\"",
                     map_find(code) ? map_find(code)->name : "", code, s);
      continue;
    }
    const map_entry *e = map_find(code);
    check_known(code, e);
    size_t k = (size_t)(e - the_map);
    cr_assert_eq(seen[k], 0, "%s met twice", e->name);
    seen[k] = 1;
    found++;
  }
  return found;
}

Test(strerror, covers_exactly_the_map, .timeout = TU_TIMEOUT(60))
{
  const char *unknown = weft_strerror(INT_MIN);
  cr_assert_str_eq(unknown, "unknown error");
  int seen[MAP_COUNT] = {0};
  size_t found = scan(-100000, 100000, seen, unknown);
  found += scan(INT_MIN, INT_MIN + 1000, seen, unknown);
  found += scan(INT_MAX - 1000, INT_MAX, seen, unknown);
  cr_assert_eq(found, MAP_COUNT, "weft_strerror knows %zu codes, WEFT_ERRNO_MAP lists %zu", found,
               MAP_COUNT);
  for (size_t i = 0; i < MAP_COUNT; i++)
    cr_assert(seen[i], "%s = %d: weft_strerror(%d) = \"%s\"", the_map[i].name, the_map[i].code,
              the_map[i].code, weft_strerror(the_map[i].code));
  /* All messages and names distinct, and none says success. */
  for (size_t i = 0; i < MAP_COUNT; i++) {
    const char *si = weft_strerror(the_map[i].code);
    cr_assert_str_neq(si, weft_strerror(0), "%s says success", the_map[i].name);
    for (size_t j = 0; j < i; j++) {
      cr_assert_str_neq(si, weft_strerror(the_map[j].code), "%s and %s share a message",
                        the_map[i].name, the_map[j].name);
      cr_assert_str_neq(weft_err_name(the_map[i].code), weft_err_name(the_map[j].code));
    }
  }
}

/* ------------------------------------------------------------ NULL & ranges */

Test(einval, pool_functions, .init = setup, .timeout = TU_TIMEOUT(30))
{
  weft_pool_config cfg;
  weft_pool_config_default(&cfg);
  cfg.num_threads = 2;
  cr_assert_eq(weft_pool_create(NULL, &cfg), WEFT_EINVAL, "create with NULL out");
  cr_assert_eq(weft_pool_create(NULL, NULL), WEFT_EINVAL, "create with NULL out and cfg");
  cr_assert_eq(weft_pool_destroy(NULL), WEFT_EINVAL);
  cr_assert_eq(weft_pool_num_threads(NULL), WEFT_EINVAL);
  cr_assert_eq(weft_pool_submit(NULL, noop_task, NULL), WEFT_EINVAL);
  weft_worker_stats st[4];
  cr_assert_eq(weft_pool_stats(NULL, st, 4), WEFT_EINVAL);
  cr_assert_eq(weft_pool_stats(NULL, NULL, 0), WEFT_EINVAL);

  weft_pool *p = NULL;
  cr_assert_eq(weft_pool_create(&p, &cfg), 0);
  cr_assert_eq(weft_pool_submit(p, NULL, NULL), WEFT_EINVAL, "submit with NULL fn");
  cr_assert_eq(weft_pool_stats(p, NULL, 1), WEFT_EINVAL, "stats with NULL out and max 1");
  cr_assert_eq(weft_pool_stats(p, st, -1), WEFT_EINVAL, "stats with max -1");
  cr_assert_eq(weft_pool_stats(p, st, INT_MIN), WEFT_EINVAL, "stats with max INT_MIN");
  cr_assert_eq(weft_pool_stats(p, NULL, 0), 0, "stats with NULL out and max 0");
  /* The pool still works after all that. */
  cr_assert_eq(weft_pool_submit(p, noop_task, NULL), 0);
  cr_assert_eq(weft_pool_destroy(p), 0);
  tu_assert_no_leaks();
}

Test(einval, bad_config_fields, .init = setup, .timeout = TU_TIMEOUT(30))
{
  int base = tu_thread_baseline();
  struct {
    int threads, spin;
    const char *affinity;
    const char *what;
  } bad[] = {
      {-1, -1, NULL, "num_threads -1"},
      {INT_MIN, -1, NULL, "num_threads INT_MIN"},
      {2, -2, NULL, "spin_count -2"},
      {2, INT_MIN, NULL, "spin_count INT_MIN"},
      {2, -1, "bogus", "affinity \"bogus\""},
      {2, -1, "0-", "affinity \"0-\""},
      {2, -1, "9999", "affinity \"9999\""},
      {2, -1, ",", "affinity \",\""},
      {2, -1, "1-0x", "affinity \"1-0x\""},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    weft_pool_config cfg;
    weft_pool_config_default(&cfg);
    cfg.num_threads = bad[i].threads;
    cfg.spin_count = bad[i].spin;
    cfg.affinity = bad[i].affinity;
    weft_pool *p = NULL;
    tu_capture cap;
    char err[4096];
    tu_capture_begin(&cap);
    int rc = weft_pool_create(&p, &cfg);
    tu_capture_end(&cap, err, sizeof err);
    cr_assert_eq(rc, WEFT_EINVAL, "config with %s: create = %d (%s)", bad[i].what, rc,
                 weft_strerror(rc));
    cr_assert_eq(tu_wait_thread_count(base), base, "config with %s left threads running",
                 bad[i].what);
  }
  tu_assert_no_leaks();
}

Test(einval, group_functions, .init = setup, .timeout = TU_TIMEOUT(30))
{
  weft_pool *p = tu_pool(2, -1);
  cr_assert_eq(weft_group_spawn(NULL, noop_task, NULL), WEFT_EINVAL);
  cr_assert_eq(weft_group_wait(NULL), WEFT_EINVAL);
  weft_group g;
  weft_group_init(&g, p);
  cr_assert_eq(weft_group_spawn(&g, NULL, NULL), WEFT_EINVAL, "spawn with NULL fn");
  cr_assert_eq(weft_group_wait(&g), 0, "group after a refused spawn");
  /* A zeroed group was never initialised. */
  weft_group z;
  memset(&z, 0, sizeof z);
  cr_assert_eq(weft_group_spawn(&z, noop_task, NULL), WEFT_EINVAL, "spawn into a zeroed group");
  /* A group initialised without a pool has nowhere to run. */
  weft_group np;
  weft_group_init(&np, NULL);
  cr_assert_eq(weft_group_spawn(&np, noop_task, NULL), WEFT_EINVAL,
               "spawn into a group initialised with a NULL pool");
  tu_destroy(p);
}

Test(einval, parallel_for, .init = setup, .timeout = TU_TIMEOUT(30))
{
  weft_pool *p = tu_pool(2, -1);
  cr_assert_eq(weft_parallel_for(NULL, 0, 10, 1, noop_range, NULL), WEFT_EINVAL);
  cr_assert_eq(weft_parallel_for(p, 0, 10, 1, NULL, NULL), WEFT_EINVAL);
  cr_assert_eq(weft_parallel_for(p, 11, 10, 1, noop_range, NULL), WEFT_EINVAL, "begin > end");
  cr_assert_eq(weft_parallel_for(p, SIZE_MAX, 0, 0, noop_range, NULL), WEFT_EINVAL);
  cr_assert_eq(weft_parallel_for(p, 1, 0, 0, NULL, NULL), WEFT_EINVAL);
  /* NULL pool with an empty range is still a bad argument. */
  cr_assert_eq(weft_parallel_for(NULL, 5, 5, 0, noop_range, NULL), WEFT_EINVAL);
  cr_assert_eq(weft_parallel_for(p, 5, 5, 0, NULL, NULL), WEFT_EINVAL);
  tu_destroy(p);
}

Test(einval, parallel_launch, .init = setup, .timeout = TU_TIMEOUT(30))
{
  weft_pool *p = tu_pool(2, -1);
  cr_assert_eq(weft_parallel_launch(NULL, noop_launch, NULL, 4), WEFT_EINVAL);
  cr_assert_eq(weft_parallel_launch(p, NULL, NULL, 4), WEFT_EINVAL);
  cr_assert_eq(weft_parallel_launch(p, noop_launch, NULL, -1), WEFT_EINVAL);
  cr_assert_eq(weft_parallel_launch(p, noop_launch, NULL, INT_MIN), WEFT_EINVAL);
  cr_assert_eq(weft_parallel_launch(NULL, noop_launch, NULL, 0), WEFT_EINVAL);
  cr_assert_eq(weft_parallel_launch(p, NULL, NULL, 0), WEFT_EINVAL);
  tu_destroy(p);
}

/* ------------------------------------------------------ malformed environment */

static int create_pool_null(void *ctx)
{
  (void)ctx;
  weft_pool *p = NULL;
  return weft_pool_create(&p, NULL);
}

static int create_pool_default(void *ctx)
{
  (void)ctx;
  weft_pool *p = NULL;
  weft_pool_config cfg;
  weft_pool_config_default(&cfg); /* every field automatic */
  return weft_pool_create(&p, &cfg);
}

/* Returns the create result (WEFT_EINVAL), already checked here. */
static int expect_env_einval(const char *var, const char *value)
{
  int base = tu_thread_baseline();
  setenv(var, value, 1);
  int rc = tu_expect_env_einval(var, value, "weft_pool_create(NULL config)", create_pool_null,
                                NULL, base);
  tu_expect_env_einval(var, value, "weft_pool_create(default config)", create_pool_default, NULL,
                       base);
  unsetenv(var);
  tu_assert_no_leaks();
  return rc;
}

Test(env, malformed_num_threads, .init = setup, .timeout = TU_TIMEOUT(30))
{
  const char *vals[] = {"abc", "-1", "0x", "99999999999", "2abc", "0x4", "1.5", "-0x1"};
  for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
    cr_assert_eq(expect_env_einval("WEFT_NUM_THREADS", vals[i]), WEFT_EINVAL);
}

Test(env, malformed_spin_count, .init = setup, .timeout = TU_TIMEOUT(30))
{
  const char *vals[] = {"abc", "-5", "1x", "0x", "99999999999999999999", "2.5"};
  for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
    cr_assert_eq(expect_env_einval("WEFT_SPIN_COUNT", vals[i]), WEFT_EINVAL);
}

Test(env, malformed_affinity, .init = setup, .timeout = TU_TIMEOUT(30))
{
  const char *vals[] = {"bogus", "0-", "9999", "compactx", "-1", "0-9999", "abc,0"};
  for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
    cr_assert_eq(expect_env_einval("WEFT_AFFINITY", vals[i]), WEFT_EINVAL);
}

/* A malformed variable fails create even when another one is fine. */
Test(env, one_bad_variable_among_good_ones, .init = setup, .timeout = TU_TIMEOUT(30))
{
  setenv("WEFT_NUM_THREADS", "2", 1);
  setenv("WEFT_AFFINITY", "none", 1);
  cr_assert_eq(expect_env_einval("WEFT_SPIN_COUNT", "lots"), WEFT_EINVAL);
  setenv("WEFT_SPIN_COUNT", "10", 1);
  cr_assert_eq(expect_env_einval("WEFT_NUM_THREADS", "two"), WEFT_EINVAL);
  setenv("WEFT_NUM_THREADS", "2", 1);
  weft_pool *p = NULL;
  cr_assert_eq(weft_pool_create(&p, NULL), 0, "all three variables well-formed");
  cr_assert_eq(weft_pool_num_threads(p), 2);
  cr_assert_eq(weft_pool_destroy(p), 0);
}

/* --------------------------------------------------------------- EDEADLK */

typedef struct self_destroy {
  weft_pool *pool;
  atomic_int done;
  int rc;
} self_destroy;

static int destroy_from_task(void *arg)
{
  self_destroy *x = arg;
  x->rc = weft_pool_destroy(x->pool);
  atomic_store(&x->done, 1);
  return 0;
}

static int destroy_from_range(size_t b, size_t e, void *arg)
{
  (void)e;
  self_destroy *x = arg;
  if (b == 0) {
    x->rc = weft_pool_destroy(x->pool);
    atomic_store(&x->done, 1);
  }
  return 0;
}

Test(edeadlk, destroy_from_inside_a_task, .init = setup, .timeout = TU_TIMEOUT(30))
{
  for (int threads = 1; threads <= 4; threads *= 2) {
    weft_pool *p = tu_pool(threads, -1);
    self_destroy x = {.pool = p, .rc = 12345};
    cr_assert_eq(weft_pool_submit(p, destroy_from_task, &x), 0);
    cr_assert(TU_WAIT_UNTIL(atomic_load(&x.done), TU_DEADLINE_S),
              "weft_pool_destroy inside a task never returned");
    cr_assert_eq(x.rc, WEFT_EDEADLK, "destroy inside a task (%d threads) = %d", threads, x.rc);
    /* The pool is intact: it still runs work and destroys normally. */
    weft_group g;
    weft_group_init(&g, p);
    x.rc = 12345;
    atomic_store(&x.done, 0);
    cr_assert_eq(weft_group_spawn(&g, destroy_from_task, &x), 0);
    cr_assert_eq(weft_group_wait(&g), 0);
    cr_assert_eq(x.rc, WEFT_EDEADLK, "destroy inside a group task = %d", x.rc);
    tu_destroy(p);
  }
}

static int pfor_from_task(void *arg)
{
  self_destroy *x = arg;
  int rc = weft_parallel_for(x->pool, 0, 100, 1, destroy_from_range, x);
  TU_CHECK(rc == 0, "parallel_for = %d", rc);
  return 0;
}

/* A parallel_for started by a task runs its bodies on workers only. */
Test(edeadlk, destroy_from_parallel_for_body, .init = setup, .timeout = TU_TIMEOUT(30))
{
  weft_pool *p = tu_pool(2, -1);
  self_destroy x = {.pool = p, .rc = 12345};
  weft_group g;
  weft_group_init(&g, p);
  cr_assert_eq(weft_group_spawn(&g, pfor_from_task, &x), 0);
  cr_assert_eq(weft_group_wait(&g), 0);
  tu_assert_no_errors();
  cr_assert(atomic_load(&x.done));
  cr_assert_eq(x.rc, WEFT_EDEADLK, "destroy inside a parallel_for body = %d", x.rc);
  tu_destroy(p);
}

/* -------------------------------------------------------------- ESHUTDOWN */

/*
 * A long task holds destroy in its drain phase. While it runs, it asks an
 * outside thread to submit: that thread gets WEFT_ESHUTDOWN (after any
 * submissions that beat destroy's start, which must all run). Then the
 * task itself submits, which must succeed and run.
 */
typedef struct shut {
  weft_pool *pool;
  atomic_int task_started;
  atomic_int destroy_calling;  /* the main thread is about to call destroy */
  atomic_int outsider_go;
  atomic_int outsider_done;
  atomic_long accepted_before; /* outsider submissions that beat destroy */
  atomic_long ran_accepted;
  int outsider_rc;
  int outsider_group_rc;
  int outsider_pfor_rc;
  int outsider_launch_rc;
  int task_submit_rc;
  atomic_int late_ran;
  atomic_int task_timeout;
} shut;

static shut g_shut;

static int accepted_task(void *arg)
{
  (void)arg;
  atomic_fetch_add(&g_shut.ran_accepted, 1);
  return 0;
}

static int late_task(void *arg)
{
  (void)arg;
  atomic_store(&g_shut.late_ran, 1);
  return 0;
}

static void *outsider(void *arg)
{
  (void)arg;
  while (!atomic_load(&g_shut.outsider_go))
    tu_sleep_us(100);
  /* destroy may not have begun at the very first try; it has once the
   * main thread is inside weft_pool_destroy, which it soon is. */
  int rc = 0;
  double deadline = tu_now() + 30.0;
  for (;;) {
    rc = weft_pool_submit(g_shut.pool, accepted_task, NULL);
    if (rc != 0)
      break;
    atomic_fetch_add(&g_shut.accepted_before, 1);
    if (tu_now() > deadline)
      break;
    tu_sleep_us(200);
  }
  g_shut.outsider_rc = rc;
  weft_group g;
  weft_group_init(&g, g_shut.pool);
  g_shut.outsider_group_rc = weft_group_spawn(&g, accepted_task, NULL);
  if (g_shut.outsider_group_rc == 0) {
    atomic_fetch_add(&g_shut.accepted_before, 1);
    weft_group_wait(&g);
  }
  /* Loops from an outside thread are submissions too. */
  g_shut.outsider_pfor_rc = weft_parallel_for(g_shut.pool, 0, 100, 1, noop_range, NULL);
  g_shut.outsider_launch_rc = weft_parallel_launch(g_shut.pool, noop_launch, NULL, 4);
  atomic_store(&g_shut.outsider_done, 1);
  return NULL;
}

static int long_task(void *arg)
{
  (void)arg;
  atomic_store(&g_shut.task_started, 1);
  if (!TU_WAIT_UNTIL(atomic_load(&g_shut.destroy_calling), 30.0)) {
    atomic_store(&g_shut.task_timeout, 1);
    return 0;
  }
  atomic_store(&g_shut.outsider_go, 1);
  if (!TU_WAIT_UNTIL(atomic_load(&g_shut.outsider_done), 40.0)) {
    atomic_store(&g_shut.task_timeout, 2);
    return 0;
  }
  g_shut.task_submit_rc = weft_pool_submit(g_shut.pool, late_task, NULL);
  return 0;
}

/* Returns what destroy returned (0), already checked here. */
static int submit_during_destroy(int threads)
{
  memset(&g_shut, 0, sizeof g_shut);
  g_shut.pool = tu_pool(threads, -1);
  g_shut.task_submit_rc = 12345;
  g_shut.outsider_rc = 12345;
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, outsider, NULL), 0);
  cr_assert_eq(weft_pool_submit(g_shut.pool, long_task, NULL), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&g_shut.task_started), TU_DEADLINE_S));
  atomic_store(&g_shut.destroy_calling, 1);
  int rc = weft_pool_destroy(g_shut.pool);
  pthread_join(t, NULL);
  cr_assert_eq(rc, 0, "destroy = %d", rc);
  cr_assert_eq(g_shut.task_timeout, 0, "the long task gave up waiting (%d)", g_shut.task_timeout);
  cr_assert_eq(g_shut.outsider_rc, WEFT_ESHUTDOWN,
               "an outside thread submitting while destroy drains got %d (%s), after %ld "
               "accepted submissions",
               g_shut.outsider_rc, weft_strerror(g_shut.outsider_rc),
               atomic_load(&g_shut.accepted_before));
  cr_assert_eq(g_shut.outsider_group_rc, WEFT_ESHUTDOWN,
               "weft_group_spawn from an outside thread while destroy drains got %d",
               g_shut.outsider_group_rc);
  cr_assert_eq(g_shut.outsider_pfor_rc, WEFT_ESHUTDOWN,
               "weft_parallel_for from an outside thread while destroy drains got %d",
               g_shut.outsider_pfor_rc);
  cr_assert_eq(g_shut.outsider_launch_rc, WEFT_ESHUTDOWN,
               "weft_parallel_launch from an outside thread while destroy drains got %d",
               g_shut.outsider_launch_rc);
  cr_assert_eq(g_shut.task_submit_rc, 0, "a task submitting during drain got %d (%s)",
               g_shut.task_submit_rc, weft_strerror(g_shut.task_submit_rc));
  cr_assert_eq(atomic_load(&g_shut.late_ran), 1, "work a task submitted during drain never ran");
  cr_assert_eq(atomic_load(&g_shut.ran_accepted), atomic_load(&g_shut.accepted_before),
               "%ld submissions were accepted before destroy, %ld of them ran",
               atomic_load(&g_shut.accepted_before), atomic_load(&g_shut.ran_accepted));
  return rc;
}

Test(eshutdown, outside_submit_during_drain_1_thread, .init = setup, .timeout = TU_TIMEOUT(90))
{
  cr_assert_eq(submit_during_destroy(1), 0);
}

Test(eshutdown, outside_submit_during_drain_3_threads, .init = setup, .timeout = TU_TIMEOUT(90))
{
  cr_assert_eq(submit_during_destroy(3), 0);
}
