/*
 * The release policy: where a ready operator runs. A CPU operator goes to
 * the pool (the current worker's own deque, LIFO and cache-hot, or the
 * injection queue from another thread; the priority queue for
 * WEFT_PROP_PRIORITIZED); a WEFT_PROP_ASYNC one runs inline on the thread
 * that made it ready; a device operator goes to its executor. Running an
 * operator (its fn, or its async_fn and later its signal) ends in its
 * completion (complete.h), whose newly ready operators come back here.
 */
#ifndef WEFT_DEPS_DISPATCH_H
#define WEFT_DEPS_DISPATCH_H
#include "deps/layer.h" /* layer guard: no include from a lower layer */

#include <stdbool.h>

#include "common/fifo.h"
#include "deps/opr.h"

/* op's wait counter reached zero: sends it where it runs. */
void weft_opr_ready(weft_opr *op);
/* The same for every operator of ready (linked through their node). */
void weft_opr_ready_list(weft_fifo *ready);
/* Finishes op with status and dispatches what that makes ready. keep_one:
 * on a pool worker, one ready plain CPU operator is returned to run next
 * on this thread instead of being queued; else NULL. */
weft_opr *weft_opr_complete(weft_opr *op, int status, bool keep_one);
/* Runs the operator now on this thread (its fn, or starts its async_fn);
 * returns a successor to run next on this thread, or NULL. */
weft_opr *weft_opr_run(weft_opr *op);
/* Runs one inline (WEFT_PROP_ASYNC) operator queued on this thread behind
 * the one running, if any (a wait inside that one needs it); returns
 * whether it ran one. */
bool weft_opr_run_inline_one(void);
/* The pool task that runs a ready operator (arg: the operator) and the
 * successors it keeps for this thread; also run directly by the layer of
 * a held operator (ext.h: a graph's sweepers, for a node they do not run
 * bare). */
int weft_opr_task(void *arg);
/* The pool's weft_tls_between hook for a drain check left for later (a
 * finish's hook argument: see weft_engine_count_done_op). */
struct weft_task;
void weft_engine_between(struct weft_task *next);
/* The status of a failed var op uses, or (a held operator) the one its
 * layer says it inherits (ext.h); 0: run it. Always 0 for WEFT_OP_NOSKIP. */
int weft_opr_skip_status(const weft_opr *op);

#endif /* WEFT_DEPS_DISPATCH_H */
