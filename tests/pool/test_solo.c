/* SPDX-License-Identifier: MIT */
/*
 * The solo injection queues (src/pool/solo.{h,c}): the first
 * WEFT_SOLO_QUEUES threads outside the pool that submit each own one and
 * fill it without a CAS; other outside threads use the shared injection
 * queue; an owner's exit gives its queue back, also after its pool is gone
 * (the registry of live pools), a thread notes claims in up to
 * WEFT_SOLO_CLAIMS pools at once, and a thread that declines (the
 * library's GPU workers) never claims.
 *
 * Checked through the internals (who owns pool->solo_owner[]) and through
 * what runs: every task submitted, by the owners and by the others at
 * once, runs exactly once.
 */
#include "../common/testutil.h"
#include "common/tunables.h"
#include "pool/core.h"
#include "pool/pool_ext.h"
#include "weft/weft.h"

static weft_pool *new_pool(int threads)
{
  weft_pool_config cfg;
  weft_pool_config_default(&cfg);
  cfg.num_threads = threads;
  weft_pool *p = NULL;
  cr_assert_eq(weft_pool_create(&p, &cfg), 0);
  return p;
}

/* How many of p's solo queues a thread owns. */
static int nowned(weft_pool *p)
{
  int n = 0;
  for (int i = 0; i < WEFT_SOLO_QUEUES; i++)
    n += atomic_load(&p->solo_owner[i]) != NULL;
  return n;
}

static bool owned(weft_pool *p)
{
  return nowned(p) > 0;
}

/* more submitters than solo queues: some use the shared queue */
enum { NSUB = WEFT_SOLO_QUEUES + 2, PER = 20000 };

static atomic_uchar *hits;

static int hit_fn(void *arg)
{
  atomic_fetch_add(&hits[(uintptr_t)arg], 1);
  return 0;
}

typedef struct submitter {
  weft_pool *pool;
  int who;
  int rc;
  bool saw_owner; /* after its first submission: some thread owns a queue */
  /* all at once: each has submitted, and none has exited (NSUB), then
   * each has looked at the owners (2 * NSUB) */
  atomic_int *arrived;
  int owners_seen; /* queues owned then */
} submitter;

static void *submit_many(void *arg)
{
  submitter *s = arg;
  for (int i = 0; i < PER; i++) {
    int rc = weft_pool_submit(s->pool, hit_fn, (void *)(uintptr_t)(s->who * PER + i));
    if (rc) {
      s->rc = rc;
      return NULL;
    }
    if (i == 0) {
      s->saw_owner = owned(s->pool);
      atomic_fetch_add(s->arrived, 1);
      /* >=: the first ones through add their second arrival meanwhile */
      TU_CHECK(TU_WAIT_UNTIL(atomic_load(s->arrived) >= NSUB, TU_DEADLINE_S),
               "submitter %d: not every submitter arrived", s->who);
      s->owners_seen = nowned(s->pool);
      /* none goes on (and exits, giving its queue back) before all looked */
      atomic_fetch_add(s->arrived, 1);
      TU_CHECK(TU_WAIT_UNTIL(atomic_load(s->arrived) == 2 * NSUB, TU_DEADLINE_S),
               "submitter %d: not every submitter looked at the owners", s->who);
    }
  }
  return NULL;
}

Test(solo, the_owners_and_the_shared_queue_run_every_task_exactly_once, .timeout = TU_TIMEOUT(60))
{
  hits = calloc(NSUB * PER, sizeof *hits);
  cr_assert_not_null(hits);
  weft_pool *pool = new_pool(2);
  submitter s[NSUB];
  pthread_t t[NSUB];
  atomic_int arrived = 0;
  for (int i = 0; i < NSUB; i++) {
    s[i] = (submitter){.pool = pool, .who = i, .arrived = &arrived};
    cr_assert_eq(pthread_create(&t[i], NULL, submit_many, &s[i]), 0);
  }
  for (int i = 0; i < NSUB; i++) {
    cr_assert_eq(pthread_join(t[i], NULL), 0);
    cr_assert_eq(s[i].rc, 0, "submitter %d: %d", i, s[i].rc);
    cr_assert(s[i].saw_owner, "submitter %d: nobody owned a solo queue", i);
    /* every queue taken while they all lived: one each for the first
     * WEFT_SOLO_QUEUES, the shared queue for the rest */
    cr_assert_eq(s[i].owners_seen, WEFT_SOLO_QUEUES, "submitter %d: %d of %d queues owned", i,
                 s[i].owners_seen, WEFT_SOLO_QUEUES);
  }
  cr_assert_not(owned(pool), "the owners' exits gave the queues back");
  cr_assert_eq(weft_pool_destroy(pool), 0); /* runs everything submitted */
  for (long i = 0; i < NSUB * PER; i++)
    cr_assert_eq(atomic_load(&hits[i]), 1, "task %ld ran %d times", i, atomic_load(&hits[i]));
  free(hits);
}

