/*
 * Replaying a captured graph (graph.h): what a launch's gate does once it
 * holds every var, what a node does when it starts and when it finishes.
 * Like complete.h, these decide what becomes ready and hand it back;
 * dispatch.c sends it where it runs.
 */
#ifndef WEFT_DEPS_REPLAY_H
#define WEFT_DEPS_REPLAY_H
#include "deps/layer.h" /* layer guard: no include from a lower layer */

#include <stdbool.h>

#include "common/fifo.h"
#include "deps/graph.h"
#include "pool/pool_ext.h"

/* The gate holds every var of its graph: the launch begins; the first root
 * is appended to ready. */
void weft_graph_start(weft_opr *gate, weft_fifo *ready);

/* A node starts (or goes to its device): if it is a root, the next two
 * roots of the heap are appended to ready; and what its finish will read
 * of its successors is prefetched. */
void weft_gnode_fanout(weft_opr *op, weft_fifo *ready);

/* The prefetch part of weft_gnode_fanout: its finish reads what it
 * releases, so start moving those lines (the successors' counts, their
 * blocks' first lines, each most likely in memory in a graph bigger than
 * the cache) while its fn runs. */
static inline void weft_gnode_prefetch(const weft_opr *op)
{
  const weft_gnode *n = &op->gn;
  const struct weft_graph *g = n->graph;
  const int32_t *succ = g->succs + n->succ0;
  for (int k = 0; k < n->nsucc && k < WEFT_GRAPH_PREFETCH; k++) {
    int32_t e = succ[k];
    if (!(e & WEFT_GRAPH_SOLE))
      __builtin_prefetch((const void *)&g->pending[e], 1);
    const char *s = (const char *)weft_graph_node(g, e & ~WEFT_GRAPH_SOLE);
    __builtin_prefetch(s, 1);
    __builtin_prefetch(s + WEFT_CACHE_LINE, 1); /* its place in the graph, its state */
  }
}

/* Finishes node op with status, as weft_opr_finish_vars finishes a pushed
 * operator: records a failure, gives the vars it writes its status, resets
 * its counter for the next launch, and releases its successors (appended
 * to ready, or one plain CPU successor returned with keep_one on a pool
 * worker). The last sink to finish ends the launch and finishes the gate
 * (hook: see weft_engine_count_done_op). */
weft_opr *weft_gnode_finish(weft_opr *op, int status, bool keep_one, weft_fifo *ready,
                            weft_between_fn hook);
/* The same, from a pool worker's run (keep_one as it is: no check). */
weft_opr *weft_gnode_finish_here(weft_opr *op, int status, bool keep_one, weft_fifo *ready,
                                 weft_between_fn hook);

#endif /* WEFT_DEPS_REPLAY_H */
