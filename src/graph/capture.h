/* SPDX-License-Identifier: MIT */
/*
 * Capturing a graph: while a thread captures on an engine, its pushes to
 * that engine are recorded (a copied descriptor and its normalised vars),
 * not run; the end of the capture resolves them into a graph (build.c).
 * The engine hands this layer the pushes: a capture is the thread's push
 * sink (deps/ext.h: weft_tls_sink, weft_capturing, the table's record).
 */
#ifndef WEFT_GRAPH_CAPTURE_H
#define WEFT_GRAPH_CAPTURE_H
#include "graph/layer.h" /* layer guard: no include from a lower layer, nor from src/gpu */

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/dlist.h"
#include "graph/build.h"
#include "deps/ext.h"
#include "graph/graph.h"

/* A thread's capture (owned by that thread, but for the fields marked). */
typedef struct weft_capture {
  /* The thread's push sink while it captures (deps/ext.h): its engine, the
   * operator the thread ran at the begin, and orphaned (atomic, relaxed,
   * written under the captures' lock: its engine's destroy ran while the
   * capture was open). */
  weft_push_sink sink;
  /* Under the captures' lock (capture.c): every open capture, for its
   * engine's destroy and its thread's exit. */
  weft_dlist_node link;
  weft_capture_rec *recs;
  size_t nrecs, caprecs;
  weft_var_use *uses; /* each record's, normalised (sorted by slot index) */
  size_t nuses, capuses;
  /* The recorded pushes' argument boxes (deps/arg.h), a reference each:
   * the graph's once it is built (weft_graph.boxes). */
  struct weft_arg_box **boxes;
  size_t nboxes, capboxes;
} weft_capture;

/* Starts, on the calling thread: WEFT_EBUSY if it already captures,
 * WEFT_ENOMEM. */
int weft_capture_begin(weft_engine *eng);
/* Records a push of the checked descriptor d on its n normalised uses
 * into the capture whose sink is sink (the engine's record, deps/ext.h). */
int weft_capture_push(weft_push_sink *sink, const weft_op_desc *d, const weft_var_use *uses,
                      int n, struct weft_arg_box *box);
/* Ends the calling thread's capture on eng (WEFT_EINVAL if none) and
 * resolves it into *out (WEFT_ENOMEM: *out NULL, the capture ended).
 * WEFT_ESHUTDOWN, the capture ended with nothing, once eng's destroy began:
 * eng is entered (weft_engine_enter) only while the capture is known not
 * to be orphaned, under the captures' lock, so a destroy that already
 * freed eng is never touched. */
int weft_capture_end(weft_engine *eng, struct weft_graph **out);
/* At eng's destroy (drained, before the free): every capture still open on
 * eng is orphaned: its thread's end answers WEFT_ESHUTDOWN, its pushes to
 * any engine run as usual. */
void weft_capture_orphan_all(weft_engine *eng);
/* Captures open now, of every engine and thread (white-box tests). */
size_t weft_capture_count_open(void);

#endif /* WEFT_GRAPH_CAPTURE_H */
