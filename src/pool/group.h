/* SPDX-License-Identifier: MIT */
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
  /* immutable after init: the initialising thread (weft_group_thread_id):
   * its worker when it is one of pool's, else the address of its
   * weft_group_thread_tag with bit 0 set. The group counts that thread's
   * spawns and finishes in `local`; only that thread may wait. */
  uintptr_t owner;
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

/* Defined in group.c: a byte per thread whose address names the thread
 * (unique among live threads) where no worker does. */
extern _Thread_local char weft_group_thread_tag WEFT_TLS;

/* The calling thread as weft_group_impl.owner names it (w: its worker in
 * the group's pool, or NULL). A worker is word-aligned, so bit 0 tells the
 * two kinds apart. */
static inline uintptr_t weft_group_thread_id(const weft_worker *w)
{
  return w ? (uintptr_t)w : (uintptr_t)&weft_group_thread_tag | 1u;
}

/* Whether the calling thread (w: its worker in g's pool, or NULL)
 * initialised g: its spawns and finishes are then counted in `local`, a
 * worker's and a thread's outside the pool alike. */
static inline bool weft_group_is_owner(const weft_group_impl *g, const weft_worker *w)
{
  return weft_group_thread_id(w) == g->owner;
}

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
  if (weft_group_is_owner(g, w))
    n += g->local;
  /* The waiter's view (the owner's) counts every pending task exactly once:
   * never below zero; anyone else's state alone may be (the owner's spawns
   * finished elsewhere). */
  WEFT_ASSERT(n >= 0 || !weft_group_is_owner(g, w));
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
