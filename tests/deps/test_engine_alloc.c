/* SPDX-License-Identifier: MIT */
/*
 * "Steady state allocates nothing" (docs/api.md, "Guarantees"), counted
 * exactly: the library's allocation hook (src/common/alloc.h, the one
 * internal symbol this suite uses besides the public API) counts every
 * allocation; after a warm-up, batches of pushes and waits must make none.
 * test_engine_flow.c checks the same through RSS with the public API only.
 */
#include "engine_util.h"

#include "common/alloc.h"

static void setup(void)
{
  te_setup();
}

static int noop_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  atomic_fetch_add((atomic_long *)arg, 1);
  return 0;
}

static void noop_async(const weft_run_ctx *rc, void *arg, weft_done *done)
{
  (void)rc;
  atomic_fetch_add((atomic_long *)arg, 1);
  weft_done_signal(done, 0);
}

/* The most blocks a batch can hold at once is one block per push: all of
 * them in flight. How close a batch comes to that depends on how far the
 * pusher outruns the workers, which a busy machine changes from batch to
 * batch; a measured batch that outran every warm-up one would take new
 * slabs for blocks that are recycled, not leaked. So the first warm-up
 * batch of a threaded engine without back-pressure is pushed behind a gate:
 * an operator writing every var that holds its worker until the whole
 * batch is pushed. All of its operators are then in flight at once, and
 * the store has blocks for any later batch. (The naive engine runs each
 * push before returning; a max_inflight cap bounds the rest.) */
static void gate_shut(weft_engine *e, weft_var **v, int nv, te_gate *g)
{
  weft_op_desc d = te_desc(te_gate_fn, g);
  d.writes = v;
  d.num_writes = (size_t)nv;
  cr_assert_eq(weft_push(e, &d), 0);
}

static void gate_open(te_gate *g)
{
  cr_assert(TU_WAIT_UNTIL(atomic_load(&g->started), TU_DEADLINE_S), "the gate never started");
  atomic_store(&g->open, 1);
}

/* One batch: n pushes over vars v (up to width vars each), a reusable op,
 * a temporary var, var_wait, wait_all. With a gate g, all of them behind it
 * (and no var_wait, which would wait for the gate). */
static void batch(weft_engine *e, weft_var **v, int nv, weft_op *op, atomic_long *ran, long n,
                  int width, uint64_t *rs, te_gate *g)
{
  if (g)
    gate_shut(e, v, nv, g);
  long before = atomic_load(ran);
  weft_var *tmp = te_var(e);
  for (long i = 0; i < n; i++) {
    uint64_t x = tu_rand(rs);
    weft_var *r[32], *w[32];
    int nr = (int)(x % (unsigned)width), nw = 1 + (int)((x >> 8) % (unsigned)(width / 2 + 1));
    for (int k = 0; k < nr; k++)
      r[k] = k == 0 && (x >> 20) % 4 == 0 ? tmp : v[tu_rand(rs) % (unsigned)nv];
    for (int k = 0; k < nw; k++)
      w[k] = v[tu_rand(rs) % (unsigned)nv];
    weft_op_desc d = (x >> 32) % 8 == 0 ? te_adesc(noop_async, ran) : te_desc(noop_fn, ran);
    if ((x >> 36) % 8 == 1)
      d.prop = WEFT_PROP_PRIORITIZED;
    if ((x >> 36) % 8 == 2)
      d.prop = WEFT_PROP_ASYNC;
    d.reads = r;
    d.num_reads = (size_t)nr;
    d.writes = w;
    d.num_writes = (size_t)nw;
    int rc = weft_push(e, &d);
    cr_assert_eq(rc, 0, "push = %d", rc);
    if (i % 97 == 0)
      cr_assert_eq(weft_op_push(e, op), 0);
    if (i % 1001 == 0 && !g)
      cr_assert_eq(weft_var_wait(e, w[0]), 0);
  }
  if (g) {
    cr_assert_eq(atomic_load(ran), before, "an operator ran ahead of the gate");
    gate_open(g);
  }
  cr_assert_eq(weft_var_delete(e, tmp), 0);
  cr_assert_eq(weft_wait_all(e), 0);
}

/* Returns the allocations made after warm-up, over 5 batches (at least
 * 25000 pushes).
 *
 * Not quite zero: the free lists are per worker and bounded (a worker's
 * list takes what it frees up to a cap, then gives half back), so until
 * every list has reached its cap once, the shared list may run dry and
 * take a new slab now and then. A slab holds hundreds of blocks: MAX_SLABS
 * allows that settling and nothing per push. */
