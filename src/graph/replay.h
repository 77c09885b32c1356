/* SPDX-License-Identifier: MIT */
/*
 * Replaying a captured graph (graph.h): what a launch's gate does once it
 * holds every var, what a node does when it starts and when it finishes.
 * Like the engine's complete.h, these decide what becomes ready and hand
 * it back; the engine's dispatch sends it where it runs (run.c runs the
 * nodes).
 */
#ifndef WEFT_GRAPH_REPLAY_H
#define WEFT_GRAPH_REPLAY_H
#include "graph/layer.h" /* layer guard: no include from a lower layer, nor from src/gpu */

#include <stdbool.h>

#include "common/assert.h"
#include "common/fifo.h"
#include "deps/ext.h"
#include "graph/graph.h"
#include "pool/pool_ext.h"

/* The gate holds every var of its graph: the launch begins; the first root
 * is appended to ready. */
void weft_graph_start(weft_opr *gate, weft_fifo *ready);

/* The same for a swept graph: the launch's chunks are all unclaimed; its
 * graph is returned, whose sweeper the caller queues. */
struct weft_graph *weft_graph_sweep_start(weft_opr *gate);

/* A graph's sweeper (one lane's, or the only one) is done: it counts
 * itself off the launch's top counter, and the launch's end (if that was
 * the last count) dispatches what it makes ready. plain: the sweeper runs
 * straight from a worker's loop, not nested in an operator (see
 * weft_opr_task). */
void weft_sweeper_end(struct weft_graph *g, bool plain);

/* A root starts (or goes to its device): the next two roots of the heap
 * are appended to ready. */
void weft_gnode_fanout(weft_opr *op, weft_fifo *ready);

/* A node starts: its finish reads what it releases, so start moving those
 * lines (the successors' counts, their
 * blocks' first lines, each most likely in memory in a graph bigger than
 * the cache) while its fn runs. In a swept graph, the counts only: the
 * sweeper most likely takes the successor, and reads its block in order. Always inlined: GCC takes a function of
 * loads and prefetches alone for one without effects and drops the call
 * before it inlines it (GCC 12 did, at -O1 and up). */
static inline __attribute__((always_inline)) void weft_gnode_prefetch(const weft_opr *op)
{
  const weft_gnode *n = weft_gnode_of(op);
  const struct weft_graph *g = n->graph;
  const int32_t *succ = g->succs + n->succ0;
  for (int k = 0; k < n->nsucc && k < WEFT_GRAPH_PREFETCH; k++) {
    int32_t e = succ[k];
    if (!(e & WEFT_GRAPH_SOLE))
      __builtin_prefetch((const void *)&g->pending[WEFT_GRAPH_INDEX(e)], 1);
    if (g->sweep)
      continue; /* the sweeper, not this finish, most likely takes it */
    const char *s = (const char *)weft_graph_node(g, WEFT_GRAPH_INDEX(e));
    __builtin_prefetch(s, 1);
    __builtin_prefetch(s + WEFT_CACHE_LINE, 1); /* its place in the graph, its state */
  }
}

/* GPU node op's device work is enqueued and its fn returned 0 (the
 * engine's launched, deps/ext.h): releases the successors of its device
 * edges (graph.h), each waiting for op on the device (appended to ready
 * when that was its last count). */
void weft_gnode_launched(weft_opr *op, weft_fifo *ready);

/* Releases device edge e (of g's successor list) at a launch: its target
 * takes a wait slot for waited's event and a reference on waited's device
 * state, and counts the edge off (appended to ready when that was its last
 * count). weft_gnode_launched's edges and a device run's (devrun.c: each
 * member's edges out of the run, waiting for the run's leader). */
void weft_gnode_release_device_edge(struct weft_graph *g, weft_opr *waited, int32_t e,
                                    weft_fifo *ready);

/* Finishes node op with status, as weft_opr_finish_vars finishes a pushed
 * operator: records a failure, gives the vars it writes its status, resets
 * its counter for the next launch, and releases its successors (appended
 * to ready, or one plain CPU successor returned with keep_one on a pool
 * worker). The last sink to finish ends the launch and finishes the gate
 * (hook: see weft_engine_count_done_op). */
weft_opr *weft_gnode_finish(weft_opr *op, int status, bool keep_one, weft_fifo *ready,
                            weft_between_fn hook);
/* The rare parts of a finish, out of line: a failure or a failed var (the
 * vars the node writes take its status); a sink's count off the counter
 * tree, and, for the launch's last, its end: the gate keeps the vars or
 * releases them (returning what that makes ready to run here, as
 * weft_opr_finish_vars does). */
void weft_gnode_finish_failed(weft_opr *op, int status);
weft_opr *weft_gnode_finish_sink(struct weft_graph *g, weft_engine *eng, int counter,
                                 bool keep_one, weft_fifo *ready, weft_between_fn hook);

/* The sweeper's claim of node i, in the chunk it took: whether the
 * sweeper runs it (every predecessor is done: the count it takes off was
 * the last), which makes it ready in the launch's epoch. */
static inline bool weft_sweep_take(struct weft_graph *g, int i)
{
  _Atomic int32_t *p = &g->pending[i];
  /* acquire: a 1 is the sweep's own count, every predecessor's release
   * decrement done (as in weft_gnode_release): nobody else touches it. */
  int was = atomic_load_explicit(p, memory_order_acquire);
  if (was != 1)
    /* acq_rel: as a predecessor's: the last decrement sees what every
     * predecessor wrote; an earlier one publishes nothing but the count. */
    was = atomic_fetch_sub_explicit(p, 1, memory_order_acq_rel);
  WEFT_ASSERT(was >= 1); /* the sweep passes a node once a launch */
  if (was != 1)
    return false;
  weft_opr_held_ready(weft_graph_node(g, i), g->sweep_epoch);
  return true;
}

