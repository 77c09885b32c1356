/* SPDX-License-Identifier: MIT */
/*
 * Running a graph launch's nodes (run.c): the entries the engine reaches
 * through this layer's table (hooks.c, deps/ext.h) when it runs a node or
 * a gate is ready.
 */
#ifndef WEFT_GRAPH_RUN_H
#define WEFT_GRAPH_RUN_H
#include "graph/layer.h" /* layer guard: no include from a lower layer, nor from src/gpu */

#include "graph/graph.h"
#include "pool/pool_ext.h"

/* A node starts: on this thread before its fn, or it goes to its device,
 * or it is ended without running. A root releases the next roots of the
 * heap (graph.h); a CPU node starts moving what its finish reads. */
void weft_gnode_start(weft_opr *op);

/* The launch whose gate holds op's vars while op runs: its gate. */
weft_opr *weft_gnode_holder(const weft_opr *op);

/* The pool task's loop for a ready plain node (the engine's run, ext.h):
 * runs op and the successors it keeps for this thread, each a few dozen
 * instructions with the replay's prefetch, while the thread has no hook
 * and no var is failed; *run counts them, up to WEFT_KEEP_RUN_MAX.
 * Returns the operator to run next on this thread, or NULL. */
weft_opr *weft_gnode_run(weft_opr *op, int worker, weft_between_fn hook, unsigned *run);

/* A launch's gate holds every var of its graph (the engine's hold, ext.h):
 * the launch begins (a queued one: once the launch before it ended): its first root is dispatched, or its sweeper (one
 * lane's or its lanes', lanes.h) queued. */
void weft_gate_hold(weft_opr *gate);

#endif /* WEFT_GRAPH_RUN_H */
