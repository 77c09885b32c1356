/* SPDX-License-Identifier: MIT */
/*
 * The dependency engine's contract (docs/api.md, "Guarantees" and "Errors"),
 * point by point, through the public API: where ops run (run_ctx, kinds),
 * normalisation of duplicate vars, error propagation and reporting (var_wait,
 * wait_all, destroy) on the threaded and the naive engine alike, deferred
 * deletion and dead handles, reusable ops, waits inside ops (EDEADLK,
 * helping, also inside WEFT_PROP_ASYNC ops), waits while other threads keep
 * pushing, async ops completed from foreign threads, WEFT_PROP_ASYNC, destroy
 * draining everything, two engines on one pool, ops with many vars, GPU
 * contexts without a GPU. Every check is an invariant or an outcome, never a
 * duration; bounded waits only turn a hang into a clear failure, and bounded
 * looks ("nothing happens within 0.1 s") can only miss a bug, never fail a
 * correct engine.
 */
#include "engine_util.h"

static void setup(void)
{
  te_setup();
}

static const char *const kinds[] = {"threaded", "naive"};
#define NKINDS 2

/* ----------------------------------------------------- where ops run */

/* Returns how many ops were checked. */
static int run_ctx_on_workers(int threads)
{
  te t = te_new("threaded", threads, 0);
  enum { N = 400, NV = 8 };
  weft_var *v[NV];
  for (int i = 0; i < NV; i++)
    v[i] = te_var(t.eng);
  te_rec *r = calloc(N, sizeof *r);
  cr_assert_not_null(r);
  for (int i = 0; i < N; i++) {
    int rc = te_push(t.eng, te_rec_fn, &r[i], TE_V(v[(i + 3) % NV]), TE_V(v[i % NV]), 0);
    cr_assert_eq(rc, 0, "push %d = %d (%s)", i, rc, weft_strerror(rc));
  }
  cr_assert_eq(weft_wait_all(t.eng), 0);
  pthread_t self = pthread_self();
  for (int i = 0; i < N; i++) {
    cr_assert_eq(atomic_load(&r[i].ran), 1, "op %d ran %d times", i, atomic_load(&r[i].ran));
    cr_assert(r[i].worker >= 0 && r[i].worker < threads,
              "op %d: run_ctx.worker = %d with %d workers", i, r[i].worker, threads);
    cr_assert_eq(r[i].worker, r[i].cur_worker,
                 "op %d: run_ctx.worker = %d but weft_current_worker() = %d", i, r[i].worker,
                 r[i].cur_worker);
    cr_assert_eq(r[i].ctx_type, WEFT_DEV_CPU, "op %d: run_ctx.ctx.type = %d", i, r[i].ctx_type);
    cr_assert_null(r[i].stream, "op %d: a CPU op got a stream", i);
    cr_assert_not(pthread_equal(r[i].thread, self), "op %d ran on the pushing thread", i);
  }
  free(r);
  cr_assert_eq(te_free(&t), 0);
  return N;
}

Test(where, run_ctx_worker_is_the_pool_index_1_thread, .init = setup, .timeout = TU_TIMEOUT(30))
{
  cr_assert_eq(run_ctx_on_workers(1), 400);
}

Test(where, run_ctx_worker_is_the_pool_index_3_threads, .init = setup, .timeout = TU_TIMEOUT(30))
{
  cr_assert_eq(run_ctx_on_workers(3), 400);
}

/* The naive engine runs each push to completion in the pushing thread. */
Test(where, naive_runs_in_the_pushing_thread, .init = setup, .timeout = TU_TIMEOUT(30))
{
  te t = te_new("naive", 2, 0);
  weft_var *a = te_var(t.eng);
  for (int i = 0; i < 50; i++) {
    te_rec r = {0};
    cr_assert_eq(te_push(t.eng, te_rec_fn, &r, TE_NONE, TE_V(a), 0), 0);
    cr_assert_eq(atomic_load(&r.ran), 1, "push %d returned before its op ran", i);
    cr_assert(pthread_equal(r.thread, pthread_self()), "naive op %d ran on another thread", i);
    cr_assert_eq(r.worker, -1, "naive op on a non-worker thread: run_ctx.worker = %d", r.worker);
    cr_assert_eq(r.ctx_type, WEFT_DEV_CPU);
  }
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(te_free(&t), 0);
}

/* An explicit kind beats WEFT_ENGINE, which is then not read at all. */
static bool ran_on_pusher(te *t)
{
  weft_var *a = te_var(t->eng);
  te_rec r = {0};
  cr_assert_eq(te_push(t->eng, te_rec_fn, &r, TE_NONE, TE_V(a), 0), 0);
  cr_assert_eq(weft_wait_all(t->eng), 0);
  cr_assert_eq(atomic_load(&r.ran), 1);
  return pthread_equal(r.thread, pthread_self());
}

Test(where, kind_from_config_and_environment, .init = setup, .timeout = TU_TIMEOUT(30))
{
  setenv("WEFT_ENGINE", "naive", 1);
  te t = te_new(NULL, 2, 0);
  cr_assert(ran_on_pusher(&t), "WEFT_ENGINE=naive: the op did not run in the pushing thread");
  cr_assert_eq(te_free(&t), 0);

  t = te_new("threaded", 2, 0);
  cr_assert_not(ran_on_pusher(&t), "kind \"threaded\" with WEFT_ENGINE=naive ran naive");
  cr_assert_eq(te_free(&t), 0);

  setenv("WEFT_ENGINE", "threaded", 1);
  t = te_new(NULL, 2, 0);
  cr_assert_not(ran_on_pusher(&t), "WEFT_ENGINE=threaded ran the op in the pushing thread");
  cr_assert_eq(te_free(&t), 0);

  /* Not read when the field is explicit, so a malformed value is harmless. */
  setenv("WEFT_ENGINE", "bogus", 1);
  setenv("WEFT_MAX_INFLIGHT", "bogus", 1);
  t = te_new("naive", 2, 0);
  cr_assert(ran_on_pusher(&t), "kind \"naive\" did not run naive");
  cr_assert_eq(te_free(&t), 0);

  unsetenv("WEFT_ENGINE");
  t = te_new(NULL, 2, 0);
  cr_assert_not(ran_on_pusher(&t), "the default engine is not the threaded one");
  cr_assert_eq(te_free(&t), 0);
}

/* ------------------------------------------------------- normalisation */

/* An op reading var a and blocking on a gate; pushes a second op (reads
 * r2, writes w2) behind it and checks the second does not start while the
 * first holds a. Returns whether everything ran once. */
static bool second_waits_for_first(te *t, weft_var *const *r1, size_t nr1, weft_var *const *w1,
                                   size_t nw1, weft_var *const *r2, size_t nr2,
                                   weft_var *const *w2, size_t nw2)
{
  te_gate g = {0};
  te_rec second = {0};
  weft_op_desc d = te_desc(te_gate_fn, &g);
  d.reads = r1;
  d.num_reads = nr1;
  d.writes = w1;
  d.num_writes = nw1;
  cr_assert_eq(weft_push(t->eng, &d), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&g.started), TU_DEADLINE_S), "the gate op never started");
  cr_assert_eq(te_push(t->eng, te_rec_fn, &second, r2, nr2, w2, nw2, 0), 0);
  /* A bounded look: a correct engine never runs it while the gate is shut. */
  bool early = TU_WAIT_UNTIL(atomic_load(&second.ran) != 0, 0.1);
  atomic_store(&g.open, 1);
  cr_assert_eq(weft_wait_all(t->eng), 0);
  cr_assert_not(early, "an op that conflicts with a running op started beside it");
  cr_assert_eq(atomic_load(&g.timed_out), 0);
  cr_assert_eq(atomic_load(&second.ran), 1);
  return true;
}

Test(normalise, duplicates_merged_and_read_write_counts_as_write, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  te t = te_new("threaded", 2, 0);
  weft_var *a = te_var(t.eng), *b = te_var(t.eng);
  /* Each of these runs exactly once and leaves no stale reader or writer
   * behind (a later writer and var_wait still complete). */
  te_rec r[6] = {{0}};
  cr_assert_eq(te_push(t.eng, te_rec_fn, &r[0], TE_V(a, a, a), TE_NONE, 0), 0);
  cr_assert_eq(te_push(t.eng, te_rec_fn, &r[1], TE_V(a), TE_V(a), 0), 0);
  cr_assert_eq(te_push(t.eng, te_rec_fn, &r[2], TE_V(a, b, a), TE_V(b, b, a), 0), 0);
  cr_assert_eq(te_push(t.eng, te_rec_fn, &r[3], TE_NONE, TE_V(a, a), 0), 0);
  cr_assert_eq(te_push(t.eng, te_rec_fn, &r[4], TE_V(b, b), TE_V(a, b, a, b), 0), 0);
  cr_assert_eq(te_push(t.eng, te_rec_fn, &r[5], TE_NONE, TE_V(a, b), 0), 0);
  cr_assert_eq(weft_var_wait(t.eng, a), 0);
  cr_assert_eq(weft_var_wait(t.eng, b), 0);
  for (int i = 0; i < 6; i++)
    cr_assert_eq(atomic_load(&r[i].ran), 1, "op %d ran %d times", i, atomic_load(&r[i].ran));

  /* Read + write of one var is a write: it waits for a running reader... */
  cr_assert(second_waits_for_first(&t, TE_V(a), TE_NONE, TE_V(a), TE_V(a)));
  /* ...and a reader waits for it. */
  cr_assert(second_waits_for_first(&t, TE_V(b, b), TE_V(b), TE_V(b), TE_NONE));
  /* A read listed twice is still one read: the writer after it runs once
   * the reader is done, neither before nor never. */
  cr_assert(second_waits_for_first(&t, TE_V(a, a), TE_NONE, TE_NONE, TE_V(a)));
  /* Writes listed twice: one write. */
  cr_assert(second_waits_for_first(&t, TE_NONE, TE_V(b, b), TE_V(b), TE_NONE));

  /* The read + write op failing fails the var (it was written). */
  te_rec f = {.status = 5};
  cr_assert_eq(te_push(t.eng, te_rec_fn, &f, TE_V(a, a), TE_V(a), 0), 0);
  cr_assert_eq(weft_var_wait(t.eng, a), 5);
  cr_assert_eq(weft_wait_all(t.eng), 5);
  cr_assert_eq(te_free(&t), 0);
}

Test(normalise, naive_engine_same, .init = setup, .timeout = TU_TIMEOUT(30))
{
  te t = te_new("naive", 2, 0);
  weft_var *a = te_var(t.eng), *b = te_var(t.eng);
  te_rec r[4] = {{0}};
  cr_assert_eq(te_push(t.eng, te_rec_fn, &r[0], TE_V(a, a, a), TE_NONE, 0), 0);
  cr_assert_eq(te_push(t.eng, te_rec_fn, &r[1], TE_V(a), TE_V(a), 0), 0);
  cr_assert_eq(te_push(t.eng, te_rec_fn, &r[2], TE_V(a, b, a), TE_V(b, b, a), 0), 0);
  r[3].status = 5;
  cr_assert_eq(te_push(t.eng, te_rec_fn, &r[3], TE_V(a, a), TE_V(a), 0), 0);
  for (int i = 0; i < 4; i++)
    cr_assert_eq(atomic_load(&r[i].ran), 1, "op %d ran %d times", i, atomic_load(&r[i].ran));
  cr_assert_eq(weft_var_wait(t.eng, a), 5);
  cr_assert_eq(weft_var_wait(t.eng, b), 0);
  cr_assert_eq(weft_wait_all(t.eng), 5);
  cr_assert_eq(te_free(&t), 0);
}

/* --------------------------------------------------------------- errors */

/*
 * Each scenario runs on an engine of the given kind and appends what it
 * observed (ran counts, var_wait / wait_all / destroy results) to out; the
 * tests compare that with the expected list, for both kinds, and the two
 * kinds with each other.
 */
typedef struct obs {
  int v[64];
  int n;
} obs;

static void put(obs *o, int x)
{
  cr_assert_lt(o->n, 64);
  o->v[o->n++] = x;
}

