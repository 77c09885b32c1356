/* Fork-join groups: the completion side used by the worker loop. */
#ifndef WEFT_POOL_GROUP_H
#define WEFT_POOL_GROUP_H
#include "pool/layer.h" /* layer guard: no include from a lower layer */

#include "pool/pool_internal.h"

/* w: the calling thread's worker in g->pool, or NULL. */

/* Records rc (the first non-zero wins) and counts one task of g done, waking
 * a sleeping waiter when it was the last. g may be gone once this returns. */
void weft_group_task_done(weft_group_impl *g, weft_worker *w, int rc);
/* Records a failure without finishing a task. */
void weft_group_fail(weft_group_impl *g, int rc);
/* Spawns a task into g: fn(arg), or (fn NULL) the parallel-loop piece
 * [lo, hi) of the loop arg. */
int weft_group_spawn_task(weft_group_impl *g, weft_worker *w, int (*fn)(void *), void *arg,
                          size_t lo, size_t hi);

#endif /* WEFT_POOL_GROUP_H */
