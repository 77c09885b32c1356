/* SPDX-License-Identifier: MIT */
/*
 * Soak test (docs/reliability.md, "Resource failures, fork, soak and
 * fuzzing"): a mixed workload on one pool and one engine for a duration,
 * checking invariants all along.
 *
 * Usage: soak [SECONDS] | soak --long   (default 60 s; --long: 10 minutes)
 *
 * Each round: three pusher threads push random ops onto the engine over
 * NV shared vars plus vars of their own that they delete and re-create
 * while ops on them are pending; a share of the ops are prioritized, async
 * (signalled inline or by a helper thread), or GPU ops on the host backend's
 * two emulated devices (their body is an item enqueued on the stream with
 * weft_gpu_host_enqueue); a few fail on purpose (each pusher's failure var,
 * checked with weft_var_wait). Meanwhile the main thread runs fork-join fib
 * and parallel_for sums (checked), and pushes a reusable op. Then
 * weft_wait_all (must report one of the injected failures, and nothing when
 * none was injected), and the checks:
 *  - no writer of a var ran alongside another reader or writer of it
 *    (per-var guards in every op body);
 *  - every op ran exactly once; every var saw exactly the writes pushed on
 *    it, each pusher's in its push order;
 *  - RSS (/proc/self/statm) after the first 20% of the run grows by less
 *    than 16 MiB (not checked under AddressSanitizer, whose quarantine holds
 *    freed memory), and the library's allocation calls are reported.
 * Prints one final line with the figures; exits 1 on any violation.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <weft/weft.h>

#include "../common/plain.h"
#include "common/alloc.h" /* weft_test_alloc_calls: the library's allocation count */

#if defined(__SANITIZE_ADDRESS__)
#define SK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SK_ASAN 1
#endif
#endif

#define NV 40          /* shared vars */
#define NT 3           /* pusher threads */
#define NPRIV 4        /* private var slots per pusher */
#define MAXINST 256    /* private var instances per pusher and round */
#define OPS_PER_ROUND 1500
#define FAIL_BASE 100
#define RSS_BOUND (16l << 20)

static atomic_long sk_errors;

#define SK_CHECK(cond, ...)                                           \
  do {                                                                \
    if (!(cond)) {                                                    \
      if (atomic_fetch_add(&sk_errors, 1) < 10) {                     \
        fprintf(stderr, "soak: %s:%d: ", __FILE__, __LINE__);         \
        fprintf(stderr, __VA_ARGS__);                                 \
        fputc('\n', stderr);                                          \
      }                                                               \
    }                                                                 \
  } while (0)

static double sk_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t sk_rand(uint64_t *s)
{
  uint64_t x = *s ? *s : 0x9E3779B97F4A7C15ull;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1Dull;
}

/* ------------------------------------------------------------ the cells */

/* A var's test-side state: guards and the writes it saw. */
typedef struct cell {
  atomic_int readers, writers;
  long writes;            /* plain: only a lone writer touches it */
  long last_seq[NT + 1];  /* per pusher (NT: the main thread), the last write's seq */
  atomic_long expected;   /* writes pushed on it */
} cell;

static cell shared_cells[NV];
static weft_engine *eng;
static atomic_long ops_run, ops_pushed;

enum { K_NORMAL, K_PRIO, K_ASYNC_INLINE, K_ASYNC_HELPER, K_GPU, K_FAIL };

typedef struct sop {
  int kind, pusher;
  long seq;
  int status;
  int nr, nw;
  cell *r[3], *w[2]; /* distinct; none both read and written */
  atomic_int ran;
  weft_done *done;
  struct sop *qnext;
} sop;