static void check_obs(const char *scenario, const obs *got, const int *want, int nwant,
                      const char *kind)
{
  cr_assert_eq(got->n, nwant, "%s on the %s engine: %d observations, expected %d", scenario,
               kind, got->n, nwant);
  for (int i = 0; i < nwant; i++)
    cr_assert_eq(got->v[i], want[i], "%s on the %s engine: observation %d is %d, expected %d",
                 scenario, kind, i, got->v[i], want[i]);
}

/* Runs scenario on both kinds; checks each against want and both alike. */
static int run_both(const char *name, void (*scenario)(const char *, obs *), const int *want,
                    int nwant)
{
  obs got[NKINDS];
  for (int k = 0; k < NKINDS; k++) {
    memset(&got[k], 0, sizeof got[k]);
    scenario(kinds[k], &got[k]);
    check_obs(name, &got[k], want, nwant, kinds[k]);
  }
  cr_assert_eq(got[0].n, got[1].n);
  cr_assert_eq(memcmp(got[0].v, got[1].v, sizeof(int) * (size_t)got[0].n), 0,
               "%s: the naive and threaded engines disagree", name);
  tu_assert_no_errors();
  return nwant;
}

static void scenario_propagation(const char *kind, obs *o)
{
  te t = te_new(kind, 2, 0);
  weft_var *a = te_var(t.eng), *b = te_var(t.eng), *c = te_var(t.eng), *d = te_var(t.eng);
  weft_var *e = te_var(t.eng), *f = te_var(t.eng), *g = te_var(t.eng), *h = te_var(t.eng);
  te_rec r[10] = {{0}};
  r[1].status = 7;
  r[5].status = 9;
  weft_engine *E = t.eng;
  cr_assert_eq(te_push(E, te_rec_fn, &r[1], TE_NONE, TE_V(a), 0), 0);            /* fails: 7 */
  cr_assert_eq(te_push(E, te_rec_fn, &r[2], TE_V(a), TE_V(b), 0), 0);            /* skipped */
  cr_assert_eq(te_push(E, te_rec_fn, &r[3], TE_V(b), TE_V(c), 0), 0);            /* skipped */
  cr_assert_eq(te_push(E, te_rec_fn, &r[4], TE_V(a), TE_V(d), WEFT_OP_NOSKIP), 0); /* runs, 0 */
  cr_assert_eq(te_push(E, te_rec_fn, &r[5], TE_V(a), TE_V(e), WEFT_OP_NOSKIP), 0); /* runs, 9 */
  cr_assert_eq(te_push(E, te_rec_fn, &r[6], TE_NONE, TE_V(a), 0), 0);            /* skipped */
  cr_assert_eq(te_push(E, te_rec_fn, &r[7], TE_V(f), TE_V(f), 0), 0);            /* runs */
  cr_assert_eq(te_push(E, te_rec_fn, &r[8], TE_V(a, f), TE_V(g), 0), 0);         /* skipped */
  put(o, weft_var_wait(E, a));
  put(o, weft_var_wait(E, a)); /* reported once */
  put(o, weft_var_wait(E, b));
  put(o, weft_var_wait(E, c));
  put(o, weft_var_wait(E, d));
  put(o, weft_var_wait(E, e));
  put(o, weft_var_wait(E, f));
  put(o, weft_var_wait(E, g));
  /* a's failure was cleared by var_wait: an op reading it runs. */
  cr_assert_eq(te_push(E, te_rec_fn, &r[9], TE_V(a), TE_V(h), 0), 0);
  put(o, weft_var_wait(E, h));
  put(o, weft_wait_all(E));
  put(o, weft_wait_all(E));
  for (int i = 1; i < 10; i++)
    put(o, atomic_load(&r[i].ran));
  put(o, te_free(&t));
}

Test(errors, propagation_skip_and_noskip, .init = setup, .timeout = TU_TIMEOUT(30))
{
  static const int want[] = {7, 0, 7, 7, 0, 9, 0, 7, /* var_wait a a b c d e f g */
                             0,                      /* var_wait h */
                             7, 0,                   /* wait_all twice */
                             1, 0, 0, 1, 1, 0, 1, 0, 1, /* ran 1..9 */
                             0};                     /* destroy */
  cr_assert_eq(run_both("propagation", scenario_propagation, want, sizeof want / sizeof *want),
               (int)(sizeof want / sizeof *want));
}

static void scenario_reporting(const char *kind, obs *o)
{
  te t = te_new(kind, 2, 0);
  weft_engine *E = t.eng;
  weft_var *a = te_var(E), *b = te_var(E), *c = te_var(E);
  te_rec r[6] = {{0}};
  r[1].status = 7;
  r[2].status = 8;
  r[4].status = -5;
  r[5].status = 11;
  cr_assert_eq(te_push(E, te_rec_fn, &r[1], TE_NONE, TE_V(a), 0), 0);
  put(o, weft_var_wait(E, a));
  cr_assert_eq(te_push(E, te_rec_fn, &r[2], TE_NONE, TE_V(b), 0), 0);
  put(o, weft_var_wait(E, b));
  /* The first failure since the last wait_all, though var_wait saw it. */
  put(o, weft_wait_all(E));
  put(o, weft_wait_all(E));
  cr_assert_eq(te_push(E, te_rec_fn, &r[3], TE_NONE, TE_V(a), 0), 0);
  put(o, weft_var_wait(E, a));
  cr_assert_eq(te_push(E, te_rec_fn, &r[4], TE_NONE, TE_V(b), 0), 0);
  put(o, weft_var_wait(E, b));
  cr_assert_eq(te_push(E, te_rec_fn, &r[5], TE_NONE, TE_V(c), 0), 0);
  put(o, weft_var_wait(E, c));
  for (int i = 1; i < 6; i++)
    put(o, atomic_load(&r[i].ran));
  /* destroy: the first failure since the last wait_all (-5, not 11). */
  put(o, te_free(&t));
}

Test(errors, wait_all_and_destroy_report_the_first_failure, .init = setup,
     .timeout = TU_TIMEOUT(30))
{
  static const int want[] = {7, 8, 7, 0, 0, -5, 11, 1, 1, 1, 1, 1, -5};
  cr_assert_eq(run_both("reporting", scenario_reporting, want, sizeof want / sizeof *want),
               (int)(sizeof want / sizeof *want));
}

static void scenario_wait_all_clears(const char *kind, obs *o)
{
  te t = te_new(kind, 2, 0);
  weft_engine *E = t.eng;
  weft_var *a = te_var(E), *b = te_var(E), *c = te_var(E);
  te_rec r[4] = {{0}};
  r[1].status = 3;
  r[2].status = 4;
  cr_assert_eq(te_push(E, te_rec_fn, &r[1], TE_NONE, TE_V(a), 0), 0);
  cr_assert_eq(te_push(E, te_rec_fn, &r[2], TE_V(a), TE_V(b), WEFT_OP_NOSKIP), 0);
  put(o, weft_wait_all(E));      /* 3: r1 completes before r2 */
  put(o, weft_var_wait(E, a));   /* cleared by wait_all */
  put(o, weft_var_wait(E, b));
  cr_assert_eq(te_push(E, te_rec_fn, &r[3], TE_V(a, b), TE_V(c), 0), 0);
  put(o, weft_var_wait(E, c));
  for (int i = 1; i < 4; i++)
    put(o, atomic_load(&r[i].ran));
  put(o, te_free(&t));          /* nothing failed since the last wait_all */
}

Test(errors, wait_all_clears_every_var, .init = setup, .timeout = TU_TIMEOUT(30))
{
  static const int want[] = {3, 0, 0, 0, 1, 1, 1, 0};
  cr_assert_eq(
      run_both("wait_all_clears", scenario_wait_all_clears, want, sizeof want / sizeof *want),
      (int)(sizeof want / sizeof *want));
}

static void scenario_destroy(const char *kind, obs *o)
{
  te t = te_new(kind, 2, 0);
  weft_var *a = te_var(t.eng);
  te_rec r = {.status = 12};
  cr_assert_eq(te_push(t.eng, te_rec_fn, &r, TE_NONE, TE_V(a), 0), 0);
  put(o, te_free(&t)); /* never waited: destroy reports it */
  put(o, atomic_load(&r.ran));

  t = te_new(kind, 2, 0);
  a = te_var(t.eng);
  weft_var *b = te_var(t.eng);
  te_rec r2 = {.status = 12}, r3 = {0};
  cr_assert_eq(te_push(t.eng, te_rec_fn, &r2, TE_NONE, TE_V(a), 0), 0);
  put(o, weft_wait_all(t.eng));
  cr_assert_eq(te_push(t.eng, te_rec_fn, &r3, TE_NONE, TE_V(b), 0), 0);
  put(o, te_free(&t)); /* reported by wait_all already */

  t = te_new(kind, 2, 0);
  a = te_var(t.eng);
  te_rec r4 = {.status = -77};
  cr_assert_eq(te_push(t.eng, te_rec_fn, &r4, TE_NONE, TE_V(a), 0), 0);
  put(o, weft_var_wait(t.eng, a));
  put(o, te_free(&t)); /* var_wait reported it, wait_all never did */
}

Test(errors, destroy_reports_the_first_unreported_failure, .init = setup,
     .timeout = TU_TIMEOUT(30))
{
  static const int want[] = {12, 1, 12, 0, -77, -77};
  cr_assert_eq(run_both("destroy", scenario_destroy, want, sizeof want / sizeof *want),
               (int)(sizeof want / sizeof *want));
}

/* ----------------------------------------------- async ops, foreign threads */

/* An async op whose completion comes from a thread of its own. */
typedef struct aop {
  te_gate *go;           /* optional: the thread waits for go->open first */
  int status, status2;   /* signalled; status2 too when twice */
  bool twice;
  long *cell;            /* optional: *cell = value before signalling */
  long value;
  atomic_int called;     /* async_fn calls */
  atomic_int created;    /* the thread handle is stored */
  bool has_thread;
  pthread_t thread;      /* the signalling thread */
  pthread_t signaller;   /* pthread_self() in it */
  weft_done *done;
  int inline_signal;     /* signal inside async_fn instead */
} aop;

static void *aop_thread(void *arg)
{
  aop *x = arg;
  TU_WAIT_UNTIL(atomic_load(&x->created), TU_DEADLINE_S);
  if (x->go)
    TU_CHECK(TU_WAIT_UNTIL(atomic_load(&x->go->open), TU_DEADLINE_S),
             "an async op's signaller waited in vain");
  tu_sleep_us(2000);
  if (x->cell)
    *x->cell = x->value;
  x->signaller = pthread_self();
  weft_done_signal(x->done, x->status);
  if (x->twice)
    weft_done_signal(x->done, x->status2);
  return NULL;
}

static void aop_fn(const weft_run_ctx *rc, void *arg, weft_done *done)
{
  (void)rc;
  aop *x = arg;
  atomic_fetch_add(&x->called, 1);
  x->done = done;
  if (x->inline_signal) {
    if (x->cell)
      *x->cell = x->value;
    weft_done_signal(done, x->status);
    return;
  }
  int rc2 = pthread_create(&x->thread, NULL, aop_thread, x);
  TU_CHECK(rc2 == 0, "pthread_create = %d", rc2);
  x->has_thread = rc2 == 0;
  atomic_store(&x->created, 1);
}

static void aop_join(aop *x)
{
  if (x->has_thread)
    te_join(x->thread);
  x->has_thread = false;
}

static int aop_push(weft_engine *e, aop *x, weft_var *const *r, size_t nr, weft_var *const *w,
                    size_t nw, unsigned flags, weft_prop prop)
{
  weft_op_desc d = te_adesc(aop_fn, x);
  d.reads = r;
  d.num_reads = nr;
  d.writes = w;
  d.num_writes = nw;
  d.flags = flags;
  d.prop = prop;
  return weft_push(e, &d);
}

