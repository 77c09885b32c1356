/* SPDX-License-Identifier: MIT */
/*
 * The engine under load, checked against references:
 *  - differential (MXNet's RandSumExpr): thousands of random ops over 100
 *    vars, each mixing the values it reads into the vars it writes; the
 *    threaded engine's final values equal a plain sequential run's and the
 *    naive engine's, for several seeds and 1, 2, 4 threads, with plain ops
 *    and with a mix of props (prioritized, async completed inline or by a
 *    foreign thread, WEFT_PROP_ASYNC); and with failing ops, var_wait and
 *    wait_all against a model of skipping and reporting;
 *  - invariants inside every op: no writer overlaps a reader or writer of
 *    the same var (per-var counters), writes of a var run in push order and
 *    every read sees the last write pushed before it;
 *  - readers of one var do run together (a rendezvous with a deadline);
 *  - concurrent pushers (2-4 threads) and ops that push ops, with the same
 *    checks and a reference result; the watchdog catches a deadlock;
 *  - vars and reusable ops created and deleted while other threads push.
 */
#include "engine_util.h"

static void setup(void)
{
  te_setup();
}

#include "differential.h"

Test(differential, plain_ops_1_thread, .init = setup, .timeout = TU_TIMEOUT(60))
{
  cr_assert_eq(differential(1, false), 3 * DV);
}

Test(differential, plain_ops_2_threads, .init = setup, .timeout = TU_TIMEOUT(60))
{
  cr_assert_eq(differential(2, false), 3 * DV);
}

Test(differential, plain_ops_4_threads, .init = setup, .timeout = TU_TIMEOUT(60))
{
  cr_assert_eq(differential(4, false), 3 * DV);
}

Test(differential, mixed_props_1_thread, .init = setup, .timeout = TU_TIMEOUT(60))
{
  cr_assert_eq(differential(1, true), 3 * DV);
}

Test(differential, mixed_props_2_threads, .init = setup, .timeout = TU_TIMEOUT(60))
{
  cr_assert_eq(differential(2, true), 3 * DV);
}

Test(differential, mixed_props_4_threads, .init = setup, .timeout = TU_TIMEOUT(60))
{
  cr_assert_eq(differential(4, true), 3 * DV);
}

/*
 * The same with failures: about one op in 60 fails (after its writes). The
 * model: an op that uses a failed var is skipped (its writes become failed,
 * its values unchanged); one that fails marks its writes failed. The ops
 * that ran, the values, each var's var_wait and wait_all must match on
 * both engines.
 */
