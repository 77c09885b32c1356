/*
 * Fork-join groups. Pending tasks are counted in two parts (see
 * weft_group_impl): `local`, touched only on the owner's thread, and `state`,
 * an atomic word holding everyone else's count << 1 plus a sleeping-waiter
 * bit. Before the owner sleeps it moves `local` into `state`, so that a
 * finisher elsewhere can tell from its own fetch_sub result that it was the
 * last. That finisher never touches the group (which lives on the waiter's
 * stack) after the count reaches zero; the futex wake it may then issue
 * uses only the address, and a spurious wake-up there is harmless.
 */
#include <stdbool.h>

#include "common/sync.h"
#include "pool/group.h"

_Static_assert(sizeof(weft_group_impl) <= sizeof(weft_group), "weft_group too small");
_Static_assert(_Alignof(weft_group_impl) <= _Alignof(weft_group), "weft_group misaligned");

/* The signed count held in a state word. */
static inline int32_t state_count(uint32_t s)
{
  return (int32_t)(s & ~1u) / 2;
}

void weft_group_fail(weft_group_impl *g, int rc)
{
  int expected = 0;
  /* relaxed: published to the waiter by the release in task_done (or read on
   * the waiter's own thread). */
  atomic_compare_exchange_strong_explicit(&g->status, &expected, rc, memory_order_relaxed,
                                          memory_order_relaxed);
}

void weft_group_task_done(weft_group_impl *g, weft_worker *w, int rc)
{
  if (rc)
    weft_group_fail(g, rc);
  if (w && w == g->owner) {
    g->local--;
    return;
  }
  /* release: publishes the task's effects and status to the waiter; pairs
   * with the acquire loads of state in wait. */
  uint32_t old = atomic_fetch_sub_explicit(&g->state, 2, memory_order_acq_rel);
  if (old == 3) /* the last task, and the waiter sleeps */
    weft_futex_wake(&g->state, 1);
}

void weft_group_init(weft_group *pub, weft_pool *pool)
{
  if (!pub)
    return;
  weft_group_impl *g = (weft_group_impl *)pub;
  g->pool = pool;
  g->owner = pool ? weft_worker_of(pool) : NULL;
  g->local = 0;
  atomic_init(&g->state, 0);
  atomic_init(&g->status, 0);
  g->magic = pool ? WEFT_GROUP_MAGIC : 0;
}

int weft_group_spawn_task(weft_group_impl *g, weft_worker *w, int (*fn)(void *), void *arg,
                          size_t lo, size_t hi)
{
  weft_pool *pool = g->pool;
  weft_task *t = weft_task_alloc(&pool->tasks, w ? &w->tasks : NULL);
  if (!t)
    return WEFT_ENOMEM;
  t->fn = fn;
  t->arg = arg;
  t->lo = lo;
  t->hi = hi;
  t->group = g;
  if (w && w == g->owner)
    g->local++;
  else /* relaxed: the spawner is the waiter or a running member of g, so the
        * count cannot reach zero meanwhile; the queue publishes the task. */
    atomic_fetch_add_explicit(&g->state, 2, memory_order_relaxed);
  int rc = weft_pool_enqueue(pool, w, t);
  if (rc) {
    weft_task_free(&pool->tasks, w ? &w->tasks : NULL, t);
    weft_group_task_done(g, w, 0);
  }
  return rc;
}

int weft_group_spawn(weft_group *pub, weft_task_fn fn, void *arg)
{
  weft_group_impl *g = (weft_group_impl *)pub;
  if (!g || !fn || g->magic != WEFT_GROUP_MAGIC || !g->pool)
    return WEFT_EINVAL;
  return weft_group_spawn_task(g, weft_worker_of(g->pool), fn, arg, 0, 0);
}

int weft_group_wait_impl(weft_group_impl *g)
{
  weft_pool *pool = g->pool;
  weft_worker *w = weft_worker_of(pool);
  const bool owner = w && w == g->owner;
  weft_pool *prev_task_pool = weft_tls_task_pool;
  int64_t sleep_ns = WEFT_HELP_SLEEP_MIN_NS;
  int idle_rounds = 0;
  for (;;) {
    /* acquire: pairs with the release in task_done (the tasks' effects). */
    int32_t pending = state_count(atomic_load_explicit(&g->state, memory_order_acquire));
    if (owner)
      pending += g->local;
    if (pending == 0)
      break;
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
      weft_spin_until(weft_now_ns() + WEFT_SPIN_ROUND_NS);
      continue;
    }
    /* Nothing to help with: sleep on the group, waking now and then to help
     * (a worker waiting here is not parked, so no submitter would wake it). */
    if (owner && g->local) {
      /* Hand the owner's count to the shared word, so the last finisher sees
       * the true total. relaxed: only the count matters, read below. */
      atomic_fetch_add_explicit(&g->state, (uint32_t)g->local * 2u, memory_order_relaxed);
      g->local = 0;
    }
    uint32_t s = atomic_load_explicit(&g->state, memory_order_acquire);
    if (state_count(s) == 0)
      continue;
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
  return weft_group_wait_impl(g);
}
