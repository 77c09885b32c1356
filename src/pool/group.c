/*
 * Fork-join groups. state = pending << 1 | sleeping-waiter bit, one futex
 * word. The last task to finish reads the bit from its own fetch_sub result,
 * so it never touches the group (which lives on the waiter's stack) after
 * the count reaches zero; the futex wake it may then issue uses only the
 * address, and a spurious wake of whatever lives there later is harmless.
 */
#include <stdbool.h>

#include "common/sync.h"
#include "pool/group.h"

_Static_assert(sizeof(weft_group_impl) <= sizeof(weft_group), "weft_group too small");
_Static_assert(_Alignof(weft_group_impl) <= _Alignof(weft_group), "weft_group misaligned");

void weft_group_fail(weft_group_impl *g, int rc)
{
  int expected = 0;
  /* relaxed: published to the waiter by the release in task_done. */
  atomic_compare_exchange_strong_explicit(&g->status, &expected, rc, memory_order_relaxed,
                                          memory_order_relaxed);
}

void weft_group_task_done(weft_group_impl *g, int rc)
{
  if (rc)
    weft_group_fail(g, rc);
  /* release: publishes the task's effects and status to the waiter; pairs
   * with the acquire loads of state in wait. */
  uint32_t old = atomic_fetch_sub_explicit(&g->state, 2, memory_order_acq_rel);
  if (old == 3) /* last task, and the waiter sleeps */
    weft_futex_wake(&g->state, 1);
}

void weft_group_init(weft_group *pub, weft_pool *pool)
{
  if (!pub)
    return;
  weft_group_impl *g = (weft_group_impl *)pub;
  g->pool = pool;
  atomic_init(&g->state, 0);
  atomic_init(&g->status, 0);
  g->magic = pool ? WEFT_GROUP_MAGIC : 0;
}

int weft_group_spawn_task(weft_group_impl *g, int (*fn)(void *), void *arg, size_t lo, size_t hi)
{
  weft_pool *pool = g->pool;
  weft_task *t = weft_pool_task_alloc(pool);
  if (!t)
    return WEFT_ENOMEM;
  t->fn = fn;
  t->arg = arg;
  t->lo = lo;
  t->hi = hi;
  t->group = g;
  /* relaxed: the spawner is the waiter or a running member of g, so the
   * count cannot reach zero meanwhile; the queue publishes the task. */
  atomic_fetch_add_explicit(&g->state, 2, memory_order_relaxed);
  int rc = weft_pool_enqueue(pool, t);
  if (rc) {
    weft_pool_task_free(pool, t);
    weft_group_task_done(g, 0);
  }
  return rc;
}

int weft_group_spawn(weft_group *pub, weft_task_fn fn, void *arg)
{
  weft_group_impl *g = (weft_group_impl *)pub;
  if (!g || !fn || g->magic != WEFT_GROUP_MAGIC || !g->pool)
    return WEFT_EINVAL;
  return weft_group_spawn_task(g, fn, arg, 0, 0);
}

int weft_group_wait_impl(weft_group_impl *g)
{
  weft_pool *pool = g->pool;
  weft_worker *w = weft_worker_of(pool);
  weft_pool *prev_task_pool = weft_tls_task_pool;
  int64_t sleep_ns = WEFT_HELP_SLEEP_MIN_NS;
  int idle_rounds = 0;
  /* acquire: pairs with the release in task_done (the tasks' effects). */
  while (atomic_load_explicit(&g->state, memory_order_acquire) >> 1) {
    weft_task *t = w ? weft_deque_take(&w->deque) : NULL;
    if (!t) {
      if (!w)
        weft_busy_add(pool, +1); /* a helper counts itself busy before taking */
      t = weft_find_nonlocal(pool, w);
      if (!t && !w)
        weft_busy_add(pool, -1);
    }
    if (t) {
      if (!w)
        weft_tls_task_pool = pool;
      weft_run_task(pool, w, t);
      if (!w) {
        weft_tls_task_pool = prev_task_pool;
        weft_busy_add(pool, -1);
      }
      idle_rounds = 0;
      sleep_ns = WEFT_HELP_SLEEP_MIN_NS;
      continue;
    }
    if (++idle_rounds < WEFT_HELP_SPIN_ROUNDS) {
      for (uint32_t i = 0; i < pool->pauses_per_round; i++)
        weft_cpu_pause();
      continue;
    }
    /* Nothing to help with: sleep on the group, waking now and then to help
     * (a worker waiting here is not parked, so no submitter would wake it). */
    uint32_t s = atomic_load_explicit(&g->state, memory_order_acquire);
    if ((s >> 1) == 0)
      break;
    if (!(s & 1)) {
      /* acquire on failure: the re-read value is checked again at the top. */
      if (!atomic_compare_exchange_strong_explicit(&g->state, &s, s | 1, memory_order_acq_rel,
                                                   memory_order_acquire))
        continue;
      s |= 1;
    }
    weft_futex_wait(&g->state, s, sleep_ns);
    if (sleep_ns < WEFT_HELP_SLEEP_MAX_NS)
      sleep_ns *= 2;
    idle_rounds = WEFT_HELP_SPIN_ROUNDS - 1; /* one search, then sleep again */
  }
  int status = atomic_load_explicit(&g->status, memory_order_relaxed);
  /* Reset for reuse: no task of g is left to touch it. */
  atomic_store_explicit(&g->state, 0, memory_order_relaxed);
  atomic_store_explicit(&g->status, 0, memory_order_relaxed);
  return status;
}

int weft_group_wait(weft_group *pub)
{
  weft_group_impl *g = (weft_group_impl *)pub;
  if (!g || g->magic != WEFT_GROUP_MAGIC || !g->pool)
    return WEFT_EINVAL;
  return weft_group_wait_impl(g);
}
