/* SPDX-License-Identifier: MIT */
/*
 * The launch queue, and the arguments a launch passes to its nodes.
 *
 * A launch made while another launch of the graph runs (or waits in this
 * queue) is queued instead of refused: its gate (graph.h) registers on the
 * graph's vars at the call, as an operator pushed then would, so that the
 * engine's other operators on those vars are ordered with it as with any
 * push (one pushed between two launches runs between them), and the
 * launcher returns. The gate is marked queued; once it holds every var
 * (the engine's hold, run.c) it claims the graph (weft_graph_queue_claim):
 * it starts there if the launch before it has ended, else it waits in the
 * graph's queue, and that launch's end starts it (weft_graph_queue_handoff).
 * Gates of one graph register on the same vars, each on all of them at
 * once (the engine appends an operator to all its vars under all their
 * locks), so they are granted in the order they registered; a graph with
 * no var is granted at once, and its queue alone keeps that order.
 *
 * weft_graph.running while launches are queued (graph.h):
 *   state | QUEUED   QUEUED while nqueued > 0; it keeps changes, destroys
 *                    and direct launches out (each wants IDLE exactly)
 *   RUNNING|QUEUED   a launch runs; the next ones wait
 *   IDLE|QUEUED      the launch ended; the next gate takes it (RUNNING)
 * The launcher sets QUEUED and counts itself (nqueued) under queue_lock;
 * a claim and a handoff take IDLE|QUEUED -> RUNNING[|QUEUED] under it
 * (acquire: pairs with the end's release of IDLE, replay.c); the end's
 * own transitions are read-modify-writes that keep the bit, and a bit
 * seen at the end sends it to the handoff, which locks: a gate queued
 * before that lock is started there or by its own claim, never neither.
 *
 * Arguments: a launch may replace the argument of some nodes for itself
 * (weft_graph_launch_args). They are resolved at the call to block indices
 * (weft_garg) and kept with the gate; its start puts back the arguments
 * the launch before it replaced (weft_graph.over), then sets its own.
 */
#ifndef WEFT_GRAPH_QUEUE_H
#define WEFT_GRAPH_QUEUE_H
#include "graph/layer.h" /* layer guard: no include from a lower layer, nor from src/gpu */

#include "graph/graph.h"

/* Resolves args (nargs of them, by node index; caller: the public call,
 * for the message) into *out (by block index; NULL for nargs 0), which the
 * launch owns. WEFT_EINVAL, with a message naming the node, for a node
 * the graph does not have, one named twice, one whose argument is stored
 * with the graph (weft_graph_add_arg, a captured weft_push_arg: its fn
 * reads its copy) and a GPU operator (its device run may replay what it
 * recorded); WEFT_ENOMEM. g is built (its definition unchanged since), and
 * no change can come meanwhile (the caller holds running, or a launch
 * does). */
int weft_graph_args_resolve(struct weft_graph *g, const weft_graph_arg *args, size_t nargs,
                            const char *caller, weft_garg **out);

/* A launch's start, holding running at RUNNING before anything of it runs:
 * its number (graph.h, launch_no), the arguments the last launch replaced
 * put back, and its own (args, nargs: resolved; the graph's now). */
void weft_graph_launch_begin(struct weft_graph *g, weft_garg *args, size_t nargs);

/* A queued launch's call: counts it and sets QUEUED, unless g is IDLE
 * with nothing queued by now (false: the caller launches it directly,
 * holding running at RUNNING) or a change or its end holds it (false,
 * *retry set: wait, then try again). */
bool weft_graph_queue_enter(struct weft_graph *g, bool *retry);
/* A queued launch that registered nothing (its registration failed):
 * uncounted; QUEUED cleared when none is left. */
void weft_graph_queue_leave(struct weft_graph *g);

/* A queued gate holds every var (run.c): true if it took running (its
 * launch begins: weft_graph_launch_begin done), false if it waits for the
 * end of the launch before it, which starts it. */
bool weft_graph_queue_claim(weft_gate *gate);

/* A launch's end saw QUEUED: starts the first gate waiting in g's queue,
 * if it has one and nothing took running before (it takes running and is
 * dispatched again: its hold, no longer queued, begins it). */
void weft_graph_queue_handoff(struct weft_graph *g);

#endif /* WEFT_GRAPH_QUEUE_H */
