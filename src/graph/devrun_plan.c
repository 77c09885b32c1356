/* SPDX-License-Identifier: MIT */
/*
 * Runs of GPU nodes replayed as one device graph (devrun.h): finding them at
 * build, and freeing them (with what the executor recorded of them) with
 * their graph.
 */
#include "common/alloc.h"
#include "common/assert.h"
#include "deps/ext.h"
#include "graph/devrun_plan.h"

/* Whether capture record r may be in a run, and on which device. */
static bool runnable(const weft_capture_rec *r)
{
  return (r->flags & WEFT_OP_GPU_GRAPH) && r->fn && r->ctx.type == WEFT_DEV_GPU &&
         r->prop == WEFT_PROP_NORMAL;
}

int weft_devruns_find(struct weft_graph *g, const weft_recording *c, const int (*edge)[2],
                      size_t nedges, const int *npred, int *run_at)
{
  int n = (int)c->nrecs;
  for (int i = 0; i < n; i++)
    run_at[i] = -1;
  bool any = false;
  for (int i = 0; i < n && !any; i++)
    any = runnable(weft_rec(c, (size_t)i));
  if (!any)
    return 0;
  /* Each node's earliest predecessor (the build's order is topological:
   * all are earlier). */
  int *minpred = weft_malloc(sizeof(int) * (size_t)n);
  if (!minpred)
    return WEFT_ENOMEM;
  for (int i = 0; i < n; i++)
    minpred[i] = i;
  for (size_t e = 0; e < nedges; e++)
    if (edge[e][0] < minpred[edge[e][1]])
      minpred[edge[e][1]] = edge[e][0];
  /* The stretches, greedily: a node joins the open run if it may, else it
   * may open one; a run of one node is none. */
  int nruns = 0, lo = -1;
  for (int i = 0; i <= n; i++) {
    const weft_capture_rec *r = i < n ? weft_rec(c, (size_t)i) : NULL;
    bool joins = r && lo >= 0 && runnable(r) && r->ctx.id == weft_rec(c, (size_t)lo)->ctx.id &&
                 npred[i] > 0 && minpred[i] >= lo;
    if (joins) {
      run_at[i] = nruns;
      continue;
    }
    if (lo >= 0 && i - lo >= 2)
      nruns++; /* closes [lo, i) */
    else if (lo >= 0)
      run_at[lo] = -1;
    lo = -1;
    if (r && runnable(r)) {
      lo = i;
      run_at[i] = nruns;
    }
  }
  weft_free(minpred);
  if (nruns == 0)
    return 0;
  g->runs = weft_calloc((size_t)nruns, sizeof *g->runs);
  g->run_of = weft_malloc(sizeof *g->run_of * (size_t)n);
  weft_opr **ops = weft_malloc(sizeof *ops * (size_t)n);
  if (!g->runs || !g->run_of || !ops) {
    weft_free(ops);
    return WEFT_ENOMEM; /* weft_graph_release_nodes frees the rest */
  }
  g->nruns = nruns;
  for (int i = 0; i < n; i++)
    g->run_of[i] = -1;
  for (int i = 0, used = 0; i < n; i++) {
    int k = run_at[i];
    if (k < 0)
      continue;
    weft_grun *run = &g->runs[k];
    if (!run->op) /* its first member: its nodes follow in the array */
      run->op = ops + used;
    run->op[run->n++] = weft_graph_node(g, g->place[i]);
    used++;
    g->run_of[g->place[i]] = k;
  }
  /* ops belongs to the first run: weft_devruns_free frees it through it. */
  WEFT_ASSERT(g->runs[0].op == ops);
  return 0;
}

void weft_devruns_free(struct weft_graph *g)
{
  if (!g->runs)
    return;
  for (int k = 0; k < g->nruns; k++)
    if (g->runs[k].cache) /* the engine lives: its executor frees it */
      weft_exec_run_free(weft_opr_engine(g->runs[k].op[0]), g->runs[k].cache);
  weft_free(g->nruns ? g->runs[0].op : NULL);
  weft_free(g->runs);
  weft_free(g->run_of);
  g->runs = NULL;
  g->run_of = NULL;
  g->nruns = 0;
}