static void body_enter(sop *o)
{
  int prev = atomic_fetch_add(&o->ran, 1);
  SK_CHECK(prev == 0, "op (pusher %d, seq %ld) ran %d times", o->pusher, o->seq, prev + 1);
  for (int k = 0; k < o->nw; k++) {
    cell *c = o->w[k];
    int w = atomic_fetch_add(&c->writers, 1);
    SK_CHECK(w == 0, "a writer started while %d other writer(s) of its var ran", w);
    int r = atomic_load(&c->readers);
    SK_CHECK(r == 0, "a writer started while %d reader(s) of its var ran", r);
    c->writes++;
    SK_CHECK(c->last_seq[o->pusher] < o->seq, "pusher %d's writes to a var out of order: %ld after %ld",
             o->pusher, o->seq, c->last_seq[o->pusher]);
    c->last_seq[o->pusher] = o->seq;
  }
  for (int k = 0; k < o->nr; k++) {
    atomic_fetch_add(&o->r[k]->readers, 1);
    int w = atomic_load(&o->r[k]->writers);
    SK_CHECK(w == 0, "a reader started while %d writer(s) of its var ran", w);
  }
}

static void body_leave(sop *o)
{
  for (int k = 0; k < o->nr; k++)
    atomic_fetch_sub(&o->r[k]->readers, 1);
  for (int k = 0; k < o->nw; k++)
    atomic_fetch_sub(&o->w[k]->writers, 1);
  atomic_fetch_add(&ops_run, 1);
}

static int op_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  sop *o = arg;
  body_enter(o);
  body_leave(o);
  return o->status;
}

/* ------------------------------------------------ the async helper thread */

static pthread_mutex_t hq_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hq_cv = PTHREAD_COND_INITIALIZER;
static sop *hq_head, **hq_tail = &hq_head;
static bool hq_stop;

static void *helper_main(void *arg)
{
  (void)arg;
  pthread_mutex_lock(&hq_mu);
  for (;;) {
    while (!hq_head && !hq_stop)
      pthread_cond_wait(&hq_cv, &hq_mu);
    if (!hq_head)
      break;
    sop *o = hq_head;
    hq_head = o->qnext;
    if (!hq_head)
      hq_tail = &hq_head;
    pthread_mutex_unlock(&hq_mu);
    body_leave(o); /* successors must not start before the signal */
    weft_done_signal(o->done, o->status);
    pthread_mutex_lock(&hq_mu);
  }
  pthread_mutex_unlock(&hq_mu);
  return NULL;
}

static void async_fn(const weft_run_ctx *rc, void *arg, weft_done *done)
{
  (void)rc;
  sop *o = arg;
  body_enter(o);
  if (o->kind == K_ASYNC_INLINE) {
    body_leave(o);
    weft_done_signal(done, o->status);
    return;
  }
  o->done = done;
  o->qnext = NULL;
  pthread_mutex_lock(&hq_mu);
  *hq_tail = o;
  hq_tail = &o->qnext;
  pthread_cond_signal(&hq_cv);
  pthread_mutex_unlock(&hq_mu);
}

/* ----------------------------------------------------------- GPU ops */

static void gpu_item(void *arg)
{
  sop *o = arg;
  body_enter(o);
  body_leave(o);
}

static int gpu_fn(const weft_run_ctx *rc, void *arg)
{
  SK_CHECK(rc->ctx.type == WEFT_DEV_GPU && rc->stream, "GPU op without a stream");
  int e = weft_gpu_host_enqueue(rc->stream, gpu_item, arg);
  SK_CHECK(e == 0, "weft_gpu_host_enqueue = %d", e);
  return 0;
}

/* ----------------------------------------------------------- pushers */

typedef struct pusher {
  int id;
  uint64_t rs;
  sop *ops;
  long nops;
  cell priv[MAXINST];
  int ninst;
  weft_var *pvar[NPRIV];
  int pinst[NPRIV];
  weft_var *fail_var;
  int failures; /* injected this round */
  long seq;
} pusher;

static weft_var *shared_vars[NV];

static void pick_vars(pusher *p, sop *o, weft_var **r, weft_var **w)
{
  /* Candidate vars: shared (index < NV) or private (NV + slot). */
  int want = o->nr + o->nw, got = 0, idx[5];
  while (got < want) {
    int x = sk_rand(&p->rs) % 5 == 0 ? NV + (int)(sk_rand(&p->rs) % NPRIV)
                                     : (int)(sk_rand(&p->rs) % NV);
    bool dup = false;
    for (int j = 0; j < got; j++)
      dup |= idx[j] == x;
    if (!dup)
      idx[got++] = x;
  }
  for (int k = 0; k < want; k++) {
    int x = idx[k];
    weft_var *h = x < NV ? shared_vars[x] : p->pvar[x - NV];
    cell *c = x < NV ? &shared_cells[x] : &p->priv[p->pinst[x - NV]];
    if (k < o->nw) {
      o->w[k] = c;
      w[k] = h;
      atomic_fetch_add(&c->expected, 1);
    } else {
      o->r[k - o->nw] = c;
      r[k - o->nw] = h;
    }
  }
}

