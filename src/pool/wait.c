/* SPDX-License-Identifier: MIT */
/*
 * Group waits and helping. A waiter never just blocks while there is work it
 * may run: a worker of the group's pool runs its own deque, then what it
 * finds elsewhere, then idles like any worker (idle.c), so that it counts as
 * idle for submitters; a thread outside the pool helps between sleeps on the
 * group's state word.
 */
#include "pool/wait.h"

#include <stdbool.h>

#include "common/assert.h"
#include "common/sync.h"
#include "pool/idle.h"
#include "pool/pool_ext.h"
#include "pool/run.h"
#include "pool/search.h"
#include "pool/solo.h"

/* Helping nests: a waiter runs a task, whose own wait may run another, and
 * so on. Bounded two ways, as oneTBB does: a worker stops taking other
 * workers' tasks once half of its stack is used (its own deque holds only
 * what it spawned, so popping it nests as deep as the task tree, no more),
 * and a thread outside the pool helps only at the outermost level. */
static _Thread_local int help_depth WEFT_TLS; /* outside threads: tasks being helped */

static bool stack_deep(const weft_worker *w)
{
  return (uintptr_t)__builtin_frame_address(0) < w->steal_floor;
}

/* A thread outside the pool runs one task it finds, counted busy while it
 * does (destroy's drain), marked as helping (no nested help). Its own
 * first: the solo queue it fills (solo.h), if it owns one of pool's, holds
 * what it spawned and pushed, which its wait most likely waits for; then
 * the others, as any helper. */
static bool help_from_outside(weft_pool *pool)
{
  weft_pool *prev_task_pool = weft_tls_task_pool;
  weft_busy_add(pool, +1); /* busy before taking */
  weft_task *t = weft_solo_last == pool->uid ? weft_inject_pop(weft_solo_last_q) : NULL;
  if (!t)
    t = weft_find_nonlocal(pool, NULL);
  if (t) {
    weft_tls_task_pool = pool;
    help_depth++;
    weft_run_task(pool, NULL, t);
    help_depth--;
    weft_tls_task_pool = prev_task_pool;
  }
  weft_busy_add(pool, -1);
  return t != NULL;
}

bool weft_pool_help_one(weft_pool *pool)
{
  weft_worker *w = weft_worker_of(pool);
  if (w) {
    weft_task *t = weft_deque_take(&w->deque);
    if (!t && !stack_deep(w))
      t = weft_find_nonlocal(pool, w);
    if (t)
      weft_run_task(pool, w, t);
    return t != NULL;
  }
  return help_depth == 0 && help_from_outside(pool);
}

/* Sleeps on g until it is done, waking now and then to help (run) w's own
 * deque (w non-NULL) or (help) what it can find elsewhere. */
static void wait_sleeping(weft_group_impl *g, weft_pool *pool, weft_worker *w, bool help)
{
  int64_t sleep_ns = WEFT_HELP_SLEEP_MIN_NS;
  int idle_rounds = 0;
  while (weft_group_pending(g, w)) {
    weft_task *t = w ? weft_deque_take(&w->deque) : NULL;
    if (t) {
      weft_run_task(pool, w, t);
      continue;
    }
    if (help) {
      if (help_from_outside(pool)) {
        idle_rounds = 0;
        sleep_ns = WEFT_HELP_SLEEP_MIN_NS;
        continue;
      }
      if (++idle_rounds < WEFT_HELP_SPIN_ROUNDS) {
        weft_spin_until(weft_now_ns() + WEFT_SPIN_ROUND_NS);
        continue;
      }
    }
    if (!weft_group_arm(g, w, WEFT_GROUP_SLEEPING))
      break;
    /* acquire: as in weft_group_pending; the futex wait re-checks the word. */
    uint32_t s = atomic_load_explicit(&g->state, memory_order_acquire);
    if (weft_group_state_count(s) && (s & WEFT_GROUP_SLEEPING))
      weft_futex_wait(&g->state, s, sleep_ns);
    if (sleep_ns < WEFT_HELP_SLEEP_MAX_NS)
      sleep_ns *= 2;
    idle_rounds = WEFT_HELP_SPIN_ROUNDS - 1; /* one search, then sleep again */
  }
}

