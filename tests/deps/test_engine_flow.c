/* SPDX-License-Identifier: MIT */
/*
 * Flow control and resources: WEFT_PROP_PRIORITIZED ordering on a 1-thread
 * pool, back pressure (max_inflight from the config and WEFT_MAX_INFLIGHT:
 * an outside pusher never runs more than K ops ahead, blocks at the cap,
 * and a push from inside an op never blocks), and a steady state that
 * allocates nothing (RSS after warm-up vs at the end of a 1M-op loop).
 * and a drain check left for later that must not hold up a waiter.
 * Nothing here asserts on time: order, counts and bytes only.
 */
#include "engine_util.h"

static void setup(void)
{
  te_setup();
}

/* ------------------------------------------------------------ priority */

/* The order in which ops ran, from one counter. */
static te_rec *recs_with_order(int n, atomic_long *ctr)
{
  te_rec *r = calloc((size_t)n, sizeof *r);
  cr_assert_not_null(r);
  for (int i = 0; i < n; i++) {
    r[i].order_ctr = ctr;
    r[i].order = -1;
  }
  return r;
}

/* -------------------------------------------- the successor to run next */

/* A pipeline pushed item by item, each stage an actor (it writes its stage
 * var) that also writes the item's var: a finished stage makes ready both
 * the item's next stage and the stage's next item. On one worker the engine
 * runs next the one pushed first, so the items go through depth first, in
 * exactly the order they were pushed (a serial loop's, whose working set is
 * one item), not every item's first stage ahead of the rest. The stage vars
 * are made before the item vars, so a choice by var order would take the
 * next item's first stage. */
enum { PL_ITEMS = 16, PL_STAGES = 4, PL_N = PL_ITEMS * PL_STAGES };

typedef struct pl {
  weft_engine *eng;
  weft_var *stage[PL_STAGES], *item[PL_ITEMS];
  te_rec *r;
  atomic_int failed;
} pl;

static void pl_push_all(pl *p)
{
  for (int k = 0; k < PL_ITEMS; k++)
    for (int s = 0; s < PL_STAGES; s++)
      if (te_push(p->eng, te_rec_fn, &p->r[k * PL_STAGES + s], TE_NONE,
                  TE_V(p->stage[s], p->item[k]), 0))
        atomic_store(&p->failed, 1);
}

static int pl_driver(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  pl_push_all(arg);
  return 0;
}

Test(successor, a_pipeline_runs_depth_first_in_push_order, .init = setup,
     .timeout = TU_TIMEOUT(30))
{
  /* from_op 0: the test's thread pushes while the only worker is held (the
   * ready ones wait in the injection queue); 1: an operator pushes them all
   * on the only worker (the ready ones wait on its deque). */
  for (int from_op = 0; from_op < 2; from_op++) {
    te t = te_new("threaded", 1, 0);
    atomic_long ctr = 0;
    pl p = {.eng = t.eng, .r = recs_with_order(PL_N, &ctr)};
    for (int s = 0; s < PL_STAGES; s++)
      p.stage[s] = te_var(t.eng);
    for (int k = 0; k < PL_ITEMS; k++)
      p.item[k] = te_var(t.eng);
    if (from_op) {
      cr_assert_eq(te_push(t.eng, pl_driver, &p, TE_NONE, TE_NONE, 0), 0);
    } else {
      te_gate gate = {0};
      cr_assert_eq(te_push(t.eng, te_gate_fn, &gate, TE_NONE, TE_NONE, 0), 0);
      cr_assert(TU_WAIT_UNTIL(atomic_load(&gate.started), TU_DEADLINE_S));
      pl_push_all(&p);
      atomic_store(&gate.open, 1);
      cr_assert_eq(weft_wait_all(t.eng), 0);
      cr_assert_eq(atomic_load(&gate.timed_out), 0);
    }
    cr_assert_eq(weft_wait_all(t.eng), 0);
    cr_assert_eq(atomic_load(&p.failed), 0, "a push failed");
    for (int i = 0; i < PL_N; i++) {
      cr_assert_eq(atomic_load(&p.r[i].ran), 1);
      cr_assert_eq(p.r[i].order, i, "%s: item %d stage %d ran at position %ld, pushed at %d",
                   from_op ? "from an op" : "from outside", i / PL_STAGES, i % PL_STAGES,
                   p.r[i].order, i);
    }
    free(p.r);
    cr_assert_eq(te_free(&t), 0);
  }
}

