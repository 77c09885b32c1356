/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the engine suites (test_engine*.c): engines over a pool
 * of our own, descriptors, a gate operator, per-var overlap guards, RSS.
 * Public API only (the suites link weft_dep). The rules of testutil.h hold:
 * assertions on the test's own thread, TU_CHECK elsewhere, no timing claims.
 */
#ifndef WEFT_TESTS_DEPS_ENGINE_UTIL_H
#define WEFT_TESTS_DEPS_ENGINE_UTIL_H

#include "../common/plain.h"
#include "../common/testutil.h"

/* Every variable weft_engine_create (and the pool it may create) reads. */
static inline void te_clear_env(void)
{
  tu_clear_weft_env();
  unsetenv("WEFT_ENGINE");
  unsetenv("WEFT_MAX_INFLIGHT");
  unsetenv("WEFT_PROFILE");
  unsetenv("WEFT_GPU_HOST_DEVICES");
  unsetenv("WEFT_GPU_WORKERS");
  unsetenv("WEFT_GPU_COPY_WORKERS");
  unsetenv("WEFT_GPU_WATCHDOG_MS");
  /* No GPU layer in these suites, whatever the build has. */
  setenv("WEFT_GPU_BACKEND", "none", 1);
}

static inline void te_setup(void)
{
  te_clear_env();
}

/* An engine over a pool of our own (threads > 0), or over the engine's own
 * pool (threads == 0). */
typedef struct te {
  weft_engine *eng;
  weft_pool *pool;
  const char *kind;
} te;

static inline te te_new(const char *kind, int threads, int max_inflight)
{
  te t = {NULL, NULL, kind};
  if (threads > 0)
    t.pool = tu_pool(threads, -1);
  weft_engine_config cfg;
  weft_engine_config_default(&cfg);
  cfg.pool = t.pool;
  cfg.kind = kind;
  cfg.max_inflight = max_inflight;
  int rc = weft_engine_create(&t.eng, &cfg);
  cr_assert_eq(rc, 0, "weft_engine_create(kind %s, %d threads, max_inflight %d) = %d (%s)",
               kind ? kind : "(auto)", threads, max_inflight, rc, weft_strerror(rc));
  cr_assert_not_null(t.eng, "weft_engine_create returned 0 but no engine");
  return t;
}

/* Destroys the engine, then our pool; returns what engine destroy returned. */
static inline int te_free(te *t)
{
  int rc = weft_engine_destroy(t->eng);
  t->eng = NULL;
  if (t->pool)
    tu_destroy(t->pool);
  t->pool = NULL;
  return rc;
}

static inline weft_var *te_var(weft_engine *e)
{
  weft_var *v = NULL;
  int rc = weft_var_new(e, &v);
  cr_assert_eq(rc, 0, "weft_var_new = %d (%s)", rc, weft_strerror(rc));
  cr_assert_not_null(v, "weft_var_new returned 0 but no var");
  return v;
}

/* A descriptor with every field zero but fn / arg (a CPU operator). */
static inline weft_op_desc te_desc(weft_op_fn fn, void *arg)
{
  weft_op_desc d;
  memset(&d, 0, sizeof d);
  d.fn = fn;
  d.arg = arg;
  d.ctx.type = WEFT_DEV_CPU;
  d.prop = WEFT_PROP_NORMAL;
  return d;
}

static inline weft_op_desc te_adesc(weft_async_op_fn fn, void *arg)
{
  weft_op_desc d = te_desc(NULL, arg);
  d.async_fn = fn;
  return d;
}

/* A var list for te_push: TE_V(a, b) expands to "array, count". */
#define TE_V(...)                                                    \
  ((weft_var *const[]){__VA_ARGS__}),                                \
      (sizeof((weft_var *const[]){__VA_ARGS__}) / sizeof(weft_var *))
#define TE_NONE NULL, 0

static inline int te_push(weft_engine *e, weft_op_fn fn, void *arg, weft_var *const *reads,
                          size_t nr, weft_var *const *writes, size_t nw, unsigned flags)
{
  weft_op_desc d = te_desc(fn, arg);
  d.reads = reads;
  d.num_reads = nr;
  d.writes = writes;
  d.num_writes = nw;
  d.flags = flags;
  return weft_push(e, &d);
}

/* ------------------------------------------------ fairness: a chain mark */

/* How far a chain of operators got (links, counted by the chain), and how
 * far it was when another operator ran (links_at, -1 before: te_mark_fn). */
typedef struct te_chain_mark {
  atomic_long links;
  atomic_long links_at;
} te_chain_mark;

static inline int te_mark_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  te_chain_mark *m = arg;
  atomic_store(&m->links_at, atomic_load(&m->links));
  return 0;
}

/* ------------------------------------------------------- a recording op */

