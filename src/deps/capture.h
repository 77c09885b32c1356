/*
 * Capturing a graph: while a thread captures on an engine, its pushes to
 * that engine are recorded (a copied descriptor and its normalised vars),
 * not run; the end of the capture resolves them into a graph (build.c).
 */
#ifndef WEFT_DEPS_CAPTURE_H
#define WEFT_DEPS_CAPTURE_H
#include "deps/layer.h" /* layer guard: no include from a lower layer */

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/dlist.h"
#include "deps/graph.h"

/* One recorded push. */
typedef struct weft_capture_rec {
  weft_op_desc desc; /* copied; reads and writes cleared (see uses) */
  size_t use0;       /* its vars: uses[use0 .. use0 + nuses) */
  int nuses;
} weft_capture_rec;

/* A thread's capture (owned by that thread, but for the fields marked). */
typedef struct weft_capture {
  weft_engine *eng; /* immutable; not to be touched once orphaned */
  /* Under the captures' lock (capture.c): every open capture, for its
   * engine's destroy and its thread's exit. */
  weft_dlist_node link;
  /* atomic, relaxed (written under the captures' lock): its engine's
   * destroy ran while the capture was open; the engine may be freed, and a
   * new engine at the same address is not this capture's. */
  _Atomic bool orphaned;
  /* The operator the thread ran at the begin (of another engine, or NULL):
   * an operator run on this thread meanwhile (an inline successor of a
   * weft_done_signal, say) is not the capture's, and pushes as usual. */
  const struct weft_opr *opr;
  weft_capture_rec *recs;
  size_t nrecs, caprecs;
  weft_var_use *uses; /* each record's, normalised (sorted by slot index) */
  size_t nuses, capuses;
} weft_capture;

/* The calling thread's capture, or NULL. */
extern _Thread_local weft_capture *weft_tls_capture __attribute__((tls_model("initial-exec")));

/* Whether the calling thread captures its pushes to eng (not from inside
 * an operator it runs meanwhile). */
static inline bool weft_capturing(const weft_engine *eng)
{
  const weft_capture *c = weft_tls_capture;
  return __builtin_expect(c != NULL, 0) && c->eng == eng && weft_tls_opr == c->opr &&
         !atomic_load_explicit(&c->orphaned, memory_order_relaxed);
}

/* Starts, on the calling thread: WEFT_EBUSY if it already captures,
 * WEFT_ENOMEM. */
int weft_capture_begin(weft_engine *eng);
/* Records a push of the checked descriptor d on its n normalised uses. */
int weft_capture_push(weft_capture *c, const weft_op_desc *d, const weft_var_use *uses, int n);
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

/* Resolves the records of c into a graph (build.c); NULL without memory. */
struct weft_graph *weft_graph_build(const weft_capture *c);

#endif /* WEFT_DEPS_CAPTURE_H */
