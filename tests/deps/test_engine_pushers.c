/* SPDX-License-Identifier: MIT */
/*
 * Several user threads pushing into one engine at once: shared
 * vars that every pusher reads and writes, and vars of each pusher's own.
 * Checked inside every operator:
 *  - it runs exactly once;
 *  - no writer of a var overlaps a reader or another writer (te_guard);
 *  - per pusher and var, program order: a read sees the last write of its
 *    own pusher pushed before it (that one ran, no later one did); a write
 *    sees the same, and every read of that var its pusher pushed before it
 *    has finished;
 * and after the run:
 *  - every operator ran; each pusher's weft_wait_all calls (made while the
 *    others push) returned only after all of its own earlier pushes ran;
 *  - the run is a serial one: the versions each operator saw on its vars
 *    (a write makes the next version) order the operators without a cycle
 *    (one operator's registration on all its vars is atomic: two operators
 *    sharing vars queue in the same order on each), and the operators
 *    replayed in that order, from the initial values, give the final
 *    values the engine left (every read saw the data it should).
 * Pushers 2..6 on 1, 2 and 4 workers (more pushers than the engine keeps
 * tallies of its own for outside threads, and more than one pool's solo
 * injection queue serves), with and without max_inflight.
 */
#include <sched.h>

#include "engine_util.h"

#define MP_MAXP 8
#define MP_SHARED 6 /* vars every pusher reads and writes */
#define MP_PRIV 4   /* vars of each pusher's own */
#define MP_NV (MP_SHARED + MP_MAXP * MP_PRIV)
#define MP_MAXV 4 /* vars an operator uses */

typedef struct mop {
  int p;    /* its pusher */
  long seq; /* its place in its pusher's program */
  long gid; /* its index among every operator of the run */
  int nr, nw;
  int r[MP_MAXV], w[MP_MAXV]; /* distinct: w written, r only read */
  /* per var (reads, then writes): 1 + seq of its pusher's last write of
   * that var pushed before it (0: none) */
  long prev_w[MP_MAXV];
  /* per written var: reads of that var its pusher pushed before it */
  long reads_before[MP_MAXV];
  /* what it saw: the var's version as it started, reads then writes */
  long ver[MP_MAXV];
  atomic_int ran;
} mop;

typedef struct mstate {
  uint64_t val[MP_NV];
  te_guard guard[MP_NV];
  /* per var and pusher: 1 + seq of the pusher's last write that ran, and
   * its reads of the var that finished */
  atomic_long last_w[MP_NV][MP_MAXP];
  atomic_long reads_done[MP_NV][MP_MAXP];
  atomic_long version[MP_NV]; /* writes of the var that ran */
  weft_var *var[MP_NV];
  weft_engine *eng;
  atomic_long ran;
} mstate;

static mstate *ms;

static void setup(void)
{
  te_setup();
}

static int priv_var(int p, int k)
{
  return MP_SHARED + p * MP_PRIV + k;
}

/* The body: mixes what it reads into what it writes (order-sensitive). */
static void m_body(uint64_t *val, const mop *o)
{
  uint64_t h = te_mix((uint64_t)o->gid * 0x9E3779B97F4A7C15ull + 11);
  for (int k = 0; k < o->nr; k++)
    h = te_mix(h ^ val[o->r[k]]);
  for (int k = 0; k < o->nw; k++)
    h = te_mix(h ^ val[o->w[k]]);
  for (int k = 0; k < o->nw; k++)
    val[o->w[k]] = te_mix(h + (uint64_t)k);
}