static int push_prio(weft_engine *e, te_rec *r, int priority, weft_var *const *reads, size_t nr,
                     weft_var *w)
{
  weft_op_desc d = te_desc(te_rec_fn, r);
  d.prop = WEFT_PROP_PRIORITIZED;
  d.priority = priority;
  d.reads = reads;
  d.num_reads = nr;
  d.writes = (weft_var *const[]){w};
  d.num_writes = 1;
  return weft_push(e, &d);
}

Test(priority, prioritized_ops_run_before_ready_normal_ones, .init = setup,
     .timeout = TU_TIMEOUT(30))
{
  te t = te_new("threaded", 1, 0);
  enum { NN = 32 };
  atomic_long ctr = 0;
  te_rec *normal = recs_with_order(NN, &ctr);
  te_rec *prio = recs_with_order(4, &ctr);
  weft_var *g = te_var(t.eng);
  te_gate gate = {0};
  cr_assert_eq(te_push(t.eng, te_gate_fn, &gate, TE_NONE, TE_V(g), 0), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&gate.started), TU_DEADLINE_S));
  /* The only worker is held: everything below is ready and waits. */
  for (int i = 0; i < NN; i++) {
    weft_var *v = te_var(t.eng);
    cr_assert_eq(te_push(t.eng, te_rec_fn, &normal[i], TE_NONE, TE_V(v), 0), 0);
  }
  cr_assert_eq(push_prio(t.eng, &prio[0], 1, TE_NONE, te_var(t.eng)), 0);
  cr_assert_eq(push_prio(t.eng, &prio[1], 9, TE_NONE, te_var(t.eng)), 0);
  cr_assert_eq(push_prio(t.eng, &prio[2], 5, TE_NONE, te_var(t.eng)), 0);
  /* Ready only when the gate finishes, then ahead of the waiting normal ops. */
  cr_assert_eq(push_prio(t.eng, &prio[3], 3, TE_V(g), te_var(t.eng)), 0);
  atomic_store(&gate.open, 1);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&gate.timed_out), 0);
  for (int i = 0; i < 4; i++)
    cr_assert_eq(atomic_load(&prio[i].ran), 1);
  /* Expected: priority 9, 5, 3, 1, then the normal ops. */
  cr_assert_eq(prio[1].order, 0, "priority 9 ran at position %ld", prio[1].order);
  cr_assert_eq(prio[2].order, 1, "priority 5 ran at position %ld", prio[2].order);
  cr_assert_eq(prio[3].order, 2, "priority 3 (made ready by the gate) ran at position %ld",
               prio[3].order);
  cr_assert_eq(prio[0].order, 3, "priority 1 ran at position %ld", prio[0].order);
  for (int i = 0; i < NN; i++) {
    cr_assert_eq(atomic_load(&normal[i].ran), 1);
    cr_assert_geq(normal[i].order, 4, "normal op %d ran at position %ld, before a prioritized one",
                  i, normal[i].order);
  }
  free(normal);
  free(prio);
  cr_assert_eq(te_free(&t), 0);
}

/* The same from inside an op: its normal pushes go to its own deque, the
 * prioritized ones still run first once it returns. */
typedef struct inner_prio {
  weft_engine *eng;
  weft_var *v[16];
  te_rec *normal, *prio;
  int nn;
} inner_prio;

static int inner_prio_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  inner_prio *x = arg;
  for (int i = 0; i < x->nn; i++) {
    int r = te_push(x->eng, te_rec_fn, &x->normal[i], TE_NONE, TE_V(x->v[i]), 0);
    TU_CHECK(r == 0, "push = %d", r);
  }
  for (int i = 0; i < 2; i++) {
    int r = push_prio(x->eng, &x->prio[i], i == 0 ? 2 : 8, TE_NONE, x->v[x->nn + i]);
    TU_CHECK(r == 0, "push = %d", r);
  }
  return 0;
}

