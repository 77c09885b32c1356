/* SPDX-License-Identifier: MIT */
/*
 * The engine's differential test (MXNet's RandSumExpr), shared by the engine
 * suites (tests/deps) and the GPU suites (tests/gpu, with a share of the ops
 * on emulated GPU streams): random ops over DV vars, each mixing the values
 * it reads into the vars it writes, checked against a sequential run and
 * the naive engine, with per-var overlap guards inside every op.
 */
#ifndef WEFT_TESTS_DEPS_DIFFERENTIAL_H
#define WEFT_TESTS_DEPS_DIFFERENTIAL_H

#include "engine_util.h"

/* ---------------------------------------------------------- differential */

#define DV 100

typedef struct dstate dstate;

enum {
  DK_NORMAL,
  DK_PRIO,         /* WEFT_PROP_PRIORITIZED */
  DK_ASYNC_INLINE, /* async_fn, signalled inside it */
  DK_PROP_ASYNC,   /* fn with WEFT_PROP_ASYNC */
  DK_ASYNC_HELPER, /* async_fn, signalled by a helper thread */
  DK_PROP_ASYNC_A, /* async_fn with WEFT_PROP_ASYNC, signalled inline */
  DK_GPU,          /* a GPU op: its body runs as an item on its host-backend stream */
  DK_GPU_COPY,     /* the same as a copy op (WEFT_PROP_COPY_TO/FROM_GPU: copy streams) */
};

typedef struct dop {
  dstate *s;
  long idx;
  int nr, nw;
  int r[3], w[2];            /* as pushed: repeats and read+write allowed */
  int nrd, nwd, rd[3], wd[2]; /* as the engine must treat them */
  int kind, prio;
  int status;                /* returned (or signalled) after its writes */
  int clear;                 /* >= 0: the pusher var_waits this var after the push */
  bool wait_all;             /* the pusher calls weft_wait_all after that */
  atomic_int ran;
  int runs_max;              /* 0: runs once; a graph's op: once per launch */
  weft_done *done;
  struct dop *qnext;
} dop;

struct dstate {
  uint64_t val[DV];
  te_guard guard[DV];
  weft_var *var[DV];
  dop *ops;
  long nops;
  int ndev;                  /* GPU devices (DK_GPU ops go to idx % ndev) */
  atomic_long ran;
  /* the helper that signals DK_ASYNC_HELPER ops, in FIFO order */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  dop *qhead, **qtail;
  bool stop;
};

static inline void d_init_values(uint64_t *val)
{
  for (int i = 0; i < DV; i++)
    val[i] = te_mix((uint64_t)i + 1);
}

static inline void d_body(uint64_t *val, const dop *o)
{
  uint64_t h = te_mix((uint64_t)o->idx * 0x9E3779B97F4A7C15ull + 1);
  for (int k = 0; k < o->nr; k++)
    h = te_mix(h ^ val[o->r[k]]);
  for (int k = 0; k < o->nw; k++)
    val[o->w[k]] = te_mix(val[o->w[k]] + h + (uint64_t)k);
}

static inline void d_enter(dop *o)
{
  int prev = atomic_fetch_add(&o->ran, 1);
  TU_CHECK(prev < (o->runs_max ? o->runs_max : 1), "op %ld ran %d times", o->idx, prev + 1);
  te_guard_enter(o->s->guard, o->rd, o->nrd, o->wd, o->nwd);
}

static inline void d_leave(dop *o)
{
  te_guard_leave(o->s->guard, o->rd, o->nrd, o->wd, o->nwd);
  atomic_fetch_add(&o->s->ran, 1);
}

static inline int d_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  dop *o = arg;
  d_enter(o);
  d_body(o->s->val, o);
  d_leave(o);
  return o->status;
}

