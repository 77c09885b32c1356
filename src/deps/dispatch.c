/* SPDX-License-Identifier: MIT */
/*
 * The release policy (dispatch.h): where a ready operator runs (the pool:
 * the worker's own deque or the injection queue; the priority queue;
 * inline for WEFT_PROP_ASYNC; its device executor), running or skipping it,
 * and the signal that completes an async operator. A completion's newly
 * ready operators come back here from complete.c, on the completing thread.
 */
#include "common/alloc.h"
#include "common/assert.h"
#include "common/prof.h"
#include "common/sync.h"
#include "deps/complete.h"
#include "deps/dispatch.h"
#include "deps/done.h"
#include "deps/engine.h"
#include "deps/executor.h"
#include "deps/ext.h"
#include "deps/inflight.h"
#include "deps/wait_cycle.h"
#include "deps/var.h"
#include "pool/pool_ext.h"

/* Inline (WEFT_PROP_ASYNC) operators made ready while this thread is already
 * running one are queued here and run by the outermost call, so a chain of
 * inline operators runs in a loop, not in ever deeper recursion. */
static _Thread_local weft_fifo inline_q __attribute__((tls_model("initial-exec")));
static _Thread_local bool inline_active __attribute__((tls_model("initial-exec")));
static weft_opr *run_op(weft_opr *op, weft_between_fn hook);

/* Whether op, a held operator with a CPU fn (ext.h: a graph launch's
 * node), may take its layer's run: nothing of run_op's general path
 * applies (no failed var to skip for, no drain check left for later, no
 * trace span). */
static inline bool held_plain_now(const weft_opr *op)
{
  return !weft_tls_between && !weft_prof_tls && weft_engine_no_failed_var(op->eng);
}

/* The pool task that runs operators: an operator and the successors each
 * one keeps for this thread. Only a finish here, straight from a worker's
 * main loop, may leave its drain check for later (the pool calls
 * weft_engine_between before the worker runs anything else). A finish
 * anywhere else (a weft_done_signal from a user's pool task, an inline
 * operator run inside one) checks at once: that task may go on to wait for
 * the thread that waits for the drain. */
int weft_opr_task(void *arg)
{
  weft_opr *op = arg;
  /* Not nested in an operator (weft_tls_opr is back to this at each
   * step): a held operator (a graph launch's node) may take its layer's
   * run, which goes on with the ones it keeps for this thread. */
  bool plain = !weft_tls_opr;
  int worker = plain ? weft_pool_worker_index(op->eng->pool) : -1;
  unsigned run = 0; /* operators run in a row by this task */
  while (op) {
    if (plain && op->internal == WEFT_OPR_HELD && op->fn && held_plain_now(op))
      op = op->eng->ext->run(op, worker, weft_engine_between, &run);
    else {
      op = run_op(op, weft_engine_between);
      run++; /* the layer's run counts its own */
    }
    /* A chain of kept successors may go on for as long as another thread
     * feeds it: now and then, if other work waits on this worker's pool,
     * the next one goes behind it and this task ends (pool_ext.h). */
    if (op && run >= WEFT_KEEP_RUN_MAX) {
      run = 0;
      if (plain && worker >= 0 && weft_pool_yield_due(op->eng->pool)) {
        op->task.fn = weft_opr_task;
        op->task.arg = op;
        if (weft_pool_submit_embedded_last(op->eng->pool, &op->task) == 0)
          return 0;
      }
    }
  }
  return 0;
}

/* The pool's weft_tls_between hook for a drain check left for later. */
void weft_engine_between(weft_task *next)
{
  if (next && next->fn == weft_opr_task) {
    const weft_opr *op = next->arg;
    weft_engine_drain_before(op->eng, op->epoch);
  } else {
    weft_engine_drain_flush();
  }
}

/* Finishes op and dispatches what that makes ready (hook: see
 * weft_engine_count_done_op). */
static inline __attribute__((always_inline)) weft_opr *finish(weft_opr *op, int status,
                                                             bool keep_one,
                                                             weft_between_fn hook)
{
  weft_fifo ready = WEFT_FIFO_INIT;
  weft_opr *next = op->internal == WEFT_OPR_HELD
                       ? op->eng->ext->finish(op, status, keep_one, &ready, hook)
                       : weft_opr_finish_vars(op, status, keep_one, &ready, hook);
  if (!weft_fifo_empty(&ready))
    weft_opr_ready_list(&ready);
  return next;
}

