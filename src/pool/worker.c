/*
 * The worker: its loop, where it looks for work, and the idle protocol
 * (spin, then park on the eventcount) with the searching-worker accounting
 * that keeps submitters from waking more workers than there is work for.
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
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "common/sync.h"
#include "pool/group.h"
#include "pool/parallel.h"
#include "pool/pool_ext.h"
#include "pool/pool_internal.h"

_Thread_local weft_worker *weft_tls_worker WEFT_TLS;
_Thread_local weft_pool *weft_tls_task_pool WEFT_TLS;
_Thread_local weft_between_fn weft_tls_between WEFT_TLS;
/* Tasks running on this thread, nested ones included; and whether it is a
 * worker in its main loop (pool_ext.h, weft_pool_top_task). */
static _Thread_local int task_depth WEFT_TLS;
static _Thread_local bool in_main_loop WEFT_TLS;

bool weft_pool_top_task(void)
{
  return in_main_loop && task_depth == 1;
}

static inline void stat_inc(_Atomic uint64_t *c)
{
  /* relaxed: a statistic with a single writer. */
  atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1, memory_order_relaxed);
}

static inline uint32_t rng_next(uint64_t *s)
{
  uint64_t x = *s; /* xorshift64* */
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return (uint32_t)((x * 0x2545F4914F6CDD1DULL) >> 32);
}

void weft_busy_add(weft_pool *pool, int delta)
{
  /* Each transition adds 1 << 32, so two equal readings mean "no transition". */
  uint64_t add = delta > 0 ? (UINT64_C(1) << 32) + 1 : (UINT64_C(1) << 32) - 1;
  /* seq_cst: destroy reads busy, scans the queues and reads busy again; a
   * thread counts itself busy before it takes a task. */
  uint64_t old = atomic_fetch_add_explicit(&pool->busy, add, memory_order_seq_cst);
  /* seq_cst: pairs with destroy's store of DRAINING before it reads busy. */
  if (delta < 0 && (uint32_t)old == 1 &&
      atomic_load_explicit(&pool->state, memory_order_seq_cst) != WEFT_POOL_RUNNING) {
    /* release: pairs with destroy's acquire load of drain_seq. */
    atomic_fetch_add_explicit(&pool->drain_seq, 1, memory_order_release);
    weft_futex_wake(&pool->drain_seq, INT_MAX);
  }
}

/* weft_run_task's tail with profiling on: a "task" or "pfor" span on pt,
 * which is the thread's current track meanwhile (operators record on it). */
static void run_task_profiled(weft_worker *w, weft_prof_track *pt, int (*fn)(void *), void *arg,
                              size_t lo, size_t hi, weft_group_impl *g)
{
  weft_prof_track *prev = weft_prof_tls;
  weft_prof_tls = pt;
  int64_t t0 = weft_prof_now();
  int rc = fn ? fn(arg) : weft_pfor_piece(arg, lo, hi);
  weft_prof_span_builtin(pt, fn ? WEFT_PROF_TASK : WEFT_PROF_PFOR, t0, weft_prof_now());
  weft_prof_tls = prev;
  if (g)
    weft_group_task_done(g, w, rc);
  if (w)
    stat_inc(&w->tasks_run);
}

void weft_run_task(weft_pool *pool, weft_worker *w, weft_task *t)
{
  int (*fn)(void *) = t->fn;
  void *arg = t->arg;
  size_t lo = t->lo, hi = t->hi;
  weft_group_impl *g = t->group;
  /* Free first: the record is reused hot by whatever fn spawns. An
   * embedded record belongs to fn's argument, which fn may free. */
  if (!t->embedded)
    weft_task_free(&pool->tasks, w ? &w->tasks : NULL, t);
  /* Profiling off: w->prof and pool->prof are NULL, one branch. */
  weft_prof_track *pt = w    ? w->prof
                        : pool->prof ? weft_prof_thread_track(pool->prof, "weft caller")
                                     : NULL;
  task_depth++;
  if (pt) {
    run_task_profiled(w, pt, fn, arg, lo, hi, g);
    task_depth--;
    return;
  }
  int rc = fn ? fn(arg) : weft_pfor_piece(arg, lo, hi);
  task_depth--;
  if (g)
    weft_group_task_done(g, w, rc);
  if (w)
    stat_inc(&w->tasks_run);
}

/* One sweep over the victims: near ones first, each group from a random
 * start. *retry: some steal lost a race (the deque was not empty). */
