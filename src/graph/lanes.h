/* SPDX-License-Identifier: MIT */
/*
 * A graph run in lanes (graph.h "Run in lanes"): a graph of plain CPU
 * operators on a pool of several workers, split at capture into lanes
 * (lane_plan.h), each swept in capture order by a pool task of its own
 * (lanes.c), as one worker sweeps a graph run in order.
 *
 * The contract between lanes. A lane's holder (the task that runs it) runs
 * node[k] once every wait listed for it holds (lane q has run its first d
 * nodes: q's done >= d), then stores done = k + 1. A lane that finds a
 * wait unmet spins a while (WEFT_GRAPH_LANE_SPIN), then stops: it sets
 * its need, its bit in q's waiters, and looks at q's done once more; if
 * that still falls short it returns, and its run is q's to give back
 * (if it got there, the lane clears its bit and queues itself, as a waker
 * would). A holder publishes done right after each node that some wait of
 * another lane names (its publish points, from the plan), and before it
 * spins, stops, yields or ends, and each time reads its own waiters with a
 * read-modify-write: every lane whose need its done meets gets its bit
 * cleared and its task queued by the one that cleared it. So a lane never
 * waits for a node that has run: a count published only every so many
 * nodes made two lanes with edges both ways (a stencil's neighbours, a
 * butterfly's partners) take turns, each running until it had to wait
 * itself, while the other waited for a node run long before, and a lane
 * that stopped was queued only when its waker stopped too, on the waker's
 * worker, which then ran it: both lanes on one worker. Of
 * a stopping lane's fetch_or and its waker's read-modify-write, the later
 * sees the other's bit or done, so no stop is left without its wake. From
 * its fetch_or to its last look, a stopping lane holds the launch open
 * (one more count on the top counter): its waker may run the lane to the
 * launch's end meanwhile, and the graph be destroyed or planned again
 * (tests/reliability/rl_lanes.cpp models all of it).
 *
 * No lane waits for a lane that waits for it: every lane runs its nodes in
 * capture order and waits only for nodes captured before the one it is
 * at, so the earliest node not run yet waits for nothing, and its lane is
 * running or queued. A lane never blocks its thread: a lane run nested in
 * a node's fn (the fn waits and helps run pool tasks) stops as any other.
 */
#ifndef WEFT_GRAPH_LANES_H
#define WEFT_GRAPH_LANES_H
#include "graph/layer.h" /* layer guard: no include from a lower layer, nor from src/gpu */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/sync.h"
#include "graph/graph.h"
#include "graph/lane_plan.h"

/* The launch's gate holds every var of g (weft_lanes_able, graph.h;
 * g->sweep_epoch is set): whether this launch runs in lanes (else in one,
 * by the caller's sweeper). The first launch of every WEFT_GRAPH_LANE_PERIOD
 * times every node (in lanes if it has them), and the second plans the
 * lanes again with those costs (weft_lanes_replan). A graph with lanes
 * tries both ways in turn in the first 2 x WEFT_GRAPH_LANE_PROBES launches
 * of the period, and runs the rest the way whose fastest launch was
 * faster; one without runs in one lane. A graph whose timed nodes took
 * WEFT_GRAPH_RELEASE_NS each or more, on average, and whose plan from
 * those costs has lanes, runs this launch in lanes and is released along
 * its edges from the next on (graph.h, released). A node's run order and
 * memory stay the same either way. */
bool weft_lanes_choose(struct weft_graph *g);
/* ns since t0 (weft_now_ns), as a node's time (lanes.c, and the one
 * sweeper's in run.c, in a launch that times its nodes). */
static inline uint32_t weft_lanes_elapsed(int64_t t0)
{
  int64_t t = weft_now_ns() - t0;
  return t < (int64_t)UINT32_MAX ? (uint32_t)t : UINT32_MAX;
}

/* Resets the lanes and queues their sweepers (weft_lanes_choose said
 * lanes). */
void weft_lanes_start(struct weft_graph *g);

#endif /* WEFT_GRAPH_LANES_H */
