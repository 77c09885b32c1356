/* SPDX-License-Identifier: MIT */
/*
 * A graph's gate keeps its vars between launches.
 *
 * A launch's gate registers on every var of its graph, and the launch's end
 * releases them all (graph.h). For a graph over many vars those two walks
 * cost more than its nodes: a 512 x 512 wavefront (262,144 vars) spent ~19
 * ns an operator registering alone on the VM. Most programs replay a graph
 * with nothing else on its vars in between, so a gate goes on holding its
 * vars after its launch ends, for as long as nobody else wants one: the
 * next launch registers nothing and starts at once.
 *
 * Nobody waits behind a kept var. The var names its keeper (the gate's
 * request, weft_var_impl.keeper, under the var's lock), and an operator
 * about to queue behind that request (it writes, or the keeper writes, or
 * it is another graph's gate) first makes the gate yield, under the var's
 * lock (weft_keep_yield):
 *   - between launches (KEPT or PART) the gate lets go of that var then and
 *     there, as its launch's end would have (the gate becomes PART: the
 *     next launch registers again on the vars it lost, and keeps the rest);
 *   - during a launch (RUN) the gate is marked WANTED: the launch's end
 *     releases every var, as if it kept nothing, which grants the operator
 *     in its turn.
 * So every operator is ordered as if each launch registered and released
 * its vars: one pushed between two launches runs between them, one pushed
 * during a launch runs after it, and weft_var_wait and weft_var_delete (a
 * wait and a write on the var) find it free once the launch is over.
 *
 * weft_gate.hold, one word per gate (atomic; WEFT_HOLD_*, graph.h):
 *   OFF          on the free list, or releasing every var (no var names it
 *                as keeper once its release walk passed it)
 *   RUN          a launch registers or runs; | WANTED: its end releases all
 *   KEPT         between launches, holding every var of its graph
 *   PART         between launches, holding some of them; also while the
 *                next launch waits for its place (max_inflight) and takes
 *                its vars' locks: yields let go of vars then too
 * The launcher takes a gate OFF -> RUN (a fresh one) or KEPT -> RUN
 * (CAS), or PART -> RUN under the locks of all the gate's vars (its
 * registration: weft_keep_run_locked); the end RUN -> KEPT (CAS, fails
 * on WANTED) or, with WANTED, lets go of everything and puts the gate
 * back (OFF); a yield
 * RUN -> RUN | WANTED or KEPT/PART -> PART (CAS); the drop (graph or
 * engine destroy, a launch that failed) lets go of every var it still
 * holds. The launcher and the end hold the graph's running flag, so at most
 * one of them touches a gate at a time; yields come from any thread.
 */
#ifndef WEFT_GRAPH_KEEP_H
#define WEFT_GRAPH_KEEP_H
#include "graph/layer.h" /* layer guard: no include from a lower layer, nor from src/gpu */

#include <stdbool.h>

#include "graph/graph.h"
#include "deps/ext.h"

/* Under v's lock, before req is appended to v, whose keeper is a gate's
 * request other than req (the engine's yield, deps/ext.h): if req would
 * have to wait for it, the gate lets go of v now (between launches) or at
 * its launch's end (WANTED). */
void weft_keep_yield(weft_var_impl *v, const weft_var_req *req);

/* Under v's lock, once gate request req is on v (appended, granted or
 * not: the engine's appended, deps/ext.h): v names it as its keeper. If another gate's request still does (a
 * launch of another graph that runs, and will release v at its end), req's
 * gate cannot keep v: it is marked WANTED, and releases everything at its
 * end. */
void weft_keep_mark(weft_var_impl *v, weft_var_req *req);

/* The launcher, holding g's running flag, with g->kept set: takes the gate
 * for this launch if it still holds every var (KEPT -> RUN: the launch
 * registers nothing, weft_keep_start) and returns true. A gate that lost
 * some (PART) stays PART and returns false: the launch registers, and
 * weft_push_register, holding every lock of the gate's vars, makes it RUN
 * (weft_keep_run_locked) and skips the vars it still holds. */
bool weft_keep_resume(weft_gate *gate);

/* weft_push_register on a gate's op (gate_op), holding the locks of all
 * its vars, before it appends to any (the engine's register_locked,
 * deps/ext.h): PART -> RUN (a fresh gate is RUN already). A
 * PART gate made RUN before those locks would let an operator pushed
 * meanwhile get a var the gate lost, then queue behind the gate on a var
 * it kept (a yield during a launch waits for its end): the gate, queuing
 * behind that operator on the lost var, would wait for it forever. */
void weft_keep_run_locked(weft_opr *gate_op);

/* Starts a launch whose gate (op) holds every var already: counts it in
 * flight, as a registration would, and makes it ready. admitted: it took a
 * place under max_inflight. */
void weft_keep_start(weft_engine *eng, weft_opr *op, bool admitted);

/* The launch's end, from its last node: true if the gate keeps its vars
 * (RUN -> KEPT); false if it was WANTED: it must release them all
 * (weft_opr_finish_vars, which clears their keeper: weft_var_unkeep). */
bool weft_keep_end(weft_gate *gate);

/* Lets go of every var g's kept gate still holds (nothing waits behind
 * one: an operator about to queue there makes the gate yield first, and a
 * registration that fails does so before it turns RUN), granting what the
 * queue holds all the same, and puts the gate back: the graph keeps
 * nothing. With no launch running (the caller holds running, or the graph
 * or its engine is being destroyed). */
void weft_keep_drop(struct weft_graph *g);

#endif /* WEFT_GRAPH_KEEP_H */
