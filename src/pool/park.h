/* SPDX-License-Identifier: MIT */
/*
 * The parking protocol: an eventcount over a futex.
 *
 * A worker that found no work parks in three steps:
 *     key = weft_ec_prewait(ec);      announce: waiters++
 *     ...re-check every queue...      (after a store-load fence)
 *     weft_ec_commit(ec, key) or weft_ec_cancel(ec)
 * A submitter publishes its work, issues a store-load fence, and then calls
 * weft_ec_notify. Either the submitter's fence comes first, and the parking
 * worker's re-check sees the work, or the worker's comes first, and the
 * submitter sees waiters > 0 and bumps seq, so the commit's futex wait returns
 * at once (its key is stale). No wake-up is lost.
 */
#ifndef WEFT_POOL_PARK_H
#define WEFT_POOL_PARK_H
#include "pool/layer.h" /* layer guard: no include from a lower layer */

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct weft_ec {
  _Atomic uint32_t seq;     /* atomic: bumped by notify; the futex word */
  _Atomic uint32_t waiters; /* atomic: workers between prewait and commit/cancel */
} weft_ec;

void weft_ec_init(weft_ec *ec);
uint32_t weft_ec_prewait(weft_ec *ec);
void weft_ec_cancel(weft_ec *ec);
/* Sleeps until a notify after the prewait that returned key. */
void weft_ec_commit(weft_ec *ec, uint32_t key);
/* Wakes one (all: every) parked worker if any is waiting; the caller has
 * published its work and issued a store-load fence. Returns whether there
 * was a waiter to notify. */
bool weft_ec_notify(weft_ec *ec, bool all);
/* Relaxed read, for heuristics and for checks after a fence. */
static inline uint32_t weft_ec_waiters(weft_ec *ec)
{
  return atomic_load_explicit(&ec->waiters, memory_order_relaxed);
}

#endif /* WEFT_POOL_PARK_H */
