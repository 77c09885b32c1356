/* SPDX-License-Identifier: MIT */
/*
 * A graph's records: one recorded push or one node added each, and the
 * recording a build reads (its records, their vars, its explicit edges).
 * Shared by the capture (capture.c), the definition (def.c) and the build
 * (build.c), so that neither of the first two depends on the build.
 */
#ifndef WEFT_GRAPH_RECORD_H
#define WEFT_GRAPH_RECORD_H
#include "graph/layer.h" /* layer guard: no include from a lower layer, nor from src/gpu */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "deps/ext.h"

/* The most nodes a graph holds: its node indices stay below the successor
 * lists' flag bits (graph.h, WEFT_GRAPH_DEVICE). */
#define WEFT_GRAPH_NODES_MAX ((int32_t)0x0fffffff)

/* One recorded push, or one node added (weft_graph_add): what a node's
 * block takes of its descriptor (its vars are the recording's uses), in
 * one line where a descriptor copy takes two (a graph's definition keeps
 * one per node). */
typedef struct weft_capture_rec {
  weft_op_fn fn;
  weft_async_op_fn async_fn;
  void *arg;
  const char *name;
  weft_ctx ctx;
  int priority;
  unsigned flags;
  uint8_t prop;      /* a weft_prop */
  int nuses;
  size_t use0;       /* its vars: uses[use0 .. use0 + nuses) */
} weft_capture_rec;
_Static_assert(sizeof(weft_capture_rec) <= 64, "a record is a line at most");

/* Record r of the checked descriptor d on its vars uses[use0 .. use0 + n). */
static inline void weft_rec_set(weft_capture_rec *r, const weft_op_desc *d, size_t use0, int n)
{
  r->fn = d->fn;
  r->async_fn = d->async_fn;
  r->arg = d->arg;
  r->name = d->name;
  r->ctx = d->ctx;
  r->priority = d->priority;
  r->flags = d->flags;
  r->prop = (uint8_t)d->prop;
  r->nuses = n;
  r->use0 = use0;
}

/* A graph's definition on eng: its records (recorded pushes, or nodes
 * added) in order, and their vars, each record's normalised (sorted by
 * slot index); and the explicit edges between records (weft_graph_edge:
 * (before, after) record indices, in any order, duplicates allowed).
 *
 * order: NULL, or the record at each build index, when the build runs the
 * records in another order than theirs (build.c sets it on its own copy;
 * what it is given has none): weft_rec reads through it.
 *
 * at_launch: the build is a launch's, the first since the graph changed
 * (graph_api.c), which may be its only one: what pays only over later
 * launches is left to the next one (weft_graph.lean).
 *
 * released: the graph's nodes were timed long (weft_graph.released): on a
 * pool of several workers they are released along the edges, never run in
 * order. */
typedef struct weft_recording {
  weft_engine *eng;
  const weft_capture_rec *recs;
  size_t nrecs;
  const weft_var_use *uses;
  size_t nuses;
  const int32_t (*xedge)[2];
  size_t nxedges;
  const int32_t *order;
  bool at_launch;
  bool released;
} weft_recording;

/* The record at build index i of c. */
static inline const weft_capture_rec *weft_rec(const weft_recording *c, size_t i)
{
  return &c->recs[c->order ? (size_t)c->order[i] : i];
}

#endif /* WEFT_GRAPH_RECORD_H */