#define MAX_SLABS 64
static long allocations(const char *kind, int threads, int max_inflight, int width)
{
  te t = te_new(kind, threads, max_inflight);
  enum { NV = 64 };
  weft_var *v[NV];
  for (int i = 0; i < NV; i++)
    v[i] = te_var(t.eng);
  atomic_long ran = 0;
  weft_op_desc d = te_desc(noop_fn, &ran);
  d.writes = (weft_var *const[]){v[1]};
  d.num_writes = 1;
  weft_op *op = NULL;
  cr_assert_eq(weft_op_new(t.eng, &d, &op), 0);
  uint64_t rs = 5;
  long per = tu_scaled(20000, 5000);
  te_gate g = {0};
  int gated = strcmp(kind, "threaded") == 0 && max_inflight == 0;
  for (int b = 0; b < 3; b++)
    batch(t.eng, v, NV, op, &ran, per, width, &rs, b == 0 && gated ? &g : NULL);
  cr_assert_eq(atomic_load(&g.timed_out), 0, "the gate timed out");
  weft_test_fail_alloc_at(0); /* resets the count */
  for (int b = 0; b < 5; b++)
    batch(t.eng, v, NV, op, &ran, per, width, &rs, NULL);
  long calls = weft_test_alloc_calls();
  cr_log_info("%s, %d threads, max_inflight %d, up to %d vars: %ld allocations in %ld pushes",
              kind, threads, max_inflight, width + width / 2, calls, 5 * per);
  cr_assert_eq(weft_op_delete(t.eng, op), 0);
  cr_assert_eq(te_free(&t), 0);
  return calls;
}

Test(alloc, threaded_steady_state_allocates_nothing, .init = setup, .timeout = TU_TIMEOUT(60))
{
  long calls = allocations("threaded", 2, 0, 4);
  cr_assert_leq(calls, MAX_SLABS, "%ld allocations in the steady state (ops of up to 6 vars)",
                calls);
}

Test(alloc, with_back_pressure, .init = setup, .timeout = TU_TIMEOUT(60))
{
  long calls = allocations("threaded", 2, 32, 4);
  cr_assert_leq(calls, MAX_SLABS, "%ld allocations in the steady state, max_inflight 32", calls);
}

Test(alloc, naive_steady_state_allocates_nothing, .init = setup, .timeout = TU_TIMEOUT(60))
{
  long calls = allocations("naive", 1, 0, 4);
  cr_assert_leq(calls, MAX_SLABS, "%ld allocations in the naive engine's steady state", calls);
}

Test(alloc, ops_with_many_vars, .init = setup, .timeout = TU_TIMEOUT(60))
{
  long calls = allocations("threaded", 2, 0, 24);
  cr_assert_leq(calls, MAX_SLABS,
                "%ld allocations in the steady state (ops of up to 36 vars): per push", calls);
}

/* weft_push_arg with an argument that fits in the block: as weft_push.
 * The argument carries the counter (a C++ lambda's captures would). */
typedef struct inline_arg {
  atomic_long *ran;
  long pad[WEFT_OP_ARG_INLINE / sizeof(long) - 1];
} inline_arg;
_Static_assert(sizeof(inline_arg) == WEFT_OP_ARG_INLINE, "the largest inline argument");

static atomic_long inline_drops;

static int inline_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  atomic_fetch_add(((inline_arg *)arg)->ran, 1);
  return 0;
}

static void inline_drop(void *arg)
{
  (void)arg;
  atomic_fetch_add(&inline_drops, 1);
}

static long arg_allocations(const char *kind, long *pushed)
{
  te t = te_new(kind, 2, 0);
  enum { NV = 16 };
  weft_var *v[NV];
  for (int i = 0; i < NV; i++)
    v[i] = te_var(t.eng);
  atomic_long ran = 0;
  atomic_store(&inline_drops, 0);
  inline_arg a = {&ran, {0}};
  long per = tu_scaled(20000, 5000);
  uint64_t rs = 11;
  te_gate g = {0};
  for (int b = 0; b < 8; b++) {
    if (b == 3)
      weft_test_fail_alloc_at(0); /* three warm-up batches, then count */
    if (b == 0 && strcmp(kind, "threaded") == 0)
      gate_shut(t.eng, v, NV, &g); /* the first one all in flight (see batch) */
    for (long i = 0; i < per; i++) {
      uint64_t x = tu_rand(&rs);
      weft_op_desc d = te_desc(inline_fn, NULL);
      d.reads = (weft_var *const[]){v[x % NV]};
      d.num_reads = 1;
      d.writes = (weft_var *const[]){v[(x >> 8) % NV]};
      d.num_writes = 1;
      int rc = weft_push_arg(t.eng, &d, &a, sizeof a, inline_drop);
      cr_assert_eq(rc, 0, "push_arg = %d", rc);
    }
    if (b == 0 && strcmp(kind, "threaded") == 0) {
      cr_assert_eq(atomic_load(&ran), 0, "an operator ran ahead of the gate");
      gate_open(&g);
    }
    cr_assert_eq(weft_wait_all(t.eng), 0);
  }
  cr_assert_eq(atomic_load(&g.timed_out), 0, "the gate timed out");
  long calls = weft_test_alloc_calls();
  cr_assert_eq(te_free(&t), 0);
  *pushed = 8 * per;
  cr_assert_eq(atomic_load(&ran), *pushed);
  cr_assert_eq(atomic_load(&inline_drops), *pushed, "each argument dropped once");
  return calls;
}