static void scenario_async_errors(const char *kind, obs *o)
{
  te t = te_new(kind, 2, 0);
  weft_engine *E = t.eng;
  weft_var *a = te_var(E), *b = te_var(E), *c = te_var(E), *d = te_var(E);
  aop a1 = {.status = 6}, a3 = {.inline_signal = 1}, a4 = {.inline_signal = 1};
  te_rec r2 = {0};
  cr_assert_eq(aop_push(E, &a1, TE_NONE, TE_V(a), 0, WEFT_PROP_NORMAL), 0);
  cr_assert_eq(te_push(E, te_rec_fn, &r2, TE_V(a), TE_V(b), 0), 0);               /* skipped */
  cr_assert_eq(aop_push(E, &a3, TE_V(a), TE_V(c), WEFT_OP_NOSKIP, WEFT_PROP_NORMAL), 0);
  cr_assert_eq(aop_push(E, &a4, TE_V(b), TE_V(d), 0, WEFT_PROP_NORMAL), 0);        /* skipped */
  put(o, weft_var_wait(E, b));
  put(o, weft_var_wait(E, c));
  put(o, weft_var_wait(E, d));
  put(o, weft_var_wait(E, a));
  put(o, weft_wait_all(E));
  put(o, atomic_load(&a1.called));
  put(o, atomic_load(&r2.ran));
  put(o, atomic_load(&a3.called));
  put(o, atomic_load(&a4.called));
  aop_join(&a1);
  put(o, te_free(&t));
}

Test(errors, async_failures_propagate, .init = setup, .timeout = TU_TIMEOUT(30))
{
  static const int want[] = {6, 0, 6, 6, 6, 1, 0, 1, 0, 0};
  cr_assert_eq(
      run_both("async_errors", scenario_async_errors, want, sizeof want / sizeof *want),
      (int)(sizeof want / sizeof *want));
}

/* Completed by a foreign thread; a dependent op and var_wait see the effect. */
static long foreign_signal(const char *kind)
{
  te t = te_new(kind, 2, 0);
  weft_var *a = te_var(t.eng), *b = te_var(t.eng);
  long cell = 0, cell2 = 0;
  aop x = {.cell = &cell, .value = 77};
  te_rec dep = {.seen_cell = &cell};
  cr_assert_eq(aop_push(t.eng, &x, TE_NONE, TE_V(a), 0, WEFT_PROP_NORMAL), 0);
  cr_assert_eq(te_push(t.eng, te_rec_fn, &dep, TE_V(a), TE_V(b), 0), 0);
  cr_assert_eq(weft_var_wait(t.eng, a), 0);
  cr_assert_eq(cell, 77, "%s: var_wait returned before the async op was signalled", kind);
  cr_assert_eq(weft_var_wait(t.eng, b), 0);
  cr_assert_eq(atomic_load(&dep.ran), 1);
  cr_assert_eq(dep.seen, 77, "%s: an op after an async op saw %ld", kind, dep.seen);
  /* A chain of them, each waiting for the last. */
  enum { CHAIN = 8 };
  aop ch[CHAIN];
  memset(ch, 0, sizeof ch);
  for (int i = 0; i < CHAIN; i++) {
    ch[i].cell = &cell2;
    ch[i].value = i + 1;
    cr_assert_eq(aop_push(t.eng, &ch[i], TE_V(b), TE_V(a), 0, WEFT_PROP_NORMAL), 0);
  }
  te_rec last = {.seen_cell = &cell2};
  cr_assert_eq(te_push(t.eng, te_rec_fn, &last, TE_V(a), TE_NONE, 0), 0);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  for (int i = 0; i < CHAIN; i++) {
    cr_assert_eq(atomic_load(&ch[i].called), 1);
    aop_join(&ch[i]);
  }
  aop_join(&x);
  cr_assert_eq(last.seen, CHAIN, "%s: the op after a chain of async ops saw %ld", kind, last.seen);
  tu_assert_no_errors();
  cr_assert_eq(te_free(&t), 0);
  return dep.seen;
}

Test(async, completed_from_a_foreign_thread, .init = setup, .timeout = TU_TIMEOUT(30))
{
  cr_assert_eq(foreign_signal("threaded"), 77);
  cr_assert_eq(foreign_signal("naive"), 77);
}

/* A second signal is detected, reported and ignored. */
static int double_signal(const char *kind)
{
  te t = te_new(kind, 2, 0);
  weft_var *a = te_var(t.eng), *b = te_var(t.eng);
  aop x = {.status = 0, .twice = true, .status2 = 5};
  te_rec dep = {0};
  tu_capture cap;
  char err[4096];
  tu_capture_begin(&cap);
  int rc1 = aop_push(t.eng, &x, TE_NONE, TE_V(a), 0, WEFT_PROP_NORMAL);
  int rc2 = te_push(t.eng, te_rec_fn, &dep, TE_V(a), TE_V(b), 0);
  int w = weft_wait_all(t.eng);
  aop_join(&x); /* both signals are sent */
  int w2 = weft_var_wait(t.eng, a);
  tu_capture_end(&cap, err, sizeof err);
  cr_assert_eq(rc1, 0);
  cr_assert_eq(rc2, 0);
  cr_assert_eq(w, 0, "%s: the ignored second signal (5) was reported: wait_all = %d", kind, w);
  cr_assert_eq(w2, 0, "%s: the ignored second signal failed the var: %d", kind, w2);
  cr_assert_eq(atomic_load(&dep.ran), 1, "%s: the dependent op ran %d times", kind,
               atomic_load(&dep.ran));
  cr_assert(strstr(err, "weft") != NULL,
            "%s: a second weft_done_signal printed no message; stderr was \"%s\"", kind, err);
  /* The engine is intact. */
  enum { N = 500 };
  aop *more = calloc(N, sizeof *more);
  cr_assert_not_null(more);
  for (int i = 0; i < N; i++) {
    more[i].inline_signal = 1;
    cr_assert_eq(aop_push(t.eng, &more[i], TE_V(a), TE_V(i % 2 ? a : b), 0, WEFT_PROP_NORMAL),
                 0);
  }
  cr_assert_eq(weft_wait_all(t.eng), 0);
  for (int i = 0; i < N; i++)
    cr_assert_eq(atomic_load(&more[i].called), 1);
  free(more);
  tu_assert_no_errors();
  return te_free(&t);
}

Test(async, second_done_signal_is_detected_and_ignored, .init = setup, .timeout = TU_TIMEOUT(30))
{
  cr_assert_eq(double_signal("threaded"), 0);
  cr_assert_eq(double_signal("naive"), 0);
}

/* A late second signal, after the token's op finished and another async op
 * is pending, must not complete that other op. */
Test(async, stale_signal_after_reuse_is_ignored, .init = setup, .timeout = TU_TIMEOUT(30))
{
  te t = te_new("threaded", 2, 0);
  weft_var *a = te_var(t.eng), *b = te_var(t.eng);
  aop x1 = {.inline_signal = 1};
  cr_assert_eq(aop_push(t.eng, &x1, TE_NONE, TE_V(a), 0, WEFT_PROP_NORMAL), 0);
  cr_assert_eq(weft_var_wait(t.eng, a), 0);
  cr_assert_eq(atomic_load(&x1.called), 1);
  weft_done *stale = x1.done;
  /* Several pending async ops, so that a recycled token is likely among them. */
  enum { N = 8 };
  aop x2[N];
  memset(x2, 0, sizeof x2);
  te_gate never = {0}; /* their signallers wait for it */
  te_rec dep = {0};
  for (int i = 0; i < N; i++) {
    x2[i].go = &never;
    cr_assert_eq(aop_push(t.eng, &x2[i], TE_NONE, TE_V(b), 0, WEFT_PROP_NORMAL), 0);
  }
  cr_assert_eq(te_push(t.eng, te_rec_fn, &dep, TE_V(b), TE_NONE, 0), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&x2[0].called) == 1, TU_DEADLINE_S));
  tu_capture cap;
  char err[4096];
  tu_capture_begin(&cap);
  weft_done_signal(stale, 5);
  bool early = TU_WAIT_UNTIL(atomic_load(&x2[1].called) != 0 || atomic_load(&dep.ran) != 0, 0.1);
  tu_capture_end(&cap, err, sizeof err);
  atomic_store(&never.open, 1);
  cr_assert_eq(weft_wait_all(t.eng), 0, "the stale signal's status was recorded");
  for (int i = 0; i < N; i++)
    aop_join(&x2[i]);
  cr_assert_not(early, "a stale weft_done_signal completed another pending async op");
  cr_assert_eq(atomic_load(&dep.ran), 1);
  cr_assert(strstr(err, "weft") != NULL, "a stale weft_done_signal printed nothing");
  tu_assert_no_errors();
  cr_assert_eq(te_free(&t), 0);
}

/* ----------------------------------------------------- WEFT_PROP_ASYNC */

Test(prop_async, runs_inline_in_the_thread_that_makes_it_ready, .init = setup,
     .timeout = TU_TIMEOUT(30))
{
  te t = te_new("threaded", 2, 0);
  weft_var *a = te_var(t.eng), *b = te_var(t.eng), *c = te_var(t.eng);

  /* Ready at push: the pushing thread runs it, inside weft_push. */
  te_rec q0 = {0};
  weft_op_desc d = te_desc(te_rec_fn, &q0);
  d.prop = WEFT_PROP_ASYNC;
  d.writes = (weft_var *const[]){c};
  d.num_writes = 1;
  cr_assert_eq(weft_push(t.eng, &d), 0);
  cr_assert_eq(atomic_load(&q0.ran), 1, "a ready WEFT_PROP_ASYNC op did not run inside the push");
  cr_assert(pthread_equal(q0.thread, pthread_self()));
  cr_assert_eq(q0.worker, -1, "run_ctx.worker on the pushing thread = %d", q0.worker);

  /* Made ready by a worker finishing its predecessor: runs on that worker. */
  te_gate g = {0};
  cr_assert_eq(te_push(t.eng, te_gate_fn, &g, TE_NONE, TE_V(a), 0), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&g.started), TU_DEADLINE_S));
  te_rec q1 = {0};
  d = te_desc(te_rec_fn, &q1);
  d.prop = WEFT_PROP_ASYNC;
  d.reads = (weft_var *const[]){a};
  d.num_reads = 1;
  cr_assert_eq(weft_push(t.eng, &d), 0);
  cr_assert_eq(atomic_load(&q1.ran), 0, "a WEFT_PROP_ASYNC op ran before its predecessor");
  atomic_store(&g.open, 1);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&q1.ran), 1);
  cr_assert(pthread_equal(q1.thread, g.thread),
            "a WEFT_PROP_ASYNC op did not run in the thread that finished its predecessor");
  cr_assert_eq(q1.worker, g.worker);

  /* Made ready by a foreign thread's weft_done_signal: runs there. */
  te_gate go = {0};
  aop x = {.go = &go};
  cr_assert_eq(aop_push(t.eng, &x, TE_NONE, TE_V(b), 0, WEFT_PROP_NORMAL), 0);
  te_rec q2 = {0};
  d = te_desc(te_rec_fn, &q2);
  d.prop = WEFT_PROP_ASYNC;
  d.reads = (weft_var *const[]){b};
  d.num_reads = 1;
  cr_assert_eq(weft_push(t.eng, &d), 0);
  /* And an async_fn one with the same prop, after it. */
  aop x3 = {.inline_signal = 1};
  cr_assert_eq(aop_push(t.eng, &x3, TE_V(b), TE_V(c), 0, WEFT_PROP_ASYNC), 0);
  atomic_store(&go.open, 1);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  aop_join(&x);
  cr_assert_eq(atomic_load(&q2.ran), 1);
  cr_assert(pthread_equal(q2.thread, x.signaller),
            "a WEFT_PROP_ASYNC op did not run in the thread whose signal made it ready");
  cr_assert_eq(q2.worker, -1, "run_ctx.worker on a foreign thread = %d", q2.worker);
  cr_assert_eq(atomic_load(&x3.called), 1);
  tu_assert_no_errors();
  cr_assert_eq(te_free(&t), 0);
}

/* ------------------------------------------------ deletion, dead handles */

typedef struct gate_write {
  te_gate g;
  long *cell;
  long value;
} gate_write;

static int gate_write_fn(const weft_run_ctx *rc, void *arg)
{
  gate_write *gw = arg;
  te_gate_fn(rc, &gw->g);
  *gw->cell = gw->value;
  return 0;
}

