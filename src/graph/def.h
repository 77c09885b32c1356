/* SPDX-License-Identifier: MIT */
/*
 * A graph's definition (def.c): its nodes in the order they were added
 * (weft_graph_add, or the pushes its capture recorded: the i-th recorded
 * push is node i), their vars, and the explicit edges between them
 * (weft_graph_edge), as given. The graph a launch replays (graph.h) is
 * built from it (build.c): at the capture's end, and again at the first
 * launch after a change (graph_api.c), which is what dirty says.
 *
 * Who touches it: the thread that holds the graph's running word at
 * EDITING (a change) or at RUNNING (a launch that builds the graph again),
 * or the graph's destroy; never two at once (graph.h).
 */
#ifndef WEFT_GRAPH_DEF_H
#define WEFT_GRAPH_DEF_H
#include "graph/layer.h" /* layer guard: no include from a lower layer, nor from src/gpu */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph/record.h"

typedef struct weft_gdef {
  weft_capture_rec *recs; /* [nrecs] (room for caprecs): the nodes, by index */
  size_t nrecs, caprecs;
  weft_var_use *uses;     /* [nuses] (room for capuses): each record's, normalised */
  size_t nuses, capuses;
  int32_t (*edge)[2];     /* [nedges] (room for capedges): (before, after), as given */
  size_t nedges, capedges;
  bool dirty;             /* changed since the graph was last built from it */
} weft_gdef;

/* Adds a node of the checked descriptor d (weft_push_check_desc), its vars
 * normalised as a push's (weft_push_normalize: WEFT_EINVAL for a dead
 * one), arg its argument (d->arg, or a box's bytes); *node gets its index.
 * 0, WEFT_EINVAL, WEFT_ENOMEM (also past the nodes a graph holds); on an
 * error nothing changed. */
int weft_gdef_add(weft_gdef *def, weft_engine *eng, const weft_op_desc *d, void *arg,
                  size_t *node);
/* Adds the edge before -> after: WEFT_EINVAL for an unknown node or
 * before == after, WEFT_ENOMEM; on an error nothing changed. */
int weft_gdef_edge(weft_gdef *def, size_t before, size_t after);

/* What build.c reads of def, a graph's of eng, at the launch after a
 * change. */
static inline weft_recording weft_gdef_recording(const weft_gdef *def, weft_engine *eng)
{
  weft_recording r = {eng,
                      def->recs,
                      def->nrecs,
                      def->uses,
                      def->nuses,
                      (const int32_t(*)[2])def->edge,
                      def->nedges,
                      NULL,
                      true,
                      false};
  return r;
}

/* Makes room for n more elements of size elem in *arr (count len, room
 * *cap, doubling); false without memory (*arr unchanged). For the
 * definition's arrays and a capture's. */
bool weft_graph_grow(void **arr, size_t *cap, size_t len, size_t n, size_t elem);

/* Frees def and its arrays (NULL: nothing). */
void weft_gdef_free(weft_gdef *def);

#endif /* WEFT_GRAPH_DEF_H */
