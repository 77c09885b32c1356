/*
 * Resolving a graph's definition (what a capture recorded, capture.h, or
 * what weft_graph_add and weft_graph_edge gave, def.h) into the graph that
 * launches replay (build.c).
 */
#ifndef WEFT_GRAPH_BUILD_H
#define WEFT_GRAPH_BUILD_H
#include "graph/layer.h" /* layer guard: no include from a lower layer, nor from src/gpu */

#include <stddef.h>
#include <stdint.h>

#include "deps/engine.h"
#include "graph/graph.h"
#include "deps/opr.h"

/* One recorded push, or one node added (weft_graph_add). */
typedef struct weft_capture_rec {
  weft_op_desc desc; /* copied; reads and writes cleared (see uses) */
  size_t use0;       /* its vars: uses[use0 .. use0 + nuses) */
  int nuses;
} weft_capture_rec;

/* A graph's definition on eng: its records (recorded pushes, or nodes
 * added) in order, and their vars, each record's normalised (sorted by
 * slot index); and the explicit edges between records (weft_graph_edge:
 * (before, after) record indices, in any order, duplicates allowed).
 *
 * order: NULL, or the record at each build index, when the build runs the
 * records in another order than theirs (build.c sets it on its own copy;
 * what it is given has none): weft_rec reads through it. */
typedef struct weft_recording {
  weft_engine *eng;
  const weft_capture_rec *recs;
  size_t nrecs;
  const weft_var_use *uses;
  size_t nuses;
  const int32_t (*xedge)[2];
  size_t nxedges;
  const int32_t *order;
} weft_recording;

/* The record at build index i of c. */
static inline const weft_capture_rec *weft_rec(const weft_recording *c, size_t i)
{
  return &c->recs[c->order ? (size_t)c->order[i] : i];
}

/* Resolves the recording c into g, a graph of c's engine with nothing
 * built (weft_graph_new, or weft_graph_release_built): the dependencies
 * of c's vars in the records' order, its explicit edges, and, where an
 * explicit edge goes backward, the order the nodes are built in (a
 * topological one: build.c). 0; WEFT_ENOMEM; WEFT_EINVAL if the edges
 * and the var dependencies form a cycle (*cycle, if not NULL: the record
 * index of a node on it). On an error g is left with nothing built. */
int weft_graph_build(struct weft_graph *g, const weft_recording *c, size_t *cycle);

#endif /* WEFT_GRAPH_BUILD_H */
