/* SPDX-License-Identifier: MIT */
/*
 * Replaying a captured graph (replay.h): the gate's start, the roots' heap
 * fan-out (or a swept graph's sweeper), and a node's finish with its
 * sink count. A node's successors
 * and counters are the graph's, fixed at capture; what a launch changes is
 * only counters, each put back to its start value by the thread that takes
 * it to zero (the next launch begins after this one ended: graph_api.c).
 */
#include "common/assert.h"
#include "common/sync.h"
#include "deps/ext.h"
#include "graph/keep.h"
#include "graph/queue.h"
#include "graph/replay.h"

void weft_graph_start(weft_opr *gate, weft_fifo *ready)
{
  weft_opr_state_move(gate, WEFT_OPR_ST_READY, WEFT_OPR_ST_RUNNING);
  struct weft_graph *g = ((weft_gate *)weft_opr_arg(gate))->graph;
  WEFT_ASSERT(g->nroots > 0); /* an empty graph launches no gate */
  weft_opr *r = g->roots[0];
  weft_opr_held_append(r, weft_opr_epoch(gate), ready);
}

struct weft_graph *weft_graph_sweep_start(weft_opr *gate)
{
  weft_opr_state_move(gate, WEFT_OPR_ST_READY, WEFT_OPR_ST_RUNNING);
  struct weft_graph *g = ((weft_gate *)weft_opr_arg(gate))->graph;
  WEFT_ASSERT(g->sweep && g->nnodes > 0); /* an empty graph launches no gate */
  g->sweep_epoch = weft_opr_epoch(gate);
  g->cursor = 0;
  return g;
}

void weft_sweeper_end(struct weft_graph *g, bool plain)
{
  weft_fifo ready = WEFT_FIFO_INIT;
  weft_opr *next = weft_gnode_finish_sink(g, weft_graph_run_engine(g), g->ncounters - 1, false,
                                          &ready, plain ? weft_engine_between : NULL);
  WEFT_ASSERT(!next); /* keeps nothing: its count-off is no node's finish */
  (void)next;
  if (!weft_fifo_empty(&ready))
    weft_opr_ready_list(&ready);
}

void weft_gnode_fanout(weft_opr *op, weft_fifo *ready)
{
  const weft_gnode *n = weft_gnode_of(op);
  WEFT_ASSERT(n->root >= 0); /* only a root passes roots on */
  const struct weft_graph *g = n->graph;
  for (int c = 2 * n->root + 1; c <= 2 * n->root + 2 && c < g->nroots; c++) {
    weft_opr *r = g->roots[c];
    weft_opr_held_append(r, weft_opr_epoch(op), ready);
  }
}

void weft_gnode_release_device_edge(struct weft_graph *g, weft_opr *waited, int32_t e,
                                    weft_fifo *ready)
{
  /* Not run yet: a predecessor launched. The build gives it no more device
   * edges than it has device wait slots. */
  weft_opr *s = weft_graph_node(g, WEFT_GRAPH_INDEX(e));
  weft_opr_release_on_device(s, waited, weft_gnode_count_of(g->pending, e), ready);
}

void weft_gnode_launched(weft_opr *op, weft_fifo *ready)
{
  const weft_gnode *n = weft_gnode_of(op);
  struct weft_graph *g = n->graph;
  const int32_t *succ = g->succs + n->succ0;
  bool released = false;
  for (int k = 0; k < n->nsucc; k++) {
    int32_t e = succ[k];
    if (!(e & WEFT_GRAPH_DEVICE))
      continue;
    released = true;
    weft_gnode_release_device_edge(g, op, e, ready);
  }
  /* Its finish, which comes after its launch, passes these edges by. */
  if (released)
    g->dev_early[n->index] = true;
}

/* Counts a sink off counter c and up the tree; true when that was the
 * launch's last. */
