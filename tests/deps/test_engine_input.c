/* SPDX-License-Identifier: MIT */
/*
 * Bad input to the engine returns its code and changes nothing: NULL
 * engine / descriptor / var / out, descriptors with both fn and async_fn
 * or neither, counts without arrays, bad props and contexts, bad config
 * fields, handles of another engine and forged ones, malformed WEFT_ENGINE
 * and WEFT_MAX_INFLIGHT (create fails with WEFT_EINVAL and one "weft: "
 * line naming the variable and the value), a push from another thread
 * while destroy drains (WEFT_ESHUTDOWN), destroy from inside an op
 * (WEFT_EDEADLK).
 */
#include "engine_util.h"

#include <limits.h>

static void setup(void)
{
  te_setup();
}

static const char *const kinds[] = {"threaded", "naive"};

/* ------------------------------------------------------------- NULLs */

static int null_arguments(const char *kind)
{
  te t = te_new(kind, 2, 0);
  weft_engine *E = t.eng;
  weft_var *v = te_var(E);
  atomic_int ran = 0;
  weft_op_desc d = te_desc(te_count_fn, &ran);
  d.writes = (weft_var *const[]){v};
  d.num_writes = 1;
  weft_op *op = NULL;
  cr_assert_eq(weft_op_new(E, &d, &op), 0);
  weft_var *out = NULL;
  weft_op *oout = NULL;

  cr_assert_eq(weft_var_new(NULL, &out), WEFT_EINVAL);
  cr_assert_eq(weft_var_new(E, NULL), WEFT_EINVAL);
  cr_assert_eq(weft_var_delete(NULL, v), WEFT_EINVAL);
  cr_assert_eq(weft_var_delete(E, NULL), WEFT_EINVAL);
  cr_assert_eq(weft_push(NULL, &d), WEFT_EINVAL);
  cr_assert_eq(weft_push(E, NULL), WEFT_EINVAL);
  cr_assert_eq(weft_op_new(NULL, &d, &oout), WEFT_EINVAL);
  cr_assert_eq(weft_op_new(E, NULL, &oout), WEFT_EINVAL);
  cr_assert_eq(weft_op_new(E, &d, NULL), WEFT_EINVAL);
  cr_assert_eq(weft_op_push(NULL, op), WEFT_EINVAL);
  cr_assert_eq(weft_op_push(E, NULL), WEFT_EINVAL);
  cr_assert_eq(weft_op_delete(NULL, op), WEFT_EINVAL);
  cr_assert_eq(weft_op_delete(E, NULL), WEFT_EINVAL);
  cr_assert_eq(weft_var_wait(NULL, v), WEFT_EINVAL);
  cr_assert_eq(weft_var_wait(E, NULL), WEFT_EINVAL);
  cr_assert_eq(weft_wait_all(NULL), WEFT_EINVAL);
  cr_assert_eq(weft_engine_destroy(NULL), WEFT_EINVAL);
  cr_assert_eq(weft_wait_all(E), 0);
  cr_assert_eq(atomic_load(&ran), 0, "%s: a rejected call ran an op", kind);
  /* Everything still works: the handles passed beside a NULL are intact. */
  cr_assert_eq(weft_op_push(E, op), 0);
  cr_assert_eq(weft_push(E, &d), 0);
  cr_assert_eq(weft_var_wait(E, v), 0);
  cr_assert_eq(atomic_load(&ran), 2);
  cr_assert_eq(weft_op_delete(E, op), 0);
  cr_assert_eq(weft_var_delete(E, v), 0);
  return te_free(&t);
}

Test(einval, null_arguments, .init = setup, .timeout = TU_TIMEOUT(30))
{
  for (int k = 0; k < 2; k++)
    cr_assert_eq(null_arguments(kinds[k]), 0);
  tu_assert_no_leaks();
}

/* ------------------------------------------------------ descriptors */

static void noop_async(const weft_run_ctx *rc, void *arg, weft_done *done)
{
  (void)rc;
  atomic_fetch_add((atomic_int *)arg, 1);
  weft_done_signal(done, 0);
}