/* What one operator saw: how often it ran, where, and what it returns. */
typedef struct te_rec {
  atomic_int ran;
  int status;        /* returned by the op */
  int worker;        /* rc->worker */
  int cur_worker;    /* weft_current_worker() */
  int ctx_type;
  void *stream;
  pthread_t thread;
  long order;        /* position among the ops sharing a te_order counter */
  atomic_long *order_ctr;
  long *cell;        /* optional: *cell = value (a write), *seen = *cell (a read) */
  long value;
  long seen;
  long *seen_cell;
} te_rec;

static inline int te_rec_fn(const weft_run_ctx *rc, void *arg)
{
  te_rec *r = arg;
  r->worker = rc->worker;
  r->cur_worker = weft_current_worker();
  r->ctx_type = (int)rc->ctx.type;
  r->stream = rc->stream;
  r->thread = pthread_self();
  if (r->order_ctr)
    r->order = atomic_fetch_add(r->order_ctr, 1);
  if (r->seen_cell)
    r->seen = *r->seen_cell;
  if (r->cell)
    *r->cell = r->value;
  atomic_fetch_add(&r->ran, 1);
  return r->status;
}

/* Counts its runs in the atomic_int at arg. */
static inline int te_count_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  atomic_fetch_add((atomic_int *)arg, 1);
  return 0;
}

/* ------------------------------------------------------------- the gate */

/* An operator that holds its worker until the test opens the gate (with a
 * deadline, so a mistake fails instead of hanging). */
typedef struct te_gate {
  atomic_int started, open, timed_out;
  pthread_t thread;
  int worker;
} te_gate;

static inline int te_gate_fn(const weft_run_ctx *rc, void *arg)
{
  te_gate *g = arg;
  g->thread = pthread_self();
  g->worker = rc->worker;
  atomic_store(&g->started, 1);
  if (!TU_WAIT_UNTIL(atomic_load(&g->open), TU_DEADLINE_S))
    atomic_store(&g->timed_out, 1);
  return 0;
}

/* ------------------------------------------------------- overlap guards */

/* Per-var counters of the operators running now: a writer must be alone. */
typedef struct te_guard {
  atomic_int readers, writers;
} te_guard;

/* w: the distinct vars written, r: the distinct vars only read. Records an
 * error (TU_CHECK) on any overlap that the rules forbid. */
static inline void te_guard_enter(te_guard *g, const int *r, int nr, const int *w, int nw)
{
  for (int i = 0; i < nw; i++) {
    int prev = atomic_fetch_add(&g[w[i]].writers, 1);
    TU_CHECK(prev == 0, "var %d: a writer started while %d other writer(s) ran", w[i], prev);
    int rd = atomic_load(&g[w[i]].readers);
    TU_CHECK(rd == 0, "var %d: a writer started while %d reader(s) ran", w[i], rd);
  }
  for (int i = 0; i < nr; i++) {
    atomic_fetch_add(&g[r[i]].readers, 1);
    int wr = atomic_load(&g[r[i]].writers);
    TU_CHECK(wr == 0, "var %d: a reader started while %d writer(s) ran", r[i], wr);
  }
}

static inline void te_guard_leave(te_guard *g, const int *r, int nr, const int *w, int nw)
{
  for (int i = 0; i < nr; i++)
    atomic_fetch_sub(&g[r[i]].readers, 1);
  for (int i = 0; i < nw; i++)
    atomic_fetch_sub(&g[w[i]].writers, 1);
}

/* The distinct vars of a (reads, writes) pair as the engine must see them:
 * duplicates merged, a var both read and written counted as written. */
static inline void te_normalise(const int *r, int nr, const int *w, int nw, int *rd, int *nrd,
                                int *wd, int *nwd)
{
  *nwd = 0;
  for (int i = 0; i < nw; i++) {
    bool dup = false;
    for (int j = 0; j < *nwd; j++)
      dup |= wd[j] == w[i];
    if (!dup)
      wd[(*nwd)++] = w[i];
  }
  *nrd = 0;
  for (int i = 0; i < nr; i++) {
    bool dup = false;
    for (int j = 0; j < *nwd; j++)
      dup |= wd[j] == r[i];
    for (int j = 0; j < *nrd; j++)
      dup |= rd[j] == r[i];
    if (!dup)
      rd[(*nrd)++] = r[i];
  }
}

/* ---------------------------------------------------------------- misc */

/* Joins a thread; the test's watchdog (.timeout) covers a hang. */
static inline void te_join(pthread_t t)
{
  int rc = pthread_join(t, NULL);
  cr_assert_eq(rc, 0, "pthread_join = %d", rc);
}

#endif /* WEFT_TESTS_DEPS_ENGINE_UTIL_H */