static long differential_failures(int threads, bool mixed)
{
  long n = tu_scaled(3000, 300);
  long compared = 0;
  for (unsigned seed = 11; seed <= 13; seed++) {
    dop *ops = d_gen(seed, n, mixed, 50);
    uint64_t want[DV];
    bool failed[DV] = {false};
    char *want_ran = calloc((size_t)n, 1);
    int *want_clears = calloc((size_t)n, sizeof(int));
    int *want_walls = calloc((size_t)n, sizeof(int));
    cr_assert(want_ran && want_clears && want_walls);
    bool any = false;
    d_init_values(want);
    for (long i = 0; i < n; i++) {
      dop *o = &ops[i];
      bool skip = false;
      for (int k = 0; k < o->nrd; k++)
        skip |= failed[o->rd[k]];
      for (int k = 0; k < o->nwd; k++)
        skip |= failed[o->wd[k]];
      if (!skip) {
        d_body(want, o);
        want_ran[i] = 1;
      }
      if (skip || o->status) {
        any = true;
        for (int k = 0; k < o->nwd; k++)
          failed[o->wd[k]] = true;
      }
      if (o->clear >= 0) { /* var_wait reports and clears */
        want_clears[i] = failed[o->clear] ? D_FAIL : 0;
        failed[o->clear] = false;
      }
      if (o->wait_all) { /* any failure since the last; clears every var */
        want_walls[i] = any ? D_FAIL : 0;
        any = false;
        memset(failed, 0, sizeof failed);
      }
    }
    long nran = 0, nfailed = 0;
    for (long i = 0; i < n; i++)
      nran += want_ran[i];
    for (int v = 0; v < DV; v++)
      nfailed += failed[v];
    cr_log_info("seed %u: %ld of %ld ops run, %ld vars failed at the end", seed, nran, n, nfailed);
    const char *const kinds[2] = {"naive", "threaded"};
    for (int e = 0; e < 2; e++) {
      uint64_t got[DV];
      int fails[DV];
      char *ran = calloc((size_t)n, 1);
      int *clears = calloc((size_t)n, sizeof(int));
      int *walls = calloc((size_t)n, sizeof(int));
      cr_assert(ran && clears && walls);
      int wa = d_run(kinds[e], e ? threads : 1, ops, n, got, fails, ran, clears, walls);
      for (long i = 0; i < n; i++) {
        cr_assert_eq(ran[i], want_ran[i], "seed %u, %s engine, %d threads: op %ld %s", seed,
                     kinds[e], threads, i, want_ran[i] ? "was skipped" : "ran");
        if (ops[i].clear >= 0)
          cr_assert_eq(clears[i], want_clears[i],
                       "seed %u, %s engine, %d threads: var_wait(var %d) after op %ld = %d", seed,
                       kinds[e], threads, ops[i].clear, i, clears[i]);
        if (ops[i].wait_all)
          cr_assert_eq(walls[i], want_walls[i],
                       "seed %u, %s engine, %d threads: wait_all after op %ld = %d", seed,
                       kinds[e], threads, i, walls[i]);
      }
      free(clears);
      free(walls);
      for (int v = 0; v < DV; v++) {
        cr_assert_eq(got[v], want[v], "seed %u, %s engine, %d threads: var %d differs", seed,
                     kinds[e], threads, v);
        cr_assert_eq(fails[v], failed[v] ? D_FAIL : 0,
                     "seed %u, %s engine, %d threads: var_wait(var %d) = %d", seed, kinds[e],
                     threads, v, fails[v]);
        compared++;
      }
      cr_assert_eq(wa, any ? D_FAIL : 0, "seed %u, %s engine: wait_all = %d", seed, kinds[e], wa);
      free(ran);
    }
    free(want_ran);
    free(want_clears);
    free(want_walls);
    free(ops);
  }
  return compared;
}

Test(differential, failures_2_threads, .init = setup, .timeout = TU_TIMEOUT(60))
{
  cr_assert_eq(differential_failures(2, false), 3 * 2 * DV);
}

Test(differential, failures_mixed_props_4_threads, .init = setup, .timeout = TU_TIMEOUT(60))
{
  cr_assert_eq(differential_failures(4, true), 3 * 2 * DV);
}

/* ------------------------------------------------------------ contention */

/*
 * Few vars, many ops: writes of a var must run in push order and every op
 * must see, in each var it uses, the last write pushed before it.
 */
#define CV 4

typedef struct cstate cstate;

typedef struct cnop {
  cstate *s;
  long idx;
  int nrd, nwd, rd[CV], wd[CV];
  long expect[2 * CV]; /* per var used (reads then writes): the last write's idx */
} cnop;

struct cstate {
  long value[CV]; /* idx of the last write that ran; -1 at first */
  te_guard guard[CV];
  atomic_long ran;
  atomic_int max_readers;
};

static int cn_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  cnop *o = arg;
  cstate *s = o->s;
  te_guard_enter(s->guard, o->rd, o->nrd, o->wd, o->nwd);
  for (int k = 0; k < o->nrd; k++) {
    TU_CHECK(s->value[o->rd[k]] == o->expect[k], "op %ld read var %d = %ld, expected %ld", o->idx,
             o->rd[k], s->value[o->rd[k]], o->expect[k]);
    int n = atomic_load(&s->guard[o->rd[k]].readers);
    int m = atomic_load(&s->max_readers);
    if (n > m)
      atomic_compare_exchange_strong(&s->max_readers, &m, n);
  }
  for (int k = 0; k < o->nwd; k++)
    TU_CHECK(s->value[o->wd[k]] == o->expect[o->nrd + k],
             "op %ld wrote var %d after write %ld, expected after %ld", o->idx, o->wd[k],
             s->value[o->wd[k]], o->expect[o->nrd + k]);
  for (volatile int i = 0; i < 200; i++) {
  }
  for (int k = 0; k < o->nwd; k++)
    s->value[o->wd[k]] = o->idx;
  te_guard_leave(s->guard, o->rd, o->nrd, o->wd, o->nwd);
  atomic_fetch_add(&s->ran, 1);
  return 0;
}

