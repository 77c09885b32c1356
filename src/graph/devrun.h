/* SPDX-License-Identifier: MIT */
/*
 * Runs of GPU nodes replayed as one device graph (weft.h, "GPU runs"; the
 * executor's side: deps/executor.h, weft_exec_run).
 *
 * A run is a maximal stretch of the capture whose nodes all carry
 * WEFT_OP_GPU_GRAPH (a GPU fn of WEFT_PROP_NORMAL) on one device, each one
 * after the first with predecessors, all of them earlier in the stretch.
 * Capture order is an order the graph may run in, so a path between two
 * nodes of a stretch runs inside it: the run may go as one operator. Its
 * first node, the leader, is released by its predecessors as any node is;
 * the others only by nodes of the run, so once the leader is ready the
 * whole run is.
 *
 * At each launch the leader's device worker asks (weft_devrun_of) whether
 * the run goes as one: yes unless a var of the run is failed. If so, the
 * executor records the run once (the members' fns, on its stream) and
 * enqueues the record; weft_devrun_launched then releases what waits for
 * the run on the device, and the leader's finish (weft_devrun_finish)
 * finishes every member: their vars' status, their successors outside the
 * run, their count off the sink tree. Edges inside the run are passed by,
 * so the other members are never released. Otherwise (a failed var, or the
 * executor could not record the run) the launch runs the run's nodes one
 * by one, along their edges, as any graph's.
 *
 * In a swept graph (graph.h) the members after the leader carry no sweep
 * count, and the sweeper passes them by: their predecessors in the run
 * release them, or the run's finish stands for them.
 */
#ifndef WEFT_GRAPH_DEVRUN_H
#define WEFT_GRAPH_DEVRUN_H
#include "graph/layer.h" /* layer guard: no include from a lower layer, nor from src/gpu */

#include <stdbool.h>

#include "deps/ext.h"
#include "graph/devrun_plan.h"
#include "graph/graph.h"
#include "pool/pool_ext.h"

/* The engine's run_of (deps/ext.h). */
bool weft_devrun_of(weft_opr *op, weft_exec_run *run);
/* The engine's run_launched (deps/ext.h). */
void weft_devrun_launched(weft_opr *op, int status, weft_fifo *ready);
/* The engine's finish (deps/ext.h) for every node: a leader whose run was
 * enqueued as one finishes every member with status (as weft_gnode_finish
 * does one node, which finishes any other). */
weft_opr *weft_devrun_finish(weft_opr *op, int status, bool keep_one, weft_fifo *ready,
                             weft_between_fn hook);

#endif /* WEFT_GRAPH_DEVRUN_H */
