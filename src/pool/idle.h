/* SPDX-License-Identifier: MIT */
/*
 * The idle policy: a worker that finds no work spins (searching), then parks
 * on the pool's eventcount (park.h); submitters and searchers decide who
 * wakes whom. The rules are in idle.c's opening comment.
 */
#ifndef WEFT_POOL_IDLE_H
#define WEFT_POOL_IDLE_H
#include "pool/layer.h" /* layer guard: no include from a lower layer */

#include <stdbool.h>

#include "pool/core.h"
#include "pool/group.h"

/* After a push to the caller's own deque: wake a parked worker if none is
 * searching (no fence: the pusher runs its deque before it can park). */
void weft_pool_wake_heuristic(weft_pool *pool);
/* After a push to a shared queue (injection, priority): the exact, fenced
 * check. */
void weft_pool_wake_exact(weft_pool *pool);
/* weft_pool_any_work: pool_ext.h (the engine's pacing reads it too). */

/* The idle protocol: searches, spins, then parks. g NULL: the worker loop's
 * idle phase; returns a task, or NULL when the pool is exiting. g non-NULL:
 * w waits for g; returns a task to run meanwhile, or NULL once g is done. */
weft_task *weft_worker_idle(weft_pool *pool, weft_worker *w, weft_group_impl *g);

#endif /* WEFT_POOL_IDLE_H */