static long contention(int threads)
{
  long n = tu_scaled(40000, 4000);
  cstate *s = calloc(1, sizeof *s);
  cnop *ops = calloc((size_t)n, sizeof *ops);
  cr_assert(s && ops);
  long last[CV];
  for (int v = 0; v < CV; v++)
    s->value[v] = last[v] = -1;
  uint64_t rs = 7;
  te t = te_new("threaded", threads, 0);
  weft_var *var[CV];
  for (int v = 0; v < CV; v++)
    var[v] = te_var(t.eng);
  for (long i = 0; i < n; i++) {
    cnop *o = &ops[i];
    o->s = s;
    o->idx = i;
    int r[2], w[2];
    int nr = (int)(tu_rand(&rs) % 3), nw = (int)(tu_rand(&rs) % 5 == 0 ? 1 : 0);
    if (nr == 0 && nw == 0)
      nr = 1;
    if (tu_rand(&rs) % 7 == 0)
      nw = 2;
    for (int k = 0; k < nr; k++)
      r[k] = (int)(tu_rand(&rs) % CV);
    for (int k = 0; k < nw; k++)
      w[k] = (int)(tu_rand(&rs) % CV);
    te_normalise(r, nr, w, nw, o->rd, &o->nrd, o->wd, &o->nwd);
    for (int k = 0; k < o->nrd; k++)
      o->expect[k] = last[o->rd[k]];
    for (int k = 0; k < o->nwd; k++) {
      o->expect[o->nrd + k] = last[o->wd[k]];
      last[o->wd[k]] = i;
    }
    weft_var *rv[2], *wv[2];
    for (int k = 0; k < nr; k++)
      rv[k] = var[r[k]];
    for (int k = 0; k < nw; k++)
      wv[k] = var[w[k]];
    weft_op_desc d = te_desc(cn_fn, o);
    d.reads = nr ? rv : NULL;
    d.num_reads = (size_t)nr;
    d.writes = nw ? wv : NULL;
    d.num_writes = (size_t)nw;
    int rc = weft_push(t.eng, &d);
    cr_assert_eq(rc, 0, "push %ld = %d", i, rc);
  }
  cr_assert_eq(weft_wait_all(t.eng), 0);
  tu_assert_no_errors();
  for (int v = 0; v < CV; v++)
    cr_assert_eq(s->value[v], last[v], "var %d: the last write that ran is %ld, pushed last %ld",
                 v, s->value[v], last[v]);
  cr_assert_eq(atomic_load(&s->ran), n);
  cr_log_info("%d threads: at most %d readers of one var ran together", threads,
              atomic_load(&s->max_readers));
  cr_assert_eq(te_free(&t), 0);
  free(ops);
  free(s);
  return n;
}

Test(invariants, few_vars_writes_in_order_reads_see_last_write_2_threads, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  cr_assert_gt(contention(2), 0);
}

Test(invariants, few_vars_writes_in_order_reads_see_last_write_4_threads, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  cr_assert_gt(contention(4), 0);
}

/* ----------------------------------------------------- readers overlap */

/* Readers of one var that each wait until all of them have started: they
 * complete only if the engine runs them together. */
typedef struct rdv {
  atomic_int arrived;
  int want;
  atomic_int met, missed;
  weft_engine *eng;
  weft_var *var;
} rdv;

static int rdv_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  rdv *r = arg;
  atomic_fetch_add(&r->arrived, 1);
  if (TU_WAIT_UNTIL(atomic_load(&r->arrived) >= r->want, TU_DEADLINE_S))
    atomic_fetch_add(&r->met, 1);
  else
    atomic_fetch_add(&r->missed, 1);
  return 0;
}

/* Pushes the readers from inside an op: they land on its worker's deque,
 * and another worker must take one. */
static int rdv_pusher_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  rdv *r = arg;
  for (int i = 0; i < r->want; i++) {
    int x = te_push(r->eng, rdv_fn, r, TE_V(r->var), TE_NONE, 0);
    TU_CHECK(x == 0, "push from inside an op = %d", x);
  }
  return 0;
}

enum { RDV_IDLE, RDV_AFTER_WRITE, RDV_FROM_OP };

