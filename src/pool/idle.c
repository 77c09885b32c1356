/* SPDX-License-Identifier: MIT */
/*
 * The idle policy: spin, then park on the eventcount, with the
 * searching-worker accounting that keeps submitters from waking more workers
 * than there is work for.
 *
 * Counters (struct weft_pool):
 *   nsearching  workers spinning in search of work;
 *   ec.waiters  workers between prewait and the end of commit/cancel;
 *   busy        threads that may take or run tasks (for destroy's drain).
 * Rules:
 *   - a submission through the injection queue fences, then wakes one parked
 *     worker if none is searching (weft_pool_wake_exact);
 *   - a push onto a worker's own deque does the same check without the fence
 *     (weft_pool_wake_heuristic): the pusher is awake and runs its own deque
 *     before it can park, so a missed wake costs parallelism, never progress;
 *   - the last searcher to find work wakes another if more work is visible;
 *   - a parking worker announces itself (prewait), stops searching, fences
 *     and re-checks every queue before it sleeps.
 * An idle worker spins (spin: sweeps a round apart, the last searcher for
 * spin_count rounds, the others for WEFT_SPIN_COUNT_EXTRA_WORKERS), then
 * parks (park), and on waking searches again.
 */
#include "pool/idle.h"

#include <sched.h>

#include "common/assert.h"
#include "common/sync.h"
#include "pool/pool_ext.h"
#include "pool/search.h"
#include "pool/solo.h"

/* ------------------------------------------------------ who wakes whom */

bool weft_pool_any_work(weft_pool *pool)
{
  if (!weft_inject_looks_empty(&pool->inject) || !weft_prio_looks_empty(&pool->prio))
    return true;
  int ns = weft_solo_count(pool);
  for (int i = 0; i < ns; i++)
    if (!weft_inject_looks_empty(&pool->solo[i]))
      return true;
  for (int i = 0; i < pool->nworkers; i++)
    if (!weft_deque_looks_empty(&pool->workers[i].deque))
      return true;
  return false;
}

static void wake_one(weft_pool *pool)
{
  if (atomic_load_explicit(&pool->wake_pending, memory_order_relaxed))
    return;
  /* seq_cst: a worker clears the flag before it searches; see this file's
   * opening comment and park.h for why a submitter that sees it set may skip. */
  if (atomic_exchange_explicit(&pool->wake_pending, 1, memory_order_seq_cst))
    return;
  if (!weft_ec_notify(&pool->ec, false))
    atomic_store_explicit(&pool->wake_pending, 0, memory_order_seq_cst); /* nobody to wake */
}

void weft_pool_wake_heuristic(weft_pool *pool)
{
  if (atomic_load_explicit(&pool->nsearching, memory_order_relaxed) == 0 &&
      weft_ec_waiters(&pool->ec) > 0)
    wake_one(pool);
}

void weft_pool_wake_exact(weft_pool *pool)
{
  /* Orders the caller's publication of work before reading the idle state;
   * pairs with the fence a parking worker issues before its re-check. */
  weft_fence_sc(&pool->nsearching);
  if (atomic_load_explicit(&pool->nsearching, memory_order_relaxed) == 0 &&
      weft_ec_waiters(&pool->ec) > 0)
    wake_one(pool);
}

/* ------------------------------------------------- the searching state */

static void start_searching(weft_pool *pool)
{
  /* seq_cst: counted before the flag is cleared and before any search. */
  int64_t old = atomic_fetch_add_explicit(&pool->nsearching, 1, memory_order_seq_cst);
  WEFT_ASSERT(old >= 0); /* the searcher count is never below zero */
  /* seq_cst: the wake someone sent us (if any) has arrived; pairs with the
   * exchange in wake_one. */
  atomic_store_explicit(&pool->wake_pending, 0, memory_order_seq_cst);
}

/* Leaves the searching state (having found work, or its group being done):
 * the last searcher to leave hands the search on, if there is more, since
 * submitters relied on a searcher. */
static void stop_searching(weft_pool *pool)
{
  /* seq_cst: the searcher count is part of the parking handshake (a
   * submitter that sees it non-zero relies on a searcher's re-check). */
  int64_t old = atomic_fetch_sub_explicit(&pool->nsearching, 1, memory_order_seq_cst);
  WEFT_ASSERT(old >= 1); /* only a counted searcher stops searching */
  if (old == 1) {
    weft_fence_sc(&pool->nsearching); /* orders the RMW before the scan */
    if (weft_ec_waiters(&pool->ec) > 0 && weft_pool_any_work(pool))
      wake_one(pool);
  }
}

/* ------------------------------------------------------------- spin */

/* Sweeps the queues: one sweep at least, then sweeps a round apart until
 * spin_count rounds have passed. Returns a task (searching no longer), or
 * NULL: *g_done set when g finished (searching no longer); else it is time to
 * park, and *searching tells whether w still counts as searching. */
