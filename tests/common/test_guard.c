/* SPDX-License-Identifier: MIT */
/*
 * Shutdown guards (src/common/guard.h): entries and leaves, refusal once
 * closed, a close that waits for every thread inside, nesting past the
 * fast depth, slots given back by exiting threads, and a stress run that
 * checks the guard's promise: once weft_guard_wait_empty returns, no thread
 * is inside and none gets in with refuse.
 */
#include "../common/testutil.h"

#include "common/guard.h"

Test(guard, enter_leave_and_refusal, .timeout = TU_TIMEOUT(30))
{
  weft_guard g;
  weft_guard_init(&g);
  int t = weft_guard_enter(&g, true);
  cr_assert_neq(t, WEFT_GUARD_REFUSED);
  weft_guard_leave(&g, t);
  weft_guard_close(&g);
  cr_assert_eq(weft_guard_enter(&g, true), WEFT_GUARD_REFUSED, "a closed guard refuses");
  t = weft_guard_enter(&g, false); /* a waiter that must get in (a group wait) */
  cr_assert_neq(t, WEFT_GUARD_REFUSED, "a closed guard admits who asks not to be refused");
  weft_guard_leave(&g, t);
  weft_guard_wait_empty(&g); /* nobody inside: returns */
}

/* One thread inside for a while: the closer's wait must outlast it. */
typedef struct holder {
  weft_guard *g;
  atomic_int entered, left;
} holder;

static void *hold(void *arg)
{
  holder *h = arg;
  int t = weft_guard_enter(h->g, true);
  TU_CHECK(t != WEFT_GUARD_REFUSED, "entry before the close");
  atomic_store(&h->entered, 1);
  struct timespec ts = {0, 50 * 1000 * 1000};
  nanosleep(&ts, NULL);
  atomic_store(&h->left, 1);
  weft_guard_leave(h->g, t);
  return NULL;
}

Test(guard, wait_empty_waits_for_a_thread_inside, .timeout = TU_TIMEOUT(30))
{
  weft_guard g;
  weft_guard_init(&g);
  holder h = {&g, 0, 0};
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, hold, &h), 0);
  TU_WAIT_UNTIL(atomic_load(&h.entered), TU_DEADLINE_S);
  weft_guard_close(&g);
  weft_guard_wait_empty(&g);
  cr_assert(atomic_load(&h.left), "the wait returned while a thread was inside");
  pthread_join(th, NULL);
  tu_assert_no_errors();
}

Test(guard, nesting_past_the_fast_depth, .timeout = TU_TIMEOUT(30))
{
  enum { N = 3 * WEFT_GUARD_DEPTH };
  weft_guard g[N];
  int t[N];
  for (int i = 0; i < N; i++) {
    weft_guard_init(&g[i]);
    t[i] = weft_guard_enter(&g[i], true);
    cr_assert_neq(t[i], WEFT_GUARD_REFUSED);
  }
  cr_assert_eq(t[N - 1], WEFT_GUARD_SLOW, "past the depth, entries count the slow way");
  for (int i = N; i-- > 0;)
    weft_guard_leave(&g[i], t[i]);
  for (int i = 0; i < N; i++) {
    weft_guard_close(&g[i]);
    weft_guard_wait_empty(&g[i]); /* every level left: no wait */
    cr_assert_eq(atomic_load(&g[i].slow), 0);
  }
  /* The fast depth is free again: the next entry is fast. */
  weft_guard h;
  weft_guard_init(&h);
  int u = weft_guard_enter(&h, true);
  if (t[0] == WEFT_GUARD_FAST) /* slots in use here (membarrier available) */
    cr_assert_eq(u, WEFT_GUARD_FAST);
  weft_guard_leave(&h, u);
}

/* The promise, under contention: entrants go in and out of the guard in a
 * loop, each counting itself inside; once the closer's wait returns, the
 * count is zero and stays zero (every later entry is refused). */
typedef struct stress {
  weft_guard g;
  atomic_long inside;
  atomic_int stop;
  atomic_long entries;
} stress;

static void *entrant(void *arg)
{
  stress *s = arg;
  while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
    int t = weft_guard_enter(&s->g, true);
    if (t == WEFT_GUARD_REFUSED) {
      sched_yield(); /* closed: leave the CPUs to the closer */
      continue;
    }
    atomic_fetch_add(&s->inside, 1);
    atomic_fetch_add_explicit(&s->entries, 1, memory_order_relaxed);
    atomic_fetch_sub(&s->inside, 1);
    weft_guard_leave(&s->g, t);
  }
  return NULL;
}

Test(guard, nobody_inside_after_the_wait, .timeout = TU_TIMEOUT(120))
{
  enum { THREADS = 4 };
  long rounds = tu_scaled(30, 5);
  for (long r = 0; r < rounds; r++) {
    stress s;
    weft_guard_init(&s.g);
    atomic_init(&s.inside, 0);
    atomic_init(&s.stop, 0);
    atomic_init(&s.entries, 0);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
      cr_assert_eq(pthread_create(&th[i], NULL, entrant, &s), 0);
    TU_WAIT_UNTIL(atomic_load(&s.entries) > 100, TU_DEADLINE_S);
    weft_guard_close(&s.g);
    weft_guard_wait_empty(&s.g);
    long seen = atomic_load(&s.inside);
    long entries = atomic_load(&s.entries);
    for (int spin = 0; spin < 1000; spin++) /* later entries are refused */
      cr_assert_eq(atomic_load(&s.inside), 0, "round %ld: a thread got in after the close", r);
    cr_assert_eq(atomic_load(&s.entries), entries, "round %ld: entries after the wait", r);
    atomic_store(&s.stop, 1);
    for (int i = 0; i < THREADS; i++)
      pthread_join(th[i], NULL);
    cr_assert_eq(seen, 0, "round %ld: %ld threads inside after the wait", r, seen);
  }
}

/* Threads that exit give their slots back for the next ones. */
static void *enter_once(void *arg)
{
  weft_guard *g = arg;
  int t = weft_guard_enter(g, true);
  TU_CHECK(t == WEFT_GUARD_FAST || t == WEFT_GUARD_SLOW, "entry");
  weft_guard_leave(g, t);
  return NULL;
}

Test(guard, short_lived_threads_reuse_slots, .timeout = TU_TIMEOUT(60))
{
  weft_guard g;
  weft_guard_init(&g);
  for (int i = 0; i < 200; i++) {
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, enter_once, &g), 0);
    pthread_join(th, NULL);
  }
  weft_guard_close(&g);
  weft_guard_wait_empty(&g);
  cr_assert_eq(atomic_load(&g.slow), 0);
  tu_assert_no_errors();
}