static weft_task *steal_sweep(weft_pool *pool, weft_worker *w, bool *retry)
{
  void *item;
  if (w) {
    int nv = pool->nworkers - 1;
    if (nv <= 0)
      return NULL;
    uint32_t r = rng_next(&w->rng);
    int groups[2][2] = {{0, w->nnear}, {w->nnear, nv}};
    for (int gi = 0; gi < 2; gi++) {
      int lo = groups[gi][0], len = groups[gi][1] - lo;
      for (int k = 0; k < len; k++) {
        weft_worker *v = &pool->workers[w->victims[lo + (int)((r + (uint32_t)k) % (uint32_t)len)]];
        weft_steal_result sr = weft_deque_steal(&v->deque, &item);
        if (sr == WEFT_STEAL_OK) {
          stat_inc(&w->steals);
          if (w->prof)
            weft_prof_instant_builtin(w->prof, WEFT_PROF_STEAL, weft_prof_now(), WEFT_PROF_VICTIM,
                                      v->index);
          return item;
        }
        *retry |= sr == WEFT_STEAL_RETRY;
      }
    }
    return NULL;
  }
  /* A helper thread: every worker, from a start that varies per call. */
  static _Atomic uint32_t start;
  uint32_t s = atomic_fetch_add_explicit(&start, 1, memory_order_relaxed);
  for (int k = 0; k < pool->nworkers; k++) {
    weft_worker *v = &pool->workers[(s + (uint32_t)k) % (uint32_t)pool->nworkers];
    weft_steal_result sr = weft_deque_steal(&v->deque, &item);
    if (sr == WEFT_STEAL_OK)
      return item;
    *retry |= sr == WEFT_STEAL_RETRY;
  }
  return NULL;
}

weft_task *weft_find_nonlocal(weft_pool *pool, weft_worker *w)
{
  for (;;) {
    weft_task *t = weft_prio_pop(&pool->prio);
    if (t)
      return t;
    t = weft_inject_pop(&pool->inject);
    if (t)
      return t;
    bool retry = false;
    t = steal_sweep(pool, w, &retry);
    if (t || !retry)
      return t; /* a lost race is not "empty": sweep again */
  }
}