static weft_task *spin(weft_pool *pool, weft_worker *w, weft_group_impl *g, bool *searching,
                       bool *g_done)
{
  int64_t now = weft_now_ns();
  const int64_t spin_ns = pool->spin_count * WEFT_SPIN_ROUND_NS;
  const int64_t start = now;
  int64_t deadline = now + spin_ns;
  atomic_store_explicit(&pool->last_idle_ns, now, memory_order_relaxed);
  for (;;) {
    if (g && weft_group_pending(g, w) == 0) {
      /* Leaving the search: if we were the last searcher, work queued
       * meanwhile must not wait for us (submitters relied on a searcher). */
      stop_searching(pool);
      *g_done = true;
      return NULL;
    }
    weft_task *t = weft_find_nonlocal(pool, w);
    if (t) {
      stop_searching(pool);
      return t;
    }
    weft_stat_inc(&w->failed_steal_rounds);
    /* relaxed: see weft_pool_park_idle. Asked to park: skip the spin. The
     * request stands until w sleeps (park notes it then): a task that
     * the park's re-check finds does not cancel it. */
    if (atomic_load_explicit(&pool->park_gen, memory_order_relaxed) != w->park_gen_seen)
      return NULL;
    if (now >= deadline) {
      /* Spin on if another worker ran out of work since we started. */
      int64_t d = atomic_load_explicit(&pool->last_idle_ns, memory_order_relaxed) + spin_ns;
      if (now >= d)
        return NULL;
      deadline = d;
    }
    if (atomic_load_explicit(&pool->state, memory_order_relaxed) != WEFT_POOL_RUNNING)
      return NULL; /* draining: park at once so destroy sees quiescence */
    if (now - start >= WEFT_SPIN_COUNT_EXTRA_WORKERS * WEFT_SPIN_ROUND_NS) {
      /* Only the last searcher spins the full count. */
      int64_t n = atomic_load_explicit(&pool->nsearching, memory_order_relaxed);
      /* seq_cst: leaving the count is part of the parking handshake; the
       * CAS keeps at least one searcher. */
      if (n > 1 && atomic_compare_exchange_strong_explicit(&pool->nsearching, &n, n - 1,
                                                           memory_order_seq_cst,
                                                           memory_order_relaxed)) {
        *searching = false;
        return NULL;
      }
    }
    /* A round's wait gives the CPU away first: a thread outside the pool
     * (a user's thread pushing operators, say) may be runnable on this
     * core and is what the spinning waits for; when nothing else is
     * runnable this returns at once. Main-thread pusher, 2 threads on 2
     * cores, side by side: indep 398 -> 238 ns/op, dag 245 -> 150. */
    sched_yield();
    now = weft_spin_until(now + WEFT_SPIN_ROUND_NS);
  }
}

/* ------------------------------------------------------------- park */

/* Announces w on the eventcount, leaves the searching state, re-checks, and
 * sleeps until notified. Returns true when w should search again (woken, or
 * the re-check found work: it counts as searching again), false when it
 * leaves idle with nothing: g is done, or (g NULL) the pool is exiting. */
static bool park(weft_pool *pool, weft_worker *w, weft_group_impl *g, bool searching)
{
  uint32_t key = weft_ec_prewait(&pool->ec);
  /* seq_cst: a wake sent before our key was read may have found no
   * sleeper; our re-check below covers its work, so let later
   * submitters wake (pairs with the exchange in wake_one). */
  atomic_store_explicit(&pool->wake_pending, 0, memory_order_seq_cst);
  /* A group waiter asks the group's last finisher to notify the pool's
   * eventcount (after the prewait, so that notify cannot miss us). It stays
   * busy: the task waiting here is not finished. */
  bool done = g && !weft_group_arm(g, w, WEFT_GROUP_PARKED);
  if (searching) { /* seq_cst: after the prewait, before the re-check's fence */
    int64_t old = atomic_fetch_sub_explicit(&pool->nsearching, 1, memory_order_seq_cst);
    WEFT_ASSERT(old >= 1); /* w was counted as searching */
  }
  if (done) {
    weft_ec_cancel(&pool->ec);
    return false;
  }
  if (!g)
    weft_busy_add(pool, -1);
  /* Orders the announcement before the re-check; pairs with the fence in
   * weft_pool_wake_exact. */
  weft_fence_sc(&pool->nsearching);
  if (weft_pool_any_work(pool) || (g && weft_group_pending(g, w) == 0)) {
    weft_ec_cancel(&pool->ec);
    if (!g)
      weft_busy_add(pool, +1);
    start_searching(pool);
    return true;
  }
  /* seq_cst: pairs with destroy's store of EXITING before its notify. */
  if (!g && atomic_load_explicit(&pool->state, memory_order_seq_cst) == WEFT_POOL_EXITING) {
    weft_ec_cancel(&pool->ec);
    return false;
  }
  /* relaxed: as in spin; every park request made so far is obeyed now. */
  w->park_gen_seen = atomic_load_explicit(&pool->park_gen, memory_order_relaxed);
  weft_stat_inc(&w->parks);
  int64_t park_at = w->prof ? weft_prof_now() : 0;
  weft_ec_commit(&pool->ec, key);
  if (w->prof)
    weft_prof_span_builtin(w->prof, WEFT_PROF_PARK, park_at, weft_prof_now());
  weft_stat_inc(&w->wakeups);
  if (!g)
    weft_busy_add(pool, +1);
  start_searching(pool);
  return true;
}

weft_task *weft_worker_idle(weft_pool *pool, weft_worker *w, weft_group_impl *g)
{
  start_searching(pool);
  for (;;) {
    bool searching = true, g_done = false;
    weft_task *t = spin(pool, w, g, &searching, &g_done);
    if (t || g_done)
      return t;
    if (!park(pool, w, g, searching))
      return NULL;
  }
}