static void new_private(pusher *p, int slot)
{
  SK_CHECK(p->ninst < MAXINST, "too many private instances");
  cell *c = &p->priv[p->ninst];
  memset(c, 0, sizeof *c);
  p->pinst[slot] = p->ninst++;
  int rc = weft_var_new(eng, &p->pvar[slot]);
  SK_CHECK(rc == 0, "weft_var_new = %d", rc);
}

static void *pusher_main(void *arg)
{
  pusher *p = arg;
  int ndev = weft_gpu_count(eng);
  for (long i = 0; i < p->nops; i++) {
    sop *o = &p->ops[i];
    memset(o, 0, sizeof *o);
    o->pusher = p->id;
    o->seq = ++p->seq;
    uint64_t x = sk_rand(&p->rs);
    int roll = (int)(x % 100);
    o->kind = roll < 8 ? K_PRIO : roll < 16 ? K_ASYNC_INLINE : roll < 24 ? K_ASYNC_HELPER
              : roll < 34 && ndev ? K_GPU : roll < 36 ? K_FAIL : K_NORMAL;
    weft_var *r[3], *w[2];
    o->nr = (int)((x >> 8) % 4);
    o->nw = 1 + (int)((x >> 12) % 2);
    if (o->kind == K_FAIL) {
      o->nw = 0; /* writes only the failure var */
      o->status = FAIL_BASE + p->id;
    }
    pick_vars(p, o, r, w);
    weft_op_desc d;
    memset(&d, 0, sizeof d);
    d.fn = op_fn;
    d.arg = o;
    d.reads = o->nr ? r : NULL;
    d.num_reads = (size_t)o->nr;
    d.writes = w;
    d.num_writes = (size_t)o->nw;
    d.name = "soak";
    switch (o->kind) {
    case K_PRIO:
      d.prop = WEFT_PROP_PRIORITIZED;
      d.priority = (int)((x >> 20) % 4);
      break;
    case K_ASYNC_INLINE:
    case K_ASYNC_HELPER:
      d.fn = NULL;
      d.async_fn = async_fn;
      if ((x >> 24) % 2)
        d.prop = WEFT_PROP_ASYNC;
      break;
    case K_GPU:
      d.fn = gpu_fn;
      d.ctx.type = WEFT_DEV_GPU;
      d.ctx.id = (int)((x >> 28) % (unsigned)ndev);
      if ((x >> 32) % 4 == 0)
        d.prop = (x >> 34) % 2 ? WEFT_PROP_COPY_TO_GPU : WEFT_PROP_COPY_FROM_GPU;
      break;
    case K_FAIL:
      w[0] = p->fail_var;
      d.num_writes = 1;
      break;
    default:
      break;
    }
    int rc = weft_push(eng, &d);
    SK_CHECK(rc == 0, "weft_push = %d (%s)", rc, weft_strerror(rc));
    atomic_fetch_add(&ops_pushed, 1);
    if (o->kind == K_FAIL) {
      p->failures++;
      rc = weft_var_wait(eng, p->fail_var);
      SK_CHECK(rc == o->status, "weft_var_wait on the failure var = %d, expected %d", rc, o->status);
      rc = weft_var_wait(eng, p->fail_var);
      SK_CHECK(rc == 0, "a second weft_var_wait = %d, expected 0 (cleared)", rc);
    }
    if (i % 150 == 149) { /* delete a private var with ops pending, make a new one */
      int slot = (int)(sk_rand(&p->rs) % NPRIV);
      weft_var *old = p->pvar[slot];
      rc = weft_var_delete(eng, old);
      SK_CHECK(rc == 0, "weft_var_delete = %d", rc);
      new_private(p, slot);
      weft_op_desc dd;
      memset(&dd, 0, sizeof dd);
      dd.fn = op_fn;
      dd.writes = &old;
      dd.num_writes = 1;
      rc = weft_push(eng, &dd);
      SK_CHECK(rc == WEFT_EINVAL, "a push on a deleted var = %d, expected WEFT_EINVAL", rc);
    }
  }
  return NULL;
}

