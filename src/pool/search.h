/* SPDX-License-Identifier: MIT */
/*
 * Finding work off the calling thread's own deque: the priority queue, the
 * injection queue, then the other workers' deques (stealing).
 */
#ifndef WEFT_POOL_SEARCH_H
#define WEFT_POOL_SEARCH_H
#include "pool/layer.h" /* layer guard: no include from a lower layer */

#include "pool/core.h"

/* Anything to run that is not in w's own deque (w NULL: a helper thread,
 * which steals from every worker). NULL only when every queue looked empty:
 * a lost steal race is not "empty", and sweeps again. */
weft_task *weft_find_nonlocal(weft_pool *pool, weft_worker *w);
/* Worker w's share of the injection queues (as phase 3 takes it), or NULL
 * when both look empty. */
weft_task *weft_find_injected(weft_pool *pool, weft_worker *w);

#endif /* WEFT_POOL_SEARCH_H */