static int m_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  mop *o = arg;
  mstate *s = ms;
  int prev = atomic_fetch_add(&o->ran, 1);
  TU_CHECK(prev == 0, "pusher %d, op %ld ran twice", o->p, o->seq);
  te_guard_enter(s->guard, o->r, o->nr, o->w, o->nw);
  for (int k = 0; k < o->nr + o->nw; k++) {
    bool wr = k >= o->nr;
    int v = wr ? o->w[k - o->nr] : o->r[k];
    long lw = atomic_load_explicit(&s->last_w[v][o->p], memory_order_relaxed);
    TU_CHECK(lw == o->prev_w[k],
             "pusher %d, op %ld (%s var %d): its pusher's last write of the var to run is op %ld, "
             "expected op %ld (program order)",
             o->p, o->seq, wr ? "writes" : "reads", v, lw - 1, o->prev_w[k] - 1);
    if (wr) {
      long rd = atomic_load_explicit(&s->reads_done[v][o->p], memory_order_relaxed);
      TU_CHECK(rd == o->reads_before[k - o->nr],
               "pusher %d, op %ld writes var %d after %ld of its pusher's reads of it finished, "
               "expected %ld (program order)",
               o->p, o->seq, v, rd, o->reads_before[k - o->nr]);
    }
    o->ver[k] = atomic_load_explicit(&s->version[v], memory_order_relaxed);
  }
  m_body(s->val, o);
  if (o->seq % 512 == 511) /* the last op before its pusher's wait_all: slow */
    tu_sleep_us(200);
  for (int k = 0; k < o->nw; k++) {
    int v = o->w[k];
    atomic_store_explicit(&s->version[v], o->ver[o->nr + k] + 1, memory_order_relaxed);
    atomic_store_explicit(&s->last_w[v][o->p], o->seq + 1, memory_order_relaxed);
  }
  te_guard_leave(s->guard, o->r, o->nr, o->w, o->nw);
  for (int k = 0; k < o->nr; k++) /* before the op ends: its var is released after */
    atomic_fetch_add_explicit(&s->reads_done[o->r[k]][o->p], 1, memory_order_relaxed);
  atomic_fetch_add(&s->ran, 1);
  return 0;
}

/* One of the var ids: shared (most often) or the pusher's own. */
static int pick_var(uint64_t *rs, int p)
{
  if (tu_rand(rs) % 3)
    return (int)(tu_rand(rs) % MP_SHARED);
  return priv_var(p, (int)(tu_rand(rs) % MP_PRIV));
}

static bool has(const int *a, int n, int v)
{
  for (int i = 0; i < n; i++)
    if (a[i] == v)
      return true;
  return false;
}

/* Pusher p's program of n operators, at ops[0..n). */
static void m_gen(mop *ops, int p, int pushers, long n, uint64_t seed)
{
  uint64_t rs = seed * 1000003ull + (uint64_t)p * 7919u + 1;
  long last_w[MP_NV] = {0}, reads[MP_NV] = {0};
  for (long i = 0; i < n; i++) {
    mop *o = &ops[i];
    o->p = p;
    o->seq = i;
    o->gid = (long)p * n + i;
    o->nw = 1 + (int)(tu_rand(&rs) % 2);
    o->nr = (int)(tu_rand(&rs) % 3);
    int nw = 0, nr = 0;
    for (int k = 0; k < o->nw; k++) {
      int v = pick_var(&rs, p);
      if (!has(o->w, nw, v))
        o->w[nw++] = v;
    }
    for (int k = 0; k < o->nr; k++) {
      int v = pick_var(&rs, p);
      if (!has(o->w, nw, v) && !has(o->r, nr, v))
        o->r[nr++] = v;
    }
    o->nw = nw;
    o->nr = nr;
    for (int k = 0; k < nr; k++)
      o->prev_w[k] = last_w[o->r[k]];
    for (int k = 0; k < nw; k++) {
      o->prev_w[nr + k] = last_w[o->w[k]];
      o->reads_before[k] = reads[o->w[k]];
    }
    for (int k = 0; k < nr; k++)
      reads[o->r[k]]++;
    for (int k = 0; k < nw; k++)
      last_w[o->w[k]] = i + 1;
    atomic_init(&o->ran, 0);
  }
  (void)pushers;
}

static int m_push(mstate *s, mop *o)
{
  weft_var *r[MP_MAXV], *w[MP_MAXV];
  for (int k = 0; k < o->nr; k++)
    r[k] = s->var[o->r[k]];
  for (int k = 0; k < o->nw; k++)
    w[k] = s->var[o->w[k]];
  weft_op_desc d = te_desc(m_fn, o);
  d.reads = o->nr ? r : NULL;
  d.num_reads = (size_t)o->nr;
  d.writes = w;
  d.num_writes = (size_t)o->nw;
  return weft_push(s->eng, &d);
}

typedef struct mpusher {
  mstate *s;
  mop *ops;
  long n;
  atomic_int *go;
  long waits;
} mpusher;

