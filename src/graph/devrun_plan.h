/* SPDX-License-Identifier: MIT */
/*
 * Runs of GPU nodes replayed as one device graph (devrun.h): which stretches
 * of a capture are runs (at build), and their end with the graph.
 */
#ifndef WEFT_GRAPH_DEVRUN_PLAN_H
#define WEFT_GRAPH_DEVRUN_PLAN_H
#include "graph/layer.h" /* layer guard: no include from a lower layer, nor from src/gpu */

#include <stdbool.h>

#include "graph/build.h"
#include "graph/graph.h"

/* Finds c's runs (edges: (predecessor, successor) by capture index; npred
 * by capture index) into g->runs, g->nruns and g->run_of (by node index:
 * g->place is set; the blocks need not be filled yet); run_at[i], for
 * capture index i, is its run or -1. 0 or WEFT_ENOMEM. */
int weft_devruns_find(struct weft_graph *g, const weft_recording *c, const int (*edge)[2],
                      size_t nedges, const int *npred, int *run_at);

/* Whether capture index i is a member of a run after its leader (run_at
 * from weft_devruns_find; runs are stretches of the capture). */
static inline bool weft_devrun_follower(const int *run_at, int i)
{
  return run_at[i] >= 0 && i > 0 && run_at[i - 1] == run_at[i];
}

/* Whether node i of g runs after the leader of its run (the sweeper passes
 * it by). */
static inline bool weft_gnode_in_run_after_leader(const struct weft_graph *g, int i)
{
  return g->run_of && g->run_of[i] >= 0 &&
         g->runs[g->run_of[i]].op[0] != weft_graph_node(g, i);
}

/* Frees g's runs and what the executor recorded of them: before the
 * blocks go (weft_graph_release_nodes), while g's engine is alive and its
 * executor open (a destroy holds the engine; an orphaning is its
 * closing). */
void weft_devruns_free(struct weft_graph *g);

#endif /* WEFT_GRAPH_DEVRUN_PLAN_H */
