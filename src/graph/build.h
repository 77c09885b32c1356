/* SPDX-License-Identifier: MIT */
/*
 * Resolving a graph's definition (what a capture recorded, capture.h, or
 * what weft_graph_add and weft_graph_edge gave, def.h) into the graph that
 * launches replay (build.c).
 */
#ifndef WEFT_GRAPH_BUILD_H
#define WEFT_GRAPH_BUILD_H
#include "graph/layer.h" /* layer guard: no include from a lower layer, nor from src/gpu */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "deps/ext.h"
#include "graph/graph.h"
#include "graph/record.h"

/* Resolves the recording c into g, a graph of c's engine with nothing
 * built (weft_graph_new, or weft_graph_release_built): the dependencies
 * of c's vars in the records' order, its explicit edges, and, where an
 * explicit edge goes backward, the order the nodes are built in (a
 * topological one: build.c). 0; WEFT_ENOMEM; WEFT_EINVAL if the edges
 * and the var dependencies form a cycle (*cycle, if not NULL: the record
 * index of a node on it). On an error g is left with nothing built. */
int weft_graph_build(struct weft_graph *g, const weft_recording *c, size_t *cycle);

#endif /* WEFT_GRAPH_BUILD_H */