static bool count_off(struct weft_graph *g, int c)
{
  for (;;) {
    weft_gcounter *gc = &g->counters[c];
    /* acq_rel: the last decrement sees every node counted here finished
     * (their writes, their counter resets) and passes that on up. */
    int was = atomic_fetch_sub_explicit(&gc->left, 1, memory_order_acq_rel);
    WEFT_ASSERT(was >= 1); /* a counter counts each of its sinks once a launch */
    if (was != 1)
      return false;
    /* relaxed: nobody uses it again before the next launch, which begins
     * after the release of running that follows. */
    atomic_store_explicit(&gc->left, gc->init, memory_order_relaxed);
    if (gc->parent < 0)
      return true;
    c = gc->parent;
  }
}

int weft_gnode_inherited(const weft_opr *op)
{
  const weft_gnode *n = weft_gnode_of(op);
  struct weft_graph *g = n->graph;
  if (!g->inherit)
    return 0;
  /* relaxed: what this launch's predecessors stored came before their
   * releases of op, which op's start follows (their acq_rel counts, the
   * queue that handed op over, a lane's done); the tag tells an earlier
   * launch's from this one's (none is left at a launch's end:
   * weft_graph_inherit_clear). */
  uint64_t v = atomic_load_explicit(&g->inherit[n->index], memory_order_relaxed);
  return (uint32_t)(v >> 32) == g->launch_no ? (int)(int32_t)(uint32_t)v : 0;
}

void weft_graph_inherit_clear(struct weft_graph *g, weft_engine *eng)
{
  /* relaxed: counted by the nodes of the launch that ends here, which
   * count_off's acq_rel decrements gathered. */
  int held = atomic_load_explicit(&g->xheld, memory_order_relaxed);
  if (!held)
    return;
  for (int i = 0; i < g->nnodes; i++) /* relaxed: nobody reads them before the next launch */
    if (atomic_load_explicit(&g->inherit[i], memory_order_relaxed))
      atomic_store_explicit(&g->inherit[i], 0, memory_order_relaxed);
  atomic_store_explicit(&g->xheld, 0, memory_order_relaxed);
  weft_engine_count_held_failures(eng, -held);
}

/* Node i of g ended with status (a failure, or a skip): its successors
 * along explicit edges inherit it (graph.h, inherit), before it releases
 * them. Each slot set in this launch is counted with the engine's failed
 * vars (weft_engine_count_held_failures) until the launch ends. */
static void pass_failure(struct weft_graph *g, weft_engine *eng, int i, int status)
{
  uint32_t tag = g->launch_no;
  uint64_t v = (uint64_t)tag << 32 | (uint32_t)status;
  int nx, added = 0;
  int32_t mask;
  const int32_t *x = weft_graph_xsuccs(g, i, &nx, &mask);
  for (int k = 0; k < nx; k++) {
    _Atomic uint64_t *slot = &g->inherit[x[k] & mask];
    /* relaxed: published by this node's release of the successor (or the
     * last predecessor's, which follows it). A second failing predecessor
     * leaves the first's status; of two at once, the CAS takes one. */
    uint64_t old = atomic_load_explicit(slot, memory_order_relaxed);
    while ((uint32_t)(old >> 32) != tag || old == 0)
      if (atomic_compare_exchange_weak_explicit(slot, &old, v, memory_order_relaxed,
                                                memory_order_relaxed)) {
        added++;
        break;
      }
  }
  if (!added)
    return;
  /* relaxed: the launch's end reads it after every node's count-off. */
  atomic_fetch_add_explicit(&g->xheld, added, memory_order_relaxed);
  weft_engine_count_held_failures(eng, added); /* before the releases that follow */
}