static int readers_meet(int threads, int readers, int how)
{
  te t = te_new("threaded", threads, 0);
  weft_var *a = te_var(t.eng), *other = te_var(t.eng);
  rdv r = {.want = readers, .eng = t.eng, .var = a};
  te_gate g = {0};
  if (how == RDV_AFTER_WRITE) {
    cr_assert_eq(te_push(t.eng, te_gate_fn, &g, TE_NONE, TE_V(a), 0), 0);
    cr_assert(TU_WAIT_UNTIL(atomic_load(&g.started), TU_DEADLINE_S));
  }
  if (how == RDV_FROM_OP) {
    cr_assert_eq(te_push(t.eng, rdv_pusher_fn, &r, TE_NONE, TE_V(other), 0), 0);
  } else {
    for (int i = 0; i < readers; i++)
      cr_assert_eq(te_push(t.eng, rdv_fn, &r, TE_V(a, a), TE_NONE, 0), 0);
  }
  atomic_store(&g.open, 1);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  tu_assert_no_errors();
  cr_assert_eq(atomic_load(&r.missed), 0,
               "%d readers of one var on %d threads (case %d): %d gave up waiting for the "
               "others, so they did not run together",
               readers, threads, how, atomic_load(&r.missed));
  cr_assert_eq(te_free(&t), 0);
  return atomic_load(&r.met);
}

Test(invariants, readers_of_one_var_run_together, .init = setup, .timeout = TU_TIMEOUT(120))
{
  cr_assert_eq(readers_meet(2, 2, RDV_IDLE), 2);
  cr_assert_eq(readers_meet(2, 2, RDV_AFTER_WRITE), 2);
  cr_assert_eq(readers_meet(2, 2, RDV_FROM_OP), 2);
  cr_assert_eq(readers_meet(4, 4, RDV_AFTER_WRITE), 4);
}

/* ------------------------------------------------- concurrent pushers */

#define CP_MAXP 4
#define CP_PRIV 16
#define CP_CONST 8
#define CP_ACC 4
#define CP_NV (CP_MAXP * CP_PRIV + CP_CONST + CP_ACC)
#define CP_CONST0 (CP_MAXP * CP_PRIV)
#define CP_ACC0 (CP_CONST0 + CP_CONST)

enum { CK_MIX, CK_ACC, CK_SPAWN };

typedef struct pstate pstate;

typedef struct pop {
  pstate *s;
  long idx;
  int kind;
  int nr, nw, r[3], w[2];
  int nrd, nwd, rd[3], wd[2];
  struct pop *child; /* CK_SPAWN: pushed from inside */
  atomic_int ran;
} pop;

struct pstate {
  uint64_t val[CP_NV];
  te_guard guard[CP_NV];
  weft_var *var[CP_NV];
  weft_engine *eng;
  atomic_long ran;
};

static void p_body(uint64_t *val, const pop *o)
{
  uint64_t h = te_mix((uint64_t)o->idx * 0x9E3779B97F4A7C15ull + 7);
  for (int k = 0; k < o->nr; k++)
    h = te_mix(h ^ val[o->r[k]]);
  for (int k = 0; k < o->nw; k++) {
    if (o->kind == CK_ACC)
      val[o->w[k]] += te_mix(h + (uint64_t)o->w[k]); /* commutes with other pushers' */
    else
      val[o->w[k]] = te_mix(val[o->w[k]] + h + (uint64_t)k);
  }
}

static int p_push(weft_engine *e, pstate *s, pop *o);

static int p_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  pop *o = arg;
  pstate *s = o->s;
  int prev = atomic_fetch_add(&o->ran, 1);
  TU_CHECK(prev == 0, "op %ld ran twice", o->idx);
  te_guard_enter(s->guard, o->rd, o->nrd, o->wd, o->nwd);
  p_body(s->val, o);
  te_guard_leave(s->guard, o->rd, o->nrd, o->wd, o->nwd);
  if (o->child) {
    int x = p_push(s->eng, s, o->child);
    TU_CHECK(x == 0, "push from inside op %ld = %d (%s)", o->idx, x, weft_strerror(x));
  }
  atomic_fetch_add(&s->ran, 1);
  return 0;
}

static int p_push(weft_engine *e, pstate *s, pop *o)
{
  weft_var *r[3], *w[2];
  for (int k = 0; k < o->nr; k++)
    r[k] = s->var[o->r[k]];
  for (int k = 0; k < o->nw; k++)
    w[k] = s->var[o->w[k]];
  weft_op_desc d = te_desc(p_fn, o);
  d.reads = o->nr ? r : NULL;
  d.num_reads = (size_t)o->nr;
  d.writes = w;
  d.num_writes = (size_t)o->nw;
  return weft_push(e, &d);
}

