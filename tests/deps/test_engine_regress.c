/* SPDX-License-Identifier: MIT */
/*
 * Regressions of the engine's hand-offs with the pool, each a test that
 * failed before its fix:
 *   A signal from a pool task (sig_): a weft_done_signal from a user's pool
 *       task left the drain check of its completion for "between tasks",
 *       i.e. until that task returned; a task that then waits for the
 *       thread in weft_wait_all deadlocked.
 *   Pushes at the cap (cap_): a push from inside an operator at
 *       WEFT_MAX_INFLIGHT helps run operators, which may push and help in
 *       turn: the depth was unbounded (a chain of such pushes overflowed the
 *       worker's stack).
 *   Kept successors (kept_): a worker ran an operator's kept successor,
 *       then that one's, for as long as the chain went on: an operator
 *       pushed from another thread waited in the injection queue until the
 *       chain ended (on 16 cores, weft_wait_all against six outside
 *       pushers, each feeding its chain faster than the one worker ran it,
 *       took over a minute).
 * And the engine config's reserved room: non-zero is refused.
 */
#include "engine_util.h"

static void setup(void)
{
  te_setup();
}

/* ------------------------------------------ a signal from a pool task */

typedef struct sig_state {
  weft_engine *eng;
  _Atomic(weft_done *) token; /* the async op's token, once its async_fn ran */
  atomic_int main_done;       /* main returned from weft_wait_all */
  atomic_int task_timed_out;  /* the pool task gave up waiting for main */
  atomic_int task_finished;
} sig_state;

static void sig_async(const weft_run_ctx *rc, void *arg, weft_done *done)
{
  (void)rc;
  atomic_store(&((sig_state *)arg)->token, done); /* signalled later, by the pool task */
}

/* A user's pool task (not an operator): signals the async op, then waits
 * for main to come back from weft_wait_all, which waited for that op. */
static int sig_task(void *arg)
{
  sig_state *s = arg;
  bool have = TU_WAIT_UNTIL(atomic_load(&s->token) != NULL, TU_TIMEOUT(10));
  TU_CHECK(have, "the async operator never started");
  if (!have)
    return 0;
  tu_sleep_us(100 * 1000); /* let main reach weft_wait_all (only makes the bug likely) */
  weft_done_signal(atomic_load(&s->token), 0);
  if (!TU_WAIT_UNTIL(atomic_load(&s->main_done), TU_TIMEOUT(5)))
    atomic_store(&s->task_timed_out, 1); /* main never left weft_wait_all */
  atomic_store(&s->task_finished, 1);
  return 0;
}

Test(engine_regress, signal_from_pool_task_does_not_hold_wait_all, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  for (int round = 0; round < 3; round++) {
    te t = te_new("threaded", 2, -1);
    sig_state s = {.eng = t.eng};
    atomic_init(&s.token, NULL);
    weft_var *v = te_var(t.eng);
    weft_op_desc d = te_adesc(sig_async, &s);
    d.writes = &v;
    d.num_writes = 1;
    cr_assert_eq(weft_push(t.eng, &d), 0);
    cr_assert_eq(weft_pool_submit(t.pool, sig_task, &s), 0);
    cr_assert(TU_WAIT_UNTIL(atomic_load(&s.token) != NULL, TU_TIMEOUT(10)),
              "the async operator never started");
    int rc = weft_wait_all(t.eng);
    atomic_store(&s.main_done, 1);
    cr_assert_eq(rc, 0, "weft_wait_all = %d", rc);
    cr_assert(TU_WAIT_UNTIL(atomic_load(&s.task_finished), TU_TIMEOUT(10)));
    cr_assert_eq(atomic_load(&s.task_timed_out), 0,
                 "round %d: weft_wait_all returned only after the pool task that signalled "
                 "the operator gave up waiting for it (the drain check was deferred)",
                 round);
    cr_assert_eq(te_free(&t), 0);
    tu_assert_no_errors();
  }
}

/* -------------------------------------------------- pushes at the cap */

enum { CAP_CHAIN = 100000 };

typedef struct cap_state {
  weft_engine *eng;
  atomic_long ran;  /* chain operators run */
  atomic_long noops;
  atomic_long next; /* the next chain index to push */
} cap_state;

static cap_state cap_s;

static int cap_noop(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  (void)arg;
  atomic_fetch_add(&cap_s.noops, 1);
  return 0;
}

/* Pushes the next link of the chain, then another operator: that second
 * push finds the cap reached and helps, which runs the link just pushed,
 * which does the same, one level deeper each time (without a bound). */
