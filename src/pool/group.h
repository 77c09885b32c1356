/* Fork-join groups: the completion side used by the worker loop. */
#ifndef WEFT_POOL_GROUP_H
#define WEFT_POOL_GROUP_H

#include "pool/pool_internal.h"

/* Records rc (the first non-zero wins) and counts one task of g done, waking
 * a sleeping waiter when it was the last. g may be gone once this returns. */
void weft_group_task_done(weft_group_impl *g, int rc);
/* Records a failure without finishing a task. */
void weft_group_fail(weft_group_impl *g, int rc);
/* Spawns an internal task (a parallel-loop piece or a user task) into g. */
int weft_group_spawn_task(weft_group_impl *g, int (*fn)(void *), void *arg, size_t lo, size_t hi);

#endif /* WEFT_POOL_GROUP_H */
