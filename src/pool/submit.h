/* SPDX-License-Identifier: MIT */
/*
 * Queueing work: a task record onto the calling worker's deque, or the
 * injection queue, followed by the wake the idle policy asks for (idle.h).
 * The public weft_pool_submit, weft_group_spawn and the engine's
 * weft_pool_submit_embedded (pool_ext.h) are built on these.
 */
#ifndef WEFT_POOL_SUBMIT_H
#define WEFT_POOL_SUBMIT_H
#include "pool/layer.h" /* layer guard: no include from a lower layer */

#include <stddef.h>

#include "pool/core.h"
#include "pool/group.h"

/* Queues t from the calling thread (w: its worker in pool, or NULL: then the
 * caller is inside the pool's work or a registered guest). */
int weft_pool_enqueue(weft_pool *pool, weft_worker *w, weft_task *t);
/* Spawns a task into g: fn(arg), or (fn NULL) the parallel-loop piece
 * [lo, hi) of the loop arg. Returns 0 or WEFT_ENOMEM (g's count unchanged). */
int weft_group_spawn_task(weft_group_impl *g, weft_worker *w, int (*fn)(void *), void *arg,
                          size_t lo, size_t hi);

#endif /* WEFT_POOL_SUBMIT_H */
