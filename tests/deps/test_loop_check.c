/* SPDX-License-Identifier: MIT */
/*
 * The loop check's list of waits being checked (src/deps/wait_cycle.h),
 * through its test hooks: a check that finds its loop only through a wait
 * listed before it, not yet registered, must not answer WEFT_EDEADLK on
 * the strength of it when that wait never queues.
 *
 * Two workers. X reads a and writes x; P reads a and writes p: both run at
 * once (their reads of a are granted together).
 *   - On X's thread: X runs Q (writes q) nested in a group wait; Q waits on
 *     a, a write behind X's granted read, and X is below Q on its thread:
 *     WEFT_EDEADLK, rightly. Q's wait is held (listed, its check not run
 *     yet) while the rest happens.
 *   - On P's thread: P runs Z (writes z) nested in a group wait; Z waits on
 *     x. Its check holds P's granted read of a, so Q's listed wait, which
 *     would queue behind it, holds Q and X, which writes x: a loop, if Q's
 *     wait ever queued. It does not (its own check answers WEFT_EDEADLK),
 *     so X finishes once Q returns, and Z's wait returns 0 after X.
 * The recheck hook says that Z's first check found that loop and checks
 * again. Before that, at the end of Z's first check (the unpin hook), Q's
 * check is let go: it answers WEFT_EDEADLK, but Q's wait may not return
 * while Z's check still reads its roots (Q, X), pinned: the hook gives it
 * time to (were it to return, X would finish and its block be recycled
 * under the check) and records whether it did.
 */
#include "engine_util.h"

#include "deps/wait_cycle.h"

static void setup(void)
{
  te_setup();
}

typedef struct lc {
  weft_engine *eng;
  weft_pool *pool;
  weft_var *a, *x, *p, *q, *z;
  atomic_int x_running, p_running, q_listed, release_q, z_returned, rechecks;
  atomic_int q_ran, z_ran, unpins, q_ran_while_pinned;
  int rc_q, rc_z;
} lc;

static lc *the_lc;
static _Thread_local bool in_q; /* this thread is in Q's wait */

static void listed_hook(void)
{
  lc *c = the_lc;
  if (!in_q)
    return;
  atomic_store(&c->q_listed, 1);
  TU_CHECK(TU_WAIT_UNTIL(atomic_load(&c->release_q) || atomic_load(&c->z_returned),
                         TU_DEADLINE_S),
           "Q's check was never let go");
}

static void unpin_hook(void)
{
  lc *c = the_lc;
  atomic_fetch_add(&c->unpins, 1);
  atomic_store(&c->release_q, 1);
  /* Bounded: a correct engine keeps Q in its wait, and this only waits. */
  if (TU_WAIT_UNTIL(atomic_load(&c->q_ran), 0.3 * WEFT_TEST_TIMEOUT_MULT))
    atomic_store(&c->q_ran_while_pinned, 1);
}

static void recheck_hook(void)
{
  atomic_fetch_add(&the_lc->rechecks, 1);
  atomic_store(&the_lc->release_q, 1);
}

static int leaf(void *arg)
{
  (void)arg;
  return 0;
}

static int q_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  lc *c = arg;
  in_q = true;
  c->rc_q = weft_var_wait(c->eng, c->a);
  in_q = false;
  atomic_store(&c->q_ran, 1);
  return 0;
}

static int z_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  lc *c = arg;
  c->rc_z = weft_var_wait(c->eng, c->x);
  atomic_store(&c->z_returned, 1);
  atomic_store(&c->z_ran, 1);
  return 0;
}

/* Spawns a leaf, then pushes fn (writing w), then waits for the group: the
 * newest task first, fn runs nested here (the other worker is busy). */
static void run_nested(lc *c, weft_op_fn fn, weft_var *w)
{
  weft_group g;
  weft_group_init(&g, c->pool);
  TU_CHECK(weft_group_spawn(&g, leaf, NULL) == 0, "spawn");
  TU_CHECK(te_push(c->eng, fn, c, TE_NONE, TE_V(w), 0) == 0, "push");
  TU_CHECK(weft_group_wait(&g) == 0, "group wait");
}

static int x_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  lc *c = arg;
  atomic_store(&c->x_running, 1);
  TU_CHECK(TU_WAIT_UNTIL(atomic_load(&c->p_running), TU_DEADLINE_S), "P never ran beside X");
  run_nested(c, q_fn, c->q);
  return 0;
}

static int p_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  lc *c = arg;
  atomic_store(&c->p_running, 1);
  TU_CHECK(TU_WAIT_UNTIL(atomic_load(&c->q_listed), TU_DEADLINE_S), "Q's wait never listed");
  run_nested(c, z_fn, c->z);
  return 0;
}

Test(loop_check, a_loop_through_a_listed_wait_that_never_queues_is_no_edeadlk, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  te t = te_new("threaded", 2, 0);
  lc *c = calloc(1, sizeof *c); /* leaked on a hang */
  cr_assert_not_null(c);
  c->eng = t.eng;
  c->pool = t.pool;
  c->rc_q = c->rc_z = 12345;
  c->a = te_var(t.eng);
  c->x = te_var(t.eng);
  c->p = te_var(t.eng);
  c->q = te_var(t.eng);
  c->z = te_var(t.eng);
  the_lc = c;
  weft_test_loop_listed = listed_hook;
  weft_test_loop_recheck = recheck_hook;
  weft_test_loop_unpin = unpin_hook;
  cr_assert_eq(te_push(t.eng, x_fn, c, TE_V(c->a), TE_V(c->x), 0), 0);
  cr_assert_eq(te_push(t.eng, p_fn, c, TE_V(c->a), TE_V(c->p), 0), 0);
  bool ended = TU_WAIT_UNTIL(atomic_load(&c->q_ran) && atomic_load(&c->z_ran), TU_DEADLINE_S);
  cr_assert(ended, "Q returned: %d, Z returned: %d", atomic_load(&c->q_ran),
            atomic_load(&c->z_ran));
  cr_assert_eq(weft_wait_all(t.eng), 0);
  weft_test_loop_listed = NULL;
  weft_test_loop_recheck = NULL;
  weft_test_loop_unpin = NULL;
  tu_assert_no_errors();
  cr_assert_eq(c->rc_q, WEFT_EDEADLK, "Q's wait on a, X below it = %d (%s)", c->rc_q,
               weft_strerror(c->rc_q));
  cr_assert_eq(c->rc_z, 0, "Z's wait on x = %d (%s): X finishes once Q returned", c->rc_z,
               weft_strerror(c->rc_z));
  cr_assert_eq(atomic_load(&c->unpins), 1, "checks that pinned Q's wait: %d",
               atomic_load(&c->unpins));
  cr_assert_not(atomic_load(&c->q_ran_while_pinned),
                "Q's wait returned while Z's check still read its roots");
  /* Not vacuous: Z's first check did find the loop through Q's listed wait. */
  cr_assert_eq(atomic_load(&c->rechecks), 1, "Z's check ran again %d times",
               atomic_load(&c->rechecks));
  free(c);
  cr_assert_eq(te_free(&t), 0);
}
