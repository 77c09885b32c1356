/* SPDX-License-Identifier: MIT */
/*
 * The completion path: a finished operator releases its vars. Each var's
 * queue grants what waits behind the operator (or, for a claimed run of
 * writes, hands the var on without its lock: var_queue.h); each grant
 * takes one off its operator's wait counter. The operators that reach zero
 * are handed back to the caller, which dispatches them (dispatch.h): this
 * file decides what became ready, never where it runs.
 */
#ifndef WEFT_DEPS_COMPLETE_H
#define WEFT_DEPS_COMPLETE_H
#include "deps/layer.h" /* layer guard: no include from a lower layer */

#include <stdbool.h>

#include "common/fifo.h"
#include "deps/opr.h"
#include "pool/pool_ext.h"

/* Finishes op with status: records a user operator's failure, releases its
 * vars (a write's status becomes the var's), retires and frees it, and
 * counts it done (hook: see weft_engine_count_done_op). The operators this
 * makes ready are appended to ready (through their node), except that with
 * keep_one (on a pool worker) the first plain CPU one is returned instead,
 * to run next on this thread (its inputs are in this core's cache, and it
 * skips a push and a pop); else NULL. */
weft_opr *weft_opr_finish_vars(weft_opr *op, int status, bool keep_one, weft_fifo *ready,
                               weft_between_fn hook);

/* Takes one grant off the operator of each request in g (linked through
 * next, from weft_varq_complete) and appends those that reach zero to
 * ready; keep non-NULL and *keep NULL: the first plain CPU one becomes
 * *keep instead. Returns *keep (or NULL). */
weft_opr *weft_grant_list(weft_var_req *g, weft_opr **keep, weft_fifo *ready);

/* Counts count finished operators of slot (epoch: the last one's) off the
 * in-flight count, or onto next (about to run on this thread, in the same
 * slot: weft_opr.owed). hook: see weft_engine_count_done_op. */
void weft_opr_count_finish(weft_engine *eng, int slot, uint64_t epoch, uint32_t count,
                           weft_opr *next, weft_between_fn hook);

/* A finished operator gives back its reusable operator's reference and its
 * place under max_inflight (waking a held-back pusher). */
void weft_opr_retire(weft_engine *eng, weft_opr *op);

#endif /* WEFT_DEPS_COMPLETE_H */
