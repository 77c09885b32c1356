/* SPDX-License-Identifier: MIT */
/*
 * Runs of GPU operators replayed as one device graph (deps/executor.h,
 * weft_exec_run; the graph layer finds them: src/graph/devrun.h).
 *
 * The leader's device worker records its run once: it captures its own
 * stream (backend.h, capture_begin) while it calls the members' fns in
 * order, each as it would call one operator's, then instantiates what they
 * enqueued (capture_end). From then on each launch of the graph enqueues
 * that record on the leader's stream (graph_launch): one launch, one event
 * and one completion for the whole run, and no fn is called. A run whose
 * recording fails (a fn returned non-zero while recorded, or the device
 * refused the capture: a synchronous call, say) is marked so in its cache
 * and goes operator by operator from then on; one line says why.
 */
#include "common/error.h"
#include "gpu/gpu.h"

/* A run's cache once its recording failed (never a backend graph). */
static char unrecordable;

/* Records run on lane's stream: its device graph, or NULL (logged). */
static weft_gpu_graph *record(weft_gpu_exec *x, weft_gpu_lane *lane, const weft_exec_run *run)
{
  const char *lead = weft_exec_op_name(run->member[0]);
  int rc = weft_gpu_capture_begin(x->b, lane->stream);
  if (rc) {
    weft_log("GPU run of %d operators from \"%s\": the stream cannot be captured (%s); the "
             "run goes operator by operator",
             run->n, lead, weft_strerror(rc));
    return NULL;
  }
  int status = 0, k = 0;
  for (; k < run->n && !status; k++) {
    weft_exec_op *m = run->member[k];
    weft_run_ctx rctx = {weft_exec_op_ctx(m), lane->native, -1};
    weft_prof_mark pm = weft_prof_op_begin(true); /* its span on the worker's track */
    status = weft_exec_op_call(m, &rctx);
    weft_prof_op_end(pm, weft_exec_op_name(m));
  }
  weft_gpu_graph *gg = NULL;
  rc = weft_gpu_capture_end(x->b, lane->stream, status ? NULL : &gg);
  if (status) {
    weft_log("GPU run of %d operators from \"%s\": \"%s\" returned %d while it was recorded; "
             "the run goes operator by operator",
             run->n, lead, weft_exec_op_name(run->member[k - 1]), status);
    return NULL;
  }
  if (rc) {
    weft_log("GPU run of %d operators from \"%s\" could not be recorded (%s); the run goes "
             "operator by operator",
             run->n, lead, weft_strerror(rc));
    return NULL;
  }
  return gg;
}

bool weft_gpu_run_enqueue(weft_gpu_worker *w, weft_gpu_lane *lane, weft_exec_op *op,
                          const weft_exec_run *run, int *status)
{
  weft_gpu_exec *x = w->x;
  void *rec = *run->cache;
  if (rec == &unrecordable)
    return false;
  if (!rec) {
    rec = record(x, lane, run);
    *run->cache = rec ? rec : &unrecordable;
    if (!rec)
      return false;
  }
  weft_prof_mark pm = weft_prof_op_begin(true); /* the launch's span on the worker's track */
  *status = weft_gpu_graph_launch(x->b, rec, lane->stream);
  weft_prof_op_end(pm, weft_exec_op_name(op));
  return true;
}

void weft_gpu_run_free(void *self, void *cache)
{
  weft_gpu_exec *x = self;
  if (cache != &unrecordable)
    weft_gpu_graph_destroy(x->b, cache);
}
