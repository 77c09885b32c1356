/* SPDX-License-Identifier: MIT */
/*
 * Runs of GPU nodes replayed as one device graph (devrun.h): the launch's
 * choice, the release at the run's launch and the run's finish (finding
 * them at build: devrun_plan.c).
 */
#include "common/assert.h"
#include "deps/ext.h"
#include "graph/devrun.h"
#include "graph/replay.h"

/* Whether a var some member of run uses is failed (the launch then runs it
 * node by node, so that each member is skipped or not as usual). */
static bool run_var_failed(const weft_grun *run)
{
  if (weft_engine_no_failed_var(weft_opr_engine(run->op[0])))
    return false;
  for (int k = 0; k < run->n; k++) {
    const weft_opr *m = run->op[k];
    for (int j = 0; j < weft_opr_nvars(m); j++)
      if (weft_var_failed(weft_opr_vars(m)[j]))
        return true;
  }
  return false;
}

bool weft_devrun_of(weft_opr *op, weft_exec_run *out)
{
  const weft_gnode *n = weft_gnode_of(op);
  const struct weft_graph *g = n->graph;
  if (!g->run_of || g->run_of[n->index] < 0)
    return false;
  weft_grun *run = &g->runs[g->run_of[n->index]];
  /* A follower reaches its device only when its run goes node by node. */
  if (run->op[0] != op || run_var_failed(run))
    return false;
  out->n = run->n;
  out->member = run->op;
  out->cache = &run->cache;
  return true;
}

void weft_devrun_launched(weft_opr *op, int status, weft_fifo *ready)
{
  if (status)
    return; /* nothing waits on the device for a run that is not there */
  const weft_gnode *n = weft_gnode_of(op);
  struct weft_graph *g = n->graph;
  int r = g->run_of[n->index];
  const weft_grun *run = &g->runs[r];
  /* Every member's device edges out of the run wait for the leader's
   * event, which follows the whole run on its stream. */
  for (int k = 0; k < run->n; k++) {
    const weft_gnode *m = weft_gnode_of(run->op[k]);
    const int32_t *succ = g->succs + m->succ0;
    for (int j = 0; j < m->nsucc; j++) {
      int32_t e = succ[j];
      int32_t i = WEFT_GRAPH_INDEX(e);
      if (!(e & WEFT_GRAPH_DEVICE) || g->run_of[i] == r)
        continue;
      weft_gnode_release_device_edge(g, op, e, ready); /* waits for the leader */
    }
  }
}

weft_opr *weft_devrun_finish(weft_opr *op, int status, bool keep_one, weft_fifo *ready,
                             weft_between_fn hook)
{
  /* A CPU node's block has no device fields. */
  if (weft_opr_ctx(op).type != WEFT_DEV_GPU || !weft_opr_dev_run(op))
    return weft_gnode_finish(op, status, keep_one, ready, hook);
  weft_opr_set_dev_run(op, false); /* for the next launch */
  const weft_gnode *ln = weft_gnode_of(op);
  struct weft_graph *g = ln->graph;
  weft_engine *eng = weft_opr_engine(op);
  int r = g->run_of[ln->index];
  const weft_grun *run = &g->runs[r];
  /* The run's device edges out were released at its launch unless it
   * could not be enqueued (weft_devrun_launched). */
  bool early = weft_opr_status(op) == 0;
  uint64_t epoch = weft_opr_epoch(op);
  _Atomic int32_t *pending = g->pending;
  /* First every member's status and successors out of the run; then the
   * counts off the sink tree, the last of which may end the launch (the
   * members not counted off yet hold it until then). */
  for (int k = 0; k < run->n; k++) {
    weft_opr *m = run->op[k];
    const weft_gnode *mn = weft_gnode_of(m);
    if (k > 0) /* never released: it ran within the leader */
      weft_opr_held_ready(m, epoch);
    /* as in weft_gnode_finish_here */
    if (status || !weft_engine_no_failed_var(eng))
      weft_gnode_finish_failed(m, status);
    weft_opr_state_set(m, WEFT_OPR_ST_DONE);
    /* relaxed: as in weft_gnode_release (the leader's count; the others'
     * were never taken: only members release them). */
    if (k == 0 && mn->npred > 1)
      atomic_store_explicit(&pending[mn->index], mn->npred, memory_order_relaxed);
    const int32_t *succ = g->succs + mn->succ0;
    for (int j = 0; j < mn->nsucc; j++) {
      int32_t e = succ[j];
      int32_t i = WEFT_GRAPH_INDEX(e);
      if (g->run_of[i] == r || (early && (e & WEFT_GRAPH_DEVICE)))
        continue; /* inside the run, or released at its launch */
      if (!weft_gnode_count_down(pending, e))
        continue;
      weft_opr *s = weft_graph_node(g, i);
      weft_opr_held_append(s, epoch, ready);
    }
  }
  int last = -1;
  for (int k = 0; k < run->n; k++)
    if (weft_gnode_of(run->op[k])->counter >= 0)
      last = k;
  for (int k = 0; k <= last; k++) {
    /* Read before the count-off: after the last one the launch may end and
     * the graph go. */
    int counter = weft_gnode_of(run->op[k])->counter;
    if (counter < 0)
      continue;
    weft_opr *next = weft_gnode_finish_sink(g, eng, counter, false, ready, hook);
    WEFT_ASSERT(!next); /* keep_one false: nothing kept */
    (void)next;
    if (k == last)
      break; /* nothing of the graph is touched after it */
  }
  return NULL;
}
