/* SPDX-License-Identifier: MIT */
/*
 * Waiting for a group, helping meanwhile: a worker of the group's pool runs
 * its own deque, then what it finds elsewhere, and idles like any worker
 * when there is nothing; a thread outside the pool helps once, then sleeps.
 * The public weft_group_wait and weft_pool_help_one (pool_ext.h) are here.
 */
#ifndef WEFT_POOL_WAIT_H
#define WEFT_POOL_WAIT_H
#include "pool/layer.h" /* layer guard: no include from a lower layer */

#include "pool/group.h"

/* Helps run tasks until g is done; returns its status and resets it for
 * reuse. w: weft_worker_of(g->pool). */
int weft_group_wait_impl(weft_group_impl *g, weft_worker *w);

#endif /* WEFT_POOL_WAIT_H */