Test(priority, prioritized_pushed_from_inside_an_op, .init = setup, .timeout = TU_TIMEOUT(30))
{
  te t = te_new("threaded", 1, 0);
  atomic_long ctr = 0;
  inner_prio x = {.eng = t.eng, .nn = 12};
  x.normal = recs_with_order(12, &ctr);
  x.prio = recs_with_order(2, &ctr);
  for (int i = 0; i < 16; i++)
    x.v[i] = te_var(t.eng);
  weft_var *own = te_var(t.eng);
  cr_assert_eq(te_push(t.eng, inner_prio_fn, &x, TE_NONE, TE_V(own), 0), 0);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  tu_assert_no_errors();
  cr_assert_eq(x.prio[1].order, 0, "priority 8 ran at position %ld", x.prio[1].order);
  cr_assert_eq(x.prio[0].order, 1, "priority 2 ran at position %ld", x.prio[0].order);
  for (int i = 0; i < 12; i++)
    cr_assert_geq(x.normal[i].order, 2, "normal op %d ran at %ld", i, x.normal[i].order);
  free(x.normal);
  free(x.prio);
  cr_assert_eq(te_free(&t), 0);
}

/* ------------------------------------------------------- back pressure */

typedef struct bp {
  atomic_long finished;
  te_guard guard[16];
} bp;

typedef struct bp_op {
  bp *b;
  int var;
} bp_op;

static int bp_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  bp_op *o = arg;
  te_guard_enter(o->b->guard, NULL, 0, &o->var, 1);
  for (volatile int i = 0; i < 300; i++) {
  }
  te_guard_leave(o->b->guard, NULL, 0, &o->var, 1);
  atomic_fetch_add(&o->b->finished, 1);
  return 0;
}

/* An outside pusher of n ops never has more than K pushed but unfinished:
 * pushes returned minus ops finished, sampled after each push. Returns the
 * largest gap seen. */
static long bp_gap(te *t, int k, long n)
{
  bp b;
  memset(&b, 0, sizeof b);
  bp_op *ops = calloc((size_t)n, sizeof *ops);
  cr_assert_not_null(ops);
  weft_var *v[16];
  for (int i = 0; i < 16; i++)
    v[i] = te_var(t->eng);
  long maxgap = 0;
  for (long i = 0; i < n; i++) {
    ops[i].b = &b;
    ops[i].var = (int)(i * 7 % 16);
    int rc = te_push(t->eng, bp_fn, &ops[i], TE_V(v[(i + 1) % 16]), TE_V(v[ops[i].var]), 0);
    cr_assert_eq(rc, 0, "push %ld = %d", i, rc);
    long gap = (i + 1) - atomic_load(&b.finished);
    if (gap > maxgap)
      maxgap = gap;
  }
  cr_assert_eq(weft_wait_all(t->eng), 0);
  cr_assert_eq(atomic_load(&b.finished), n);
  tu_assert_no_errors();
  free(ops);
  cr_assert_leq(maxgap, k, "an outside pusher ran %ld ops ahead with max_inflight %d", maxgap, k);
  return maxgap;
}

Test(backpressure, outside_pusher_never_more_than_k_ahead, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  long n = tu_scaled(10000, 2000);
  te t = te_new("threaded", 2, 8);
  long gap = bp_gap(&t, 8, n);
  cr_assert_leq(gap, 8);
  cr_log_info("max_inflight 8, %ld ops: the largest gap was %ld", n, gap);
  cr_assert_eq(te_free(&t), 0);

  t = te_new("threaded", 1, 3);
  cr_assert_leq(bp_gap(&t, 3, n), 3);
  cr_assert_eq(te_free(&t), 0);
}