typedef struct holder {
  weft_pool *pool[WEFT_SOLO_CLAIMS + 2];
  int npools;
  atomic_int step, done_step;
  int rc;
  bool owned_after[WEFT_SOLO_CLAIMS + 2];
} holder;

static int nop_fn(void *arg)
{
  (void)arg;
  return 0;
}

/* Submits once to each pool, notes who owns what, then waits to exit. */
static void *claim_and_hold(void *arg)
{
  holder *h = arg;
  for (int i = 0; i < h->npools; i++) {
    int rc = weft_pool_submit(h->pool[i], nop_fn, NULL);
    if (rc && !h->rc)
      h->rc = rc;
    h->owned_after[i] = owned(h->pool[i]);
  }
  atomic_store(&h->done_step, 1);
  TU_WAIT_UNTIL(atomic_load(&h->step) == 1, TU_DEADLINE_S);
  return NULL; /* the exit gives back the claims of pools still alive */
}

Test(solo, an_exit_gives_claims_back_and_skips_pools_already_destroyed, .timeout = TU_TIMEOUT(60))
{
  holder h = {.npools = WEFT_SOLO_CLAIMS + 2};
  for (int i = 0; i < h.npools; i++)
    h.pool[i] = new_pool(1);
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, claim_and_hold, &h), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&h.done_step) == 1, TU_DEADLINE_S));
  cr_assert_eq(h.rc, 0);
  /* It owns the queue of the first WEFT_SOLO_CLAIMS pools, and uses the
   * shared queue of the rest (no room to note more claims). */
  for (int i = 0; i < h.npools; i++)
    cr_assert_eq(h.owned_after[i], i < WEFT_SOLO_CLAIMS, "pool %d: owned %d", i,
                 h.owned_after[i]);
  /* Half of them go while it still lives: its exit must not touch them
   * (ASan would see it), and must give the others back. */
  for (int i = 0; i < h.npools; i += 2) {
    cr_assert_eq(weft_pool_destroy(h.pool[i]), 0);
    h.pool[i] = NULL;
  }
  atomic_store(&h.step, 1);
  cr_assert_eq(pthread_join(t, NULL), 0);
  for (int i = 1; i < h.npools; i += 2) {
    cr_assert_not(owned(h.pool[i]), "pool %d: given back at the exit", i);
    /* and the next thread (this one) claims it */
    cr_assert_eq(weft_pool_submit(h.pool[i], nop_fn, NULL), 0);
    cr_assert(owned(h.pool[i]), "pool %d: claimed by the next thread", i);
    cr_assert_eq(weft_pool_destroy(h.pool[i]), 0);
  }
}

Test(solo, a_thread_claims_again_once_its_pools_are_gone, .timeout = TU_TIMEOUT(60))
{
  /* More pools, one after another, than a thread notes claims in: the
   * notes of destroyed pools make room. */
  for (int i = 0; i < 3 * WEFT_SOLO_CLAIMS; i++) {
    weft_pool *p = new_pool(1);
    cr_assert_eq(weft_pool_submit(p, nop_fn, NULL), 0);
    cr_assert(owned(p), "pool %d: the submitting thread owns its solo queue", i);
    cr_assert_eq(weft_pool_destroy(p), 0);
  }
}

static void *decline_and_submit(void *arg)
{
  weft_pool *pool = arg;
  weft_pool_solo_decline(); /* as a GPU stream worker does */
  for (int i = 0; i < 100; i++)
    if (weft_pool_submit(pool, nop_fn, NULL))
      return (void *)1;
  return owned(pool) ? (void *)2 : NULL;
}

Test(solo, a_thread_that_declines_leaves_the_queue_to_the_next, .timeout = TU_TIMEOUT(30))
{
  weft_pool *pool = new_pool(1);
  pthread_t t;
  void *res = (void *)3;
  cr_assert_eq(pthread_create(&t, NULL, decline_and_submit, pool), 0);
  cr_assert_eq(pthread_join(t, &res), 0);
  cr_assert_null(res, "the declining thread: %s",
                 res == (void *)1 ? "a submit failed" : "it claimed the queue");
  cr_assert_eq(weft_pool_submit(pool, nop_fn, NULL), 0);
  cr_assert(owned(pool), "the next submitting thread claims the queue");
  cr_assert_eq(weft_pool_destroy(pool), 0);
}