/* ------------------------------------------------ fork-join, parallel_for */

typedef struct fib_arg {
  weft_pool *pool;
  int n;
  long result;
} fib_arg;

static int fib_task(void *arg)
{
  fib_arg *f = arg;
  if (f->n < 12) {
    long a = 0, b = 1;
    for (int i = 0; i < f->n; i++) {
      long t = a + b;
      a = b;
      b = t;
    }
    f->result = a;
    return 0;
  }
  fib_arg x = {f->pool, f->n - 1, 0}, y = {f->pool, f->n - 2, 0};
  weft_group g;
  weft_group_init(&g, f->pool);
  int rc = weft_group_spawn(&g, fib_task, &x);
  if (rc == 0)
    rc = fib_task(&y);
  int rw = weft_group_wait(&g);
  f->result = x.result + y.result;
  return rc ? rc : rw;
}

static int sum_fn(size_t b, size_t e, void *arg)
{
  long s = 0;
  for (size_t i = b; i < e; i++)
    s += (long)i;
  atomic_fetch_add((atomic_long *)arg, s);
  return 0;
}

/* A reusable op of the main thread: reads a shared var, writes its own. */
typedef struct reuse {
  sop o;
  atomic_long runs;
} reuse;

static int reuse_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  reuse *u = arg;
  atomic_fetch_add(&u->runs, 1);
  /* seq is not meaningful across pushes of one op; guard only */
  for (int k = 0; k < u->o.nr; k++) {
    atomic_fetch_add(&u->o.r[k]->readers, 1);
    SK_CHECK(atomic_load(&u->o.r[k]->writers) == 0, "reusable op: a writer of its read var ran");
  }
  int w = atomic_fetch_add(&u->o.w[0]->writers, 1);
  SK_CHECK(w == 0, "reusable op: two writers of its var");
  u->o.w[0]->writes++;
  atomic_fetch_sub(&u->o.w[0]->writers, 1);
  for (int k = 0; k < u->o.nr; k++)
    atomic_fetch_sub(&u->o.r[k]->readers, 1);
  atomic_fetch_add(&ops_run, 1);
  return 0;
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv)
{
  double seconds = 60;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--long") == 0)
      seconds = 600;
    else if (atof(argv[i]) > 0)
      seconds = atof(argv[i]);
    else {
      fprintf(stderr, "usage: soak [SECONDS] | soak --long\n");
      return 2;
    }
  }
  setenv("WEFT_GPU_BACKEND", "host", 1);
  setenv("WEFT_GPU_HOST_DEVICES", "2", 1);
  unsetenv("WEFT_PROFILE");
  unsetenv("WEFT_ENGINE");
  unsetenv("WEFT_MAX_INFLIGHT");

  weft_pool_config pc;
  weft_pool_config_default(&pc);
  pc.num_threads = 2;
  pc.affinity = "none";
  pc.name = "soak";
  weft_pool *pool = NULL;
  int rc = weft_pool_create(&pool, &pc);
  if (rc) {
    fprintf(stderr, "soak: weft_pool_create = %d\n", rc);
    return 1;
  }
  weft_engine_config ec;
  weft_engine_config_default(&ec);
  ec.pool = pool;
  ec.kind = "threaded";
  ec.max_inflight = 0;
  rc = weft_engine_create(&eng, &ec);
  if (rc) {
    fprintf(stderr, "soak: weft_engine_create = %d\n", rc);
    return 1;
  }
  int ndev = weft_gpu_count(eng);
  SK_CHECK(ndev == 2, "weft_gpu_count = %d, expected 2 (host backend)", ndev);
  for (int i = 0; i < NV; i++) {
    rc = weft_var_new(eng, &shared_vars[i]);
    SK_CHECK(rc == 0, "weft_var_new = %d", rc);
  }
  pthread_t helper;
  if (pthread_create(&helper, NULL, helper_main, NULL) != 0)
    return 1;
  static pusher ps[NT];
  for (int t = 0; t < NT; t++) {
    ps[t].id = t;
    ps[t].rs = 0x5EED0000ull + (uint64_t)t * 7919;
    ps[t].nops = OPS_PER_ROUND;
    ps[t].ops = calloc(OPS_PER_ROUND, sizeof(sop));
    SK_CHECK(weft_var_new(eng, &ps[t].fail_var) == 0, "weft_var_new");
  }
  weft_var *main_var = NULL;
  SK_CHECK(weft_var_new(eng, &main_var) == 0, "weft_var_new");
  static cell main_cell;

  double t0 = sk_now(), warm_end = t0 + seconds * 0.2, end = t0 + seconds;
  long rss_warm = -1, rss_peak = 0, rss_max_after = 0, alloc_warm = -1;
  long rounds = 0, fibs = 0, pfors = 0, reuses = 0, failures = 0;
  long ops_warm = 0;
  uint64_t mrs = 12345;
  while (sk_now() < end && atomic_load(&sk_errors) == 0) {
    /* private vars for this round */
    for (int t = 0; t < NT; t++) {
      ps[t].ninst = 0;
      ps[t].failures = 0;
      for (int s = 0; s < NPRIV; s++)
        new_private(&ps[t], s);
    }
    pthread_t th[NT];
    for (int t = 0; t < NT; t++)
      if (pthread_create(&th[t], NULL, pusher_main, &ps[t]) != 0)
        return 1;
    /* The main thread meanwhile: fork-join, parallel_for, a reusable op. */
    reuse u;
    memset(&u, 0, sizeof u);
    u.o.pusher = NT;
    u.o.nr = 1;
    u.o.r[0] = &shared_cells[sk_rand(&mrs) % NV];
    u.o.nw = 1;
    u.o.w[0] = &main_cell;
    weft_var *ur = shared_vars[u.o.r[0] - shared_cells];
    weft_op_desc d;
    memset(&d, 0, sizeof d);
    d.fn = reuse_fn;
    d.arg = &u;
    d.reads = &ur;
    d.num_reads = 1;
    d.writes = &main_var;
    d.num_writes = 1;
    weft_op *op = NULL;
    rc = weft_op_new(eng, &d, &op);
    SK_CHECK(rc == 0, "weft_op_new = %d", rc);
    long npush = 0;
    for (int k = 0; k < 3; k++) {
      fib_arg f = {pool, 20 + (int)(sk_rand(&mrs) % 3), 0};
      long a = 0, b = 1;
      for (int i = 0; i < f.n; i++) {
        long tt = a + b;
        a = b;
        b = tt;
      }
      rc = fib_task(&f);
      SK_CHECK(rc == 0 && f.result == a, "fib(%d) = %ld (rc %d), expected %ld", f.n, f.result, rc, a);
      fibs++;
      atomic_long sum;
      atomic_init(&sum, 0);
      size_t n = 100000 + (size_t)(sk_rand(&mrs) % 1000);
      rc = weft_parallel_for(pool, 0, n, 0, sum_fn, &sum);
      SK_CHECK(rc == 0 && atomic_load(&sum) == (long)(n * (n - 1) / 2),
               "parallel_for sum = %ld (rc %d), expected %ld", atomic_load(&sum), rc,
               (long)(n * (n - 1) / 2));
      pfors++;
      for (int j = 0; j < 20; j++) {
        rc = weft_op_push(eng, op);
        SK_CHECK(rc == 0, "weft_op_push = %d", rc);
        npush++;
      }
    }
    rc = weft_op_delete(eng, op);
    SK_CHECK(rc == 0, "weft_op_delete = %d", rc);
    SK_CHECK(weft_op_push(eng, op) == WEFT_EINVAL, "weft_op_push on a deleted op is not WEFT_EINVAL");
    for (int t = 0; t < NT; t++)
      pthread_join(th[t], NULL);
    int injected = 0;
    for (int t = 0; t < NT; t++)
      injected += ps[t].failures;
    rc = weft_wait_all(eng);
    if (injected)
      SK_CHECK(rc >= FAIL_BASE && rc < FAIL_BASE + NT, "weft_wait_all = %d, expected an injected failure", rc);
    else
      SK_CHECK(rc == 0, "weft_wait_all = %d with no failure injected", rc);
    failures += injected;
    SK_CHECK(weft_wait_all(eng) == 0, "a second weft_wait_all reports a failure again");
    /* every op exactly once; every var saw exactly its writes */
    for (int t = 0; t < NT; t++) {
      for (long i = 0; i < ps[t].nops; i++)
        SK_CHECK(atomic_load(&ps[t].ops[i].ran) == 1, "pusher %d op %ld ran %d times", t, i,
                 atomic_load(&ps[t].ops[i].ran));
      for (int s = 0; s < NPRIV; s++)
        SK_CHECK(weft_var_delete(eng, ps[t].pvar[s]) == 0, "weft_var_delete");
      for (int k = 0; k < ps[t].ninst; k++)
        SK_CHECK(ps[t].priv[k].writes == atomic_load(&ps[t].priv[k].expected),
                 "pusher %d private var %d: %ld writes, %ld pushed", t, k, ps[t].priv[k].writes,
                 atomic_load(&ps[t].priv[k].expected));
    }
    for (int v = 0; v < NV; v++)
      SK_CHECK(shared_cells[v].writes == atomic_load(&shared_cells[v].expected),
               "shared var %d: %ld writes, %ld pushed", v, shared_cells[v].writes,
               atomic_load(&shared_cells[v].expected));
    SK_CHECK(atomic_load(&u.runs) == npush, "reusable op ran %ld times, pushed %ld",
             atomic_load(&u.runs), npush);
    reuses += npush;
    rounds++;
    long rss = te_rss();
    if (rss > rss_peak)
      rss_peak = rss;
    if (sk_now() >= warm_end) {
      if (rss_warm < 0) {
        rss_warm = rss;
        alloc_warm = weft_test_alloc_calls();
        ops_warm = atomic_load(&ops_run);
      }
      if (rss > rss_max_after)
        rss_max_after = rss;
    }
  }
  if (rss_warm < 0) { /* a very short run */
    rss_warm = rss_max_after = te_rss();
    alloc_warm = weft_test_alloc_calls();
    ops_warm = atomic_load(&ops_run);
  }
  long growth = rss_max_after - rss_warm;
  long allocs_after = weft_test_alloc_calls() - alloc_warm;
  long ops_after = atomic_load(&ops_run) - ops_warm;
