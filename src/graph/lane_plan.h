/* SPDX-License-Identifier: MIT */
/*
 * Planning a graph's lanes (lanes.h, graph.h "Run in lanes"): at capture,
 * and again with the costs a launch measured (lane_plan.c).
 */
#ifndef WEFT_GRAPH_LANE_PLAN_H
#define WEFT_GRAPH_LANE_PLAN_H
#include "graph/layer.h" /* layer guard: no include from a lower layer, nor from src/gpu */

#include <stddef.h>
#include <stdint.h>

#include "graph/graph.h"

/* Plans the lanes of g (its nodes run in order, capture order; edge: its
 * nedges (predecessor, successor) pairs, sorted by successor) for a pool
 * of workers workers, each node costing w[i] ns (w NULL: all the same),
 * and sets g->nlanes, lanes, waits and lane_store if lanes pay (graph.h),
 * and *end (if not NULL) to the plan's simulated time; leaves them 0 if
 * one lane does. Returns 0 or WEFT_ENOMEM (then it leaves them 0 too). */
int weft_lanes_plan(struct weft_graph *g, int n, const int (*edge)[2], size_t nedges, int workers,
                    const uint32_t *w, int64_t *end);

/* weft_lanes_plan at capture (equal costs, w NULL, no end): if equal
 * costs of WEFT_GRAPH_LANE_NODE_NS find no lanes, plans again with
 * WEFT_GRAPH_RELEASE_NS each (nodes whose waits cost little beside them),
 * so that a graph with parallelism has lanes to run its first launch in
 * (which times the nodes: lanes.h); such lanes are a guess
 * (g->lane_guess), which the first plan from measured costs replaces,
 * lanes or none. */
int weft_lanes_plan_capture(struct weft_graph *g, int n, const int (*edge)[2], size_t nedges,
                            int workers);

/* Plans g's lanes again with the costs its last timed launch measured
 * (g->node_ns), for a pool of workers workers; keeps the plan before
 * unless the new one has lanes and, timed with the same costs, ends in at
 * most WEFT_GRAPH_LANE_REPLAN_PCT of its time, or the plan before was the
 * capture's guess (g->lane_guess). Between launches only. */
void weft_lanes_replan(struct weft_graph *g, int workers);

#endif /* WEFT_GRAPH_LANE_PLAN_H */