/* Pushes d and builds a reusable op from it: both must return want. */
static void expect_rejected(weft_engine *E, const weft_op_desc *d, int want, const char *what)
{
  int rc = weft_push(E, d);
  cr_assert_eq(rc, want, "push with %s = %d (%s), expected %s", what, rc, weft_strerror(rc),
               weft_strerror(want));
  weft_op *op = NULL;
  rc = weft_op_new(E, d, &op);
  cr_assert_eq(rc, want, "op_new with %s = %d (%s), expected %s", what, rc, weft_strerror(rc),
               weft_strerror(want));
}

static int bad_descriptors(const char *kind)
{
  te t = te_new(kind, 2, 0);
  weft_engine *E = t.eng;
  weft_var *a = te_var(E), *b = te_var(E);
  atomic_int ran = 0;
  weft_var *const one[1] = {a};
  weft_var *const with_null[2] = {b, NULL};

  weft_op_desc d = te_desc(te_count_fn, &ran);
  d.async_fn = noop_async;
  d.writes = one;
  d.num_writes = 1;
  expect_rejected(E, &d, WEFT_EINVAL, "both fn and async_fn");

  d = te_desc(NULL, &ran);
  d.writes = one;
  d.num_writes = 1;
  expect_rejected(E, &d, WEFT_EINVAL, "neither fn nor async_fn");

  d = te_desc(te_count_fn, &ran);
  d.num_reads = 1;
  d.writes = one;
  d.num_writes = 1;
  expect_rejected(E, &d, WEFT_EINVAL, "num_reads 1 and reads NULL");

  d = te_desc(te_count_fn, &ran);
  d.reads = one;
  d.num_reads = 1;
  d.num_writes = 2;
  expect_rejected(E, &d, WEFT_EINVAL, "num_writes 2 and writes NULL");

  d = te_desc(te_count_fn, &ran);
  d.reads = with_null;
  d.num_reads = 2;
  d.writes = one;
  d.num_writes = 1;
  expect_rejected(E, &d, WEFT_EINVAL, "a NULL var among the reads");

  d = te_desc(te_count_fn, &ran);
  d.reads = one;
  d.num_reads = 1;
  d.writes = with_null;
  d.num_writes = 2;
  expect_rejected(E, &d, WEFT_EINVAL, "a NULL var among the writes");

  d = te_desc(te_count_fn, &ran);
  d.writes = one;
  d.num_writes = 1;
  d.prop = (weft_prop)99;
  expect_rejected(E, &d, WEFT_EINVAL, "prop 99");
  d.prop = (weft_prop)-1;
  expect_rejected(E, &d, WEFT_EINVAL, "prop -1");
  d.prop = WEFT_PROP_NORMAL;
  d.ctx.type = (weft_dev_type)5;
  expect_rejected(E, &d, WEFT_EINVAL, "ctx.type 5");

  cr_assert_eq(weft_wait_all(E), 0);
  cr_assert_eq(atomic_load(&ran), 0, "%s: a rejected descriptor ran", kind);
  /* Nothing is left registered on a or b: writers of both run at once. */
  d = te_desc(te_count_fn, &ran);
  d.writes = (weft_var *const[]){a, b};
  d.num_writes = 2;
  cr_assert_eq(weft_push(E, &d), 0);
  cr_assert_eq(weft_var_wait(E, a), 0);
  cr_assert_eq(weft_var_wait(E, b), 0);
  cr_assert_eq(atomic_load(&ran), 1);
  /* An op with no vars at all is fine, and wait_all waits for it. */
  d = te_desc(te_count_fn, &ran);
  cr_assert_eq(weft_push(E, &d), 0);
  d = te_adesc(noop_async, &ran);
  cr_assert_eq(weft_push(E, &d), 0);
  cr_assert_eq(weft_wait_all(E), 0);
  cr_assert_eq(atomic_load(&ran), 3);
  return te_free(&t);
}

Test(einval, bad_descriptors, .init = setup, .timeout = TU_TIMEOUT(30))
{
  for (int k = 0; k < 2; k++)
    cr_assert_eq(bad_descriptors(kinds[k]), 0);
  tu_assert_no_leaks();
}