static void expect_dead_var(weft_engine *e, weft_var *v, te_rec *never)
{
  weft_var *live = te_var(e);
  cr_assert_eq(weft_var_wait(e, v), WEFT_EINVAL, "var_wait on a dead var");
  cr_assert_eq(weft_var_delete(e, v), WEFT_EINVAL, "var_delete twice");
  cr_assert_eq(te_push(e, te_rec_fn, never, TE_V(v), TE_NONE, 0), WEFT_EINVAL, "read dead var");
  cr_assert_eq(te_push(e, te_rec_fn, never, TE_NONE, TE_V(v), 0), WEFT_EINVAL, "write dead var");
  cr_assert_eq(te_push(e, te_rec_fn, never, TE_V(live), TE_V(live, v), 0), WEFT_EINVAL,
               "a dead var among live ones");
  weft_op *op = NULL;
  weft_op_desc d = te_desc(te_rec_fn, never);
  d.reads = (weft_var *const[]){v};
  d.num_reads = 1;
  cr_assert_eq(weft_op_new(e, &d, &op), WEFT_EINVAL, "op_new on a dead var");
  cr_assert_eq(weft_var_delete(e, live), 0);
}

static long deferred_var_delete(const char *kind)
{
  te t = te_new(kind, 2, 0);
  weft_var *a = te_var(t.eng);
  long cell = 0;
  te_rec never = {0}, reader = {.seen_cell = &cell};
  atomic_int count = 0;
  bool threaded = strcmp(kind, "threaded") == 0;
  gate_write gw = {.cell = &cell, .value = 42};
  if (threaded) {
    cr_assert_eq(te_push(t.eng, gate_write_fn, &gw, TE_NONE, TE_V(a), 0), 0);
    cr_assert(TU_WAIT_UNTIL(atomic_load(&gw.g.started), TU_DEADLINE_S));
  } else {
    cell = 42;
  }
  cr_assert_eq(te_push(t.eng, te_rec_fn, &reader, TE_V(a), TE_NONE, 0), 0);
  cr_assert_eq(weft_var_delete(t.eng, a), 0);
  /* Dead at once, though ops on it are pending. */
  expect_dead_var(t.eng, a, &never);
  atomic_store(&gw.g.open, 1);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&gw.g.timed_out), 0, "var_delete waited for the ops on the var");
  cr_assert_eq(atomic_load(&reader.ran), 1, "an op pushed before var_delete did not run");
  cr_assert_eq(reader.seen, 42, "an op pushed before var_delete missed the write before it");
  /* Dead for good, however the var's memory is reused. */
  for (int i = 0; i < 300; i++) {
    weft_var *v = te_var(t.eng);
    cr_assert_eq(weft_var_wait(t.eng, a), WEFT_EINVAL, "the dead handle revived (round %d)", i);
    cr_assert_eq(te_push(t.eng, te_rec_fn, &never, TE_NONE, TE_V(a), 0), WEFT_EINVAL);
    if (i % 3 == 0)
      cr_assert_eq(te_push(t.eng, te_count_fn, &count, TE_V(v), TE_NONE, 0), 0);
    cr_assert_eq(weft_var_delete(t.eng, v), 0);
    cr_assert_eq(weft_var_wait(t.eng, v), WEFT_EINVAL);
  }
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&never.ran), 0, "a rejected push ran");
  cr_assert_eq(atomic_load(&count), 100);
  cr_assert_eq(te_free(&t), 0);
  return reader.seen;
}

Test(deletion, var_delete_is_deferred_and_the_handle_dead_at_once, .init = setup,
     .timeout = TU_TIMEOUT(30))
{
  cr_assert_eq(deferred_var_delete("threaded"), 42);
  cr_assert_eq(deferred_var_delete("naive"), 42);
}

static int reusable_ops(const char *kind)
{
  te t = te_new(kind, 2, 0);
  bool threaded = strcmp(kind, "threaded") == 0;
  weft_var *a = te_var(t.eng), *b = te_var(t.eng);
  te_rec r = {0};
  atomic_int count = 0;
  weft_var *w[1] = {a};
  weft_op_desc d = te_desc(te_rec_fn, &r);
  d.writes = w;
  d.num_writes = 1;
  weft_op *op = NULL;
  cr_assert_eq(weft_op_new(t.eng, &d, &op), 0);
  cr_assert_not_null(op);
  /* op_new copied the descriptor and its array. */
  w[0] = b;
  d.fn = NULL;
  d.num_writes = 0;
  for (int i = 0; i < 100; i++)
    cr_assert_eq(weft_op_push(t.eng, op), 0, "op_push %d", i);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&r.ran), 100, "%s: a reusable op pushed 100 times ran %d times", kind,
               atomic_load(&r.ran));
  r.status = 5;
  cr_assert_eq(weft_op_push(t.eng, op), 0);
  cr_assert_eq(weft_var_wait(t.eng, b), 0, "%s: op_new did not copy the writes array", kind);
  cr_assert_eq(weft_var_wait(t.eng, a), 5, "%s: the reusable op's failure did not fail its var",
               kind);
  cr_assert_eq(weft_wait_all(t.eng), 5);
  r.status = 0;
  /* op_delete with pushes pending: they run, the handle is dead at once. */
  gate_write gw = {.cell = &(long){0}, .value = 1};
  if (threaded) {
    cr_assert_eq(te_push(t.eng, gate_write_fn, &gw, TE_NONE, TE_V(a), 0), 0);
    cr_assert(TU_WAIT_UNTIL(atomic_load(&gw.g.started), TU_DEADLINE_S));
  }
  for (int i = 0; i < 10; i++)
    cr_assert_eq(weft_op_push(t.eng, op), 0);
  cr_assert_eq(weft_op_delete(t.eng, op), 0);
  cr_assert_eq(weft_op_push(t.eng, op), WEFT_EINVAL, "op_push on a deleted op");
  cr_assert_eq(weft_op_delete(t.eng, op), WEFT_EINVAL, "op_delete twice");
  atomic_store(&gw.g.open, 1);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&r.ran), 111, "%s: pushes before op_delete did not all run", kind);
  /* Dead for good, however its memory is reused. */
  for (int i = 0; i < 200; i++) {
    weft_op *o2 = NULL;
    d = te_desc(te_count_fn, &count);
    d.reads = (weft_var *const[]){b};
    d.num_reads = 1;
    cr_assert_eq(weft_op_new(t.eng, &d, &o2), 0);
    cr_assert_eq(weft_op_push(t.eng, op), WEFT_EINVAL, "the dead op revived (round %d)", i);
    if (i % 4 == 0)
      cr_assert_eq(weft_op_push(t.eng, o2), 0);
    cr_assert_eq(weft_op_delete(t.eng, o2), 0);
    cr_assert_eq(weft_op_push(t.eng, o2), WEFT_EINVAL);
  }
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&count), 50);
  /* weft_push copies its descriptor too. */
  te_rec f = {.status = 9};
  weft_var *w2[1] = {a};
  d = te_desc(te_rec_fn, &f);
  d.writes = w2;
  d.num_writes = 1;
  cr_assert_eq(weft_push(t.eng, &d), 0);
  w2[0] = b;
  d.fn = NULL;
  cr_assert_eq(weft_var_wait(t.eng, a), 9, "%s: weft_push did not copy the writes array", kind);
  cr_assert_eq(weft_var_wait(t.eng, b), 0);
  cr_assert_eq(weft_wait_all(t.eng), 9);
  return te_free(&t);
}

Test(reusable, pushed_many_times_and_deleted_deferred, .init = setup, .timeout = TU_TIMEOUT(30))
{
  cr_assert_eq(reusable_ops("threaded"), 0);
  cr_assert_eq(reusable_ops("naive"), 0);
}

/* The same reusable op pushed from several threads at once. */
typedef struct op_pusher {
  weft_engine *eng;
  weft_op *op;
  int n;
  atomic_int *go;
} op_pusher;

static void *op_pusher_thread(void *arg)
{
  op_pusher *p = arg;
  while (!atomic_load(p->go))
    sched_yield();
  for (int i = 0; i < p->n; i++) {
    int rc = weft_op_push(p->eng, p->op);
    TU_CHECK(rc == 0, "op_push = %d", rc);
  }
  return NULL;
}

typedef struct serial_op {
  te_guard guard[1];
  atomic_int ran;
} serial_op;

static int serial_op_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  serial_op *s = arg;
  int w = 0;
  te_guard_enter(s->guard, NULL, 0, &w, 1);
  for (volatile int i = 0; i < 50; i++) {
  }
  te_guard_leave(s->guard, NULL, 0, &w, 1);
  atomic_fetch_add(&s->ran, 1);
  return 0;
}

Test(reusable, one_op_pushed_from_three_threads, .init = setup, .timeout = TU_TIMEOUT(30))
{
  te t = te_new("threaded", 2, 0);
  weft_var *a = te_var(t.eng);
  serial_op s = {0};
  weft_op_desc d = te_desc(serial_op_fn, &s);
  d.writes = (weft_var *const[]){a};
  d.num_writes = 1;
  weft_op *op = NULL;
  cr_assert_eq(weft_op_new(t.eng, &d, &op), 0);
  atomic_int go = 0;
  int n = (int)tu_scaled(3000, 300);
  op_pusher p = {t.eng, op, n, &go};
  pthread_t th[3];
  for (int i = 0; i < 3; i++)
    cr_assert_eq(pthread_create(&th[i], NULL, op_pusher_thread, &p), 0);
  atomic_store(&go, 1);
  for (int i = 0; i < 3; i++)
    te_join(th[i]);
  cr_assert_eq(weft_op_delete(t.eng, op), 0);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  tu_assert_no_errors();
  cr_assert_eq(atomic_load(&s.ran), 3 * n);
  cr_assert_eq(te_free(&t), 0);
}

/* ---------------------------------------------------- waits inside ops */

typedef struct waiter {
  weft_engine *eng;
  weft_var *own[3];
  int nown;
  weft_var *other;       /* a var this op does not use */
  int rc_own[3];
  /* the ops it pushes and then waits for */
  te_rec inner[3];
  int rc_other1, rc_other2;
  weft_var *other2;
  bool push_inner;
} waiter;

static int waiter_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  waiter *w = arg;
  for (int i = 0; i < w->nown; i++)
    w->rc_own[i] = weft_var_wait(w->eng, w->own[i]);
  if (w->push_inner) {
    /* Pushed from inside, so on a 1-thread pool only this worker can run
     * them: a blocking wait would deadlock. */
    int r1 = te_push(w->eng, te_rec_fn, &w->inner[0], TE_NONE, TE_V(w->other), 0);
    int r2 = te_push(w->eng, te_rec_fn, &w->inner[1], TE_V(w->other), TE_V(w->other), 0);
    int r3 = te_push(w->eng, te_rec_fn, &w->inner[2], TE_NONE, TE_V(w->other2), 0);
    TU_CHECK(r1 == 0 && r2 == 0 && r3 == 0, "push from inside an op: %d %d %d", r1, r2, r3);
    w->rc_other1 = weft_var_wait(w->eng, w->other);
    w->rc_other2 = weft_var_wait(w->eng, w->other2);
  }
  return 0;
}

static int waits_inside_ops(const char *kind, int threads)
{
  te t = te_new(kind, threads, 0);
  weft_engine *E = t.eng;
  weft_var *a = te_var(E), *b = te_var(E), *c = te_var(E), *x = te_var(E), *y = te_var(E);
  waiter w = {.eng = E, .own = {a, b, c}, .nown = 3, .other = x, .other2 = y, .push_inner = true};
  w.inner[2].status = 4;
  cr_assert_eq(te_push(E, waiter_fn, &w, TE_V(a, c), TE_V(b, c), 0), 0);
  int wa = weft_wait_all(E);
  cr_assert_eq(wa, 4, "%s: wait_all = %d; the inner op failed with 4", kind, wa);
  for (int i = 0; i < 3; i++)
    cr_assert_eq(w.rc_own[i], WEFT_EDEADLK,
                 "%s: var_wait inside an op on a var it uses (#%d) = %d (%s)", kind, i,
                 w.rc_own[i], weft_strerror(w.rc_own[i]));
  cr_assert_eq(w.rc_other1, 0, "%s: var_wait inside an op on another var = %d", kind,
               w.rc_other1);
  cr_assert_eq(w.rc_other2, 4, "%s: var_wait inside an op on a failed var = %d", kind,
               w.rc_other2);
  for (int i = 0; i < 3; i++)
    cr_assert_eq(atomic_load(&w.inner[i].ran), 1);
  /* The var_wait inside consumed the failure. */
  cr_assert_eq(weft_var_wait(E, y), 0);
  tu_assert_no_errors();
  return te_free(&t);
}