Test(backpressure, from_the_environment, .init = setup, .timeout = TU_TIMEOUT(60))
{
  long n = tu_scaled(10000, 2000);
  setenv("WEFT_MAX_INFLIGHT", "5", 1);
  te t = te_new("threaded", 2, -1);
  cr_assert_leq(bp_gap(&t, 5, n), 5);
  cr_assert_eq(te_free(&t), 0);
  /* An explicit field beats the environment. */
  setenv("WEFT_MAX_INFLIGHT", "1", 1);
  t = te_new("threaded", 2, 4);
  cr_assert_leq(bp_gap(&t, 4, n), 4);
  cr_assert_eq(te_free(&t), 0);
}

/* Several outside pushers share the cap: together they never have more
 * than K ops pushed but unfinished. */
typedef struct bp_shared {
  weft_engine *eng;
  bp b;
  weft_var *v[16];
  atomic_long returned, maxgap;
  atomic_int go;
  long n;
  bp_op *ops;
} bp_shared;

static void *bp_pusher(void *arg)
{
  bp_shared *s = ((void **)arg)[0];
  long first = (long)(intptr_t)((void **)arg)[1];
  while (!atomic_load(&s->go))
    sched_yield();
  for (long i = first; i < first + s->n; i++) {
    bp_op *o = &s->ops[i];
    int rc = te_push(s->eng, bp_fn, o, TE_NONE, TE_V(s->v[o->var]), 0);
    TU_CHECK(rc == 0, "push = %d", rc);
    long gap = atomic_fetch_add(&s->returned, 1) + 1 - atomic_load(&s->b.finished);
    long m = atomic_load(&s->maxgap);
    while (gap > m && !atomic_compare_exchange_weak(&s->maxgap, &m, gap)) {
    }
  }
  return NULL;
}

Test(backpressure, several_outside_pushers_share_the_cap, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  enum { K = 4, P = 3 };
  te t = te_new("threaded", 2, K);
  bp_shared *s = calloc(1, sizeof *s);
  cr_assert_not_null(s);
  s->eng = t.eng;
  s->n = tu_scaled(5000, 1000);
  s->ops = calloc((size_t)(P * s->n), sizeof *s->ops);
  cr_assert_not_null(s->ops);
  for (int i = 0; i < 16; i++)
    s->v[i] = te_var(t.eng);
  for (long i = 0; i < P * s->n; i++) {
    s->ops[i].b = &s->b;
    s->ops[i].var = (int)(i % 16);
  }
  pthread_t th[P];
  void *args[P][2];
  for (int p = 0; p < P; p++) {
    args[p][0] = s;
    args[p][1] = (void *)(intptr_t)(p * s->n);
    cr_assert_eq(pthread_create(&th[p], NULL, bp_pusher, args[p]), 0);
  }
  atomic_store(&s->go, 1);
  for (int p = 0; p < P; p++)
    te_join(th[p]);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  tu_assert_no_errors();
  cr_assert_eq(atomic_load(&s->b.finished), P * s->n);
  long gap = atomic_load(&s->maxgap);
  cr_assert_leq(gap, K, "%d outside pushers had %ld ops pushed but unfinished, max_inflight %d",
                P, gap, K);
  free(s->ops);
  free(s);
  cr_assert_eq(te_free(&t), 0);
}

/* The same, deterministic: the only worker is held by a gate, the cap is
 * full but for one place, and several threads push at once: one gets it. */
typedef struct race_push {
  weft_engine *eng;
  weft_var *v;
  atomic_int *go, *entered, *returned, *ran;
} race_push;

static void *race_pusher(void *arg)
{
  race_push *r = arg;
  while (!atomic_load(r->go))
    sched_yield();
  atomic_fetch_add(r->entered, 1);
  int rc = te_push(r->eng, te_count_fn, r->ran, TE_NONE, TE_V(r->v), 0);
  TU_CHECK(rc == 0, "push = %d", rc);
  atomic_fetch_add(r->returned, 1);
  return NULL;
}