#ifndef SK_ASAN
  SK_CHECK(growth < RSS_BOUND, "RSS grew by %ld KiB after warm-up (bound %ld KiB)", growth >> 10,
           RSS_BOUND >> 10);
#endif
  pthread_mutex_lock(&hq_mu);
  hq_stop = true;
  pthread_cond_signal(&hq_cv);
  pthread_mutex_unlock(&hq_mu);
  pthread_join(helper, NULL);
  rc = weft_engine_destroy(eng);
  SK_CHECK(rc == 0, "weft_engine_destroy = %d", rc);
  rc = weft_pool_destroy(pool);
  SK_CHECK(rc == 0, "weft_pool_destroy = %d", rc);
  for (int t = 0; t < NT; t++)
    free(ps[t].ops);
  long errors = atomic_load(&sk_errors);
  printf("soak: %.0f s, %ld rounds: %ld engine ops executed (%ld pushed by 3 threads, %ld "
         "reusable-op pushes, %ld injected failures), %ld fib, %ld parallel_for; peak RSS %.1f "
         "MiB, RSS growth after warm-up %.2f MiB%s; library allocation calls after warm-up %ld "
         "(%.4f per op: the host GPU backend's stream items); %ld violation(s)\n",
         sk_now() - t0, rounds, atomic_load(&ops_run), atomic_load(&ops_pushed), reuses, failures,
         fibs, pfors, (double)rss_peak / (1 << 20), (double)growth / (1 << 20),
#ifdef SK_ASAN
         " (not bounded under ASan)",
#else
         "",
#endif
         allocs_after, ops_after ? (double)allocs_after / (double)ops_after : 0.0, errors);
  return errors ? 1 : 0;
}