Test(waits, inside_an_op_edeadlk_on_own_vars_and_helping_on_others_1_thread, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  cr_assert_eq(waits_inside_ops("threaded", 1), 0);
}

Test(waits, inside_an_op_2_threads_and_naive, .init = setup, .timeout = TU_TIMEOUT(60))
{
  cr_assert_eq(waits_inside_ops("threaded", 2), 0);
  cr_assert_eq(waits_inside_ops("naive", 1), 0);
}

/* A wait inside an op for work queued behind other ops on a 1-thread pool:
 * many nested levels, each op pushing the next and waiting for it. */
typedef struct nest {
  weft_engine *eng;
  weft_var *v[16];
  int depth;
  atomic_int ran;
} nest;

typedef struct nest_arg {
  nest *n;
  int level;
} nest_arg;

static int nest_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  nest_arg *na = arg;
  nest *n = na->n;
  atomic_fetch_add(&n->ran, 1);
  if (na->level + 1 >= n->depth)
    return 0;
  nest_arg *child = na + 1;
  child->n = n;
  child->level = na->level + 1;
  /* The child shares no var with its parent (or it could never run while
   * the parent waits). */
  int r = te_push(n->eng, nest_fn, child, TE_NONE, TE_V(n->v[na->level + 1]), 0);
  TU_CHECK(r == 0, "nested push = %d", r);
  r = weft_var_wait(n->eng, n->v[na->level + 1]);
  TU_CHECK(r == 0, "nested var_wait at level %d = %d (%s)", na->level, r, weft_strerror(r));
  return 0;
}

Test(waits, nested_waits_on_a_1_thread_pool, .init = setup, .timeout = TU_TIMEOUT(30))
{
  te t = te_new("threaded", 1, 0);
  nest n = {.eng = t.eng, .depth = 16};
  for (int i = 0; i < 16; i++)
    n.v[i] = te_var(t.eng);
  nest_arg args[16];
  memset(args, 0, sizeof args);
  args[0].n = &n;
  cr_assert_eq(te_push(t.eng, nest_fn, &args[0], TE_NONE, TE_V(n.v[0]), 0), 0);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  tu_assert_no_errors();
  cr_assert_eq(atomic_load(&n.ran), 16);
  cr_assert_eq(te_free(&t), 0);
}

/* ------------------------------------------------- waits that loop back */

/*
 * A wait inside an operator X on a var whose pending operators wait, in
 * turn, for X (X writes a, pushes Y that reads a and writes b, then waits
 * on b: Y waits for X, X for Y) can never be satisfied: it returns
 * WEFT_EDEADLK at once (weft.h), instead of hanging the engine for good.
 * A wait whose pending work does not depend on X must still succeed.
 *
 * X reports on a flag; the test thread gives it TU_DEADLINE_S, so that a
 * hang (the engine's, for good) fails the test instead of the suite.
 */
enum {
  LB_PUSH,       /* Y reads a, writes b; X waits on b: EDEADLK */
  LB_PUSH_WRITE, /* Y writes a and b */
  LB_PUSH_READ,  /* Y reads a and b (X waits behind a reader of b) */
  LB_CHAIN,      /* Y0 reads a, writes u0; Yi reads u(i-1), writes ui; X waits on u4, u2 */
  LB_GRANDCHILD, /* Y (independent, writes d) pushes Z (reads a, writes b) when it runs */
  LB_FREE,       /* Y writes b only: X's wait on b succeeds */
  LB_READERS,    /* X reads a; Y reads a, writes b: readers together, it succeeds */
  LB_BESIDE,     /* Y depends on X (reads a, writes c), Z does not (writes b): b succeeds */
  LB_SHAPES
};

static const char *const lb_names[LB_SHAPES] = {
    "push", "push_write", "push_read", "chain", "grandchild", "free", "readers", "beside"};

typedef struct lb_x lb_x;

/* An operator pushed by X (or by one of those): records that it ran, and
 * whether X had returned by then. */
typedef struct lb_op {
  lb_x *x;
  atomic_int ran;
  atomic_int after_x; /* X had returned when it ran */
} lb_op;

struct lb_x {
  weft_engine *eng;
  int shape;
  weft_var *a, *b, *c, *d, *u[5];
  lb_op y[5], z;
  int rc[3];           /* X's waits, in order */
  atomic_int waited;   /* X's waits returned */
  atomic_int returned; /* X returned */
};

static int lb_op_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  lb_op *o = arg;
  atomic_store(&o->after_x, atomic_load(&o->x->returned));
  atomic_fetch_add(&o->ran, 1);
  return 0;
}

/* LB_GRANDCHILD's Y: independent of X, pushes Z, which depends on X. */
static int lb_grandchild_fn(const weft_run_ctx *rc, void *arg)
{
  lb_op *o = arg;
  lb_x *x = o->x;
  int r = te_push(x->eng, lb_op_fn, &x->z, TE_V(x->a), TE_V(x->b), 0);
  TU_CHECK(r == 0, "push of Z from Y = %d", r);
  return lb_op_fn(rc, arg);
}

static int lb_x_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  lb_x *x = arg;
  weft_engine *E = x->eng;
  int p = 0;
  switch (x->shape) {
  case LB_PUSH:
    p |= te_push(E, lb_op_fn, &x->y[0], TE_V(x->a), TE_V(x->b), 0);
    x->rc[0] = weft_var_wait(E, x->b);
    break;
  case LB_PUSH_WRITE:
    p |= te_push(E, lb_op_fn, &x->y[0], TE_NONE, TE_V(x->a, x->b), 0);
    x->rc[0] = weft_var_wait(E, x->b);
    break;
  case LB_PUSH_READ:
    p |= te_push(E, lb_op_fn, &x->y[0], TE_V(x->a, x->b), TE_NONE, 0);
    x->rc[0] = weft_var_wait(E, x->b);
    break;
  case LB_CHAIN:
    p |= te_push(E, lb_op_fn, &x->y[0], TE_V(x->a), TE_V(x->u[0]), 0);
    for (int i = 1; i < 5; i++)
      p |= te_push(E, lb_op_fn, &x->y[i], TE_V(x->u[i - 1]), TE_V(x->u[i]), 0);
    x->rc[0] = weft_var_wait(E, x->u[4]);
    x->rc[1] = weft_var_wait(E, x->u[2]);
    break;
  case LB_GRANDCHILD:
    p |= te_push(E, lb_grandchild_fn, &x->y[0], TE_NONE, TE_V(x->d), 0);
    x->rc[0] = weft_var_wait(E, x->d); /* Y ran: Z is pushed */
    x->rc[1] = weft_var_wait(E, x->b);
    break;
  case LB_FREE:
    p |= te_push(E, lb_op_fn, &x->y[0], TE_NONE, TE_V(x->b), 0);
    x->rc[0] = weft_var_wait(E, x->b);
    break;
  case LB_READERS:
    p |= te_push(E, lb_op_fn, &x->y[0], TE_V(x->a), TE_V(x->b), 0);
    x->rc[0] = weft_var_wait(E, x->b);
    break;
  case LB_BESIDE:
    p |= te_push(E, lb_op_fn, &x->y[0], TE_V(x->a), TE_V(x->c), 0);
    p |= te_push(E, lb_op_fn, &x->y[1], TE_NONE, TE_V(x->b), 0);
    x->rc[0] = weft_var_wait(E, x->b);
    /* ... and its own var a, as always: */
    x->rc[1] = weft_var_wait(E, x->a);
    break;
  }
  TU_CHECK(p == 0, "a push from inside X failed");
  atomic_store(&x->waited, 1);
  atomic_store(&x->returned, 1);
  return 0;
}

/* Runs shape on a fresh engine; returns 0 (asserts on the test thread). */
static int lb_run(int shape, int threads, int max_inflight)
{
  te t = te_new("threaded", threads, max_inflight);
  weft_engine *E = t.eng;
  lb_x *x = calloc(1, sizeof *x); /* leaked on a hang: its operators may still read it */
  cr_assert_not_null(x);
  x->eng = E;
  x->shape = shape;
  x->a = te_var(E);
  x->b = te_var(E);
  x->c = te_var(E);
  x->d = te_var(E);
  for (int i = 0; i < 5; i++)
    x->u[i] = te_var(E);
  for (int i = 0; i < 5; i++)
    x->y[i].x = x;
  x->z.x = x;
  for (int i = 0; i < 3; i++)
    x->rc[i] = 12345;
  const char *s = lb_names[shape];
  if (shape == LB_READERS)
    cr_assert_eq(te_push(E, lb_x_fn, x, TE_V(x->a), TE_NONE, 0), 0);
  else
    cr_assert_eq(te_push(E, lb_x_fn, x, TE_NONE, TE_V(x->a), 0), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&x->waited), TU_DEADLINE_S),
            "%s (%d threads, max_inflight %d): the wait inside the operator hung", s, threads,
            max_inflight);
  cr_assert_eq(weft_wait_all(E), 0, "%s", s);
  tu_assert_no_errors();
  int want0 = shape == LB_FREE || shape == LB_READERS || shape == LB_BESIDE ? 0 : WEFT_EDEADLK;
  if (shape == LB_GRANDCHILD) {
    cr_assert_eq(x->rc[0], 0, "%s: X's wait on Y's own var = %d (%s)", s, x->rc[0],
                 weft_strerror(x->rc[0]));
    cr_assert_eq(x->rc[1], WEFT_EDEADLK,
                 "%s (%d threads, max_inflight %d): X's wait on Z's var = %d (%s)", s, threads,
                 max_inflight, x->rc[1], weft_strerror(x->rc[1]));
    cr_assert_eq(atomic_load(&x->z.ran), 1);
    cr_assert_eq(atomic_load(&x->z.after_x), 1, "%s: Z ran before X returned", s);
  } else {
    cr_assert_eq(x->rc[0], want0, "%s (%d threads, max_inflight %d): X's wait = %d (%s), want %d",
                 s, threads, max_inflight, x->rc[0], weft_strerror(x->rc[0]), want0);
  }
  if (shape == LB_CHAIN) {
    cr_assert_eq(x->rc[1], WEFT_EDEADLK, "%s: X's wait on the chain's middle = %d", s, x->rc[1]);
    for (int i = 0; i < 5; i++) {
      cr_assert_eq(atomic_load(&x->y[i].ran), 1, "%s: Y%d ran %d times", s, i,
                   atomic_load(&x->y[i].ran));
      cr_assert_eq(atomic_load(&x->y[i].after_x), 1, "%s: Y%d ran before X returned", s, i);
    }
  } else {
    cr_assert_eq(atomic_load(&x->y[0].ran), 1, "%s: Y ran %d times", s,
                 atomic_load(&x->y[0].ran));
  }
  if (want0 == WEFT_EDEADLK && shape != LB_GRANDCHILD)
    cr_assert_eq(atomic_load(&x->y[0].after_x), 1, "%s: Y ran before X returned", s);
  if (shape == LB_GRANDCHILD)
    cr_assert_eq(atomic_load(&x->y[0].after_x), 0, "%s: X's wait did not wait for Y", s);
  if (shape == LB_FREE || shape == LB_READERS)
    cr_assert_eq(atomic_load(&x->y[0].after_x), 0, "%s: X's wait did not wait for Y", s);
  if (shape == LB_BESIDE) {
    cr_assert_eq(x->rc[1], WEFT_EDEADLK, "%s: X's wait on its own var = %d", s, x->rc[1]);
    cr_assert_eq(atomic_load(&x->y[1].ran), 1);
    cr_assert_eq(atomic_load(&x->y[1].after_x), 0, "%s: X's wait did not wait for Z", s);
    cr_assert_eq(atomic_load(&x->y[0].after_x), 1, "%s: Y ran before X returned", s);
  }
  free(x);
  return te_free(&t);
}

/* Runs the shape at 1 and 2 workers, max_inflight 0 and 2; returns how
 * many of those 4 runs passed (the test bodies check: all of them). */