weft_opr *weft_opr_complete(weft_opr *op, int status, bool keep_one)
{
  return finish(op, status, keep_one, NULL);
}

void weft_opr_ready_list(weft_fifo *ready)
{
  for (weft_fifo_node *n; (n = weft_fifo_pop(ready));)
    weft_opr_ready(weft_fifo_entry(n, weft_opr, node));
}

void weft_opr_ready(weft_opr *op)
{
  WEFT_ASSERT(op->st == WEFT_OPR_ST_READY || !WEFT_ASSERTS_ON);
  WEFT_ASSERT(atomic_load_explicit(&op->wait, memory_order_relaxed) == 0);
  if (op->internal != WEFT_OPR_USER && op->internal != WEFT_OPR_HELD) {
    /* A var wait or deletion, a holder (ext.h): trivial, and never queued
     * behind the inline operator that may be the one waiting (weft_var_wait
     * inside it). A holder holds its vars: what it holds them for begins. */
    if (op->internal == WEFT_OPR_HOLDER) {
      op->eng->ext->hold(op);
      return;
    }
    weft_opr *next = weft_opr_run(op);
    if (next)
      weft_opr_ready(next); /* a successor it kept: queue it as usual */
    return;
  }
  if (op->ctx.type == WEFT_DEV_GPU) {
    if (op->internal == WEFT_OPR_HELD) /* it starts (ext.h) */
      op->eng->ext->start(op);
    op->eng->exec->submit_op(op->eng->exec_self, op);
    return;
  }
  if (op->prop != WEFT_PROP_ASYNC || weft_tls_executor) {
    op->task.fn = weft_opr_task;
    op->task.arg = op;
    bool prio = op->prop == WEFT_PROP_PRIORITIZED;
    if (weft_pool_submit_embedded(op->eng->pool, &op->task, prio, prio ? op->priority : 0) == 0)
      return;
    if (weft_tls_executor) { /* never inline here: a pool task cannot fail this way */
      if (op->internal == WEFT_OPR_HELD) /* it never runs: it starts all the same */
        op->eng->ext->start(op);
      weft_opr_complete(op, WEFT_ENOMEM, false);
      return;
    }
    /* No memory to grow the priority queue: run it here rather than lose it. */
  }
  weft_fifo_push(&inline_q, &op->node);
  if (inline_active)
    return;
  inline_active = true;
  while (weft_opr_run_inline_one())
    ;
  inline_active = false;
}

bool weft_opr_run_inline_one(void)
{
  weft_fifo_node *n = weft_fifo_pop(&inline_q);
  if (!n)
    return false;
  weft_opr *o = weft_fifo_entry(n, weft_opr, node);
  while (o)
    o = weft_opr_run(o);
  return true;
}

int weft_opr_skip_status(const weft_opr *op)
{
  if (op->flags & WEFT_OP_NOSKIP)
    return 0;
  /* relaxed: see nfailed_vars (engine.h): no failed var and no failure held
   * for a held operator, nothing to read. */
  if (atomic_load_explicit(&op->eng->nfailed_vars, memory_order_relaxed) == 0)
    return 0;
  if (op->internal == WEFT_OPR_HELD && op->eng->ext->inherited) { /* its layer's (ext.h) */
    int inherited = op->eng->ext->inherited(op);
    if (inherited)
      return inherited;
  }
  int status = 0;
  for (int k = 0; k < op->nvars && !status; k++)
    status = weft_var_failed(op->var[k]); /* no lock: see weft_var_impl.failed */
  return status;
}

