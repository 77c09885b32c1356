/* SPDX-License-Identifier: MIT */
/*
 * Fork-join groups. Pending tasks are counted in two parts (see
 * weft_group_impl): `local`, touched only on the owner's thread, and `state`,
 * an atomic word holding everyone else's count << 2 plus two waiter bits.
 * Before a waiter sleeps it moves `local` into `state` and sets its bit
 * (weft_group_arm), so that a finisher elsewhere can tell from its own
 * fetch_sub result that it was the last and whom to wake: a thread outside
 * the pool sleeping on the word (futex), or a worker parked on the pool's
 * eventcount. That finisher never touches the group (which lives on the
 * waiter's stack) after the count reaches zero; the futex wake it may then
 * issue uses only the address, and a spurious wake-up there is harmless.
 *
 * Spawning a group task is in submit.c, waiting for a group in wait.c.
 */
#include "pool/group.h"

#include <stdbool.h>

#include "common/assert.h"
#include "common/sync.h"

_Static_assert(sizeof(weft_group_impl) <= sizeof(weft_group), "weft_group too small");
_Static_assert(_Alignof(weft_group_impl) <= _Alignof(weft_group), "weft_group misaligned");
_Static_assert(_Alignof(weft_worker) >= 2, "bit 0 of a worker's address must be free");

_Thread_local char weft_group_thread_tag WEFT_TLS;

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
  if (weft_group_is_owner(g, w)) {
    g->local--;
    return;
  }
  weft_pool *pool = g->pool; /* g may be gone after the fetch_sub */
  /* release: publishes the task's effects and status to the waiter; pairs
   * with the acquire loads of state in wait. acquire: the waiter's arming.
   * (state alone may go below zero: the owner's spawns are in its local
   * count until it arms; see weft_group_impl.) */
  uint32_t old = atomic_fetch_sub_explicit(&g->state, WEFT_GROUP_ONE, memory_order_acq_rel);
  if (weft_group_state_count(old) != 1)
    return;
  if (old & WEFT_GROUP_SLEEPING)
    weft_futex_wake(&g->state, 1);
  if (old & WEFT_GROUP_PARKED) {
    /* The waiter is parked on the eventcount among idle workers: wake them
     * all (it is one of them); the others find nothing and park again. */
    weft_fence_sc(&pool->nsearching);
    weft_ec_notify(&pool->ec, true);
  }
}

bool weft_group_arm(weft_group_impl *g, weft_worker *w, uint32_t flag)
{
  if (weft_group_is_owner(g, w) && g->local) {
    /* relaxed: only the count matters; the CAS below orders it. */
    atomic_fetch_add_explicit(&g->state, (uint32_t)g->local * WEFT_GROUP_ONE,
                              memory_order_relaxed);
    g->local = 0;
  }
  /* acquire: pairs with the finishers' release (a count of zero means done). */
  uint32_t s = atomic_load_explicit(&g->state, memory_order_acquire);
  /* The armer is the owner (its count is now in state): state holds every
   * pending task, never fewer than zero. */
  WEFT_ASSERT(weft_group_state_count(s) >= 0);
  for (;;) {
    if (weft_group_state_count(s) == 0)
      return false;
    if (s & flag)
      return true;
    /* acq_rel: the finisher's fetch_sub reads this flag (and, for a parked
     * worker, everything before it, the eventcount prewait included). */
    if (atomic_compare_exchange_weak_explicit(&g->state, &s, s | flag, memory_order_acq_rel,
                                              memory_order_acquire))
      return true;
  }
}

void weft_group_init(weft_group *pub, weft_pool *pool)
{
  if (!pub)
    return;
  weft_group_impl *g = (weft_group_impl *)pub;
  g->pool = pool;
  g->owner = pool ? weft_group_thread_id(weft_worker_of(pool)) : 0;
  g->local = 0;
  atomic_init(&g->state, 0);
  atomic_init(&g->status, 0);
  g->magic = pool ? WEFT_GROUP_MAGIC : 0;
}

void weft_group_count_spawn(weft_group_impl *g, weft_worker *w)
{
  if (weft_group_is_owner(g, w))
    g->local++;
  else /* relaxed: the spawner is the waiter or a running member of g, so the
        * count cannot reach zero meanwhile; the queue publishes the task. */
    atomic_fetch_add_explicit(&g->state, WEFT_GROUP_ONE, memory_order_relaxed);
}