typedef struct pgen {
  pop *ops;     /* [pushers][n] */
  pop *children;
  long n;
  int pushers;
} pgen;

static void p_gen(pgen *g, int pushers, long n, unsigned seed)
{
  g->pushers = pushers;
  g->n = n;
  g->ops = calloc((size_t)(pushers * n), sizeof *g->ops);
  g->children = calloc((size_t)(pushers * n), sizeof *g->children);
  cr_assert(g->ops && g->children);
  uint64_t rs = seed * 1000003ull + 5;
  for (int p = 0; p < pushers; p++) {
    int priv0 = p * CP_PRIV;
    for (long i = 0; i < n; i++) {
      pop *o = &g->ops[p * n + i];
      o->idx = (long)p * n + i;
      uint64_t roll = tu_rand(&rs) % 10;
      o->kind = roll < 6 ? CK_MIX : roll < 8 ? CK_ACC : CK_SPAWN;
      o->nr = (int)(tu_rand(&rs) % 4);
      if (o->kind == CK_ACC && o->nr == 0)
        o->nr = 1;
      o->nw = 1 + (int)(tu_rand(&rs) % 2);
      for (int k = 0; k < o->nr; k++) {
        bool cst = o->kind != CK_ACC && tu_rand(&rs) % 3 == 0;
        o->r[k] = cst ? CP_CONST0 + (int)(tu_rand(&rs) % CP_CONST)
                      : priv0 + (int)(tu_rand(&rs) % CP_PRIV);
      }
      for (int k = 0; k < o->nw; k++) {
        if (o->kind == CK_ACC)
          o->w[k] = CP_ACC0 + (int)(tu_rand(&rs) % CP_ACC);
        else if (k == 1 && tu_rand(&rs) % 5 == 0)
          o->w[k] = o->w[0];
        else if (o->nr > 0 && o->r[0] < CP_CONST0 && tu_rand(&rs) % 5 == 0)
          o->w[k] = o->r[0]; /* read and written */
        else
          o->w[k] = priv0 + (int)(tu_rand(&rs) % CP_PRIV);
      }
      te_normalise(o->r, o->nr, o->w, o->nw, o->rd, &o->nrd, o->wd, &o->nwd);
      if (o->kind == CK_SPAWN) {
        pop *c = &g->children[p * n + i];
        c->idx = (long)pushers * n + o->idx;
        c->kind = CK_ACC;
        c->nr = 1 + (int)(tu_rand(&rs) % 2);
        for (int k = 0; k < c->nr; k++)
          c->r[k] = CP_CONST0 + (int)(tu_rand(&rs) % CP_CONST);
        c->nw = 1;
        c->w[0] = CP_ACC0 + (int)(tu_rand(&rs) % CP_ACC);
        te_normalise(c->r, c->nr, c->w, c->nw, c->rd, &c->nrd, c->wd, &c->nwd);
        o->child = c;
      }
    }
  }
}

static void p_init_values(uint64_t *val)
{
  for (int i = 0; i < CP_NV; i++)
    val[i] = te_mix((uint64_t)i * 31 + 3);
}

typedef struct pusher {
  pstate *s;
  pop *ops;
  long n;
  atomic_int *go;
  int waits;
} pusher;

static void *pusher_thread(void *arg)
{
  pusher *p = arg;
  while (!atomic_load(p->go))
    sched_yield();
  for (long i = 0; i < p->n; i++) {
    int rc = p_push(p->s->eng, p->s, &p->ops[i]);
    TU_CHECK(rc == 0, "push = %d (%s)", rc, weft_strerror(rc));
    /* Now and then wait for one of its own vars, while the others push. */
    if (i % 256 == 255) {
      rc = weft_var_wait(p->s->eng, p->s->var[p->ops[i].w[0]]);
      TU_CHECK(rc == 0, "var_wait = %d", rc);
      p->waits++;
    }
  }
  return NULL;
}

