/* SPDX-License-Identifier: MIT */
/*
 * Which pool the calling thread belongs to, and the two counts destroy's
 * drain waits on: guests (threads outside the pool's work inside an API call)
 * and busy threads (those that may take or run tasks).
 */
#include "pool/core.h"
#include "pool/pool_ext.h"

#include <limits.h>

#include "common/assert.h"
#include "common/fork.h"
#include "common/sync.h"

_Thread_local weft_worker *weft_tls_worker WEFT_TLS;
_Thread_local const weft_pool *weft_tls_self_pool WEFT_TLS;
_Thread_local int weft_tls_self_index WEFT_TLS = -1;
_Thread_local weft_pool *weft_tls_task_pool WEFT_TLS;

bool weft_pool_is_inside(const weft_pool *pool)
{
  weft_worker *w = weft_tls_worker;
  return (w && w->pool == pool) || weft_tls_task_pool == pool;
}

int weft_pool_guest_enter(weft_pool *pool, bool refuse, int *guest)
{
  *guest = 0;
  if (weft_fork_stale(pool->fork_gen)) /* inherited through fork: no workers */
    return WEFT_ESHUTDOWN;
  if (weft_pool_is_inside(pool))
    return 0; /* the pool's own work: part of any drain */
  /* Either destroy's close refuses us (refuse), or its wait sees us
   * inside (common/guard.h: no locked instruction on this side). */
  *guest = weft_guard_enter(&pool->guard, refuse);
  return *guest ? 0 : WEFT_ESHUTDOWN;
}

void weft_pool_guest_leave(weft_pool *pool, int guest)
{
  /* everything the call did to the pool is done before destroy frees it */
  weft_guard_leave(&pool->guard, guest);
}

void weft_busy_add(weft_pool *pool, int delta)
{
  /* Each transition adds 1 << 32, so two equal readings mean "no transition". */
  uint64_t add = delta > 0 ? (UINT64_C(1) << 32) + 1 : (UINT64_C(1) << 32) - 1;
  /* seq_cst: destroy reads busy, scans the queues and reads busy again; a
   * thread counts itself busy before it takes a task. */
  uint64_t old = atomic_fetch_add_explicit(&pool->busy, add, memory_order_seq_cst);
  /* The busy count (low 32 bits) never goes below zero: a thread stops being
   * busy only after it started. */
  WEFT_ASSERT(delta > 0 || (uint32_t)old >= 1);
  /* seq_cst: pairs with destroy's store of DRAINING before it reads busy. */
  if (delta < 0 && (uint32_t)old == 1 &&
      atomic_load_explicit(&pool->state, memory_order_seq_cst) != WEFT_POOL_RUNNING) {
    /* release: pairs with destroy's acquire load of drain_seq. */
    atomic_fetch_add_explicit(&pool->drain_seq, 1, memory_order_release);
    weft_futex_wake(&pool->drain_seq, INT_MAX);
  }
}
