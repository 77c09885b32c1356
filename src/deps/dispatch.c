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
#include "deps/inflight.h"
#include "deps/lanes.h"
#include "deps/replay.h"
#include "deps/var.h"
#include "pool/pool_ext.h"

/* Inline (WEFT_PROP_ASYNC) operators made ready while this thread is already
 * running one are queued here and run by the outermost call, so a chain of
 * inline operators runs in a loop, not in ever deeper recursion. */
static _Thread_local weft_fifo inline_q __attribute__((tls_model("initial-exec")));
static _Thread_local bool inline_active __attribute__((tls_model("initial-exec")));
static weft_opr *run_op(weft_opr *op, weft_between_fn hook);
static void fanout(weft_opr *op);
static void queue_sweeper(weft_pool *pool, struct weft_graph *g);

/* Whether op, a node of a graph launch with a CPU fn, may take run_gnodes:
 * nothing of run_op's general path applies (no failed var to skip for, no
 * drain check left for later, no trace span). */
static inline bool gnode_plain_now(const weft_opr *op)
{
  return !weft_tls_between && !weft_prof_tls && weft_engine_no_failed_var(op->eng);
}

/* run_op for the nodes of a graph launch, from a pool task not nested in
 * another operator: each node, then the successor it keeps for this
 * thread (a CPU fn: WEFT_GRAPH_KEEPABLE), while gnode_plain_now holds, in
 * a few dozen instructions a node, and *run (operators run in a row by the
 * task) stays below WEFT_KEEP_RUN_MAX. Returns the operator to run next, or
 * NULL. The caller checked gnode_plain_now for op; the loop checks only
 * nfailed_vars for the next ones: the thread's hooks (weft_tls_between,
 * weft_prof_tls) do not change in the loop (a node's fn restores whatever
 * it nests; only the launch's last finish may leave a drain check, and it
 * keeps no node). */
static weft_opr *run_gnodes(weft_opr *op, int worker, weft_between_fn hook, unsigned *run)
{
  unsigned n = *run; /* a register in the loop, not the caller's word */
  weft_run_ctx rc = {op->ctx, NULL, worker};
  do {
    WEFT_ASSERT(!weft_tls_between && !weft_prof_tls);
    weft_gnode_prefetch(op);
    fanout(op); /* a root releases the next ones as it starts */
    weft_gnode_call(op, &rc);
    weft_fifo ready = WEFT_FIFO_INIT;
    op = weft_gnode_release(op, worker >= 0, &ready, hook);
    if (!weft_fifo_empty(&ready))
      weft_opr_ready_list(&ready);
  } while (op && ++n < WEFT_KEEP_RUN_MAX && op->internal == WEFT_OPR_GNODE &&
           weft_engine_no_failed_var(op->eng));
  *run = n;
  return op;
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
   * step): the nodes of a graph launch may take run_gnodes. */
  bool plain = !weft_tls_opr;
  int worker = plain ? weft_pool_worker_index(op->eng->pool) : -1;
  unsigned run = 0; /* operators run in a row by this task */
  while (op) {
    if (plain && op->internal == WEFT_OPR_GNODE && op->fn && gnode_plain_now(op))
      op = run_gnodes(op, worker, weft_engine_between, &run);
    else {
      op = run_op(op, weft_engine_between);
      run++; /* run_gnodes counts its own */
    }
    /* A chain of kept successors may go on for as long as another thread
     * feeds it: now and then, if other work waits on this worker's pool,
     * the next one goes behind it and this task ends (pool_ext.h). */
    if (op && run >= WEFT_KEEP_RUN_MAX) {
      run = 0;
      if (plain && worker >= 0 && weft_pool_yield_due(op->eng->pool)) {
        WEFT_ASSERT(op->internal != WEFT_OPR_GNODE || !op->gn.graph->in_order);
        op->task.fn = weft_opr_task;
        op->task.arg = op;
        if (weft_pool_submit_embedded_last(op->eng->pool, &op->task) == 0)
          return 0;
      }
    }
  }
  return 0;
}

/* The sweeper of a swept graph's launch (graph.h), as a pool task: chunk
 * by chunk, in capture order, it runs each node whose predecessors are all
 * done (a CPU fn here, with the successors it keeps, as weft_opr_task; any
 * other where it runs), then counts itself off. The launch cannot end
 * before that, so the graph stays alive meanwhile. Between chunks, if
 * other work waits for this worker, it queues itself behind that work. */
