/* SPDX-License-Identifier: MIT */
/*
 * The solo injection queues (src/pool/solo.{h,c}): the first
 * WEFT_SOLO_QUEUES threads outside the pool that submit each own one and
 * fill it without a CAS; other outside threads use the shared injection
 * queue; an owner's exit gives its queue back, also after its pool is gone
 * (the registry of live pools), a thread notes claims in up to
 * WEFT_SOLO_CLAIMS pools at once, a thread that declines (the library's
 * GPU workers) never claims, and an outside thread's wait runs the tasks of
 * its own queue before anyone else's.
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

/* An outside thread's wait runs its own tasks first: with the only worker
 * held, B spawns its tasks (its solo queue, claimed before A's) and does
 * not wait yet; A spawns its own and waits: A runs its own, none of B's,
 * whose queue a helper would look at before A's. Then B's wait runs its
 * own; every task runs once. */
enum { OWN_N = 10 };

typedef struct own_run {
  pthread_t waiter; /* the thread that waits for this task's group */
  atomic_int ran, on_other; /* runs; runs on a thread that is neither its waiter nor the worker */
} own_run;

static _Atomic pthread_t worker_thread;

typedef struct own_gate {
  atomic_int started, open;
} own_gate;

static int own_gate_fn(void *arg)
{
  own_gate *g = arg;
  atomic_store(&worker_thread, pthread_self());
  atomic_store(&g->started, 1);
  TU_CHECK(TU_WAIT_UNTIL(atomic_load(&g->open), TU_DEADLINE_S), "the gate never opened");
  return 0;
}

static int own_task_fn(void *arg)
{
  own_run *r = arg;
  atomic_fetch_add(&r->ran, 1);
  if (!pthread_equal(pthread_self(), r->waiter) &&
      !pthread_equal(pthread_self(), atomic_load(&worker_thread)))
    atomic_fetch_add(&r->on_other, 1);
  return 0;
}

typedef struct own_thread {
  weft_pool *pool;
  own_run runs[OWN_N];
  atomic_int *spawned, *go; /* B: has spawned; may wait */
  int rc;
} own_thread;

static void *spawn_then_wait(void *arg)
{
  own_thread *o = arg;
  weft_group g;
  weft_group_init(&g, o->pool);
  for (int i = 0; i < OWN_N; i++) {
    o->runs[i].waiter = pthread_self();
    if (weft_group_spawn(&g, own_task_fn, &o->runs[i]))
      o->rc = -1;
  }
  if (o->spawned) {
    atomic_store(o->spawned, 1);
    TU_CHECK(TU_WAIT_UNTIL(atomic_load(o->go), TU_DEADLINE_S), "B was never let wait");
  }
  int rc = weft_group_wait(&g);
  if (rc && !o->rc)
    o->rc = rc;
  return NULL;
}

Test(solo, an_outside_wait_runs_its_own_tasks_first, .timeout = TU_TIMEOUT(60))
{
  weft_pool *p = new_pool(1);
  own_gate gate = {0};
  cr_assert_eq(weft_pool_submit(p, own_gate_fn, &gate), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&gate.started), TU_DEADLINE_S));
  atomic_int spawned = 0, go = 0;
  static own_thread a, b;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  a.pool = b.pool = p;
  b.spawned = &spawned;
  b.go = &go;
  pthread_t tb, ta;
  cr_assert_eq(pthread_create(&tb, NULL, spawn_then_wait, &b), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&spawned), TU_DEADLINE_S));
  cr_assert_eq(pthread_create(&ta, NULL, spawn_then_wait, &a), 0);
  cr_assert_eq(pthread_join(ta, NULL), 0); /* A's wait returned: its tasks ran */
  int b_ran = 0, a_ran = 0;
  for (int i = 0; i < OWN_N; i++) {
    b_ran += atomic_load(&b.runs[i].ran);
    a_ran += atomic_load(&a.runs[i].ran);
  }
  cr_assert_eq(a_ran, OWN_N, "A's wait returned with %d of its %d tasks run", a_ran, OWN_N);
  cr_assert_eq(b_ran, 0, "A's wait ran %d of B's tasks (the worker is held, B waits later)",
               b_ran);
  atomic_store(&go, 1);
  atomic_store(&gate.open, 1);
  cr_assert_eq(pthread_join(tb, NULL), 0);
  for (int i = 0; i < OWN_N; i++) {
    cr_assert_eq(atomic_load(&b.runs[i].ran), 1, "B's task %d ran %d times", i,
                 atomic_load(&b.runs[i].ran));
    cr_assert_eq(atomic_load(&a.runs[i].ran), 1);
    cr_assert_eq(atomic_load(&a.runs[i].on_other), 0, "A's task %d ran on B's thread", i);
  }
  cr_assert_eq(a.rc, 0);
  cr_assert_eq(b.rc, 0);
  cr_assert_eq(weft_pool_destroy(p), 0);
  tu_assert_no_errors();
}