static void *m_pusher(void *arg)
{
  mpusher *p = arg;
  while (!atomic_load(p->go))
    sched_yield();
  for (long i = 0; i < p->n; i++) {
    int rc = m_push(p->s, &p->ops[i]);
    TU_CHECK(rc == 0, "push = %d (%s)", rc, weft_strerror(rc));
    if (i % 512 == 511) {
      /* A wait for everything pushed so far, while the others push: each
       * of this pusher's operators pushed before it has run. */
      rc = weft_wait_all(p->s->eng);
      TU_CHECK(rc == 0, "wait_all = %d", rc);
      for (long j = 0; j <= i; j++)
        TU_CHECK(atomic_load(&p->ops[j].ran) == 1,
                 "pusher %d: op %ld had not run when its weft_wait_all returned", p->ops[0].p, j);
      p->waits++;
    } else if (i % 128 == 127) {
      weft_var *v = p->s->var[priv_var(p->ops[0].p, (int)(i / 128) % MP_PRIV)];
      rc = weft_var_wait(p->s->eng, v);
      TU_CHECK(rc == 0, "var_wait = %d", rc);
      p->waits++;
    }
  }
  return NULL;
}

/* The versions seen order the operators: for each var, its writer of
 * version k, then the readers that saw k, then its writer of k + 1. Sorts
 * them topologically into order[] (Kahn); returns how many it placed (all
 * of them unless there is a cycle). */
static long m_order(mop *all, long total, long *order)
{
  /* writer[v][k]: the op that made version k + 1 of v */
  long *writer[MP_NV];
  long nwrites[MP_NV] = {0};
  for (long i = 0; i < total; i++)
    for (int k = 0; k < all[i].nw; k++)
      nwrites[all[i].w[k]]++;
  for (int v = 0; v < MP_NV; v++) {
    writer[v] = malloc(sizeof(long) * (size_t)(nwrites[v] + 1));
    cr_assert_not_null(writer[v]);
    for (long k = 0; k < nwrites[v]; k++)
      writer[v][k] = -1;
  }
  for (long i = 0; i < total; i++)
    for (int k = 0; k < all[i].nw; k++) {
      int v = all[i].w[k];
      long ver = all[i].ver[all[i].nr + k];
      cr_assert(ver >= 0 && ver < nwrites[v], "op %ld saw version %ld of var %d (of %ld writes)",
                all[i].gid, ver, v, nwrites[v]);
      cr_assert_eq(writer[v][ver], -1, "two writers of var %d saw version %ld: ops %ld and %ld",
                   v, ver, writer[v][ver], all[i].gid);
      writer[v][ver] = i;
    }
  /* edges, as successor lists in one array (CSR) */
  long *deg = calloc((size_t)total, sizeof(long));
  long *start = calloc((size_t)total + 1, sizeof(long));
  cr_assert(deg && start);
  /* each access (reads and writes) adds at most two edges: from the writer
   * of the version it saw, to the writer of the next */
#define M_EDGES(fn)                                                               \
  for (long i = 0; i < total; i++)                                                \
    for (int k = 0; k < all[i].nr + all[i].nw; k++) {                             \
      bool wr = k >= all[i].nr;                                                   \
      int v = wr ? all[i].w[k - all[i].nr] : all[i].r[k];                         \
      long ver = all[i].ver[k];                                                   \
      if (ver > 0)                                                                \
        fn(writer[v][ver - 1], i);                                                \
      if (!wr && ver < nwrites[v])                                                \
        fn(i, writer[v][ver]);                                                    \
    }
#define M_COUNT(a, b) start[(a) + 1]++
  M_EDGES(M_COUNT)
  for (long i = 0; i < total; i++)
    start[i + 1] += start[i];
  long *succ = malloc(sizeof(long) * (size_t)(start[total] + 1));
  long *fill = malloc(sizeof(long) * (size_t)total);
  cr_assert(succ && fill);
  for (long i = 0; i < total; i++)
    fill[i] = start[i];
#define M_ADD(a, b) (succ[fill[a]++] = (b), deg[b]++)
  M_EDGES(M_ADD)
  long head = 0, tail = 0;
  for (long i = 0; i < total; i++)
    if (deg[i] == 0)
      order[tail++] = i;
  while (head < tail) {
    long i = order[head++];
    for (long e = start[i]; e < start[i + 1]; e++)
      if (--deg[succ[e]] == 0)
        order[tail++] = succ[e];
  }
  for (int v = 0; v < MP_NV; v++)
    free(writer[v]);
  free(deg);
  free(start);
  free(succ);
  free(fill);
  return tail;
}

static void m_init_values(uint64_t *val)
{
  for (int v = 0; v < MP_NV; v++)
    val[v] = te_mix((uint64_t)v * 131 + 17);
}