static int sweep_task(void *arg)
{
  struct weft_graph *g = arg;
  weft_pool *pool = g->cur->op.eng->pool;
  const int n = g->nnodes;
  /* As weft_opr_task: not nested in an operator, a node may take run_gnodes. */
  const bool plain = !weft_tls_opr;
  const int worker = plain ? weft_pool_worker_index(pool) : -1;
  /* A graph run in order, with none of run_op's hooks on this thread (they
   * do not change during the sweep: see run_gnodes): each node is its fn
   * and the status it leaves, as run_gnodes runs it, with nothing to
   * release. */
  const bool bare = g->in_order && plain && !weft_tls_between && !weft_prof_tls;
  uint32_t *node_ns = g->lane_measure ? g->node_ns : NULL;
  weft_run_ctx rc = {g->cur->op.ctx, NULL, worker};
  for (int lo; (lo = g->cursor) < n;) {
    int hi = n - lo < WEFT_GRAPH_SWEEP_CHUNK ? n : lo + WEFT_GRAPH_SWEEP_CHUNK;
    g->cursor = hi;
    for (int i = lo; i < hi; i++) {
      if (i + WEFT_GRAPH_SWEEP_AHEAD < n) { /* the blocks it reads next, in order */
        const char *ahead = (const char *)weft_graph_node(g, i + WEFT_GRAPH_SWEEP_AHEAD);
        __builtin_prefetch(ahead, 1);
        __builtin_prefetch(ahead + WEFT_CACHE_LINE, 1);
        if (!g->in_order) /* its queue line, a plain node's last */
          __builtin_prefetch(ahead + 2 * WEFT_CACHE_LINE, 1);
      }
      weft_opr *op = weft_graph_node(g, i);
      if (g->in_order) /* nobody else takes a node: no count to look at */
        weft_gnode_ready(op, g->sweep_epoch);
      else if (!weft_sweep_take(g, i))
        continue; /* its last predecessor releases it */
      if (bare && weft_engine_no_failed_var(op->eng)) {
        WEFT_ASSERT(op->gn.nsucc == 0 && op->gn.counter < 0);
        int64_t t0 = node_ns ? weft_now_ns() : 0;
        weft_gnode_call(op, &rc);
        WEFT_OPR_SET(op, WEFT_OPR_ST_DONE); /* nothing to release */
        if (node_ns) /* a launch that times its nodes (lanes.h) */
          node_ns[i] = weft_lanes_elapsed(t0);
        continue;
      }
      if (!op->fn || op->prop != WEFT_PROP_NORMAL || op->ctx.type != WEFT_DEV_CPU) {
        weft_opr_ready(op);
        continue;
      }
      int64_t t0 = node_ns ? weft_now_ns() : 0;
      if (plain && gnode_plain_now(op)) { /* weft_opr_task's loop, without its entry */
        unsigned run = 0;
        op = run_gnodes(op, worker, weft_engine_between, &run);
      }
      if (op)
        weft_opr_task(op);
      if (node_ns) /* in order: that ran node i alone (traced, skipped or nested) */
        node_ns[i] = weft_lanes_elapsed(t0);
    }
    if (hi < n && weft_pool_yield_due(pool) &&
        weft_pool_submit_embedded_last(pool, &g->sweep_task) == 0)
      return 0;
  }
  weft_sweeper_end(g, plain);
  return 0;
}

void weft_sweeper_end(struct weft_graph *g, bool plain)
{
  weft_fifo ready = WEFT_FIFO_INIT;
  weft_opr *next = weft_sweep_end(g, &ready, plain ? weft_engine_between : NULL);
  WEFT_ASSERT(!next); /* keeps nothing: its count-off is no node's finish */
  (void)next;
  if (!weft_fifo_empty(&ready))
    weft_opr_ready_list(&ready);
}

