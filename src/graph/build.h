/*
 * Resolving what a capture recorded (capture.h) into a graph (build.c).
 */
#ifndef WEFT_GRAPH_BUILD_H
#define WEFT_GRAPH_BUILD_H
#include "graph/layer.h" /* layer guard: no include from a lower layer, nor from src/gpu */

#include <stddef.h>

#include "deps/engine.h"
#include "graph/graph.h"
#include "deps/opr.h"

/* One recorded push. */
typedef struct weft_capture_rec {
  weft_op_desc desc; /* copied; reads and writes cleared (see uses) */
  size_t use0;       /* its vars: uses[use0 .. use0 + nuses) */
  int nuses;
} weft_capture_rec;

/* What a capture on eng recorded: its pushes in order, and their vars,
 * each push's normalised (sorted by slot index). */
typedef struct weft_recording {
  weft_engine *eng;
  const weft_capture_rec *recs;
  size_t nrecs;
  const weft_var_use *uses;
  size_t nuses;
} weft_recording;

/* Resolves the recording c into a graph of its engine; NULL without
 * memory. */
struct weft_graph *weft_graph_build(const weft_recording *c);

#endif /* WEFT_GRAPH_BUILD_H */
