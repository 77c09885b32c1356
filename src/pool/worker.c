/* SPDX-License-Identifier: MIT */
/*
 * The worker thread: it sets itself up, tells the observer it started (create
 * waits for that), runs its loop until the pool exits, and tells the
 * observer it stopped.
 *
 * The loop, one task per turn, in phases:
 *   1. the priority queue    (prioritized engine operators, before all else)
 *      and, after WEFT_FAIR_TICKS pops of its own deque in a row or when a
 *      task asked for it (weft_pool_yield_due), the injection queues: what
 *      other threads submitted waits at most that long behind the worker's
 *      own work
 *   2. local pop             (the newest task of its own deque: cache-hot)
 *   3. injection and steal   (the injection queue, then other deques: search.c)
 *   4. between tasks         (work a layer above left for later: pool_ext.h)
 *   5. idle                  (spin, then park, until work or exit: idle.c)
 * then runs the task it found (run.c).
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "common/sync.h"
#include "pool/core.h"
#include "pool/idle.h"
#include "pool/pool_ext.h"
#include "pool/run.h"
#include "pool/search.h"
#include "pool/solo.h"

_Thread_local weft_between_fn weft_tls_between WEFT_TLS;

_Static_assert(WEFT_FAIR_TICKS > WEFT_INJECT_BATCH,
               "a batch taken from the injection queue runs in its order");

/* Before the loop: the thread-locals, the stack floor for helping waiters,
 * the thread's name and its CPU. */
static void set_up(weft_worker *w)
{
  weft_pool *pool = w->pool;
  weft_tls_worker = w;
  weft_tls_self_pool = pool;
  weft_tls_self_index = w->index;
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
}

/* Phase 4: a layer above may have left work for between tasks (next: the
 * task about to run, NULL before idling). */
static inline void between_tasks(weft_task *next)
{
  if (weft_tls_between)
    weft_tls_between(next);
}

static void loop(weft_pool *pool, weft_worker *w)
{
  weft_tls_in_main_loop = true;
  for (;;) {
    weft_task *t = weft_prio_pop(&pool->prio); /* 1: one relaxed load when empty */
    if (!t && (w->fair_due || w->ticks >= WEFT_FAIR_TICKS)) {
      w->fair_due = false;
      w->ticks = 0;
      t = weft_find_injected(pool, w);
    }
    if (!t) {
      t = weft_deque_take(&w->deque); /* 2 */
      w->ticks = t ? w->ticks + 1 : 0; /* pops in a row: a batch taken from
                                          the injection queue (fewer than
                                          WEFT_FAIR_TICKS) still runs in order */
    }
    if (!t)
      t = weft_find_nonlocal(pool, w); /* 3 */
    between_tasks(t);                  /* 4 */
    if (!t)
      t = weft_worker_idle(pool, w, NULL); /* 5 */
    if (!t)
      break; /* the pool is exiting */
    weft_run_task(pool, w, t);
  }
  weft_tls_in_main_loop = false;
}

/* Whether q holds tasks that nobody took since the last look (*seen: its
 * head then; updated). */
static bool inject_stuck(weft_inject *q, uint64_t *seen)
{
  /* relaxed: a hint (pool_ext.h); the queue's own operations order the rest */
  uint64_t h = atomic_load_explicit(&q->head, memory_order_relaxed);
  bool stuck = h == *seen && !weft_inject_looks_empty(q);
  *seen = h;
  return stuck;
}

bool weft_pool_yield_due(weft_pool *pool)
{
  weft_worker *w = weft_worker_of(pool);
  if (!w)
    return false;
  /* Waiting is not starving: other workers may be taking from these
   * queues. Only a queue whose end has not moved since the last look
   * (WEFT_KEEP_RUN_MAX operators ago) asks this worker to stop. */
  bool injected = inject_stuck(&pool->inject, &w->fair_inject_head);
  int ns = weft_solo_count(pool);
  for (int i = 0; i < ns; i++) /* each looked at: each keeps its head */
    injected |= inject_stuck(&pool->solo[i], &w->fair_solo_head[i]);
  /* relaxed: as above */
  int64_t top = atomic_load_explicit(&w->deque.top, memory_order_relaxed);
  bool local = top == w->fair_top && !weft_deque_looks_empty(&w->deque);
  w->fair_top = top;
  if (injected)
    w->fair_due = true; /* the loop takes them before the deque */
  return injected || local || !weft_prio_looks_empty(&pool->prio);
}

void *weft_worker_main(void *arg)
{
  weft_worker *w = arg;
  weft_pool *pool = w->pool;
  set_up(w);
  if (pool->observer) {
    pool->observer(pool->observer_arg, WEFT_WORKER_START, w->index);
    /* release: the callback's effects before create returns; pairs with
     * create's acquire load of nobserved. */
    atomic_fetch_add_explicit(&pool->nobserved, 1, memory_order_release);
    weft_futex_wake(&pool->nobserved, INT_MAX);
  }
  loop(pool, w);
  if (pool->observer)
    pool->observer(pool->observer_arg, WEFT_WORKER_STOP, w->index);
  return NULL;
}