Test(einval, bad_config_fields, .init = setup, .timeout = TU_TIMEOUT(30))
{
  int base = tu_thread_baseline();
  weft_engine_config cfg;
  weft_engine_config_default(&cfg);
  cr_assert_null(cfg.pool);
  cr_assert_null(cfg.kind);
  cr_assert_eq(cfg.max_inflight, -1, "the default max_inflight is %d, not -1 (automatic)",
               cfg.max_inflight);
  weft_engine *e = NULL;
  cr_assert_eq(weft_engine_create(NULL, NULL), WEFT_EINVAL);
  cr_assert_eq(weft_engine_create(NULL, &cfg), WEFT_EINVAL);
  /* Quietly: the library explains each refusal on stderr. */
  tu_capture cap;
  char err[4096];
  tu_capture_begin(&cap);
  const char *bad_kinds[] = {"bogus", "Naive2", "threaded ", "naive,threaded"};
  for (size_t i = 0; i < sizeof bad_kinds / sizeof *bad_kinds; i++) {
    weft_engine_config_default(&cfg);
    cfg.kind = bad_kinds[i];
    int rc = weft_engine_create(&e, &cfg);
    cr_assert_eq(rc, WEFT_EINVAL, "kind \"%s\": create = %d", bad_kinds[i], rc);
  }
  const int bad_caps[] = {-2, -100, INT_MIN};
  for (size_t i = 0; i < sizeof bad_caps / sizeof *bad_caps; i++) {
    weft_engine_config_default(&cfg);
    cfg.max_inflight = bad_caps[i];
    int rc = weft_engine_create(&e, &cfg);
    cr_assert_eq(rc, WEFT_EINVAL, "max_inflight %d: create = %d", bad_caps[i], rc);
  }
  tu_capture_end(&cap, err, sizeof err);
  cr_assert_eq(tu_wait_thread_count(base), base, "threads left after failed creates");
  tu_assert_no_leaks();
}

/* --------------------------------------------- foreign and forged handles */

Test(einval, handles_of_another_engine_and_forged_ones, .init = setup, .timeout = TU_TIMEOUT(30))
{
  te t1 = te_new("threaded", 1, 0), t2 = te_new("threaded", 1, 0);
  weft_var *mine = te_var(t1.eng);
  weft_var *theirs[8];
  for (int i = 0; i < 8; i++)
    theirs[i] = te_var(t2.eng);
  atomic_int ran = 0;
  /* A var of another engine that this one never handed out. */
  cr_assert_eq(te_push(t1.eng, te_count_fn, &ran, TE_NONE, TE_V(theirs[7]), 0), WEFT_EINVAL,
               "a var of another engine was accepted");
  cr_assert_eq(weft_var_wait(t1.eng, theirs[7]), WEFT_EINVAL);
  cr_assert_eq(weft_var_delete(t1.eng, theirs[7]), WEFT_EINVAL);
  /* Values that no engine hands out: rejected, never dereferenced blindly. */
  const uintptr_t forged[] = {1, 2, 0xdeadbeef, (uintptr_t)-1, (uintptr_t)-2,
                              (uintptr_t)0x7fffffff00000001ull,
                              (uintptr_t)0x0000000300ffffffull};
  for (size_t i = 0; i < sizeof forged / sizeof *forged; i++) {
    weft_var *f = (weft_var *)forged[i];
    cr_assert_eq(weft_var_wait(t1.eng, f), WEFT_EINVAL, "forged var %#lx",
                 (unsigned long)forged[i]);
    cr_assert_eq(te_push(t1.eng, te_count_fn, &ran, TE_V(f), TE_V(mine), 0), WEFT_EINVAL);
    cr_assert_eq(weft_op_push(t1.eng, (weft_op *)forged[i]), WEFT_EINVAL);
  }
  cr_assert_eq(weft_wait_all(t1.eng), 0);
  cr_assert_eq(atomic_load(&ran), 0);
  cr_assert_eq(te_free(&t1), 0);
  cr_assert_eq(te_free(&t2), 0);
}

/* ------------------------------------------------ malformed environment */

