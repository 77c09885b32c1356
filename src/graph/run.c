/* SPDX-License-Identifier: MIT */
/*
 * Running a graph launch's nodes (run.h): what the engine hands this layer
 * through its table (deps/ext.h, hooks.c) for a node (its start, the pool
 * task's loop over plain nodes) and for a gate that holds every var (the
 * launch begins: the roots, a swept graph's sweeper, or its lanes), and the
 * sweeper of a swept graph.
 */
#include "common/assert.h"
#include "common/prof.h"
#include "deps/ext.h"
#include "graph/devrun_plan.h"
#include "graph/lanes.h"
#include "graph/queue.h"
#include "graph/replay.h"
#include "graph/run.h"
#include "pool/pool_ext.h"

/* Whether op, a node of a graph launch with a CPU fn, may take
 * weft_gnode_run: nothing of the engine's general run path applies (no
 * failed var to skip for, no drain check left for later, no trace span). */
static inline bool gnode_plain_now(const weft_opr *op)
{
  return !weft_tls_between && !weft_prof_tls && weft_engine_no_failed_var(weft_opr_engine(op));
}

/* Releases the roots a starting root of a graph launch passes on (any
 * other node passes nothing on). */
static void fanout(weft_opr *op)
{
  if (weft_gnode_of(op)->root < 0)
    return;
  weft_fifo ready = WEFT_FIFO_INIT;
  weft_gnode_fanout(op, &ready);
  weft_opr_ready_list(&ready);
}

void weft_gnode_start(weft_opr *op)
{
  if (weft_opr_ctx(op).type == WEFT_DEV_CPU) /* its finish, on this thread most likely */
    weft_gnode_prefetch(op);
  fanout(op); /* a root releases the next ones as it starts */
}

weft_opr *weft_gnode_holder(const weft_opr *op)
{
  return &weft_gnode_of(op)->graph->cur->op; /* the launch running op */
}

/* weft_gnode_run's body, inlined there and in the sweeper: each node, then
 * the successor it keeps for this thread (a CPU fn: WEFT_GRAPH_KEEPABLE),
 * while gnode_plain_now holds, in a few dozen instructions a node, and
 * *run (operators run in a row by the task) stays below WEFT_KEEP_RUN_MAX.
 * Returns the operator to run next, or NULL. The caller checked
 * gnode_plain_now for op; the loop checks only nfailed_vars for the next
 * ones: the thread's hooks (weft_tls_between, weft_prof_tls) do not change
 * in the loop (a node's fn restores whatever it nests; only the launch's
 * last finish may leave a drain check, and it keeps no node). */
static inline __attribute__((always_inline)) weft_opr *
run_gnodes(weft_opr *op, int worker, weft_between_fn hook, unsigned *run)
{
  unsigned n = *run; /* a register in the loop, not the caller's word */
  weft_run_ctx rc = {weft_opr_ctx(op), NULL, worker};
  do {
    WEFT_ASSERT(!weft_tls_between && !weft_prof_tls);
    weft_gnode_prefetch(op);
    fanout(op); /* a root releases the next ones as it starts */
    weft_gnode_call(op, &rc);
    weft_fifo ready = WEFT_FIFO_INIT;
    op = weft_gnode_release(op, worker >= 0, &ready, hook);
    if (!weft_fifo_empty(&ready))
      weft_opr_ready_list(&ready);
  } while (op && ++n < WEFT_KEEP_RUN_MAX && weft_opr_kind(op) == WEFT_OPR_GNODE &&
           weft_engine_no_failed_var(weft_opr_engine(op)));
  /* A node run in order has no queue line (graph.h): the sweeper runs it,
   * and nobody keeps or queues it. */
  WEFT_ASSERT(!op || weft_opr_kind(op) != WEFT_OPR_GNODE || !weft_gnode_of(op)->graph->in_order);
  *run = n;
  return op;
}

weft_opr *weft_gnode_run(weft_opr *op, int worker, weft_between_fn hook, unsigned *run)
{
  return run_gnodes(op, worker, hook, run);
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
  weft_pool *pool = weft_graph_run_pool(g);
  const int n = g->nnodes;
  /* As weft_opr_task: not nested in an operator, a node may take run_gnodes. */
  const bool plain = !weft_tls_opr;
  const int worker = plain ? weft_pool_worker_index(pool) : -1;
  /* A graph run in order, with none of the engine's hooks on this thread
   * (they do not change during the sweep: see run_gnodes): each node is
   * its fn and the status it leaves, as run_gnodes runs it, with nothing
   * to release. */
  const bool bare = g->in_order && plain && !weft_tls_between && !weft_prof_tls;
  uint32_t *node_ns = g->lane_measure ? g->node_ns : NULL;
  weft_run_ctx rc = {weft_opr_ctx(&g->cur->op), NULL, worker};
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
      if (weft_gnode_in_run_after_leader(g, i))
        continue; /* its run's nodes release it, or its run stands for it (devrun.h) */
      if (g->in_order) /* nobody else takes a node: no count to look at */
        weft_opr_held_ready(op, g->sweep_epoch);
      else if (!weft_sweep_take(g, i))
        continue; /* its last predecessor releases it */
      if (bare && weft_engine_no_failed_var(weft_opr_engine(op))) {
        WEFT_ASSERT(weft_gnode_of(op)->nsucc == 0 && weft_gnode_of(op)->counter < 0);
        int64_t t0 = node_ns ? weft_now_ns() : 0;
        weft_gnode_call(op, &rc);
        weft_opr_state_set(op, WEFT_OPR_ST_DONE); /* nothing to release */
        if (node_ns) /* a launch that times its nodes (lanes.h) */
          node_ns[i] = weft_lanes_elapsed(t0);
        continue;
      }
      if (!weft_opr_fn(op) || weft_opr_prop(op) != WEFT_PROP_NORMAL ||
          weft_opr_ctx(op).type != WEFT_DEV_CPU) {
        WEFT_ASSERT(!g->in_order); /* its nodes have no queue line */
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

/* Queues g's sweeper (run here if the pool takes nothing more: shut down). */
static void queue_sweeper(weft_pool *pool, struct weft_graph *g)
{
  g->sweep_task.fn = sweep_task;
  g->sweep_task.arg = g;
  if (weft_pool_submit_embedded(pool, &g->sweep_task, false, 0) != 0)
    sweep_task(g);
}

void weft_gate_hold(weft_opr *gate)
{
  /* A queued launch (queue.h) starts here only if the one before ended. */
  if (((weft_gate *)weft_opr_arg(gate))->queued && !weft_graph_queue_claim(weft_opr_arg(gate)))
    return;
  struct weft_graph *g = ((weft_gate *)weft_opr_arg(gate))->graph;
  if (g->sweep) {
    weft_graph_sweep_start(gate);
    if (weft_lanes_able(g) && weft_lanes_choose(g))
      weft_lanes_start(g);
    else
      queue_sweeper(weft_engine_pool(weft_opr_engine(gate)), g);
    return;
  }
  weft_fifo ready = WEFT_FIFO_INIT;
  weft_graph_start(gate, &ready);
  weft_opr_ready_list(&ready);
}