static int cap_link(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  (void)arg;
  atomic_fetch_add(&cap_s.ran, 1);
  if (atomic_fetch_add(&cap_s.next, 1) + 1 < CAP_CHAIN) {
    weft_op_desc d = te_desc(cap_link, NULL);
    TU_CHECK(weft_push(cap_s.eng, &d) == 0, "push of the next link failed");
    weft_op_desc n = te_desc(cap_noop, NULL);
    TU_CHECK(weft_push(cap_s.eng, &n) == 0, "push of a no-op failed");
  }
  return 0;
}

Test(engine_regress, chain_of_pushes_at_the_cap_keeps_the_stack_bounded, .init = setup,
     .timeout = TU_TIMEOUT(120))
{
  for (int threads = 1; threads <= 2; threads++) {
    te t = te_new("threaded", threads, 1);
    cap_s.eng = t.eng;
    atomic_store(&cap_s.ran, 0);
    atomic_store(&cap_s.noops, 0);
    atomic_store(&cap_s.next, 0);
    weft_op_desc d = te_desc(cap_link, NULL);
    cr_assert_eq(weft_push(t.eng, &d), 0);
    cr_assert_eq(weft_wait_all(t.eng), 0);
    cr_assert_eq(atomic_load(&cap_s.ran), CAP_CHAIN, "%d threads: %ld of %d links ran", threads,
                 atomic_load(&cap_s.ran), CAP_CHAIN);
    cr_assert_eq(atomic_load(&cap_s.noops), CAP_CHAIN - 1);
    cr_assert_eq(te_free(&t), 0);
    tu_assert_no_errors();
  }
}

/* ---------------------------------------------------- kept successors */

typedef struct kept_state {
  te_chain_mark m; /* chain operators run; where the outsider found it */
  weft_engine *eng;
  weft_var *a;
  long cap; /* the chain ends here at the latest */
} kept_state;

/* Each link pushes the next on the same var: the next waits for this one
 * and is released, kept for this worker, when it finishes. */
static int kept_link(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  kept_state *s = arg;
  long n = atomic_fetch_add(&s->m.links, 1) + 1;
  if (n < s->cap && atomic_load(&s->m.links_at) < 0)
    TU_CHECK(te_push(s->eng, kept_link, s, TE_NONE, TE_V(s->a), 0) == 0, "the chain's push failed");
  return 0;
}

Test(engine_regress, a_chain_of_kept_successors_lets_outside_pushes_in, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  for (int threads = 1; threads <= 2; threads++) {
    te t = te_new(NULL, threads, 0);
    kept_state s = {{0, -1}, t.eng, te_var(t.eng), 5 * 1000 * 1000};
    weft_var *b = te_var(t.eng);
    /* threads chains, so that every worker has one to run */
    for (int k = 0; k < threads; k++)
      cr_assert_eq(te_push(t.eng, kept_link, &s, TE_NONE, TE_V(k ? te_var(t.eng) : s.a), 0), 0);
    cr_assert(TU_WAIT_UNTIL(atomic_load(&s.m.links) > 1000, TU_DEADLINE_S),
              "the chain did not start");
    cr_assert_eq(te_push(t.eng, te_mark_fn, &s.m, TE_NONE, TE_V(b), 0), 0);
    cr_assert_eq(weft_var_wait(t.eng, b), 0);
    cr_assert_eq(weft_wait_all(t.eng), 0);
    long at = atomic_load(&s.m.links_at);
    cr_assert_lt(at, s.cap, "%d threads: the outside push ran only once the chain of %ld had ended",
                 threads, s.cap);
    cr_assert_eq(te_free(&t), 0);
    tu_assert_no_errors();
  }
}

/* ------------------------------------------------------------ reserved */

Test(engine_regress, config_reserved_must_be_zero, .init = setup)
{
  weft_engine_config cfg;
  memset(&cfg, 0xab, sizeof cfg);
  weft_engine_config_default(&cfg);
  for (size_t k = 0; k < sizeof cfg.reserved / sizeof cfg.reserved[0]; k++)
    cr_assert_null(cfg.reserved[k], "weft_engine_config_default left reserved[%zu] set", k);
  weft_pool *pool = tu_pool(1, -1);
  for (size_t k = 0; k < sizeof cfg.reserved / sizeof cfg.reserved[0]; k++) {
    weft_engine_config_default(&cfg);
    cfg.pool = pool;
    cfg.reserved[k] = &cfg;
    weft_engine *eng = (weft_engine *)&cfg;
    cr_assert_eq(weft_engine_create(&eng, &cfg), WEFT_EINVAL, "reserved[%zu] set", k);
    cr_assert_null(eng);
  }
  weft_engine_config_default(&cfg);
  cfg.pool = pool;
  weft_engine *eng = NULL;
  cr_assert_eq(weft_engine_create(&eng, &cfg), 0);
  cr_assert_eq(weft_engine_destroy(eng), 0);
  tu_destroy(pool);
}