static int create_engine(void *pool)
{
  weft_engine *e = NULL;
  weft_engine_config cfg;
  weft_engine_config_default(&cfg);
  cfg.pool = pool;
  return weft_engine_create(&e, pool ? &cfg : NULL);
}

/* Returns the create result (WEFT_EINVAL), already checked here. */
static int expect_env_einval(const char *var, const char *value)
{
  int base = tu_thread_baseline();
  setenv(var, value, 1);
  int rc = tu_expect_env_einval(var, value, "weft_engine_create(NULL config)", create_engine,
                                NULL, base);
  /* Through a default config over a pool of our own too. */
  weft_pool *p = tu_pool(1, -1);
  tu_expect_env_einval(var, value, "weft_engine_create(default config, own pool)", create_engine,
                       p, tu_thread_baseline());
  cr_assert_eq(weft_pool_num_threads(p), 1); /* the pool is the caller's, untouched */
  tu_destroy(p);
  unsetenv(var);
  tu_assert_no_leaks();
  return rc;
}

Test(env, malformed_engine, .init = setup, .timeout = TU_TIMEOUT(30))
{
  const char *vals[] = {"bogus", "naive2", "threadedx", "1", "naive threaded"};
  for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
    cr_assert_eq(expect_env_einval("WEFT_ENGINE", vals[i]), WEFT_EINVAL);
}

Test(env, malformed_max_inflight, .init = setup, .timeout = TU_TIMEOUT(30))
{
  const char *vals[] = {"abc", "-3", "1.5", "8x", "0x10", "99999999999999999999", "-0x1"};
  for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
    cr_assert_eq(expect_env_einval("WEFT_MAX_INFLIGHT", vals[i]), WEFT_EINVAL);
}

/* The engine's own pool reads the pool's variables. */
Test(env, malformed_pool_variable_through_the_engine, .init = setup, .timeout = TU_TIMEOUT(30))
{
  int base = tu_thread_baseline();
  setenv("WEFT_NUM_THREADS", "two", 1);
  weft_engine *e = NULL;
  tu_capture cap;
  char err[4096];
  tu_capture_begin(&cap);
  int rc = weft_engine_create(&e, NULL);
  tu_capture_end(&cap, err, sizeof err);
  cr_assert_eq(rc, WEFT_EINVAL, "WEFT_NUM_THREADS=two: weft_engine_create = %d", rc);
  cr_assert(tu_line_has_all(err, "weft: ", "WEFT_NUM_THREADS", "two"), "stderr was \"%s\"", err);
  cr_assert_eq(tu_wait_thread_count(base), base);
  /* Well-formed values work, with the engine's own pool. */
  setenv("WEFT_NUM_THREADS", "2", 1);
  setenv("WEFT_MAX_INFLIGHT", "16", 1);
  setenv("WEFT_ENGINE", "threaded", 1);
  cr_assert_eq(weft_engine_create(&e, NULL), 0);
  weft_var *v = te_var(e);
  atomic_int ran = 0;
  for (int i = 0; i < 100; i++)
    cr_assert_eq(te_push(e, te_count_fn, &ran, TE_NONE, TE_V(v), 0), 0);
  cr_assert_eq(weft_wait_all(e), 0);
  cr_assert_eq(atomic_load(&ran), 100);
  cr_assert_eq(weft_engine_destroy(e), 0);
  cr_assert_eq(tu_wait_thread_count(base), base, "the engine's own pool outlived it");
  setenv("WEFT_ENGINE", "naive", 1);
  setenv("WEFT_MAX_INFLIGHT", "0", 1);
  cr_assert_eq(weft_engine_create(&e, NULL), 0);
  cr_assert_eq(weft_engine_destroy(e), 0);
  tu_assert_no_leaks();
}

/* ----------------------------------------------------------- EDEADLK */

typedef struct selfd {
  weft_engine *eng;
  atomic_int rc;
  atomic_int called;
} selfd;

static int selfd_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  selfd *x = arg;
  atomic_store(&x->rc, weft_engine_destroy(x->eng));
  atomic_fetch_add(&x->called, 1);
  return 0;
}

static void selfd_async(const weft_run_ctx *rc, void *arg, weft_done *done)
{
  selfd_fn(rc, arg);
  weft_done_signal(done, 0);
}