/* Returns the number of ops that ran (parents and children). */
static long concurrent_pushers(const char *kind, int threads, int pushers, int max_inflight)
{
  long n = tu_scaled(6000, 600);
  pgen g;
  p_gen(&g, pushers, n, (unsigned)(pushers * 10 + threads));
  long children = 0;
  for (long i = 0; i < pushers * n; i++)
    children += g.ops[i].child != NULL;
  /* The reference: each pusher's ops in its order, one pusher after the
   * other (any interleaving gives the same values). */
  uint64_t want[CP_NV];
  p_init_values(want);
  for (long i = 0; i < pushers * n; i++) {
    p_body(want, &g.ops[i]);
    if (g.ops[i].child)
      p_body(want, g.ops[i].child);
  }

  pstate *s = calloc(1, sizeof *s);
  cr_assert_not_null(s);
  p_init_values(s->val);
  te t = te_new(kind, threads, max_inflight);
  s->eng = t.eng;
  for (int i = 0; i < CP_NV; i++)
    s->var[i] = te_var(t.eng);
  for (long i = 0; i < pushers * n; i++) {
    g.ops[i].s = s;
    g.children[i].s = s;
  }
  atomic_int go = 0;
  pusher p[CP_MAXP];
  pthread_t th[CP_MAXP];
  for (int i = 0; i < pushers; i++) {
    p[i] = (pusher){s, &g.ops[i * n], n, &go, 0};
    cr_assert_eq(pthread_create(&th[i], NULL, pusher_thread, &p[i]), 0);
  }
  atomic_store(&go, 1);
  for (int i = 0; i < pushers; i++)
    te_join(th[i]);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  tu_assert_no_errors();
  long ran = atomic_load(&s->ran);
  cr_assert_eq(ran, pushers * n + children, "%ld of %ld ops ran", ran, pushers * n + children);
  for (int v = 0; v < CP_NV; v++)
    cr_assert_eq(s->val[v], want[v],
                 "%s engine, %d threads, %d pushers: var %d = %016llx, expected %016llx", kind,
                 threads, pushers, v, (unsigned long long)s->val[v], (unsigned long long)want[v]);
  cr_assert_eq(te_free(&t), 0);
  free(g.ops);
  free(g.children);
  free(s);
  return ran;
}

Test(pushers, two_pushers_2_threads, .init = setup, .timeout = TU_TIMEOUT(60))
{
  cr_assert_gt(concurrent_pushers("threaded", 2, 2, 0), 0);
}

Test(pushers, four_pushers_4_threads, .init = setup, .timeout = TU_TIMEOUT(60))
{
  cr_assert_gt(concurrent_pushers("threaded", 4, 4, 0), 0);
}

Test(pushers, three_pushers_1_thread, .init = setup, .timeout = TU_TIMEOUT(60))
{
  cr_assert_gt(concurrent_pushers("threaded", 1, 3, 0), 0);
}

Test(pushers, three_pushers_2_threads_max_inflight_16, .init = setup, .timeout = TU_TIMEOUT(60))
{
  cr_assert_gt(concurrent_pushers("threaded", 2, 3, 16), 0);
}

Test(pushers, three_pushers_naive, .init = setup, .timeout = TU_TIMEOUT(60))
{
  cr_assert_gt(concurrent_pushers("naive", 1, 3, 0), 0);
}

/* ---------------------------------------------------------- var churn */

/*
 * Vars and reusable ops come and go while others push: each round makes a
 * var, writes it, reads it, pushes a reusable op on it twice, deletes the
 * op and the var at once (deferred), and every op checks what it sees.
 * Several threads do this at once over a shared var, so deletions, slot
 * reuse and registrations interleave.
 */
typedef struct churn_round {
  long value;        /* the var's contents: written by w1, then w2 */
  long seen_r, seen_x[2];
  atomic_int ran;
  te_guard guard[1];
} churn_round;

typedef struct churn {
  weft_engine *eng;
  weft_var *shared;
  churn_round *rounds;
  long per_thread;
  atomic_int go;
} churn;

static int churn_w1(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  churn_round *r = arg;
  int w = 0;
  te_guard_enter(r->guard, NULL, 0, &w, 1);
  TU_CHECK(r->value == 0, "the first write saw %ld", r->value);
  r->value = 1;
  te_guard_leave(r->guard, NULL, 0, &w, 1);
  atomic_fetch_add(&r->ran, 1);
  return 0;
}

static int churn_r(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  churn_round *r = arg;
  int v = 0;
  te_guard_enter(r->guard, &v, 1, NULL, 0);
  r->seen_r = r->value;
  te_guard_leave(r->guard, &v, 1, NULL, 0);
  atomic_fetch_add(&r->ran, 1);
  return 0;
}

