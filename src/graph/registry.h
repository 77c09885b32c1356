/* SPDX-License-Identifier: MIT */
/*
 * Every engine's graphs (registry.c): a graph is listed from its capture's
 * end to its destroy, so that its engine's destroy can let go of it first
 * (its nodes and what its gate keeps go with the engine; the graph object
 * stays, for weft_graph_destroy to free).
 */
#ifndef WEFT_GRAPH_REGISTRY_H
#define WEFT_GRAPH_REGISTRY_H
#include "graph/layer.h" /* layer guard: no include from a lower layer, nor from src/gpu */

#include "graph/graph.h"

/* Lists g among its engine's graphs / takes it off (the list's lock). */
void weft_graph_track(struct weft_graph *g);
void weft_graph_untrack(struct weft_graph *g);
/* At the engine's destroy (drained): every graph of eng left loses its
 * nodes and its engine (weft_graph_destroy frees the rest). */
void weft_graph_orphan_all(weft_engine *eng);
/* Returns once the engine's destroy (which began) has let go of g
 * (weft_graph_orphan_all): then g is the caller's alone to free. */
void weft_graph_wait_orphaned(struct weft_graph *g);

#endif /* WEFT_GRAPH_REGISTRY_H */