static int destroy_inside(const char *kind, weft_prop prop, bool async)
{
  te t = te_new(kind, 2, 0);
  weft_var *v = te_var(t.eng);
  selfd x = {.eng = t.eng, .rc = 12345};
  weft_op_desc d = async ? te_adesc(selfd_async, &x) : te_desc(selfd_fn, &x);
  d.writes = (weft_var *const[]){v};
  d.num_writes = 1;
  d.prop = prop;
  cr_assert_eq(weft_push(t.eng, &d), 0);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&x.called), 1);
  cr_assert_eq(atomic_load(&x.rc), WEFT_EDEADLK,
               "%s engine, prop %d%s: destroy from inside an op = %d (%s)", kind, (int)prop,
               async ? ", async" : "", atomic_load(&x.rc), weft_strerror(atomic_load(&x.rc)));
  /* Intact: it still runs ops and destroys normally. */
  atomic_int ran = 0;
  cr_assert_eq(te_push(t.eng, te_count_fn, &ran, TE_V(v), TE_NONE, 0), 0);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&ran), 1);
  return te_free(&t);
}

Test(edeadlk, destroy_from_inside_an_op, .init = setup, .timeout = TU_TIMEOUT(30))
{
  for (int k = 0; k < 2; k++) {
    cr_assert_eq(destroy_inside(kinds[k], WEFT_PROP_NORMAL, false), 0);
    cr_assert_eq(destroy_inside(kinds[k], WEFT_PROP_NORMAL, true), 0);
    cr_assert_eq(destroy_inside(kinds[k], WEFT_PROP_PRIORITIZED, false), 0);
    /* Ready at push: runs inline in this (non-worker) thread. */
    cr_assert_eq(destroy_inside(kinds[k], WEFT_PROP_ASYNC, false), 0);
    cr_assert_eq(destroy_inside(kinds[k], WEFT_PROP_ASYNC, true), 0);
  }
}

/* --------------------------------------------------------- ESHUTDOWN */

/*
 * A long op holds destroy in its drain phase. While it runs, it asks an
 * outside thread to push: that thread's pushes succeed until destroy has
 * begun, then return WEFT_ESHUTDOWN (one-shot and reusable alike), and
 * every accepted push runs. Then the op itself pushes, which succeeds and
 * runs.
 */
typedef struct eshut {
  weft_engine *eng;
  weft_var *v[8];
  weft_var *late_var;
  weft_op *op;
  atomic_int op_started, destroy_calling, outsider_go, outsider_done;
  atomic_long accepted, ran_accepted;
  int outsider_rc, outsider_op_push_rc;
  int inside_rc;
  atomic_int late_ran;
  atomic_int timeout;
} eshut;

static eshut g_sh;

static int accepted_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  (void)arg;
  atomic_fetch_add(&g_sh.ran_accepted, 1);
  return 0;
}

static int late_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  (void)arg;
  atomic_store(&g_sh.late_ran, 1);
  return 0;
}

static void *sh_outsider(void *arg)
{
  (void)arg;
  while (!atomic_load(&g_sh.outsider_go))
    tu_sleep_us(100);
  int rc = 0;
  double deadline = tu_now() + 30.0;
  for (long i = 0;; i++) {
    rc = te_push(g_sh.eng, accepted_fn, NULL, TE_NONE, TE_V(g_sh.v[i % 8]), 0);
    if (rc != 0)
      break;
    atomic_fetch_add(&g_sh.accepted, 1);
    if (tu_now() > deadline)
      break;
    tu_sleep_us(200);
  }
  g_sh.outsider_rc = rc;
  g_sh.outsider_op_push_rc = weft_op_push(g_sh.eng, g_sh.op);
  if (g_sh.outsider_op_push_rc == 0)
    atomic_fetch_add(&g_sh.accepted, 1);
  atomic_store(&g_sh.outsider_done, 1);
  return NULL;
}