bool weft_pool_any_work(weft_pool *pool)
{
  if (!weft_inject_looks_empty(&pool->inject) || !weft_prio_looks_empty(&pool->prio))
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
  /* seq_cst: a worker clears the flag before it searches; see worker.c's
   * header and park.h for why a submitter that sees it set may skip. */
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

static void start_searching(weft_pool *pool)
{
  /* seq_cst: counted before the flag is cleared and before any search. */
  atomic_fetch_add_explicit(&pool->nsearching, 1, memory_order_seq_cst);
  /* seq_cst: the wake someone sent us (if any) has arrived; pairs with the
   * exchange in wake_one. */
  atomic_store_explicit(&pool->wake_pending, 0, memory_order_seq_cst);
}

/* Leaves the searching state having found work: the last searcher to find
 * work hands the search on, if there is more. */
static void stop_searching(weft_pool *pool)
{
  /* seq_cst: the searcher count is part of the parking handshake (a
   * submitter that sees it non-zero relies on a searcher's re-check). */
  if (atomic_fetch_sub_explicit(&pool->nsearching, 1, memory_order_seq_cst) == 1) {
    weft_fence_sc(&pool->nsearching); /* orders the RMW before the scan */
    if (weft_ec_waiters(&pool->ec) > 0 && weft_pool_any_work(pool))
      wake_one(pool);
  }
}

weft_task *weft_worker_idle(weft_pool *pool, weft_worker *w, weft_group_impl *g)
{
  start_searching(pool);
  for (;;) {
    bool searching = true;
    /* One sweep at least, then sweeps a round apart until spin_count rounds
     * have passed. */
    int64_t now = weft_now_ns();
    const int64_t spin_ns = pool->spin_count * WEFT_SPIN_ROUND_NS;
    const int64_t start = now;
    int64_t deadline = now + spin_ns;
    atomic_store_explicit(&pool->last_idle_ns, now, memory_order_relaxed);
    for (;;) {
      if (g && weft_group_pending(g, w) == 0) {
        /* Leaving the search: if we were the last searcher, work queued
         * meanwhile must not wait for us (submitters relied on a searcher). */
        if (atomic_fetch_sub_explicit(&pool->nsearching, 1, memory_order_seq_cst) == 1) {
          weft_fence_sc(&pool->nsearching); /* orders the RMW before the scan */
          if (weft_ec_waiters(&pool->ec) > 0 && weft_pool_any_work(pool))
            wake_one(pool);
        }
        return NULL;
      }
      weft_task *t = weft_find_nonlocal(pool, w);
      if (t) {
        stop_searching(pool);
        return t;
      }
      stat_inc(&w->failed_steal_rounds);
      if (now >= deadline) {
        /* Spin on if another worker ran out of work since we started. */
        int64_t d = atomic_load_explicit(&pool->last_idle_ns, memory_order_relaxed) + spin_ns;
        if (now >= d)
          break;
        deadline = d;
      }
      if (atomic_load_explicit(&pool->state, memory_order_relaxed) != WEFT_POOL_RUNNING)
        break; /* draining: park at once so destroy sees quiescence */
      if (now - start >= WEFT_SPIN_COUNT_EXTRA_WORKERS * WEFT_SPIN_ROUND_NS) {
        /* Only the last searcher spins the full count. */
        int64_t n = atomic_load_explicit(&pool->nsearching, memory_order_relaxed);
        /* seq_cst: leaving the count is part of the parking handshake; the
         * CAS keeps at least one searcher. */
        if (n > 1 && atomic_compare_exchange_strong_explicit(&pool->nsearching, &n, n - 1,
                                                             memory_order_seq_cst,
                                                             memory_order_relaxed)) {
          searching = false;
          break;
        }
      }
      now = weft_spin_until(now + WEFT_SPIN_ROUND_NS);
    }
    uint32_t key = weft_ec_prewait(&pool->ec);
    /* seq_cst: a wake sent before our key was read may have found no
     * sleeper; our re-check below covers its work, so let later
     * submitters wake (pairs with the exchange in wake_one). */
    atomic_store_explicit(&pool->wake_pending, 0, memory_order_seq_cst);
    /* A group waiter asks the group's last finisher to notify the pool's
     * eventcount (after the prewait, so that notify cannot miss us). It stays
     * busy: the task waiting here is not finished. */
    bool done = g && !weft_group_arm(g, w, WEFT_GROUP_PARKED);
    if (searching) /* seq_cst: after the prewait, before the re-check's fence */
      atomic_fetch_sub_explicit(&pool->nsearching, 1, memory_order_seq_cst);
    if (done) {
      weft_ec_cancel(&pool->ec);
      return NULL;
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
      continue;
    }
    /* seq_cst: pairs with destroy's store of EXITING before its notify. */
    if (!g && atomic_load_explicit(&pool->state, memory_order_seq_cst) == WEFT_POOL_EXITING) {
      weft_ec_cancel(&pool->ec);
      return NULL;
    }
    stat_inc(&w->parks);
    int64_t park_at = w->prof ? weft_prof_now() : 0;
    weft_ec_commit(&pool->ec, key);
    if (w->prof)
      weft_prof_span_builtin(w->prof, WEFT_PROF_PARK, park_at, weft_prof_now());
    stat_inc(&w->wakeups);
    if (!g)
      weft_busy_add(pool, +1);
    start_searching(pool);
  }
}

void *weft_worker_main(void *arg)
{
  weft_worker *w = arg;
  weft_pool *pool = w->pool;
  weft_tls_worker = w;
  weft_tls_task_pool = pool;
  weft_prof_tls = w->prof; /* operators record on the worker's track */

  /* Waiters stop taking others' tasks once this much of the stack is used. */
  pthread_attr_t attr;
  void *stack_addr;
  size_t stack_size;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    if (pthread_attr_getstack(&attr, &stack_addr, &stack_size) == 0)
      w->steal_floor = (uintptr_t)stack_addr + stack_size * (100 - WEFT_HELP_STACK_PERCENT) / 100;
    pthread_attr_destroy(&attr);
  }
  char full[48], name[16];
  snprintf(full, sizeof full, "%s-w%d", pool->name, w->index);
  memcpy(name, full, sizeof name - 1); /* the kernel keeps 15 characters */
  name[sizeof name - 1] = '\0';
  pthread_setname_np(pthread_self(), name);
  if (w->cpu >= 0) {
    int err = weft_topo_bind_self(&pool->topo, w->cpu);
    if (err) {
      int expected = 0;
      if (atomic_compare_exchange_strong_explicit(&pool->bind_warned, &expected, 1,
                                                  memory_order_relaxed, memory_order_relaxed))
        weft_log("could not pin worker %d to CPU %d (%s); workers run unbound", w->index, w->cpu,
                 strerror(err));
      w->cpu = -1;
    }
  }

  in_main_loop = true;
  for (;;) {
    weft_task *t = weft_prio_pop(&pool->prio); /* one relaxed load when empty */
    if (!t)
      t = weft_deque_take(&w->deque);
    if (!t)
      t = weft_find_nonlocal(pool, w);
    if (weft_tls_between) /* work left for between tasks (pool_ext.h) */
      weft_tls_between(t);
    if (!t)
      t = weft_worker_idle(pool, w, NULL);
    if (!t)
      break;
    weft_run_task(pool, w, t);
  }
  in_main_loop = false;
  return NULL;
}