/* A worker of g's pool waits: it runs its own deque, then what it finds
 * elsewhere, and when there is nothing it idles like any worker (searching,
 * then parked on the eventcount), so that it counts as idle for submitters
 * and for parallel loops that split work for idle workers. */
static void wait_as_worker(weft_group_impl *g, weft_pool *pool, weft_worker *w)
{
  while (weft_group_pending(g, w)) {
    weft_task *t = weft_deque_take(&w->deque);
    if (!t && stack_deep(w)) {
      wait_sleeping(g, pool, w, false);
      return;
    }
    if (!t)
      t = weft_find_nonlocal(pool, w);
    if (!t)
      t = weft_worker_idle(pool, w, g);
    if (!t)
      return; /* g is done */
    weft_run_task(pool, w, t);
  }
}

/* The end of every wait: g is done; reset for reuse and return its status. */
static int wait_done(weft_group_impl *g, weft_worker *w);

int weft_group_wait_impl(weft_group_impl *g, weft_worker *w)
{
  weft_pool *pool = g->pool;
  /* Only the initialising thread waits (weft_group_wait refuses others):
   * two waiters would both reset the group below, and one lose its status. */
  WEFT_ASSERT(g->owner == weft_group_thread_id(w));
  if (w)
    wait_as_worker(g, pool, w);
  else
    wait_sleeping(g, pool, NULL, help_depth == 0);
  return wait_done(g, w);
}

static int wait_done(weft_group_impl *g, weft_worker *w)
{
  /* Reset for reuse: no task of g is left to touch it. */
  WEFT_ASSERT(weft_group_pending(g, w) == 0);
  int status = atomic_load_explicit(&g->status, memory_order_relaxed);
  g->local = 0;
  atomic_store_explicit(&g->state, 0, memory_order_relaxed);
  atomic_store_explicit(&g->status, 0, memory_order_relaxed);
  return status;
}

int weft_group_wait(weft_group *pub)
{
  weft_group_impl *g = (weft_group_impl *)pub;
  if (!g || g->magic != WEFT_GROUP_MAGIC || !g->pool)
    return WEFT_EINVAL;
  /* Only the initialising thread may wait: a worker owner's spawns are
   * counted on its thread alone, and the wait resets the group for reuse
   * with plain stores (weft_group_wait_impl). */
  weft_worker *w = weft_worker_of(g->pool);
  if (g->owner != weft_group_thread_id(w))
    return WEFT_EINVAL;
  if (w)
    return weft_group_wait_impl(g, w);
  /* Never refused: the group's tasks point at it until they finish. */
  int guest;
  int rc = weft_pool_guest_enter(g->pool, false, &guest);
  if (rc)
    return rc; /* WEFT_ESHUTDOWN: a pool inherited through fork */
  rc = weft_group_wait_impl(g, NULL);
  if (guest)
    weft_pool_guest_leave(g->pool, guest);
  return rc;
}

int weft_group_wait_blocking(weft_group *pub)
{
  weft_group_impl *g = (weft_group_impl *)pub;
  if (!g || g->magic != WEFT_GROUP_MAGIC || !g->pool)
    return WEFT_EINVAL;
  weft_worker *w = weft_worker_of(g->pool);
  if (g->owner != weft_group_thread_id(w))
    return WEFT_EINVAL;
  /* A worker, or a thread running one of the pool's tasks (helping in a
   * wait of its own): blocking it could hold up the group's own tasks. */
  if (w || weft_pool_in_task(g->pool))
    return WEFT_EDEADLK;
  int guest;
  int rc = weft_pool_guest_enter(g->pool, false, &guest);
  if (rc)
    return rc;
  wait_sleeping(g, g->pool, NULL, false);
  rc = wait_done(g, NULL);
  if (guest)
    weft_pool_guest_leave(g->pool, guest);
  return rc;
}