static int lb_all(int shape)
{
  static const int threads[] = {1, 2};
  static const int caps[] = {0, 2};
  int passed = 0;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++)
      passed += lb_run(shape, threads[i], caps[j]) == 0;
  return passed;
}

Test(loops, push_then_wait_on_what_it_writes_is_edeadlk, .init = setup, .timeout = TU_TIMEOUT(120))
{
  cr_assert_eq(lb_all(LB_PUSH), 4, "LB_PUSH: not every run passed");
  cr_assert_eq(lb_all(LB_PUSH_WRITE), 4, "LB_PUSH_WRITE: not every run passed");
  cr_assert_eq(lb_all(LB_PUSH_READ), 4, "LB_PUSH_READ: not every run passed");
}

Test(loops, a_chain_pushed_behind_the_caller_is_edeadlk, .init = setup, .timeout = TU_TIMEOUT(120))
{
  cr_assert_eq(lb_all(LB_CHAIN), 4, "LB_CHAIN: not every run passed");
}

Test(loops, pushed_by_what_the_caller_pushed_is_edeadlk, .init = setup, .timeout = TU_TIMEOUT(120))
{
  cr_assert_eq(lb_all(LB_GRANDCHILD), 4, "LB_GRANDCHILD: not every run passed");
}

Test(loops, work_that_does_not_wait_for_the_caller_is_waited_for, .init = setup,
     .timeout = TU_TIMEOUT(120))
{
  cr_assert_eq(lb_all(LB_FREE), 4, "LB_FREE: not every run passed");
  cr_assert_eq(lb_all(LB_READERS), 4, "LB_READERS: not every run passed");
  cr_assert_eq(lb_all(LB_BESIDE), 4, "LB_BESIDE: not every run passed");
}

/*
 * The read rule, on 2 workers: K writes c and holds its worker (a gate the
 * test opens). X writes a, pushes P (reads a and c: behind K on c, and
 * behind X on a) and R (reads c, writes b): R's read of c waits for K, not
 * for P (reads run together), so X's wait on b succeeds once K is done. With
 * R writing c instead, R waits for P, which waits for X: WEFT_EDEADLK.
 */
typedef struct lb_reads {
  weft_engine *eng;
  weft_var *a, *b, *c;
  bool r_writes_c;
  lb_x x; /* for its lb_ops: only returned is used */
  int rc;
  atomic_int waiting, waited;
} lb_reads;

static int lb_reads_x_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  lb_reads *r = arg;
  int p = te_push(r->eng, lb_op_fn, &r->x.y[0], TE_V(r->a, r->c), TE_NONE, 0);
  if (r->r_writes_c)
    p |= te_push(r->eng, lb_op_fn, &r->x.y[1], TE_NONE, TE_V(r->c, r->b), 0);
  else
    p |= te_push(r->eng, lb_op_fn, &r->x.y[1], TE_V(r->c), TE_V(r->b), 0);
  TU_CHECK(p == 0, "a push from inside X failed");
  atomic_store(&r->waiting, 1);
  r->rc = weft_var_wait(r->eng, r->b);
  atomic_store(&r->waited, 1);
  atomic_store(&r->x.returned, 1);
  return 0;
}

static int lb_reads_run(bool r_writes_c, int max_inflight)
{
  te t = te_new("threaded", 2, max_inflight);
  weft_engine *E = t.eng;
  lb_reads *r = calloc(1, sizeof *r); /* leaked on a hang */
  cr_assert_not_null(r);
  te_gate *k = calloc(1, sizeof *k);
  cr_assert_not_null(k);
  *r = (lb_reads){.eng = E, .a = te_var(E), .b = te_var(E), .c = te_var(E),
                  .r_writes_c = r_writes_c, .rc = 12345};
  r->x.y[0].x = r->x.y[1].x = &r->x;
  cr_assert_eq(te_push(E, te_gate_fn, k, TE_NONE, TE_V(r->c), 0), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&k->started), TU_DEADLINE_S));
  cr_assert_eq(te_push(E, lb_reads_x_fn, r, TE_NONE, TE_V(r->a), 0), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&r->waiting), TU_DEADLINE_S));
  if (r_writes_c) /* answered at once, K still running */
    cr_assert(TU_WAIT_UNTIL(atomic_load(&r->waited), TU_DEADLINE_S),
              "X's wait on b (R writes c, max_inflight %d) hung", max_inflight);
  else /* most likely in the wait by now (not a condition of the test) */
    tu_sleep_us(20000);
  atomic_store(&k->open, 1);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&r->waited), TU_DEADLINE_S),
            "X's wait on b (R %s c, max_inflight %d) hung", r_writes_c ? "writes" : "reads",
            max_inflight);
  cr_assert_eq(weft_wait_all(E), 0);
  tu_assert_no_errors();
  cr_assert_eq(atomic_load(&k->timed_out), 0);
  int want = r_writes_c ? WEFT_EDEADLK : 0;
  cr_assert_eq(r->rc, want, "X's wait on b (R %s c, max_inflight %d) = %d (%s), want %d",
               r_writes_c ? "writes" : "reads", max_inflight, r->rc, weft_strerror(r->rc), want);
  cr_assert_eq(atomic_load(&r->x.y[0].ran), 1);
  cr_assert_eq(atomic_load(&r->x.y[1].ran), 1);
  cr_assert_eq(atomic_load(&r->x.y[0].after_x), 1, "P ran before X returned");
  cr_assert_eq(atomic_load(&r->x.y[1].after_x), r_writes_c ? 1 : 0,
               "R ran %s X returned", r_writes_c ? "before" : "after");
  free(r);
  free(k);
  return te_free(&t);
}

/*
 * Many operators behind X (more than a check holds without allocating):
 * X writes a and pushes LB_MANY operators that read a and write c, and Z
 * that writes b. A wait on b succeeds (Z does not wait for X), one on c is
 * WEFT_EDEADLK.
 */
enum { LB_MANY = 500 };

typedef struct lb_many {
  weft_engine *eng;
  weft_var *a, *b, *c;
  lb_x x; /* for its lb_ops: only returned is used */
  lb_op ops[LB_MANY];
  int rc_b, rc_c;
  atomic_int waited;
} lb_many;

static int lb_many_x_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  lb_many *m = arg;
  int p = 0;
  for (int i = 0; i < LB_MANY; i++)
    p |= te_push(m->eng, lb_op_fn, &m->ops[i], TE_V(m->a), TE_V(m->c), 0);
  p |= te_push(m->eng, lb_op_fn, &m->x.z, TE_NONE, TE_V(m->b), 0);
  TU_CHECK(p == 0, "a push from inside X failed");
  m->rc_b = weft_var_wait(m->eng, m->b);
  m->rc_c = weft_var_wait(m->eng, m->c);
  atomic_store(&m->waited, 1);
  atomic_store(&m->x.returned, 1);
  return 0;
}

Test(loops, many_operators_behind_the_caller, .init = setup, .timeout = TU_TIMEOUT(120))
{
  for (int threads = 1; threads <= 2; threads++) {
    te t = te_new("threaded", threads, 0);
    lb_many *m = calloc(1, sizeof *m); /* leaked on a hang */
    cr_assert_not_null(m);
    m->eng = t.eng;
    m->a = te_var(t.eng);
    m->b = te_var(t.eng);
    m->c = te_var(t.eng);
    m->rc_b = m->rc_c = 12345;
    m->x.z.x = &m->x;
    for (int i = 0; i < LB_MANY; i++)
      m->ops[i].x = &m->x;
    cr_assert_eq(te_push(t.eng, lb_many_x_fn, m, TE_NONE, TE_V(m->a), 0), 0);
    cr_assert(TU_WAIT_UNTIL(atomic_load(&m->waited), TU_DEADLINE_S),
              "%d threads: a wait inside X hung", threads);
    cr_assert_eq(weft_wait_all(t.eng), 0);
    tu_assert_no_errors();
    cr_assert_eq(m->rc_b, 0, "%d threads: X's wait on b = %d (%s)", threads, m->rc_b,
                 weft_strerror(m->rc_b));
    cr_assert_eq(m->rc_c, WEFT_EDEADLK, "%d threads: X's wait on c = %d (%s)", threads, m->rc_c,
                 weft_strerror(m->rc_c));
    cr_assert_eq(atomic_load(&m->x.z.ran), 1);
    cr_assert_eq(atomic_load(&m->x.z.after_x), 0, "X's wait did not wait for Z");
    for (int i = 0; i < LB_MANY; i++) {
      cr_assert_eq(atomic_load(&m->ops[i].ran), 1);
      cr_assert_eq(atomic_load(&m->ops[i].after_x), 1, "operator %d ran before X returned", i);
    }
    free(m);
    cr_assert_eq(te_free(&t), 0);
  }
}

Test(loops, reads_together_do_not_wait_for_each_other, .init = setup, .timeout = TU_TIMEOUT(120))
{
  for (int cap = 0; cap <= 2; cap += 2) {
    cr_assert_eq(lb_reads_run(false, cap), 0);
    cr_assert_eq(lb_reads_run(true, cap), 0);
  }
}

/*
 * Nested on one thread (1 worker): X writes a, pushes Z (writes u) and
 * waits on u, which runs Z on this very thread, inside X's wait; Z waits
 * on a, which waits for X, which waits for Z to return: WEFT_EDEADLK for
 * Z, and then X's wait succeeds.
 */
typedef struct lb_nest {
  weft_engine *eng;
  weft_var *a, *u;
  int rc_x, rc_z;
  atomic_int z_ran, done;
} lb_nest;

static int lb_nest_z_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  lb_nest *n = arg;
  n->rc_z = weft_var_wait(n->eng, n->a);
  atomic_fetch_add(&n->z_ran, 1);
  return 0;
}

static int lb_nest_x_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  lb_nest *n = arg;
  int p = te_push(n->eng, lb_nest_z_fn, n, TE_NONE, TE_V(n->u), 0);
  TU_CHECK(p == 0, "push of Z = %d", p);
  n->rc_x = weft_var_wait(n->eng, n->u);
  atomic_store(&n->done, 1);
  return 0;
}

Test(loops, a_wait_nested_in_the_callers_own_wait_is_edeadlk, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  for (int cap = 0; cap <= 2; cap += 2) {
    te t = te_new("threaded", 1, cap);
    lb_nest *n = calloc(1, sizeof *n); /* leaked on a hang */
    cr_assert_not_null(n);
    *n = (lb_nest){.eng = t.eng, .a = te_var(t.eng), .u = te_var(t.eng), .rc_x = 12345,
                   .rc_z = 12345};
    cr_assert_eq(te_push(t.eng, lb_nest_x_fn, n, TE_NONE, TE_V(n->a), 0), 0);
    cr_assert(TU_WAIT_UNTIL(atomic_load(&n->done), TU_DEADLINE_S),
              "max_inflight %d: the waits nested on one thread hung", cap);
    cr_assert_eq(weft_wait_all(t.eng), 0);
    tu_assert_no_errors();
    cr_assert_eq(n->rc_z, WEFT_EDEADLK, "max_inflight %d: Z's wait on X's var = %d (%s)", cap,
                 n->rc_z, weft_strerror(n->rc_z));
    cr_assert_eq(n->rc_x, 0, "max_inflight %d: X's wait on Z's var = %d", cap, n->rc_x);
    cr_assert_eq(atomic_load(&n->z_ran), 1);
    free(n);
    cr_assert_eq(te_free(&t), 0);
  }
}

/*
 * Across two threads (2 workers): X writes a and runs on one worker, Q
 * writes c and runs on the other. Q waits on a (for X: a wait like any
 * other); X then waits on c, which waits for Q, which waits for X:
 * WEFT_EDEADLK for X, and Q's wait succeeds once X returns. X starts its
 * wait only once Q is inside its own: Q pushes T, which lands on Q's own
 * worker (the other is held by X), and only Q's wait runs it (helping).
 */
typedef struct lb_pair {
  weft_engine *eng;
  weft_var *a, *c;
  int rc_x, rc_q;
  atomic_int x_started, q_waiting, x_done, q_done;
} lb_pair;