/* The count of the successor of entry e (a successor list's, graph.h), or
 * NULL for one whose only predecessor this is (WEFT_GRAPH_SOLE: no count). */
static inline _Atomic int32_t *weft_gnode_count_of(_Atomic int32_t *pending, int32_t e)
{
  return (e & WEFT_GRAPH_SOLE) ? NULL : &pending[WEFT_GRAPH_INDEX(e)];
}
/* Takes one predecessor's count off the successor of entry e: whether that
 * was its last (or its only predecessor), which releases it. */
static inline bool weft_gnode_count_down(_Atomic int32_t *pending, int32_t e)
{
  return (e & WEFT_GRAPH_SOLE) || weft_held_count_down(&pending[WEFT_GRAPH_INDEX(e)]);
}

/* The part of a node's finish after its vars have their status (below):
 * resets its counter and releases its successors; for a sink, the count
 * off the tree. */
static inline weft_opr *weft_gnode_release(weft_opr *op, bool keep_one, weft_fifo *ready,
                                           weft_between_fn hook)
{
  const weft_gnode *n = weft_gnode_of(op);
  struct weft_graph *g = n->graph;
  /* Everything read of the node and the graph below is read now: once its
   * last successor count is taken off, the launch may end elsewhere and
   * the graph be destroyed (what it still releases is alive: not run yet). */
  weft_engine *eng = weft_opr_engine(op);
  uint64_t epoch = weft_opr_epoch(op);
  weft_opr_held_done(op); /* before a successor's release: the next launch may follow */
  const int32_t *succ = g->succs + n->succ0;
  int nsucc = n->nsucc, counter = n->counter;
  _Atomic int32_t *pending = g->pending;
  /* relaxed: its predecessors are done with it this launch; the next
   * launch's release of the roots publishes it (see count_off). A node
   * with one predecessor has no count: that one releases it (unless the
   * graph is swept: the sweep counts too). One that counts only the sweep
   * still holds its 1 (the sweeper took it with a load). */
  if (n->npred > 1)
    atomic_store_explicit(&pending[n->index], n->npred, memory_order_relaxed);
  weft_opr *next = NULL;
  bool early = false;
  for (int k = 0; k < nsucc; k++) {
    int32_t e = succ[k];
    int32_t i = WEFT_GRAPH_INDEX(e);
    /* Only a GPU node has device edges (dev_early then): one whose launch
     * released them passes them by (and counts off as a sink, so the
     * launch lives while this reads its graph). */
    if ((e & WEFT_GRAPH_DEVICE) && g->dev_early[n->index]) {
      early = true;
      continue; /* released at the launch (graph.h) */
    }
    if (!weft_gnode_count_down(pending, e))
      continue;
    weft_opr *s = weft_graph_node(g, i); /* released: the launch lives */
    if (keep_one && !next && (e & WEFT_GRAPH_KEEPABLE)) {
      weft_opr_held_ready(s, epoch);
      next = s;
    } else {
      weft_opr_held_append(s, epoch, ready);
    }
  }
  if (early)
    g->dev_early[n->index] = false; /* for the next launch (before its count-off) */
  if (counter < 0)
    return next;
  if (next) /* a sink (or a node with device edges, which counts off as one) keeps nothing */
    weft_opr_held_queue(next, ready);
  return weft_gnode_finish_sink(g, eng, counter, keep_one, ready, hook);
}

/* weft_gnode_finish with keep_one as it is (the caller knows it runs on a
 * pool worker, or says false): inline, for the replay's run paths. */
static inline weft_opr *weft_gnode_finish_here(weft_opr *op, int status, bool keep_one,
                                               weft_fifo *ready, weft_between_fn hook)
{
  /* With no failed var and no failure, no var's state changes. */
  if (status || !weft_engine_no_failed_var(weft_opr_engine(op)))
    weft_gnode_finish_failed(op, status);
  return weft_gnode_release(op, keep_one, ready, hook);
}

/* The failure node op inherits this launch along its graph's explicit
 * edges (graph.h, inherit); 0: none. The engine's skip check asks it (its
 * inherited, deps/ext.h) as op starts, while some failure is counted: a
 * failure passed along an explicit edge is counted with the engine's
 * failed vars until its launch ends, so the replay's bare paths (which run
 * only while none is: weft_engine_no_failed_var) never run a node that
 * inherits one. */
int weft_gnode_inherited(const weft_opr *op);

/* The end of a launch of g (its last node finished, nothing of it runs or
 * passes a failure on): its inherited failures are cleared, and the
 * engine's count of them let go of. */
void weft_graph_inherit_clear(struct weft_graph *g, weft_engine *eng);

/* A graph node's fn, as every replay path runs it (run.c's weft_gnode_run,
 * its sweeper of a graph run in order, lanes.c's): the caller checked
 * gnode_plain_now (run.c). No var
 * of op was failed when it started (nfailed_vars was 0, read after its
 * release, which follows every earlier failure on its vars), and none
 * fails while it runs (every other writer of its vars is ordered with it:
 * by the graph's edges, or behind the launch's gate): only its own failure
 * gives its vars a status. Nor did op inherit a failure along an explicit
 * edge (one would have been counted in nfailed_vars). */
static inline void weft_gnode_call(weft_opr *op, weft_run_ctx *rc)
{
  weft_opr_state_move(op, WEFT_OPR_ST_READY, WEFT_OPR_ST_RUNNING);
  int status = weft_opr_call_fn(op, rc);
  if (status)
    weft_gnode_finish_failed(op, status);
}

#endif /* WEFT_GRAPH_REPLAY_H */