static inline void d_async_fn(const weft_run_ctx *rc, void *arg, weft_done *done)
{
  (void)rc;
  dop *o = arg;
  d_enter(o);
  d_body(o->s->val, o);
  if (o->kind != DK_ASYNC_HELPER) {
    d_leave(o);
    weft_done_signal(done, o->status);
    return;
  }
  /* The op is not finished until the helper signals: leaving the guard
   * there checks that no successor starts before the signal. */
  dstate *s = o->s;
  o->done = done;
  o->qnext = NULL;
  pthread_mutex_lock(&s->mu);
  *s->qtail = o;
  s->qtail = &o->qnext;
  pthread_cond_signal(&s->cv);
  pthread_mutex_unlock(&s->mu);
}

/* A GPU op's body: an item on its stream, so it runs when the stream gets
 * there, after the device-side waits for its predecessors. */
static inline void d_gpu_item(void *arg)
{
  dop *o = arg;
  d_enter(o);
  d_body(o->s->val, o);
  d_leave(o);
}

static inline int d_gpu_fn(const weft_run_ctx *rc, void *arg)
{
  dop *o = arg;
  TU_CHECK(rc->ctx.type == WEFT_DEV_GPU && rc->stream && rc->worker == -1,
           "GPU op %ld: run context %d/%p/%d", o->idx, (int)rc->ctx.type, rc->stream, rc->worker);
  int rc2 = weft_gpu_host_enqueue(rc->stream, d_gpu_item, o);
  TU_CHECK(rc2 == 0, "weft_gpu_host_enqueue = %d", rc2);
  return o->status;
}