static int sh_long_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  (void)arg;
  atomic_store(&g_sh.op_started, 1);
  if (!TU_WAIT_UNTIL(atomic_load(&g_sh.destroy_calling), 30.0)) {
    atomic_store(&g_sh.timeout, 1);
    return 0;
  }
  atomic_store(&g_sh.outsider_go, 1);
  if (!TU_WAIT_UNTIL(atomic_load(&g_sh.outsider_done), 40.0)) {
    atomic_store(&g_sh.timeout, 2);
    return 0;
  }
  g_sh.inside_rc = te_push(g_sh.eng, late_fn, NULL, TE_NONE, TE_V(g_sh.late_var), 0);
  return 0;
}

/* own_pool: the engine creates its pool (WEFT_NUM_THREADS); else ours. */
static int push_during_destroy(int threads, bool own_pool)
{
  memset(&g_sh, 0, sizeof g_sh);
  weft_pool *pool = NULL;
  if (own_pool) {
    char n[16];
    snprintf(n, sizeof n, "%d", threads);
    setenv("WEFT_NUM_THREADS", n, 1);
  } else {
    pool = tu_pool(threads, -1);
  }
  weft_engine_config cfg;
  weft_engine_config_default(&cfg);
  cfg.pool = pool;
  cfg.kind = "threaded";
  cr_assert_eq(weft_engine_create(&g_sh.eng, &cfg), 0);
  for (int i = 0; i < 8; i++)
    g_sh.v[i] = te_var(g_sh.eng);
  g_sh.late_var = te_var(g_sh.eng);
  weft_op_desc d = te_desc(accepted_fn, NULL);
  d.writes = (weft_var *const[]){g_sh.v[0]};
  d.num_writes = 1;
  cr_assert_eq(weft_op_new(g_sh.eng, &d, &g_sh.op), 0);
  g_sh.inside_rc = 12345;
  g_sh.outsider_rc = 12345;
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, sh_outsider, NULL), 0);
  weft_var *lv = te_var(g_sh.eng);
  cr_assert_eq(te_push(g_sh.eng, sh_long_fn, NULL, TE_NONE, TE_V(lv), 0), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&g_sh.op_started), TU_DEADLINE_S));
  atomic_store(&g_sh.destroy_calling, 1);
  int rc = weft_engine_destroy(g_sh.eng);
  te_join(t);
  if (pool)
    tu_destroy(pool);
  cr_assert_eq(rc, 0, "destroy = %d", rc);
  cr_assert_eq(atomic_load(&g_sh.timeout), 0, "the long op gave up waiting (%d)",
               atomic_load(&g_sh.timeout));
  cr_assert_eq(g_sh.outsider_rc, WEFT_ESHUTDOWN,
               "an outside thread pushing while destroy drains got %d (%s), after %ld accepted "
               "pushes",
               g_sh.outsider_rc, weft_strerror(g_sh.outsider_rc), atomic_load(&g_sh.accepted));
  cr_assert_eq(g_sh.outsider_op_push_rc, WEFT_ESHUTDOWN,
               "weft_op_push from an outside thread while destroy drains got %d (%s)",
               g_sh.outsider_op_push_rc, weft_strerror(g_sh.outsider_op_push_rc));
  cr_assert_eq(g_sh.inside_rc, 0, "a push from an op during drain got %d (%s)", g_sh.inside_rc,
               weft_strerror(g_sh.inside_rc));
  cr_assert_eq(atomic_load(&g_sh.late_ran), 1, "an op pushed by an op during drain never ran");
  cr_assert_eq(atomic_load(&g_sh.ran_accepted), atomic_load(&g_sh.accepted),
               "%ld pushes were accepted before destroy, %ld of them ran",
               atomic_load(&g_sh.accepted), atomic_load(&g_sh.ran_accepted));
  unsetenv("WEFT_NUM_THREADS");
  return rc;
}

Test(eshutdown, outside_push_during_drain_1_thread, .init = setup, .timeout = TU_TIMEOUT(90))
{
  cr_assert_eq(push_during_destroy(1, false), 0);
}

Test(eshutdown, outside_push_during_drain_2_threads_own_pool, .init = setup,
     .timeout = TU_TIMEOUT(90))
{
  cr_assert_eq(push_during_destroy(2, true), 0);
}