void weft_gnode_finish_failed(weft_opr *op, int status)
{
  const weft_gnode *n = weft_gnode_of(op);
  struct weft_graph *g = n->graph;
  weft_engine *eng = weft_opr_engine(op);
  if (status)
    weft_engine_record_failure(eng, status, weft_opr_name(op));
  if (status && g->inherit)
    pass_failure(g, eng, n->index, status);
  /* A write's status is the var's (failed, or fine again); the gate holds
   * the var, so only a change needs its lock (weft_var_wait and
   * weft_wait_all clear a var's failure under it). */
  weft_var_impl *const *var = weft_opr_vars(op);
  for (int k = 0; k < weft_opr_nvars(op); k++)
    if (g->node_uses[n->index][k].write)
      weft_var_set_status(eng, var[k], status, weft_opr_epoch(op));
}

weft_opr *weft_gnode_finish_sink(struct weft_graph *g, weft_engine *eng, int counter,
                                 bool keep_one, weft_fifo *ready, weft_between_fn hook)
{
  if (!count_off(g, counter))
    return NULL; /* not the last: the launch may be over already */
  /* The launch's last node. */
  if (g->inherit) /* the failures passed along explicit edges: none left */
    weft_graph_inherit_clear(g, eng);
  if (weft_lanes_able(g)) { /* its time, for the choice of lanes (lanes.h) */
    int64_t t = weft_now_ns() - g->lane_t0;
    int64_t *best = &g->lane_best[g->lane_now];
    if (t < *best)
      *best = t;
  }
  weft_gate *gate = g->cur;
  weft_opr *gop = &gate->op;
  /* relaxed: a thread that sees a var of the graph free from here on
   * (keep_end's release CAS orders this before any yield's grant) sees
   * ENDING, or IDLE, or a later launch: a launch waits this out (graph.h).
   * A read-modify-write, as the one to IDLE below: a launch may set
   * QUEUED meanwhile (queue.h). */
  atomic_fetch_add_explicit(&g->running, WEFT_GRAPH_ENDING - WEFT_GRAPH_RUNNING,
                            memory_order_relaxed);
  if (weft_keep_end(gate)) {
    /* The gate keeps the vars for the next launch (keep.h), which may
     * reuse it as soon as running is clear: what its count needs is read
     * first. */
    int slot = weft_opr_slot(gop);
    uint64_t gepoch = weft_opr_epoch(gop);
    uint32_t count = 1u + weft_opr_owed(gop);
    weft_opr_state_set(gop, WEFT_OPR_ST_DONE);
    weft_opr_retire(eng, gop);
    /* release: every node's reset (gathered by count_off) before the next
     * launch; pairs with the acquire CAS in weft_graph_launch, or a queued
     * launch's take (queue.c). While launches are queued the graph stays
     * (no destroy gets IDLE), so the handoff below may read it. */
    int was = atomic_fetch_sub_explicit(&g->running, WEFT_GRAPH_ENDING, memory_order_release);
    weft_opr_count_finish(eng, slot, gepoch, count, NULL, hook);
    if (was & WEFT_GRAPH_QUEUED)
      weft_graph_queue_handoff(g);
    return NULL;
  }
  /* Wanted elsewhere: the gate releases every var. The graph may be
   * launched again from here on, with a fresh gate, while this one still
   * releases them (the next gate queues behind it on every var this one
   * writes; the nodes are all done either way). */
  g->kept = NULL;
  /* release: as above. */
  int was = atomic_fetch_sub_explicit(&g->running, WEFT_GRAPH_ENDING, memory_order_release);
  if (was & WEFT_GRAPH_QUEUED) /* a gate of a graph without vars may wait (queue.h) */
    weft_graph_queue_handoff(g);
  return weft_opr_finish_vars(gop, 0, keep_one, ready, hook);
}

weft_opr *weft_gnode_finish(weft_opr *op, int status, bool keep_one, weft_fifo *ready,
                            weft_between_fn hook)
{
  if (keep_one && weft_pool_worker_index(weft_engine_pool(weft_opr_engine(op))) < 0)
    keep_one = false;
  return weft_gnode_finish_here(op, status, keep_one, ready, hook);
}