Test(backpressure, simultaneous_pushers_at_the_cap, .init = setup, .timeout = TU_TIMEOUT(60))
{
  enum { K = 2, P = 4 };
  int rounds = (int)tu_scaled(20, 5), worst = 0;
  for (int round = 0; round < rounds; round++) {
    te t = te_new("threaded", 1, K);
    te_gate g = {0};
    weft_var *gv = te_var(t.eng);
    cr_assert_eq(te_push(t.eng, te_gate_fn, &g, TE_NONE, TE_V(gv), 0), 0);
    cr_assert(TU_WAIT_UNTIL(atomic_load(&g.started), TU_DEADLINE_S));
    atomic_int go = 0, entered = 0, returned = 0, ran = 0;
    race_push r[P];
    pthread_t th[P];
    for (int p = 0; p < P; p++) {
      r[p] = (race_push){t.eng, te_var(t.eng), &go, &entered, &returned, &ran};
      cr_assert_eq(pthread_create(&th[p], NULL, race_pusher, &r[p]), 0);
    }
    atomic_store(&go, 1);
    /* One push fits under the cap; once all are inside weft_push, a
     * bounded look for more. */
    cr_assert(TU_WAIT_UNTIL(atomic_load(&returned) >= K - 1, TU_DEADLINE_S));
    cr_assert(TU_WAIT_UNTIL(atomic_load(&entered) == P, TU_DEADLINE_S));
    TU_WAIT_UNTIL(atomic_load(&returned) > K - 1, 0.1);
    int n = atomic_load(&returned);
    if (n > worst)
      worst = n;
    atomic_store(&g.open, 1);
    for (int p = 0; p < P; p++)
      te_join(th[p]);
    cr_assert_eq(weft_wait_all(t.eng), 0);
    cr_assert_eq(atomic_load(&ran), P);
    cr_assert_eq(te_free(&t), 0);
    if (worst > K - 1)
      break;
  }
  tu_assert_no_errors();
  cr_assert_leq(worst, K - 1,
                "%d pushes returned at once with max_inflight %d and one op (the gate) already "
                "in flight", worst, K);
}

/* At the cap an outside push blocks until an op finishes. */
typedef struct blocked_pusher {
  weft_engine *eng;
  te_gate *gate;
  weft_var *g;
  weft_var *v[32];
  int n;
  atomic_int returned;
  atomic_int ran;
  int first_rc;
} blocked_pusher;

static void *blocked_pusher_thread(void *arg)
{
  blocked_pusher *p = arg;
  p->first_rc = te_push(p->eng, te_gate_fn, p->gate, TE_NONE, TE_V(p->g), 0);
  atomic_fetch_add(&p->returned, 1);
  for (int i = 0; i < p->n; i++) {
    int rc = te_push(p->eng, te_count_fn, &p->ran, TE_NONE, TE_V(p->v[i % 32]), 0);
    TU_CHECK(rc == 0, "push = %d", rc);
    atomic_fetch_add(&p->returned, 1);
  }
  return NULL;
}

Test(backpressure, outside_push_blocks_at_the_cap, .init = setup, .timeout = TU_TIMEOUT(60))
{
  enum { K = 4 };
  te t = te_new("threaded", 1, K);
  te_gate gate = {0};
  blocked_pusher p = {.eng = t.eng, .gate = &gate, .n = 40};
  p.g = te_var(t.eng);
  for (int i = 0; i < 32; i++)
    p.v[i] = te_var(t.eng);
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, blocked_pusher_thread, &p), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&p.returned) >= K, TU_DEADLINE_S),
            "only %d pushes returned under max_inflight %d", atomic_load(&p.returned), K);
  /* A bounded look: with the gate shut nothing finishes, so no more push
   * may return. */
  bool over = TU_WAIT_UNTIL(atomic_load(&p.returned) > K, 0.2);
  int returned = atomic_load(&p.returned);
  atomic_store(&gate.open, 1);
  te_join(th);
  cr_assert_not(over, "%d pushes returned while the first of them could not finish, "
                      "max_inflight %d", returned, K);
  cr_assert_eq(p.first_rc, 0);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  tu_assert_no_errors();
  cr_assert_eq(atomic_load(&p.ran), p.n);
  cr_assert_eq(atomic_load(&gate.timed_out), 0);
  cr_assert_eq(te_free(&t), 0);
}