Test(alloc, inline_arguments_allocate_nothing, .init = setup, .timeout = TU_TIMEOUT(60))
{
  const char *kinds[] = {"threaded", "naive"};
  for (int k = 0; k < 2; k++) {
    long pushed;
    long calls = arg_allocations(kinds[k], &pushed);
    cr_log_info("%s: %ld allocations in %ld pushes of %d-byte arguments", kinds[k], calls,
                pushed, WEFT_OP_ARG_INLINE);
    cr_assert_leq(calls, MAX_SLABS, "%s: %ld allocations in the steady state of weft_push_arg",
                  kinds[k], calls);
  }
}

/* ---------------------------------------------- pushers' own caches */

/* A thread outside the pool that pushes keeps a cache of op blocks of its
 * own (common/objstore.h); when it exits, or turns to another engine, the
 * cache goes back to its engine. Without that, each short-lived pusher or
 * each switch would strand up to two magazines of blocks, and a program
 * that starts a thread per request would grow without bound. */
typedef struct pusher_arg {
  weft_engine *eng;
  weft_var *v;
  atomic_long *ran;
  long n;
} pusher_arg;

static void *pusher(void *arg)
{
  pusher_arg *p = arg;
  for (long i = 0; i < p->n; i++) {
    weft_op_desc d = te_desc(noop_fn, p->ran);
    d.writes = &p->v;
    d.num_writes = 1;
    TU_CHECK(weft_push(p->eng, &d) == 0, "push from a short-lived thread");
  }
  return NULL;
}

static void short_lived(weft_engine *e, weft_var *v, atomic_long *ran, int threads)
{
  for (int k = 0; k < threads; k++) {
    pusher_arg p = {e, v, ran, 10}; /* a few pushes: most of its magazine left over */
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, pusher, &p), 0);
    te_join(t);
    cr_assert_eq(weft_wait_all(e), 0);
  }
}

Test(alloc, short_lived_pusher_threads_give_their_cache_back, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  te t = te_new("threaded", 2, 0);
  weft_var *v = te_var(t.eng);
  atomic_long ran = 0;
  short_lived(t.eng, v, &ran, 8); /* warm-up */
  weft_test_fail_alloc_at(0);      /* resets the count */
  short_lived(t.eng, v, &ran, 300); /* ~120 blocks stranded each would be ~170 slabs */
  long calls = weft_test_alloc_calls();
  cr_assert_leq(calls, MAX_SLABS, "%ld allocations for 300 short-lived pushers", calls);
  cr_assert_eq(atomic_load(&ran), 308 * 10);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

Test(alloc, a_pusher_alternating_engines, .init = setup, .timeout = TU_TIMEOUT(60))
{
  te a = te_new("threaded", 1, 0), b = te_new("threaded", 1, 0);
  weft_var *va = te_var(a.eng), *vb = te_var(b.eng);
  atomic_long ran = 0;
  for (int round = 0; round < 2; round++) {
    if (round == 1)
      weft_test_fail_alloc_at(0); /* after a warm-up round: resets the count */
    for (int s = 0; s < 200; s++) {
      pusher_arg p = {s % 2 ? b.eng : a.eng, s % 2 ? vb : va, &ran, 300};
      pusher(&p); /* this thread, switching engines every 300 pushes */
      /* At most 300 in flight: without the wait, how many pile up depends
       * on how far this thread outruns the workers, and a measured round
       * that outran the warm-up takes new slabs for blocks that are
       * recycled, not stranded (a busy CI machine did, 123). */
      cr_assert_eq(weft_wait_all(p.eng), 0);
    }
    cr_assert_eq(weft_wait_all(a.eng), 0);
    cr_assert_eq(weft_wait_all(b.eng), 0);
  }
  long calls = weft_test_alloc_calls();
  cr_assert_leq(calls, MAX_SLABS, "%ld allocations for 200 switches between two engines", calls);
  cr_assert_eq(atomic_load(&ran), 2 * 200 * 300);
  cr_assert_eq(te_free(&a), 0);
  cr_assert_eq(te_free(&b), 0);
  tu_assert_no_errors();
}