/* Queues g's sweeper (run here if the pool takes nothing more: shut down). */
static void queue_sweeper(weft_pool *pool, struct weft_graph *g)
{
  g->sweep_task.fn = sweep_task;
  g->sweep_task.arg = g;
  if (weft_pool_submit_embedded(pool, &g->sweep_task, false, 0) != 0)
    sweep_task(g);
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

/* Releases the roots a starting root of a graph launch passes on (any
 * other node passes nothing on). */
static void fanout(weft_opr *op)
{
  if (op->gn.root < 0)
    return;
  weft_fifo ready = WEFT_FIFO_INIT;
  weft_gnode_fanout(op, &ready);
  weft_opr_ready_list(&ready);
}

/* Finishes op and dispatches what that makes ready (hook: see
 * weft_engine_count_done_op). */
static inline __attribute__((always_inline)) weft_opr *finish(weft_opr *op, int status,
                                                             bool keep_one,
                                                             weft_between_fn hook)
{
  weft_fifo ready = WEFT_FIFO_INIT;
  weft_opr *next = op->internal == WEFT_OPR_GNODE
                       ? weft_gnode_finish(op, status, keep_one, &ready, hook)
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
  /* A node run in order has no queue line (opr.h): the sweeper runs it. */
  WEFT_ASSERT(op->internal != WEFT_OPR_GNODE || !op->gn.graph->in_order);
  WEFT_ASSERT(atomic_load_explicit(&op->wait, memory_order_relaxed) == 0);
  if (op->internal != WEFT_OPR_USER && op->internal != WEFT_OPR_GNODE) {
    /* A var wait or deletion, a graph launch's gate: trivial, and never
     * queued behind the inline operator that may be the one waiting
     * (weft_var_wait inside it). */
    weft_opr *next = weft_opr_run(op);
    if (next)
      weft_opr_ready(next); /* a successor it kept: queue it as usual */
    return;
  }
  if (op->ctx.type == WEFT_DEV_GPU) {
    if (op->internal == WEFT_OPR_GNODE) /* a root releases the next ones as it starts */
      fanout(op);
    op->eng->exec->submit(op->eng->exec_self, op);
    return;
  }
  if (op->prop != WEFT_PROP_ASYNC || weft_tls_executor) {
    op->task.fn = weft_opr_task;
    op->task.arg = op;
    bool prio = op->prop == WEFT_PROP_PRIORITIZED;
    if (weft_pool_submit_embedded(op->eng->pool, &op->task, prio, prio ? op->priority : 0) == 0)
      return;
    if (weft_tls_executor) { /* never inline here: a pool task cannot fail this way */
      if (op->internal == WEFT_OPR_GNODE) /* it never starts: release the next roots now */
        fanout(op);
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
  /* relaxed: see nfailed_vars (engine.h): no failed var, nothing to read. */
  if (atomic_load_explicit(&op->eng->nfailed_vars, memory_order_relaxed) == 0)
    return 0;
  int status = 0;
  for (int k = 0; k < op->nvars && !status; k++)
    status = weft_var_failed(op->var[k]); /* no lock: see weft_var_impl.failed */
  return status;
}

/* hook: weft_opr_task's, for a finish that may leave its drain check for later
 * (dropped when op runs nested inside another operator), or NULL. */
static weft_opr *run_op(weft_opr *op, weft_between_fn hook)
{
  if (op->internal == WEFT_OPR_GATE) { /* it holds the vars: the launch begins */
    if (((weft_gate *)op->arg)->graph->sweep) {
      struct weft_graph *g = weft_graph_sweep_start(op);
      if (weft_lanes_able(g) && weft_lanes_choose(g))
        weft_lanes_start(g);
      else
        queue_sweeper(op->eng->pool, g);
      return NULL;
    }
    weft_fifo ready = WEFT_FIFO_INIT;
    weft_graph_start(op, &ready);
    weft_opr_ready_list(&ready);
    return NULL;
  }
  weft_opr *prev = weft_tls_opr;
  if (prev)
    hook = NULL;
  int status = 0;
  bool user = op->internal == WEFT_OPR_USER || op->internal == WEFT_OPR_GNODE;
  if (op->internal == WEFT_OPR_GNODE) { /* a root releases the next ones as it starts */
    weft_gnode_prefetch(op);
    fanout(op);
  }
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
  weft_done *done = weft_done_token(op);
  if (!done) {
    weft_tls_opr = prev;
    return finish(op, WEFT_ENOMEM, true, hook);
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