/* A push from inside an op at the cap does not block: on a 1-thread pool
 * a blocking push would deadlock. Some children conflict with the parent
 * (they write its var), so they cannot be run inside the push either. */
typedef struct spawner {
  weft_engine *eng;
  weft_var *own;
  weft_var *v[8];
  int n;
  atomic_int ran_conflicting, ran_free;
  atomic_int pushed;
} spawner;

static int spawner_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  spawner *s = arg;
  for (int i = 0; i < s->n; i++) {
    int r;
    if (i % 2)
      r = te_push(s->eng, te_count_fn, &s->ran_conflicting, TE_V(s->v[i % 8]), TE_V(s->own), 0);
    else
      r = te_push(s->eng, te_count_fn, &s->ran_free, TE_NONE, TE_V(s->v[i % 8]), 0);
    TU_CHECK(r == 0, "push from inside an op at the cap = %d", r);
    atomic_fetch_add(&s->pushed, 1);
  }
  return 0;
}

Test(backpressure, push_from_inside_an_op_never_blocks, .init = setup, .timeout = TU_TIMEOUT(60))
{
  te t = te_new("threaded", 1, 2);
  spawner s = {.eng = t.eng, .n = 40}, s2 = {.eng = t.eng, .n = 40};
  s.own = s2.own = te_var(t.eng);
  for (int i = 0; i < 8; i++)
    s.v[i] = s2.v[i] = te_var(t.eng);
  /* Two of them, so the cap is full before the first one pushes. */
  cr_assert_eq(te_push(t.eng, spawner_fn, &s, TE_NONE, TE_V(s.own), 0), 0);
  cr_assert_eq(te_push(t.eng, spawner_fn, &s2, TE_NONE, TE_V(s2.own), 0), 0);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  tu_assert_no_errors();
  cr_assert_eq(atomic_load(&s.pushed) + atomic_load(&s2.pushed), 80);
  cr_assert_eq(atomic_load(&s.ran_conflicting) + atomic_load(&s2.ran_conflicting), 40);
  cr_assert_eq(atomic_load(&s.ran_free) + atomic_load(&s2.ran_free), 40);
  cr_assert_eq(te_free(&t), 0);
}

/* --------------------------------------------------------------- memory */

static int mem_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  atomic_fetch_add((atomic_long *)arg, 1);
  return 0;
}

static void mem_async_fn(const weft_run_ctx *rc, void *arg, weft_done *done)
{
  (void)rc;
  atomic_fetch_add((atomic_long *)arg, 1);
  weft_done_signal(done, 0);
}

/* Returns the RSS growth in bytes from after warm-up to the end. */
static long steady_state_growth(int threads, int max_inflight, long total)
{
  enum { BATCH = 2500, NV = 64 }; /* bounds the ops in flight, so RSS too */
  long batches = total / BATCH;
  long warm = batches / 2 < 3 ? 3 : batches / 2; /* sanitizers warm up slowly */
  te t = te_new("threaded", threads, max_inflight);
  weft_var *v[NV];
  for (int i = 0; i < NV; i++)
    v[i] = te_var(t.eng);
  atomic_long ran = 0;
  uint64_t rs = 11;
  long rss_warm = -1, pushed = 0;
  for (long b = 0; b < batches; b++) {
    if (b == warm)
      rss_warm = te_rss();
    /* Vars come and go too (deferred deletion recycles their blocks). */
    weft_var *tmp = te_var(t.eng);
    for (int i = 0; i < BATCH; i++) {
      uint64_t x = tu_rand(&rs);
      weft_var *r[2] = {v[x % NV], (x >> 8) % 4 == 0 ? tmp : v[(x >> 16) % NV]};
      weft_var *w[1] = {v[(x >> 24) % NV]};
      weft_op_desc d = (x >> 32) % 16 == 0 ? te_adesc(mem_async_fn, &ran) : te_desc(mem_fn, &ran);
      d.reads = r;
      d.num_reads = (x >> 40) % 3;
      d.writes = w;
      d.num_writes = 1;
      int rc = weft_push(t.eng, &d);
      cr_assert_eq(rc, 0, "push = %d", rc);
      pushed++;
    }
    cr_assert_eq(weft_var_delete(t.eng, tmp), 0);
    cr_assert_eq(weft_wait_all(t.eng), 0);
  }
  long rss_end = te_rss();
  cr_assert_eq(atomic_load(&ran), pushed);
  cr_assert_gt(rss_warm, 0);
  cr_assert_gt(rss_end, 0);
  cr_log_info("%ld ops: RSS %ld KiB after warm-up, %ld KiB at the end", pushed, rss_warm / 1024,
              rss_end / 1024);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_leaks();
  return rss_end - rss_warm;
}