/* run_op's body; prev: the operator this thread runs op inside (NULL: none). */
static inline __attribute__((always_inline)) weft_opr *run_op_body(weft_opr *op,
                                                                  weft_between_fn hook,
                                                                  weft_opr *prev)
{
  WEFT_ASSERT(op->internal != WEFT_OPR_HOLDER); /* weft_opr_ready hands it to its layer */
  int status = 0;
  bool user = op->internal == WEFT_OPR_USER || op->internal == WEFT_OPR_HELD;
  if (op->internal == WEFT_OPR_HELD) /* it starts (ext.h) */
    op->eng->ext->start(op);
  if (user) {
    /* Skip an operator that uses a failed var; it passes the status on. */
    status = weft_opr_skip_status(op);
    if (status)
      return finish(op, status, true, hook);
  }
  if (weft_tls_between) /* a drain check left for later: now, unless op keeps it */
    weft_engine_drain_before(op->eng, op->epoch);
  WEFT_OPR_MOVE(op, WEFT_OPR_ST_READY, WEFT_OPR_ST_RUNNING);
  weft_run_ctx rc = {op->ctx, NULL, weft_pool_worker_index(op->eng->pool)};
  weft_tls_opr = op;
  weft_prof_mark pm = weft_prof_op_begin(user); /* trace span */
  if (op->fn) {
    status = op->fn(&rc, op->arg);
    weft_prof_op_end(pm, op->name);
    weft_tls_opr = prev;
    return finish(op, status, true, hook);
  }
  weft_done *done = NULL;
  status = weft_done_token(op, &done);
  if (status) { /* WEFT_ENOMEM, WEFT_ELIMIT: the operator fails with it */
    weft_tls_opr = prev;
    return finish(op, status, true, hook);
  }
  atomic_init(&op->async_refs, 2);
  op->async_fn(&rc, op->arg, done); /* signals through weft_done_signal */
  weft_prof_op_end(pm, op->name);
  weft_tls_opr = prev;
  /* With max_inflight and no signal yet: counted as waiting for its signal
   * (engine.h, async_waits) before the hold below is given up, after which
   * the signal may finish it and its engine may go. relaxed (both): which
   * of the two finishes, and so uncounts, is decided by async_refs' RMWs
   * alone; a signal made inside the async_fn is seen here (same thread),
   * so such an operator is never counted. */
  weft_engine *eng = op->eng;
  bool counted = eng->max_inflight > 0 &&
                 atomic_load_explicit(&op->async_refs, memory_order_relaxed) == 2;
  if (counted)
    atomic_fetch_add_explicit(&eng->async_waits, 1, memory_order_relaxed);
  /* acq_rel: the second of (signal, return) finishes the op and must see
   * the status the signal stored. */
  if (atomic_fetch_sub_explicit(&op->async_refs, 1, memory_order_acq_rel) == 1) {
    if (counted) /* relaxed: as above */
      atomic_fetch_sub_explicit(&eng->async_waits, 1, memory_order_relaxed);
    return finish(op, op->status, true, hook);
  }
  return NULL;
}

/* op run nested on top of prev (suspended in whatever call ran op here):
 * op runs inside prev, for the loop check of a wait inside it, its finish
 * included (wait_cycle.h). Out of line: the plain run pays nothing for it. */
static __attribute__((noinline)) weft_opr *run_op_nested(weft_opr *op, weft_opr *prev)
{
  weft_nest nest;
  weft_nest_push(&nest, prev);
  weft_opr *next = run_op_body(op, NULL, prev);
  weft_nest_pop(&nest, prev);
  return next;
}

/* hook: weft_opr_task's, for a finish that may leave its drain check for later
 * (dropped when op runs nested inside another operator), or NULL. */
static weft_opr *run_op(weft_opr *op, weft_between_fn hook)
{
  weft_opr *prev = weft_tls_opr;
  if (__builtin_expect(prev != NULL, 0))
    return run_op_nested(op, prev);
  return run_op_body(op, hook, NULL);
}

weft_opr *weft_opr_run(weft_opr *op)
{
  return run_op(op, NULL);
}


void weft_done_signal(weft_done *done, int status)
{
  weft_opr *op = weft_done_take(done, status); /* NULL: reported there */
  if (!op)
    return;
  if (op->eng->naive) {
    op->status = status;
    /* release: publishes status to the pusher waiting in naive_push. */
    atomic_store_explicit(&op->async_done, 1, memory_order_release);
    weft_futex_wake(&op->async_done, 1);
    return;
  }
  op->status = status;
  /* acq_rel: as in weft_opr_run (the async_fn may not have returned yet). */
  if (atomic_fetch_sub_explicit(&op->async_refs, 1, memory_order_acq_rel) == 1) {
    /* relaxed: a hint (engine.h). The return came first and saw no signal
     * (async_refs 2), so it counted the operator. */
    if (op->eng->max_inflight > 0)
      atomic_fetch_sub_explicit(&op->eng->async_waits, 1, memory_order_relaxed);
    weft_opr *next = weft_opr_complete(op, status, false);
    (void)next; /* keep_one false: always NULL */
  }
}
