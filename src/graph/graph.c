/*
 * A captured graph's storage (graph.h): its gates (one per launch in
 * progress, kept on the graph's free list between launches) and its nodes'
 * arrays.
 */
#include <stddef.h>
#include <string.h>

#include "common/alloc.h"
#include "common/tunables.h"
#include "deps/arg.h"
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
  weft_gate *gate = gate_op->arg;
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

void weft_graph_release_nodes(struct weft_graph *g)
{
  for (size_t i = 0; i < g->nboxes; i++) /* no launch can run a node any more */
    weft_arg_box_unref(g->boxes[i]);
  weft_free(g->boxes);
  g->boxes = NULL;
  g->nboxes = 0;
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
  g->plan_edge = NULL;
  g->node_ns = NULL;
  g->nnodes = g->nroots = g->nvars = g->ncounters = 0;
}