/* P pushers on threads workers; returns the operators that ran. */
static long many_pushers(int threads, int pushers, int max_inflight, uint64_t seed)
{
  cr_assert(pushers <= MP_MAXP);
  long n = tu_scaled(4000, 600);
  long total = n * pushers;
  mop *all = calloc((size_t)total, sizeof *all);
  cr_assert_not_null(all);
  for (int p = 0; p < pushers; p++)
    m_gen(&all[p * n], p, pushers, n, seed);
  ms = calloc(1, sizeof *ms);
  cr_assert_not_null(ms);
  m_init_values(ms->val);
  te t = te_new("threaded", threads, max_inflight);
  ms->eng = t.eng;
  for (int v = 0; v < MP_NV; v++)
    ms->var[v] = te_var(t.eng);
  atomic_int go = 0;
  mpusher pp[MP_MAXP];
  pthread_t th[MP_MAXP];
  for (int p = 0; p < pushers; p++) {
    pp[p] = (mpusher){ms, &all[p * n], n, &go, 0};
    cr_assert_eq(pthread_create(&th[p], NULL, m_pusher, &pp[p]), 0);
  }
  atomic_store(&go, 1);
  for (int p = 0; p < pushers; p++)
    te_join(th[p]);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  tu_assert_no_errors();
  long ran = atomic_load(&ms->ran);
  cr_assert_eq(ran, total, "%ld of %ld ops ran", ran, total);
  for (long i = 0; i < total; i++)
    cr_assert_eq(atomic_load(&all[i].ran), 1, "op %ld ran %d times", i, atomic_load(&all[i].ran));
  /* each pusher's last write of each var is the last of its to have run */
  for (int p = 0; p < pushers; p++) {
    long want[MP_NV] = {0};
    for (long i = 0; i < n; i++)
      for (int k = 0; k < all[p * n + i].nw; k++)
        want[all[p * n + i].w[k]] = i + 1;
    for (int v = 0; v < MP_NV; v++)
      cr_assert_eq(atomic_load(&ms->last_w[v][p]), want[v],
                   "pusher %d, var %d: last write run %ld, expected %ld", p, v,
                   atomic_load(&ms->last_w[v][p]) - 1, want[v] - 1);
  }
  /* a serial order, and the values it gives */
  long *order = malloc(sizeof(long) * (size_t)total);
  cr_assert_not_null(order);
  long placed = m_order(all, total, order);
  cr_assert_eq(placed, total,
               "%d pushers, %d threads: the versions the ops saw form a cycle (%ld of %ld ops "
               "ordered): no serial order explains the run",
               pushers, threads, placed, total);
  uint64_t want[MP_NV];
  m_init_values(want);
  for (long i = 0; i < total; i++)
    m_body(want, &all[order[i]]);
  for (int v = 0; v < MP_NV; v++)
    cr_assert_eq(ms->val[v], want[v],
                 "%d pushers, %d threads: var %d = %016llx, the serial order gives %016llx",
                 pushers, threads, v, (unsigned long long)ms->val[v],
                 (unsigned long long)want[v]);
  long waits = 0;
  for (int p = 0; p < pushers; p++)
    waits += pp[p].waits;
  cr_log_info("%d pushers, %d threads, max_inflight %d: %ld ops, %ld waits", pushers, threads,
              max_inflight, total, waits);
  for (int v = 0; v < MP_NV; v++)
    cr_assert_eq(weft_var_delete(t.eng, ms->var[v]), 0);
  cr_assert_eq(te_free(&t), 0);
  free(order);
  free(all);
  free(ms);
  ms = NULL;
  return ran;
}

Test(many_pushers, two_pushers_2_threads, .init = setup, .timeout = TU_TIMEOUT(60))
{
  for (uint64_t seed = 1; seed <= 3; seed++)
    cr_assert_gt(many_pushers(2, 2, 0, seed), 0);
}

Test(many_pushers, four_pushers_1_thread, .init = setup, .timeout = TU_TIMEOUT(60))
{
  cr_assert_gt(many_pushers(1, 4, 0, 4), 0);
}

Test(many_pushers, four_pushers_2_threads, .init = setup, .timeout = TU_TIMEOUT(60))
{
  for (uint64_t seed = 5; seed <= 6; seed++)
    cr_assert_gt(many_pushers(2, 4, 0, seed), 0);
}

/* More pushers than the engine's own outside tallies (some count on the
 * shared one) and than solo injection queues. */
Test(many_pushers, seven_pushers_4_threads, .init = setup, .timeout = TU_TIMEOUT(60))
{
  cr_assert_gt(many_pushers(4, 7, 0, 7), 0);
}

Test(many_pushers, three_pushers_2_threads_max_inflight_8, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  cr_assert_gt(many_pushers(2, 3, 8, 8), 0);
}