static int lb_pair_t_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  atomic_store(&((lb_pair *)arg)->q_waiting, 1);
  return 0;
}

static int lb_pair_q_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  lb_pair *p = arg;
  int r = te_push(p->eng, lb_pair_t_fn, p, TE_NONE, TE_NONE, 0);
  TU_CHECK(r == 0, "push of T = %d", r);
  p->rc_q = weft_var_wait(p->eng, p->a);
  atomic_store(&p->q_done, 1);
  return 0;
}

static int lb_pair_x_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  lb_pair *p = arg;
  atomic_store(&p->x_started, 1);
  TU_CHECK(TU_WAIT_UNTIL(atomic_load(&p->q_waiting), TU_DEADLINE_S), "Q never waited");
  p->rc_x = weft_var_wait(p->eng, p->c);
  atomic_store(&p->x_done, 1);
  return 0;
}

Test(loops, a_wait_of_another_operator_that_waits_for_the_caller_is_edeadlk, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  te t = te_new("threaded", 2, 0);
  lb_pair *p = calloc(1, sizeof *p); /* leaked on a hang */
  cr_assert_not_null(p);
  *p = (lb_pair){.eng = t.eng, .a = te_var(t.eng), .c = te_var(t.eng), .rc_x = 12345,
                 .rc_q = 12345};
  cr_assert_eq(te_push(t.eng, lb_pair_x_fn, p, TE_NONE, TE_V(p->a), 0), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&p->x_started), TU_DEADLINE_S));
  cr_assert_eq(te_push(t.eng, lb_pair_q_fn, p, TE_NONE, TE_V(p->c), 0), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&p->x_done) && atomic_load(&p->q_done), TU_DEADLINE_S),
            "the two waits hung (X returned: %d, Q returned: %d)", atomic_load(&p->x_done),
            atomic_load(&p->q_done));
  cr_assert_eq(weft_wait_all(t.eng), 0);
  tu_assert_no_errors();
  cr_assert_eq(p->rc_x, WEFT_EDEADLK, "X's wait on Q's var = %d (%s)", p->rc_x,
               weft_strerror(p->rc_x));
  cr_assert_eq(p->rc_q, 0, "Q's wait on X's var = %d", p->rc_q);
  free(p);
  cr_assert_eq(te_free(&t), 0);
}

/* ----------------------------------------------------------------- GPU */

static int gpu_without_devices(const char *kind)
{
  te t = te_new(kind, 1, 0);
  cr_assert_eq(weft_gpu_count(t.eng), 0, "%s: weft_gpu_count = %d with no GPU layer", kind,
               weft_gpu_count(t.eng));
  weft_var *a = te_var(t.eng);
  te_rec never = {0};
  const weft_prop props[] = {WEFT_PROP_NORMAL, WEFT_PROP_COPY_TO_GPU, WEFT_PROP_COPY_FROM_GPU,
                             WEFT_PROP_PRIORITIZED};
  const int ids[] = {0, 1, -1};
  for (size_t p = 0; p < sizeof props / sizeof *props; p++)
    for (size_t i = 0; i < sizeof ids / sizeof *ids; i++) {
      weft_op_desc d = te_desc(te_rec_fn, &never);
      d.writes = (weft_var *const[]){a};
      d.num_writes = 1;
      d.ctx.type = WEFT_DEV_GPU;
      d.ctx.id = ids[i];
      d.prop = props[p];
      int rc = weft_push(t.eng, &d);
      cr_assert_eq(rc, WEFT_ENODEV, "%s: a GPU op (prop %d, id %d) pushed: %d (%s)", kind,
                   (int)props[p], ids[i], rc, weft_strerror(rc));
      weft_op *op = NULL;
      rc = weft_op_new(t.eng, &d, &op);
      if (rc == 0) {
        rc = weft_op_push(t.eng, op);
        cr_assert_eq(weft_op_delete(t.eng, op), 0);
      }
      cr_assert_eq(rc, WEFT_ENODEV, "%s: a reusable GPU op: %d (%s)", kind, rc,
                   weft_strerror(rc));
    }
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&never.ran), 0, "%s: a GPU op ran without a GPU", kind);
  /* CPU ops still work, and a CPU context's id is ignored. */
  te_rec ok = {0};
  weft_op_desc d = te_desc(te_rec_fn, &ok);
  d.writes = (weft_var *const[]){a};
  d.num_writes = 1;
  d.ctx.id = 7;
  cr_assert_eq(weft_push(t.eng, &d), 0);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&ok.ran), 1);
  return te_free(&t);
}

Test(gpu, count_zero_and_gpu_ops_enodev, .init = setup, .timeout = TU_TIMEOUT(30))
{
  cr_assert_eq(gpu_without_devices("threaded"), 0);
  cr_assert_eq(gpu_without_devices("naive"), 0);
}

/* ----------------------------------------- waits inside WEFT_PROP_ASYNC */

/*
 * An op run inline (WEFT_PROP_ASYNC) is an op like any other: a var_wait
 * inside it on another var must complete (helping, or waiting for other
 * workers), whether it runs on the pushing thread or on a worker.
 */
typedef struct inline_waiter {
  weft_engine *eng;
  weft_var *other;
  bool push_first;    /* push an op on other first, then wait for it */
  atomic_int inner_ran;
  int rc;
  atomic_int returned;
} inline_waiter;

static int inline_waiter_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  inline_waiter *w = arg;
  if (w->push_first) {
    int r = te_push(w->eng, te_count_fn, &w->inner_ran, TE_NONE, TE_V(w->other), 0);
    TU_CHECK(r == 0, "push = %d", r);
  }
  w->rc = weft_var_wait(w->eng, w->other);
  atomic_store(&w->returned, 1);
  return 0;
}

typedef struct push_thread {
  weft_engine *eng;
  weft_op_desc d;
  int rc;
} push_thread;

static void *push_thread_fn(void *arg)
{
  push_thread *p = arg;
  p->rc = weft_push(p->eng, &p->d);
  return NULL;
}

/* how: 0 ready at push (inline in a pushing thread of ours), 1 made ready
 * by a worker finishing its predecessor. Returns the wait's result. */
static int var_wait_inside_inline_op(int threads, int how, bool push_first)
{
  te t = te_new("threaded", threads, 0);
  weft_var *a = te_var(t.eng), *other = te_var(t.eng);
  inline_waiter w = {.eng = t.eng, .other = other, .push_first = push_first, .rc = 12345};
  weft_op_desc d = te_desc(inline_waiter_fn, &w);
  d.prop = WEFT_PROP_ASYNC;
  d.writes = (weft_var *const[]){a};
  d.num_writes = 1;
  te_gate g = {0};
  pthread_t th;
  push_thread p = {.eng = t.eng, .d = d, .rc = 12345};
  if (how == 0) {
    /* From a thread of ours, so that a hang there is reported here. */
    cr_assert_eq(pthread_create(&th, NULL, push_thread_fn, &p), 0);
  } else {
    cr_assert_eq(te_push(t.eng, te_gate_fn, &g, TE_NONE, TE_V(a), 0), 0);
    cr_assert(TU_WAIT_UNTIL(atomic_load(&g.started), TU_DEADLINE_S));
    cr_assert_eq(weft_push(t.eng, &d), 0);
    atomic_store(&g.open, 1);
  }
  bool returned = TU_WAIT_UNTIL(atomic_load(&w.returned), 10.0 * WEFT_TEST_TIMEOUT_MULT);
  cr_assert(returned,
            "weft_var_wait inside a WEFT_PROP_ASYNC op (%s, %d threads%s) on a var the op does "
            "not use never returned: deadlock",
            how == 0 ? "ready at push, run by the pushing thread"
                     : "run by the worker that finished its predecessor",
            threads, push_first ? ", an op pushed on it first" : ", the var idle");
  if (how == 0) {
    te_join(th);
    cr_assert_eq(p.rc, 0);
  }
  cr_assert_eq(weft_wait_all(t.eng), 0);
  tu_assert_no_errors();
  if (push_first)
    cr_assert_eq(atomic_load(&w.inner_ran), 1);
  cr_assert_eq(te_free(&t), 0);
  return w.rc;
}

Test(waits, var_wait_inside_an_inline_op_on_the_pushing_thread, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  cr_assert_eq(var_wait_inside_inline_op(2, 0, false), 0);
  cr_assert_eq(var_wait_inside_inline_op(2, 0, true), 0);
}

Test(waits, var_wait_inside_an_inline_op_on_a_worker, .init = setup, .timeout = TU_TIMEOUT(60))
{
  cr_assert_eq(var_wait_inside_inline_op(2, 1, false), 0);
  cr_assert_eq(var_wait_inside_inline_op(1, 1, true), 0);
}

/* ------------------------------------- waits while others keep pushing */

/*
 * wait_all waits for the ops pushed so far, var_wait for those pushed
 * before on its var: neither may wait for what another thread pushes
 * afterwards. A pusher keeps one op in flight at all times (each op waits
 * until the next one is pushed); a watchdog stops it after a while, so a
 * wait that waits for "no op in flight" returns only then, and is caught.
 */
typedef struct stream {
  weft_engine *eng;
  weft_var *v;
  atomic_long pushed, finished;
  atomic_int stop, watchdog_fired, main_done;
  int push_rc;
} stream;

static stream g_st;

static int stream_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  long k = (long)(intptr_t)arg;
  TU_WAIT_UNTIL(atomic_load(&g_st.pushed) >= k + 2 || atomic_load(&g_st.stop), TU_DEADLINE_S);
  atomic_fetch_add(&g_st.finished, 1);
  return 0;
}

static void *stream_pusher(void *arg)
{
  (void)arg;
  for (long k = 0; !atomic_load(&g_st.stop); k++) {
    int rc = te_push(g_st.eng, stream_fn, (void *)(intptr_t)k, TE_NONE, TE_V(g_st.v), 0);
    if (rc) {
      g_st.push_rc = rc;
      break;
    }
    atomic_store(&g_st.pushed, k + 1);
    TU_WAIT_UNTIL(atomic_load(&g_st.finished) >= k || atomic_load(&g_st.stop), TU_DEADLINE_S);
  }
  return NULL;
}

static void *stream_watchdog(void *arg)
{
  (void)arg;
  if (!TU_WAIT_UNTIL(atomic_load(&g_st.main_done), 8.0 * WEFT_TEST_TIMEOUT_MULT)) {
    atomic_store(&g_st.watchdog_fired, 1);
    atomic_store(&g_st.stop, 1);
  }
  return NULL;
}

Test(waits, wait_all_and_var_wait_return_while_another_thread_keeps_pushing, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  memset(&g_st, 0, sizeof g_st);
  te t = te_new("threaded", 2, 0);
  g_st.eng = t.eng;
  g_st.v = te_var(t.eng);
  pthread_t pusher, dog;
  cr_assert_eq(pthread_create(&pusher, NULL, stream_pusher, NULL), 0);
  cr_assert_eq(pthread_create(&dog, NULL, stream_watchdog, NULL), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&g_st.pushed) >= 5, TU_DEADLINE_S));
  int rc_var = weft_var_wait(t.eng, g_st.v);
  bool var_fired = atomic_load(&g_st.watchdog_fired);
  int rc_all = weft_wait_all(t.eng);
  bool all_fired = atomic_load(&g_st.watchdog_fired);
  atomic_store(&g_st.main_done, 1);
  atomic_store(&g_st.stop, 1);
  te_join(pusher);
  te_join(dog);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(rc_var, 0);
  cr_assert_eq(rc_all, 0);
  cr_assert_eq(g_st.push_rc, 0);
  cr_assert_not(var_fired, "weft_var_wait waited for ops pushed after it (it returned only once "
                           "the other thread stopped pushing)");
  cr_assert_not(all_fired, "weft_wait_all waited for ops pushed after it by another thread (it "
                           "returned only once that thread stopped pushing, %ld ops later)",
                atomic_load(&g_st.pushed));
  cr_assert_eq(te_free(&t), 0);
}

/* ------------------------------------------------- more on deletion */

/* An op deletes a var it uses, then creates one: the new var is not the
 * old one, and the op's failure lands on the old one only. */
typedef struct self_del {
  weft_engine *eng;
  weft_var *v;
  weft_var *fresh;
  int del_rc, new_rc;
} self_del;

