/* SPDX-License-Identifier: MIT */
/*
 * A graph's storage (graph.h): the graph itself, its gates (one per launch
 * in progress, kept on the graph's free list between launches) and its
 * nodes' arrays.
 */
#include <stddef.h>
#include <string.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/tunables.h"
#include "deps/ext.h"
#include "graph/def.h"
#include "graph/graph.h"

weft_gate *weft_gate_get(struct weft_graph *g)
{
  pthread_mutex_lock(&g->gate_lock);
  weft_gate *gate = g->free_gates;
  if (gate)
    g->free_gates = gate->next;
  pthread_mutex_unlock(&g->gate_lock);
  if (!gate) {
    size_t size = offsetof(weft_gate, req) + sizeof(weft_var_req) * (size_t)g->nvars;
    gate = weft_aligned_alloc(WEFT_CACHE_LINE, (size + WEFT_CACHE_LINE - 1) / WEFT_CACHE_LINE *
                                                   WEFT_CACHE_LINE);
    if (!gate)
      return NULL;
    memset(gate, 0, size);
    gate->graph = g;
  }
  /* relaxed: counts gates out; weft_gate_put's decrement is the release. */
  atomic_fetch_add_explicit(&g->gates_out, 1, memory_order_relaxed);
  return gate;
}

void weft_gate_put(weft_opr *gate_op)
{
  weft_gate *gate = weft_opr_arg(gate_op);
  struct weft_graph *g = gate->graph;
  /* relaxed: no var names it any more (keep.h); its next taker sets RUN. */
  atomic_store_explicit(&gate->hold, WEFT_HOLD_OFF, memory_order_relaxed);
  pthread_mutex_lock(&g->gate_lock);
  gate->next = g->free_gates;
  g->free_gates = gate;
  pthread_mutex_unlock(&g->gate_lock);
  /* release: the gate is done with the graph; pairs with the acquire load
   * in weft_graph_destroy, which may free it at once. */
  atomic_fetch_sub_explicit(&g->gates_out, 1, memory_order_release);
}

struct weft_graph *weft_graph_new(weft_engine *eng)
{
  struct weft_graph *g = weft_calloc(1, sizeof *g);
  if (!g)
    return NULL;
  g->def = weft_calloc(1, sizeof *g->def);
  if (!g->def || pthread_mutex_init(&g->gate_lock, NULL)) {
    weft_free(g->def);
    weft_free(g);
    return NULL;
  }
  if (pthread_mutex_init(&g->queue_lock, NULL)) {
    pthread_mutex_destroy(&g->gate_lock);
    weft_free(g->def);
    weft_free(g);
    return NULL;
  }
  atomic_init(&g->eng, eng);
  atomic_init(&g->entering, 0);
  atomic_init(&g->running, WEFT_GRAPH_IDLE);
  atomic_init(&g->gates_out, 0);
  return g;
}

void weft_graph_free(struct weft_graph *g)
{
  for (weft_gate *gate = g->free_gates; gate;) {
    weft_gate *next = gate->next;
    weft_free(gate);
    gate = next;
  }
  weft_gdef_free(g->def);
  weft_free(g->over);
  pthread_mutex_destroy(&g->gate_lock);
  pthread_mutex_destroy(&g->queue_lock);
  weft_free(g);
}

void weft_graph_release_nodes(struct weft_graph *g)
{
  for (size_t i = 0; i < g->nboxes; i++) /* no launch can run a node any more */
    weft_arg_box_unref(g->boxes[i]);
  weft_free(g->boxes);
  g->boxes = NULL;
  g->nboxes = g->capboxes = 0;
  weft_graph_release_built(g);
}

void weft_graph_release_built(struct weft_graph *g)
{
  WEFT_ASSERT(!g->runs); /* weft_devruns_free first: the executor's records */
  weft_free(g->nodes);
  weft_free((void *)g->pending);
  weft_free(g->roots);
  weft_free(g->place);
  weft_free(g->vars);
  weft_free(g->uses);
  weft_free(g->counters);
  weft_free(g->store);
  weft_free(g->lanes); /* lanes.h */
  weft_free(g->lane_store);
  weft_free(g->plan_edge);
  weft_free(g->node_ns);
  weft_free(g->order);
  weft_free((void *)g->inherit);
  weft_free(g->dev_early);
  weft_free(g->xoff);
  weft_free(g->xadj);
  weft_free(g->arg_block);
  g->arg_block = NULL;
  weft_free(g->over); /* the blocks they named are gone: a build sets every argument */
  g->over = NULL;
  g->nover = 0;
  g->nodes = NULL;
  g->pending = NULL;
  g->roots = NULL;
  g->place = NULL;
  g->succs = NULL;
  g->node_uses = NULL;
  g->vars = NULL;
  g->uses = NULL;
  g->counters = NULL;
  g->store = NULL;
  g->lanes = NULL;
  g->lane_store = NULL;
  g->waits = NULL;
  g->nlanes = 0;
  g->lane_guess = false;
  g->plan_edge = NULL;
  g->plan_nedges = 0;
  g->node_ns = NULL;
  g->order = NULL;
  g->inherit = NULL;
  g->dev_early = NULL;
  g->xoff = NULL;
  g->xadj = NULL;
  g->nnodes = g->nroots = g->nvars = g->ncounters = 0;
  /* What a build sets and a launch learns: back to a new graph's (the
   * tests' lane_force stays, as the definition and the boxes do). */
  g->stride = 0;
  g->sweep = g->in_order = g->lean = g->stale = false;
  g->sweep_epoch = 0;
  g->cursor = 0;
  g->lane_launches = 0;
  g->lane_measure = g->lane_now = g->lane_pick = false;
  g->replan_gap = g->replan_wait = 0;
  g->lane_base = g->lane_t0 = 0;
  g->lane_best[0] = g->lane_best[1] = 0;
  g->cur = NULL;
}
