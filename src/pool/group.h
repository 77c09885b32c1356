/*
 * Fork-join groups: the pending count and its waiter bits (group.c). What a
 * task of a group needs to finish it, and what a waiter needs to sleep;
 * waiting and helping are in wait.c, spawning in submit.c.
 */
#ifndef WEFT_POOL_GROUP_H
#define WEFT_POOL_GROUP_H
#include "pool/layer.h" /* layer guard: no include from a lower layer */

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/assert.h"
#include "pool/core.h"

/* The group's private layout inside weft_group. */
/* Pending tasks = local + (state >> 2): spawns and finishes on the owner's
 * thread touch only `local`, so a spawn that is not stolen costs no atomic
 * read-modify-write; everyone else counts in `state`, which therefore goes
 * below zero (mod 2^32) when the owner's spawns finish elsewhere. The sum,
 * as the owner sees it (weft_group_pending), is never below zero. */
typedef struct weft_group_impl {
  weft_pool *pool;      /* immutable after init */
  weft_worker *owner;   /* immutable after init: the initialising worker, or NULL */
  int32_t local;        /* owner only: spawns minus finishes on the owner's thread */
  /* atomic: others' spawns minus finishes << 2 | WEFT_GROUP_* waiter bits. */
  _Atomic uint32_t state;
  _Atomic int status;   /* atomic: first non-zero task return */
  uint32_t magic;       /* WEFT_GROUP_MAGIC once initialised */
} weft_group_impl;
#define WEFT_GROUP_MAGIC 0x77656674u
/* A thread outside the pool sleeps on the state word (futex). */
#define WEFT_GROUP_SLEEPING 1u
/* A worker waits parked on the pool's eventcount. */
#define WEFT_GROUP_PARKED 2u
#define WEFT_GROUP_ONE 4u /* one task in state */

/* w: the calling thread's worker in g->pool, or NULL. */

/* The signed count held in a group's state word. */
static inline int32_t weft_group_state_count(uint32_t s)
{
  return (int32_t)(s & ~3u) / 4;
}

/* Tasks of g not yet finished, as seen from the calling thread (w: its worker
 * in g's pool, or NULL). acquire: pairs with the release in task_done. */
static inline int32_t weft_group_pending(weft_group_impl *g, weft_worker *w)
{
  int32_t n = weft_group_state_count(atomic_load_explicit(&g->state, memory_order_acquire));
  if (w && w == g->owner)
    n += g->local;
  /* The waiter's view (the owner's, or anyone's in a group without one)
   * counts every pending task exactly once: never below zero. */
  WEFT_ASSERT(n >= 0 || (g->owner && w != g->owner));
  return n;
}

/* Counts one spawn into g, before its task is queued. */
void weft_group_count_spawn(weft_group_impl *g, weft_worker *w);
/* Records rc (the first non-zero wins) and counts one task of g done, waking
 * a sleeping waiter when it was the last. g may be gone once this returns. */
void weft_group_task_done(weft_group_impl *g, weft_worker *w, int rc);
/* Records a failure without finishing a task. */
void weft_group_fail(weft_group_impl *g, int rc);
/* Before a waiter sleeps: moves the owner's count into state and sets flag
 * (WEFT_GROUP_SLEEPING or _PARKED), so that the last finisher wakes it.
 * Returns false when nothing is pending (nothing was set). */
bool weft_group_arm(weft_group_impl *g, weft_worker *w, uint32_t flag);

#endif /* WEFT_POOL_GROUP_H */