Test(memory, steady_state_allocates_nothing, .init = setup, .timeout = TU_TIMEOUT(120))
{
  long growth = steady_state_growth(2, 0, tu_scaled(1000000, 100000));
  cr_assert_leq(growth, 8l << 20, "RSS grew by %ld KiB over the steady-state loop",
                growth / 1024);
}

Test(memory, steady_state_with_back_pressure, .init = setup, .timeout = TU_TIMEOUT(120))
{
  long growth = steady_state_growth(2, 64, tu_scaled(300000, 100000));
  cr_assert_leq(growth, 8l << 20, "RSS grew by %ld KiB over the steady-state loop",
                growth / 1024);
}

/* ------------------------------------------------------- drain checks */

/* A worker in its main loop leaves the drain check of a finish for later
 * (src/deps/inflight.c, weft_engine_count_done_op): before it runs anything
 * not counted in that epoch, or goes idle. Here the finish of a (epoch 0,
 * waited for by a thread in weft_wait_all) hands var v to b, a later epoch's
 * operator that the same worker runs next, and b waits for that wait_all to
 * return: the check must happen before b's fn, or neither ever ends. */

static atomic_int drain_go, drain_entering, drain_returned;

static int drain_a_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  (void)arg;
  TU_CHECK(TU_WAIT_UNTIL(atomic_load(&drain_go), 30), "a was never let go");
  return 0;
}

static int drain_b_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  *(int *)arg = TU_WAIT_UNTIL(atomic_load(&drain_returned), 30);
  return 0;
}

static void *drain_waiter(void *arg)
{
  atomic_store(&drain_entering, 1);
  int rc = weft_wait_all((weft_engine *)arg);
  atomic_store(&drain_returned, 1);
  return (void *)(intptr_t)rc;
}

Test(drain, a_check_left_for_later_runs_before_a_later_epochs_op, .init = setup,
     .timeout = TU_TIMEOUT(120))
{
  te t = te_new("threaded", 1, 0); /* one worker: b runs right after a, there */
  weft_var *v = te_var(t.eng);
  atomic_store(&drain_go, 0);
  atomic_store(&drain_entering, 0);
  atomic_store(&drain_returned, 0);
  cr_assert_eq(te_push(t.eng, drain_a_fn, NULL, TE_NONE, TE_V(v), 0), 0);
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, drain_waiter, t.eng), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&drain_entering), 30));
  /* b must be pushed after the waiter moved pushes on to the next epoch,
   * which it does as it enters weft_wait_all: give it ample time (a later
   * b would be waited for too, and time out below). */
  tu_sleep_us(200 * 1000);
  int saw = -1;
  cr_assert_eq(te_push(t.eng, drain_b_fn, &saw, TE_NONE, TE_V(v), 0), 0);
  atomic_store(&drain_go, 1);
  void *wrc;
  pthread_join(th, &wrc);
  cr_assert_eq((intptr_t)wrc, 0);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(saw, 1, "b ran before the waiter for a's epoch was woken (or never saw it)");
  tu_assert_no_errors();
  cr_assert_eq(te_free(&t), 0);
}