static int churn_x(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  churn_round *r = arg;
  int w = 0;
  te_guard_enter(r->guard, NULL, 0, &w, 1);
  int k = (int)(r->value - 1);
  TU_CHECK(k == 0 || k == 1, "the reusable op saw %ld", r->value);
  if (k == 0 || k == 1)
    r->seen_x[k] = r->value;
  r->value++;
  te_guard_leave(r->guard, NULL, 0, &w, 1);
  atomic_fetch_add(&r->ran, 1);
  return 0;
}

static void *churn_thread(void *arg)
{
  churn *c = ((void **)arg)[0];
  long first = (long)(intptr_t)((void **)arg)[1];
  while (!atomic_load(&c->go))
    sched_yield();
  for (long i = first; i < first + c->per_thread; i++) {
    churn_round *r = &c->rounds[i];
    weft_var *v = NULL;
    int rc = weft_var_new(c->eng, &v);
    TU_CHECK(rc == 0, "var_new = %d", rc);
    if (rc)
      return NULL;
    rc = te_push(c->eng, churn_w1, r, TE_V(c->shared), TE_V(v), 0);
    TU_CHECK(rc == 0, "push = %d", rc);
    rc = te_push(c->eng, churn_r, r, TE_V(v, c->shared), TE_NONE, 0);
    TU_CHECK(rc == 0, "push = %d", rc);
    weft_op_desc d = te_desc(churn_x, r);
    d.reads = (weft_var *const[]){c->shared};
    d.num_reads = 1;
    d.writes = (weft_var *const[]){v};
    d.num_writes = 1;
    weft_op *op = NULL;
    rc = weft_op_new(c->eng, &d, &op);
    TU_CHECK(rc == 0, "op_new = %d", rc);
    if (rc)
      return NULL;
    for (int k = 0; k < 2; k++) {
      rc = weft_op_push(c->eng, op);
      TU_CHECK(rc == 0, "op_push = %d", rc);
    }
    rc = weft_op_delete(c->eng, op);
    TU_CHECK(rc == 0, "op_delete = %d", rc);
    rc = weft_var_delete(c->eng, v);
    TU_CHECK(rc == 0, "var_delete = %d", rc);
    rc = weft_op_push(c->eng, op);
    TU_CHECK(rc == WEFT_EINVAL, "op_push after op_delete = %d", rc);
    rc = te_push(c->eng, churn_r, r, TE_V(v), TE_NONE, 0);
    TU_CHECK(rc == WEFT_EINVAL, "push on a deleted var = %d", rc);
    if (i % 64 == 0) { /* and a writer of the shared var now and then */
      rc = te_push(c->eng, te_count_fn, &r->ran, TE_NONE, TE_V(c->shared), 0);
      TU_CHECK(rc == 0, "push = %d", rc);
    }
  }
  return NULL;
}

static long var_churn(int threads, int pushers)
{
  te t = te_new("threaded", threads, 0);
  churn c = {.eng = t.eng};
  c.shared = te_var(t.eng);
  c.per_thread = tu_scaled(3000, 300);
  long n = c.per_thread * pushers;
  c.rounds = calloc((size_t)n, sizeof *c.rounds);
  cr_assert_not_null(c.rounds);
  pthread_t th[4];
  void *args[4][2];
  for (int p = 0; p < pushers; p++) {
    args[p][0] = &c;
    args[p][1] = (void *)(intptr_t)(p * c.per_thread);
    cr_assert_eq(pthread_create(&th[p], NULL, churn_thread, args[p]), 0);
  }
  atomic_store(&c.go, 1);
  for (int p = 0; p < pushers; p++)
    te_join(th[p]);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  tu_assert_no_errors();
  for (long i = 0; i < n; i++) {
    churn_round *r = &c.rounds[i];
    cr_assert_eq(atomic_load(&r->ran), 4 + (i % 64 == 0), "round %ld: %d ops ran", i,
                 atomic_load(&r->ran));
    cr_assert_eq(r->seen_r, 1, "round %ld: the read saw %ld", i, r->seen_r);
    cr_assert_eq(r->value, 3, "round %ld: the var ended at %ld", i, r->value);
  }
  free(c.rounds);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_leaks();
  return n;
}

Test(churn, vars_and_reusable_ops_come_and_go_3_pushers, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  cr_assert_gt(var_churn(2, 3), 0);
}