static int self_del_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  self_del *x = arg;
  x->del_rc = weft_var_delete(x->eng, x->v);
  x->new_rc = weft_var_new(x->eng, &x->fresh);
  return 5;
}

static int delete_own_var(const char *kind)
{
  te t = te_new(kind, 2, 0);
  self_del x = {.eng = t.eng};
  x.v = te_var(t.eng);
  weft_var *keep = te_var(t.eng);
  cr_assert_eq(te_push(t.eng, self_del_fn, &x, TE_V(keep), TE_V(x.v), 0), 0);
  cr_assert_eq(weft_var_wait(t.eng, keep), 0); /* the op has finished */
  cr_assert_eq(x.del_rc, 0, "%s: var_delete inside an op that writes the var = %d", kind,
               x.del_rc);
  cr_assert_eq(x.new_rc, 0);
  cr_assert_eq(weft_var_wait(t.eng, x.v), WEFT_EINVAL);
  /* The op failed (5) on the var it deleted, not on the one it made. */
  atomic_int ran = 0;
  cr_assert_eq(te_push(t.eng, te_count_fn, &ran, TE_V(x.fresh), TE_NONE, 0), 0);
  int rc = weft_var_wait(t.eng, x.fresh);
  int ran_fresh = atomic_load(&ran);
  cr_assert_eq(weft_wait_all(t.eng), 5);
  cr_assert_eq(rc, 0, "%s: a var made inside an op after deleting the op's var inherited the "
                      "op's failure (%d)", kind, rc);
  cr_assert_eq(ran_fresh, 1, "%s: an op on the fresh var was skipped", kind);
  return te_free(&t);
}

Test(deletion, an_op_deleting_its_own_var, .init = setup, .timeout = TU_TIMEOUT(30))
{
  cr_assert_eq(delete_own_var("threaded"), 0);
  cr_assert_eq(delete_own_var("naive"), 0);
}

/* ------------------------------------------------- destroy drains all */

static int destroy_drains(const char *kind)
{
  te t = te_new(kind, 2, 0);
  enum { N = 600, NV = 16 };
  weft_var *v[NV];
  for (int i = 0; i < NV; i++)
    v[i] = te_var(t.eng);
  atomic_int ran = 0;
  aop *as = calloc(8, sizeof *as);
  cr_assert_not_null(as);
  weft_op_desc d = te_desc(te_count_fn, &ran);
  d.writes = (weft_var *const[]){v[3]};
  d.num_writes = 1;
  weft_op *op = NULL, *op2 = NULL;
  cr_assert_eq(weft_op_new(t.eng, &d, &op), 0);
  cr_assert_eq(weft_op_new(t.eng, &d, &op2), 0); /* never deleted */
  for (int i = 0; i < N; i++) {
    cr_assert_eq(te_push(t.eng, te_count_fn, &ran, TE_V(v[(i + 1) % NV]), TE_V(v[i % NV]), 0), 0);
    if (i % 100 == 0) {
      cr_assert_eq(aop_push(t.eng, &as[i / 100], TE_NONE, TE_V(v[i % NV]), 0, WEFT_PROP_NORMAL),
                   0);
      cr_assert_eq(weft_op_push(t.eng, op), 0);
      cr_assert_eq(weft_op_push(t.eng, op2), 0);
    }
  }
  cr_assert_eq(weft_op_delete(t.eng, op), 0);
  cr_assert_eq(weft_var_delete(t.eng, v[0]), 0);
  te_rec fail = {.status = 21};
  cr_assert_eq(te_push(t.eng, te_rec_fn, &fail, TE_V(v[5]), TE_V(v[6]), 0), 0);
  int rc = te_free(&t); /* no wait: destroy runs everything */
  for (int i = 0; i < 8; i++)
    aop_join(&as[i]);
  for (int i = 0; i < 6; i++)
    cr_assert_eq(atomic_load(&as[i].called), 1, "%s: async op %d never ran", kind, i);
  free(as);
  cr_assert_eq(atomic_load(&ran), N + 12, "%s: destroy left ops unrun", kind);
  cr_assert_eq(atomic_load(&fail.ran), 1);
  tu_assert_no_errors();
  tu_assert_no_leaks();
  return rc;
}

Test(destroy, runs_everything_pushed_and_reports_the_failure, .init = setup,
     .timeout = TU_TIMEOUT(30))
{
  cr_assert_eq(destroy_drains("threaded"), 21);
  cr_assert_eq(destroy_drains("naive"), 21);
}

/* Destroy waits for a push that another thread is in the middle of. */
typedef struct midpush {
  weft_engine *eng;
  atomic_int started, destroy_returned, finished;
  int rc;
} midpush;

static int midpush_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  midpush *m = arg;
  atomic_store(&m->started, 1);
  /* A bounded look: a destroy that does not wait for this op returns now. */
  TU_WAIT_UNTIL(atomic_load(&m->destroy_returned), 0.3);
  atomic_store(&m->finished, 1);
  return 0;
}

static void *midpush_thread(void *arg)
{
  midpush *m = arg;
  weft_var *v = NULL;
  int rc = weft_var_new(m->eng, &v);
  TU_CHECK(rc == 0, "var_new = %d", rc);
  m->rc = te_push(m->eng, midpush_fn, m, TE_NONE, TE_V(v), 0);
  return NULL;
}

static int destroy_during_a_push(const char *kind)
{
  te t = te_new(kind, 2, 0);
  midpush m = {.eng = t.eng, .rc = 12345};
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, midpush_thread, &m), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&m.started), TU_DEADLINE_S));
  int rc = weft_engine_destroy(t.eng);
  int finished = atomic_load(&m.finished);
  cr_assert_eq(finished, 1, "%s: weft_engine_destroy returned while an op that another "
                            "thread pushed before it was still running", kind);
  atomic_store(&m.destroy_returned, 1);
  te_join(th);
  if (t.pool)
    tu_destroy(t.pool);
  cr_assert_eq(m.rc, 0);
  return rc;
}

Test(destroy, waits_for_a_push_in_progress_on_another_thread, .init = setup,
     .timeout = TU_TIMEOUT(30))
{
  cr_assert_eq(destroy_during_a_push("threaded"), 0);
  cr_assert_eq(destroy_during_a_push("naive"), 0);
}

/* ---------------------------------------------- two engines, one pool */

typedef struct cross {
  weft_engine *e2;
  weft_var *v2[4];
  atomic_int ran1, ran2;
  int i;
} cross;

static int cross_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  cross *c = arg;
  atomic_fetch_add(&c->ran1, 1);
  for (int k = 0; k < 3; k++) {
    int r = te_push(c->e2, te_count_fn, &c->ran2, TE_NONE, TE_V(c->v2[k]), 0);
    TU_CHECK(r == 0, "push into the other engine = %d", r);
  }
  int r = weft_var_wait(c->e2, c->v2[0]); /* not an op of that engine: helps */
  TU_CHECK(r == 0, "var_wait on the other engine = %d", r);
  return 0;
}

Test(engines, two_engines_share_a_pool, .init = setup, .timeout = TU_TIMEOUT(30))
{
  weft_pool *p = tu_pool(2, -1);
  weft_engine_config cfg;
  weft_engine_config_default(&cfg);
  cfg.pool = p;
  cfg.kind = "threaded";
  weft_engine *e1 = NULL, *e2 = NULL;
  cr_assert_eq(weft_engine_create(&e1, &cfg), 0);
  cr_assert_eq(weft_engine_create(&e2, &cfg), 0);
  cross c = {.e2 = e2};
  for (int k = 0; k < 4; k++)
    c.v2[k] = te_var(e2);
  weft_var *v1 = te_var(e1);
  for (int i = 0; i < 200; i++)
    cr_assert_eq(te_push(e1, cross_fn, &c, TE_NONE, TE_V(v1), 0), 0);
  cr_assert_eq(weft_wait_all(e1), 0);
  cr_assert_eq(weft_wait_all(e2), 0);
  tu_assert_no_errors();
  cr_assert_eq(atomic_load(&c.ran1), 200);
  cr_assert_eq(atomic_load(&c.ran2), 600);
  cr_assert_eq(weft_engine_destroy(e1), 0);
  /* The other engine and the pool go on. */
  atomic_int ran = 0;
  cr_assert_eq(te_push(e2, te_count_fn, &ran, TE_NONE, TE_V(c.v2[3]), 0), 0);
  cr_assert_eq(weft_engine_destroy(e2), 0);
  cr_assert_eq(atomic_load(&ran), 1);
  tu_destroy(p);
}

/* -------------------------------------------------------- wide ops */

/* Ops with many vars (repeated, read and written) run once and in order. */
typedef struct wide {
  long cell[64];
  te_guard guard[64];
  atomic_int ran;
} wide;

typedef struct wide_op {
  wide *w;
  int nrd, nwd, rd[64], wd[64];
  long idx;
} wide_op;

static int wide_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  wide_op *o = arg;
  te_guard_enter(o->w->guard, o->rd, o->nrd, o->wd, o->nwd);
  long h = o->idx;
  for (int k = 0; k < o->nrd; k++)
    h = (h * 31 + o->w->cell[o->rd[k]]) % 1000003;
  for (int k = 0; k < o->nwd; k++)
    o->w->cell[o->wd[k]] = (o->w->cell[o->wd[k]] * 7 + h) % 1000003;
  te_guard_leave(o->w->guard, o->rd, o->nrd, o->wd, o->nwd);
  atomic_fetch_add(&o->w->ran, 1);
  return 0;
}

static void wide_apply(long *cell, const wide_op *o)
{
  long h = o->idx;
  for (int k = 0; k < o->nrd; k++)
    h = (h * 31 + cell[o->rd[k]]) % 1000003;
  for (int k = 0; k < o->nwd; k++)
    cell[o->wd[k]] = (cell[o->wd[k]] * 7 + h) % 1000003;
}

static int wide_ops(const char *kind)
{
  enum { N = 300 };
  te t = te_new(kind, 2, 0);
  weft_var *v[64];
  for (int i = 0; i < 64; i++)
    v[i] = te_var(t.eng);
  wide *w = calloc(1, sizeof *w);
  wide_op *ops = calloc(N, sizeof *ops);
  cr_assert(w && ops);
  long want[64] = {0};
  uint64_t rs = 3;
  for (int i = 0; i < N; i++) {
    int r[120], wr[40];
    int nr = 8 + (int)(tu_rand(&rs) % 100), nw = 1 + (int)(tu_rand(&rs) % 30);
    for (int k = 0; k < nr; k++)
      r[k] = (int)(tu_rand(&rs) % 64);
    for (int k = 0; k < nw; k++)
      wr[k] = tu_rand(&rs) % 4 == 0 ? r[tu_rand(&rs) % (unsigned)nr] : (int)(tu_rand(&rs) % 64);
    wide_op *o = &ops[i];
    o->w = w;
    o->idx = i;
    te_normalise(r, nr, wr, nw, o->rd, &o->nrd, o->wd, &o->nwd);
    wide_apply(want, o);
    weft_var *rv[120], *wv[40];
    for (int k = 0; k < nr; k++)
      rv[k] = v[r[k]];
    for (int k = 0; k < nw; k++)
      wv[k] = v[wr[k]];
    weft_op_desc d = te_desc(wide_fn, o);
    d.reads = rv;
    d.num_reads = (size_t)nr;
    d.writes = wv;
    d.num_writes = (size_t)nw;
    int rc = weft_push(t.eng, &d);
    cr_assert_eq(rc, 0, "push of a wide op = %d", rc);
  }
  cr_assert_eq(weft_wait_all(t.eng), 0);
  tu_assert_no_errors();
  cr_assert_eq(atomic_load(&w->ran), N);
  for (int i = 0; i < 64; i++)
    cr_assert_eq(w->cell[i], want[i], "%s: var %d = %ld, expected %ld", kind, i, w->cell[i],
                 want[i]);
  free(w);
  free(ops);
  return te_free(&t);
}

Test(normalise, ops_with_many_repeated_vars, .init = setup, .timeout = TU_TIMEOUT(30))
{
  cr_assert_eq(wide_ops("threaded"), 0);
  cr_assert_eq(wide_ops("naive"), 0);
}