static inline void *d_helper(void *arg)
{
  dstate *s = arg;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (!s->qhead && !s->stop)
      pthread_cond_wait(&s->cv, &s->mu);
    if (!s->qhead)
      break;
    dop *o = s->qhead;
    s->qhead = o->qnext;
    if (!s->qhead)
      s->qtail = &s->qhead;
    pthread_mutex_unlock(&s->mu);
    d_leave(o);
    weft_done_signal(o->done, o->status);
    pthread_mutex_lock(&s->mu);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

static inline int d_pick(uint64_t *rs)
{
  return tu_rand(rs) % 4 == 0 ? (int)(tu_rand(rs) % 8) : (int)(tu_rand(rs) % DV);
}

/* fail_every: 0, or about one op in fail_every fails (status D_FAIL). */
#define D_FAIL 13

/* gpu_every: 0, or about one op in gpu_every is a GPU op (some of them
 * copies). */
static inline dop *d_gen_gpu(unsigned seed, long n, bool mixed, int fail_every, int gpu_every)
{
  dop *ops = calloc((size_t)n, sizeof *ops);
  cr_assert_not_null(ops);
  uint64_t rs = 0x1234567ull * seed + 99;
  for (long i = 0; i < n; i++) {
    dop *o = &ops[i];
    o->idx = i;
    o->nr = (int)(tu_rand(&rs) % 4);
    o->nw = 1 + (int)(tu_rand(&rs) % 2);
    for (int k = 0; k < o->nr; k++)
      o->r[k] = k > 0 && tu_rand(&rs) % 6 == 0 ? o->r[tu_rand(&rs) % (unsigned)k] : d_pick(&rs);
    for (int k = 0; k < o->nw; k++) {
      uint64_t roll = tu_rand(&rs) % 6;
      if (roll == 0 && o->nr > 0)
        o->w[k] = o->r[tu_rand(&rs) % (unsigned)o->nr]; /* read and written */
      else if (roll == 1 && k > 0)
        o->w[k] = o->w[0]; /* written twice */
      else
        o->w[k] = d_pick(&rs);
    }
    te_normalise(o->r, o->nr, o->w, o->nw, o->rd, &o->nrd, o->wd, &o->nwd);
    o->kind = DK_NORMAL;
    if (mixed) {
      uint64_t roll = tu_rand(&rs) % 20;
      if (roll < 2)
        o->kind = DK_PRIO;
      else if (roll < 6)
        o->kind = (int)(roll - 2) + DK_ASYNC_INLINE; /* the four async kinds */
      o->prio = (int)(tu_rand(&rs) % 4);
    }
    if (gpu_every && tu_rand(&rs) % (unsigned)gpu_every == 0)
      o->kind = tu_rand(&rs) % 4 == 0 ? DK_GPU_COPY : DK_GPU;
    o->clear = -1;
    if (fail_every && tu_rand(&rs) % (unsigned)fail_every == 0)
      o->status = D_FAIL;
    if (fail_every && tu_rand(&rs) % 3 == 0)
      o->clear = d_pick(&rs);
    o->wait_all = fail_every && i % 100 == 50;
  }
  return ops;
}

static inline dop *d_gen(unsigned seed, long n, bool mixed, int fail_every)
{
  return d_gen_gpu(seed, n, mixed, fail_every, 0);
}

static inline void d_push(weft_engine *e, dstate *s, dop *o)
{
  weft_var *r[3], *w[2];
  for (int k = 0; k < o->nr; k++)
    r[k] = s->var[o->r[k]];
  for (int k = 0; k < o->nw; k++)
    w[k] = s->var[o->w[k]];
  weft_op_desc d = te_desc(d_fn, o);
  d.reads = o->nr ? r : NULL;
  d.num_reads = (size_t)o->nr;
  d.writes = w;
  d.num_writes = (size_t)o->nw;
  switch (o->kind) {
  case DK_PRIO:
    d.prop = WEFT_PROP_PRIORITIZED;
    d.priority = o->prio;
    break;
  case DK_PROP_ASYNC:
    d.prop = WEFT_PROP_ASYNC;
    break;
  case DK_ASYNC_INLINE:
  case DK_ASYNC_HELPER:
    d.fn = NULL;
    d.async_fn = d_async_fn;
    break;
  case DK_PROP_ASYNC_A:
    d.fn = NULL;
    d.async_fn = d_async_fn;
    d.prop = WEFT_PROP_ASYNC;
    break;
  case DK_GPU:
  case DK_GPU_COPY:
    d.fn = d_gpu_fn;
    d.ctx.type = WEFT_DEV_GPU;
    d.ctx.id = (int)(o->idx % s->ndev);
    if (o->kind == DK_GPU_COPY)
      d.prop = o->idx % 2 ? WEFT_PROP_COPY_TO_GPU : WEFT_PROP_COPY_FROM_GPU;
    break;
  default:
    break;
  }
  int rc = weft_push(e, &d);
  cr_assert_eq(rc, 0, "push of op %ld = %d (%s)", o->idx, rc, weft_strerror(rc));
}

/* What every differential run starts with: the state holding a copy of
 * proto's n ops (each knowing its state, none run yet), the helper thread
 * that signals async ops, and an engine of kind on `threads` with DV vars. */
static inline dstate *d_start(const char *kind, int threads, const dop *proto, long n, te *t,
                              pthread_t *helper)
{
  dstate *s = calloc(1, sizeof *s);
  cr_assert_not_null(s);
  s->ops = malloc((size_t)n * sizeof *s->ops);
  cr_assert_not_null(s->ops);
  memcpy(s->ops, proto, (size_t)n * sizeof *s->ops);
  s->nops = n;
  d_init_values(s->val);
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  s->qtail = &s->qhead;
  cr_assert_eq(pthread_create(helper, NULL, d_helper, s), 0);
  *t = te_new(kind, threads, 0);
  s->ndev = weft_gpu_count(t->eng);
  for (int i = 0; i < DV; i++)
    s->var[i] = te_var(t->eng);
  for (long i = 0; i < n; i++) {
    s->ops[i].s = s;
    atomic_init(&s->ops[i].ran, 0);
  }
  return s;
}

/* Stops and joins d_start's helper thread. */
static inline void d_stop_helper(dstate *s, pthread_t helper)
{
  pthread_mutex_lock(&s->mu);
  s->stop = true;
  pthread_cond_signal(&s->cv);
  pthread_mutex_unlock(&s->mu);
  te_join(helper);
}

/* Frees the engine and the state; no error may have been logged. */
static inline void d_finish(dstate *s, te *t)
{
  cr_assert_eq(te_free(t), 0);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  free(s->ops);
  free(s);
  tu_assert_no_errors();
}

/* Runs the ops on an engine; final values into out. With failures (fails
 * non-NULL): which ops ran into ran[], each var's var_wait result at the
 * end into fails[], after op i into clears[i] (ops[i].clear) and walls[i]
 * (wait_all, ops[i].wait_all), the last wait_all's result returned; else
 * wait_all must be 0. */
static inline int d_run(const char *kind, int threads, const dop *proto, long n, uint64_t *out,
                 int *fails, char *ran, int *clears, int *walls)
{
  te t;
  pthread_t helper;
  dstate *s = d_start(kind, threads, proto, n, &t, &helper);
  for (long i = 0; i < n; i++) {
    d_push(t.eng, s, &s->ops[i]);
    if (s->ops[i].clear >= 0 && clears)
      clears[i] = weft_var_wait(t.eng, s->var[s->ops[i].clear]);
    if (s->ops[i].wait_all && walls)
      walls[i] = weft_wait_all(t.eng);
  }
  int rc = 0;
  if (fails) {
    for (int v = 0; v < DV; v++)
      fails[v] = weft_var_wait(t.eng, s->var[v]);
    rc = weft_wait_all(t.eng);
  } else {
    rc = weft_wait_all(t.eng);
    cr_assert_eq(rc, 0, "%s engine, %d threads: wait_all = %d", kind, threads, rc);
  }
  d_stop_helper(s, helper);
  if (ran) {
    for (long i = 0; i < n; i++)
      ran[i] = (char)atomic_load(&s->ops[i].ran);
  } else {
    cr_assert_eq(atomic_load(&s->ran), n, "%s engine, %d threads: %ld of %ld ops ran", kind,
                 threads, atomic_load(&s->ran), n);
  }
  memcpy(out, s->val, sizeof s->val);
  d_finish(s, &t);
  return rc;
}

/* Returns the number of (seed, var) values compared. */
static inline long differential_gpu(int threads, bool mixed, int gpu_every)
{
  long n = tu_scaled(8000, 800);
  long compared = 0;
  for (unsigned seed = 1; seed <= 3; seed++) {
    dop *ops = d_gen_gpu(seed, n, mixed, 0, gpu_every);
    uint64_t want[DV], naive[DV], got[DV];
    d_init_values(want);
    for (long i = 0; i < n; i++)
      d_body(want, &ops[i]);
    d_run("naive", 1, ops, n, naive, NULL, NULL, NULL, NULL);
    d_run("threaded", threads, ops, n, got, NULL, NULL, NULL, NULL);
    for (int v = 0; v < DV; v++) {
      cr_assert_eq(naive[v], want[v], "seed %u: the naive engine's var %d differs", seed, v);
      cr_assert_eq(got[v], want[v], "seed %u, %d threads%s: var %d = %016llx, expected %016llx",
                   seed, threads, mixed ? ", mixed props" : "", v, (unsigned long long)got[v],
                   (unsigned long long)want[v]);
      compared++;
    }
    free(ops);
  }
  return compared;
}

static inline long differential(int threads, bool mixed)
{
  return differential_gpu(threads, mixed, 0);
}

/* ---------------------------------------------------- captured graphs */

/* The differential with a captured graph: G (ng random ops) is captured
 * once, then the pusher alternates ordinary pushes (A_0, A_1, ..., na each)
 * with launches of G, reps times, without waiting in between (a launch
 * that finds the previous one running is retried at once, so nothing is
 * pushed between: the sequence stays A_0 G A_1 G ... A_reps). Now and then
 * it waits for a var G writes, from outside, and checks its value then
 * against the sequential run's at that point. The final values must equal
 * the sequential run's and the naive engine's; every op of G runs reps
 * times, every other op once, with the per-var overlap guards inside. */
/* Called by dg_run with each graph it captures, before its first launch
 * (NULL: none): a suite that sees the internals sets how its launches run
 * (test_graph_lanes.c). */
static void (*dg_graph_hook)(weft_graph *g);

static inline void dg_run(const char *kind, int threads, const dop *proto, long ng, long na,
                          int reps, uint64_t *out)
{
  long n = ng + na * (reps + 1);
  uint64_t sim[DV];
  d_init_values(sim);
  te t;
  pthread_t helper;
  dstate *s = d_start(kind, threads, proto, n, &t, &helper);
  for (long i = 0; i < n; i++)
    s->ops[i].runs_max = i < ng ? reps : 0;
  int rc = weft_graph_begin_capture(t.eng);
  cr_assert_eq(rc, 0, "begin_capture = %d", rc);
  for (long i = 0; i < ng; i++)
    d_push(t.eng, s, &s->ops[i]); /* recorded, not run */
  weft_graph *g = NULL;
  rc = weft_graph_end_capture(t.eng, &g);
  cr_assert_eq(rc, 0, "end_capture = %d", rc);
  cr_assert_not_null(g);
  if (dg_graph_hook)
    dg_graph_hook(g);
  for (long i = 0; i < ng; i++)
    cr_assert_eq(atomic_load(&s->ops[i].ran), 0, "captured op %ld ran at its push", i);
  uint64_t rs = 0xC0FFEEull + (uint64_t)ng;
  for (int r = 0; r <= reps; r++) {
    dop *a = &s->ops[ng + na * r];
    for (long i = 0; i < na; i++) {
      d_push(t.eng, s, &a[i]);
      d_body(sim, &a[i]);
    }
    if (r == reps)
      break;
    while ((rc = weft_graph_launch(g)) == WEFT_EBUSY) /* the previous launch still runs */
      sched_yield();
    cr_assert_eq(rc, 0, "launch %d = %d (%s)", r, rc, weft_strerror(rc));
    for (long i = 0; i < ng; i++)
      d_body(sim, &s->ops[i]);
    if (tu_rand(&rs) % 3 == 0) { /* a var the graph writes, waited for from outside */
      const dop *o = &s->ops[tu_rand(&rs) % (uint64_t)ng];
      int v = o->wd[0];
      rc = weft_var_wait(t.eng, s->var[v]);
      cr_assert_eq(rc, 0, "var_wait(%d) after launch %d = %d", v, r, rc);
      cr_assert_eq(s->val[v], sim[v], "%s engine, %d threads: var %d after launch %d: %016llx, "
                   "expected %016llx", kind, threads, v, r, (unsigned long long)s->val[v],
                   (unsigned long long)sim[v]);
    }
  }
  rc = weft_wait_all(t.eng);
  cr_assert_eq(rc, 0, "%s engine, %d threads: wait_all = %d", kind, threads, rc);
  d_stop_helper(s, helper);
  for (long i = 0; i < n; i++) {
    int want = i < ng ? reps : 1;
    cr_assert_eq(atomic_load(&s->ops[i].ran), want, "%s engine, %d threads: op %ld%s ran %d "
                 "times, expected %d", kind, threads, i, i < ng ? " (graph)" : "",
                 atomic_load(&s->ops[i].ran), want);
  }
  for (int v = 0; v < DV; v++)
    cr_assert_eq(sim[v], s->val[v], "%s engine, %d threads: var %d = %016llx, expected %016llx",
                 kind, threads, v, (unsigned long long)s->val[v], (unsigned long long)sim[v]);
  memcpy(out, s->val, sizeof s->val);
  cr_assert_eq(weft_graph_destroy(g), 0);
  d_finish(s, &t);
}

/* Several seeds; returns the number of (seed, var) values compared. */
static inline long differential_graph(int threads, bool mixed, int gpu_every)
{
  long ng = tu_scaled(300, 60), na = tu_scaled(40, 10);
  int reps = (int)tu_scaled(25, 6);
  long n = ng + na * (reps + 1);
  long compared = 0;
  for (unsigned seed = 1; seed <= 3; seed++) {
    dop *ops = d_gen_gpu(seed + 100, n, mixed, 0, gpu_every);
    uint64_t naive[DV], got[DV];
    dg_run("naive", 1, ops, ng, na, reps, naive);
    dg_run("threaded", threads, ops, ng, na, reps, got);
    for (int v = 0; v < DV; v++) {
      cr_assert_eq(got[v], naive[v], "seed %u, %d threads: var %d differs from the naive engine's",
                   seed, threads, v);
      compared++;
    }
    free(ops);
  }
  return compared;
}

#endif /* WEFT_TESTS_DEPS_DIFFERENTIAL_H */
