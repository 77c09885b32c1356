/* SPDX-License-Identifier: MIT */
/*
 * A graph (weft_graph_*): its operators, resolved from its definition
 * (def.h: what a capture recorded, or what weft_graph_add and
 * weft_graph_edge gave) at the end of the capture (capture.c) or at the
 * first launch after a change (graph_api.c), and what a launch uses to
 * replay them (replay.c runs them; graph_api.c launches). "Capture order"
 * below is the order the graph was built in (build.c): the records'
 * order, or a topological one where an explicit edge goes backward in it;
 * every predecessor comes first either way.
 *
 * Nodes are op blocks of their own (struct weft_opr, internal kind
 * WEFT_OPR_GNODE: the engine's WEFT_OPR_HELD, deps/ext.h; their place in
 * the graph in the block's extension area: weft_gnode, below), owned by the
 * graph and never recycled: the engine dispatches and runs them as any
 * operator, and hands their start, their finish and the pool task's loop
 * over them to this layer (its table of hooks, hooks.c; run.c runs them). A
 * node's count of predecessors still to finish (the graph's dense pending
 * array) starts at npred, and each node resets its own to npred when it
 * finishes, so a launch writes nothing per node. The blocks and the
 * pending array are laid out in the order one worker alone would run the
 * nodes (build.c), not in capture order: a replay reads them forward.
 *
 * A launch registers one gate (an op block of kind WEFT_OPR_GATE, the
 * engine's WEFT_OPR_HOLDER) on every
 * var the graph uses, as one operator would (and the gate may go on holding
 * them into the next launch, which then registers nothing: keep.h); once
 * the gate holds them all, it releases the roots: the first root, which,
 * when it starts, releases the next two (a heap: root i releases roots
 * 2i+1 and 2i+2), so the roots reach every worker in O(log roots) steps
 * instead of one thread queuing them all. A finished node releases its
 * successors and, if it is a sink (no successor), counts itself off a tree
 * of counters (16 sinks a leaf, 16 counters a parent): the last one at the
 * top ends the launch and finishes the gate, which keeps the vars or
 * releases them.
 *
 * Swept graphs. That order follows the graph's edges, and in a graph whose
 * edges scatter (operators on many vars, interleaved) it jumps about the
 * capture: a replay then reads the user's own data (what the operators
 * work on, in the order the program pushed them) out of order, and each
 * release writes a block far from the last. Where the engine's pool has
 * one worker and that worker's run order is mostly not capture order
 * (build.c), the graph is swept instead: its blocks stay in capture order
 * (an order the graph may run in: every predecessor was pushed first), and
 * a launch's sweeper, one pool task, claims chunks of
 * WEFT_GRAPH_SWEEP_CHUNK nodes in that order and runs each node of the
 * chunk whose predecessors are all done. Every node then carries one more
 * count, the sweep's own: a node runs on the thread that takes its count
 * to zero, its last predecessor's (which releases it as before: an async
 * operator's signal, a device's completion, the one worker finishing what
 * the sweeper passed by) or the sweeper that passes it (which runs it where
 * it is). The sweeper counts itself off the top counter when no chunk is
 * left, so a launch ends only after it too. With several workers the
 * graph is not swept: chunks run side by side lose what the edge order
 * keeps, a var's chain on one worker (docs/).
 *
 * Run in order: a graph on one worker whose every node is a CPU fn of
 * WEFT_PROP_NORMAL is swept whatever its edge order, and needs no count at
 * all: the sweeper runs each node where it takes it, to its end, so
 * capture order alone keeps every edge. Its nodes have no successor and
 * no sink counter, and nobody reads their count (the sweeper takes each
 * without one); their blocks are cut before the queue line (nothing
 * queues them); the sweeper is the launch's only sink.
 *
 * Run in lanes: the same graph on a pool of several workers (lanes.h).
 * The capture (lane_plan.c) splits its nodes into lanes, one per worker at
 * most, each run in capture order by one sweeper of its own; a node waits
 * only for what other lanes must have run first (their done counts), and
 * every edge inside a lane is kept by its order. A graph with no such
 * split worth having (a chain) gets one lane: the sweeper above. Every
 * lane counts itself off the top counter: the launch ends after the last.
 * Lanes pay when their nodes outweigh the lines their edges move between
 * cores, which the capture cannot know: the launches measure it (lanes.h).
 */
#ifndef WEFT_GRAPH_GRAPH_H
#define WEFT_GRAPH_GRAPH_H
#include "graph/layer.h" /* layer guard: no include from a lower layer, nor from src/gpu */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/dlist.h"
#include "common/sync.h"
#include "common/tunables.h"
#include "deps/ext.h"
#include "graph/record.h"

/* The graph's operator kinds, as the engine knows them (deps/ext.h): a
 * node is a held operator, a launch's gate the holder of its vars. */
enum { WEFT_OPR_GNODE = WEFT_OPR_HELD, WEFT_OPR_GATE = WEFT_OPR_HOLDER };

/* A node's place in its graph, in its block's extension area (where an
 * operator's inline var array would be: a node's var list is its graph's,
 * its requests are its launch's gate's), so that a plain node is three
 * lines. Its vars as pushed (their handles, which it writes) are the
 * graph's node_uses[index]. */
typedef struct weft_gnode {
  struct weft_graph *graph; /* immutable, as every field */
  uint32_t succ0;           /* its successors: graph->succs[succ0 .. succ0 + nsucc) */
  int32_t nsucc;
  int32_t npred;            /* its count at every launch: its predecessors, and
                             * the sweep's one more in a swept graph (graph.h) */
  int32_t index;            /* its own node index */
  int32_t root;             /* its index among the roots, or -1 */
  int32_t counter;          /* the leaf counter it counts off as a sink (or a node
                             * with device edges), or -1 */
} weft_gnode;
_Static_assert(sizeof(weft_gnode) <= WEFT_OPR_EXT_BYTES &&
                   _Alignof(weft_gnode) <= _Alignof(void *),
               "a graph node's place fits the block's extension area");

/* What a plain graph node uses of its block: the header with its place in
 * the graph, and the queue line (the engine queues it: deps/ext.h); never
 * the requests (its gate's), nor the async, priority or device fields. A
 * node of a graph run in order (below) is never queued: its block is cut
 * before the queue line too. */
#define WEFT_OPR_PLAIN_NODE_BYTES WEFT_OPR_HELD_PLAIN_BYTES
#define WEFT_OPR_IN_ORDER_NODE_BYTES WEFT_OPR_HELD_UNQUEUED_BYTES

/* Node op's place in its graph. */
static inline const weft_gnode *weft_gnode_of(const weft_opr *op)
{
  return (const weft_gnode *)(const void *)((const char *)op + WEFT_OPR_EXT_OFFSET);
}

/* Sinks per leaf counter, and counters per parent. */
#define WEFT_GRAPH_FANIN 16
/* A starting node prefetches what its finish reads of its first this many
 * successors. */
#define WEFT_GRAPH_PREFETCH 4
/* In a successor list: this successor has no other predecessor (no count
 * to take off: the finish releases it). */
#define WEFT_GRAPH_SOLE ((int32_t)0x40000000)
/* In a successor list: this successor may run next on the thread that
 * releases it (a CPU fn, WEFT_PROP_NORMAL), without a look at its block. */
#define WEFT_GRAPH_KEEPABLE ((int32_t)0x20000000)
/* In a successor list: a device edge. Both nodes are GPU operators of one
 * device, and the successor waits for this node on the device: this node's
 * launch releases it (replay.c, weft_gnode_launched), appending itself to
 * the successor's devwait[], as a pushed operator's fence would
 * (deps/executor.h), unless its fn failed. A node with device edges counts
 * off the sink tree as a sink does (its successors may finish, and the
 * launch end, before its own completion is seen otherwise). A successor
 * has at most WEFT_OPR_DEV_WAITS of them; edges past that go through the
 * host. */
#define WEFT_GRAPH_DEVICE ((int32_t)0x10000000)
/* A successor list entry's node index (a graph has fewer nodes). */
#define WEFT_GRAPH_INDEX(e) ((e) & (WEFT_GRAPH_DEVICE - 1))
_Static_assert(WEFT_GRAPH_DEVICE - 1 == WEFT_GRAPH_NODES_MAX,
               "a graph's node indices stay below the successor lists' flags (record.h)");


/* A counter of the sink tree, on a line of its own. */
typedef struct weft_gcounter {
  _Alignas(WEFT_CACHE_LINE) _Atomic int left; /* atomic: counts missing this launch */
  int init;   /* immutable: the count it starts at (reset by whoever takes it to 0) */
  int parent; /* immutable: the counter it counts off at 0, or -1 (the top) */
} weft_gcounter;

/* A lane of a graph run in lanes (lanes.h). Its sweeper runs it as one pool
 * task at a time: whoever holds its run (its queued task, the task while
 * it runs) owns the holder-only fields; a lane that stops to wait hands
 * its run to the lane it waits for (waiters) and returns. */
typedef struct weft_glane {
  /* atomic: the lane's nodes run this launch (the holder's release stores;
   * other lanes' sweepers read it with acquire before what they wait for). */
  _Alignas(WEFT_CACHE_LINE) _Atomic int32_t done;
  /* atomic: the lanes stopped until done reaches their need, a bit each
   * (set by the waiter, cleared by whoever takes its run back: the waker,
   * or the waiter itself when done got there meanwhile). */
  _Atomic uint64_t waiters;
  /* atomic, relaxed: the done count this lane waits for while it is
   * stopped (a waker that reads a stale one wakes it early: the lane checks
   * again and stops again). */
  _Alignas(WEFT_CACHE_LINE) _Atomic int32_t need;
  /* atomic, relaxed, a hint: WEFT_LANE_* (lanes.c), whether a thread runs
   * the lane's nodes, its task is queued, or neither (a lane waiting for
   * it spins for a running one, or a queued one that a searching worker
   * takes soon; else it stops at once: its thread may run it next) */
  _Atomic int running;
  int32_t cursor;          /* holder-only: the next node to run, a place in node[] */
  int32_t n;               /* immutable: its nodes */
  int32_t self;            /* immutable: its index in graph->lanes */
  const int32_t *node;     /* immutable [n]: its nodes' indices, in capture order */
  /* immutable [n + 1]: node[k] first waits for graph->waits[wait0[k] ..
   * wait0[k + 1]) */
  const uint32_t *wait0;
  /* immutable: the done counts some other lane's wait names, ascending,
   * then INT32_MAX: the holder publishes done right after each (lanes.h) */
  const int32_t *pub;
  int32_t pub_at;          /* holder-only: pub[pub_at] is the next one past cursor */
  int32_t *seen;           /* holder-only [nlanes]: each lane's done count last read */
  struct weft_graph *graph; /* immutable */
  struct weft_task task;   /* its sweeper's pool task (the pool's while queued) */
} weft_glane;

/* A wait of a node run in lanes: lane must have run its first done nodes. */
typedef struct weft_gwait {
  int32_t lane, done;
} weft_gwait;

/* A run of GPU nodes replayed as one device graph (devrun.h). */
typedef struct weft_grun {
  int32_t n;              /* immutable: its nodes, n >= 2 */
  weft_opr **op;          /* immutable [n]: its nodes' blocks, in capture order; [0] leads */
  /* The executor's record of the run (deps/executor.h, weft_exec_run.cache):
   * the leader's device worker's during a launch (one at a time), freed
   * with the graph (weft_graph_release_nodes). */
  void *cache;
} weft_grun;

/* weft_gate.hold: whether a gate runs a launch, or keeps its vars between
 * launches (keep.h). */
enum {
  WEFT_HOLD_OFF = 0,
  WEFT_HOLD_KEPT = 1,
  WEFT_HOLD_PART = 2,
  WEFT_HOLD_RUN = 4,
  WEFT_HOLD_WANTED = 8,
};

/* A launch's gate: an op block registered on every var of the graph, with
 * its own requests (the var list is the graph's). */
typedef struct weft_gate {
  weft_opr op;                 /* internal WEFT_OPR_GATE; op.arg is the gate */
  struct weft_graph *graph;    /* immutable */
  struct weft_gate *next;      /* under graph->gate_lock while free */
  /* atomic: WEFT_HOLD_* (keep.h): whether it runs a launch, or keeps its
   * vars between launches. */
  _Atomic unsigned hold;
  /* A launch made while another of the graph was running or queued
   * (queue.h): it registered at its call and starts once granted and the
   * launch before it ended. Set by its launcher before it registers; args
   * (its per-launch arguments, nargs of them, by block index; NULL: none,
   * freed when it starts) read by whoever starts it. */
  bool queued;
  struct weft_garg *args;
  size_t nargs;
  weft_var_req req[];          /* [graph->nvars] */
} weft_gate;

/* A node's argument for one launch, by block index, and the one it was
 * added with (queue.h). */
typedef struct weft_garg {
  int32_t block;
  void *arg, *dflt;
} weft_garg;

struct weft_graph {
  /* atomic: the engine; NULL once it was destroyed first (set under the
   * graphs' lock, graph.c). A launch or destroy reads it inside the
   * entering count below (graph_api.c, graph_enter). */
  _Atomic(weft_engine *) eng;
  /* atomic: launches and destroys between reading eng and entering its
   * guard. Orphaning (the engine's destroy) clears eng, then waits for
   * this to be 0 before the engine is freed: a call either sees NULL or
   * enters a live engine's guard (which refuses it once destroy began). */
  _Atomic unsigned entering;
  int nnodes, nroots, nvars, ncounters; /* immutable */
  char *nodes;             /* [nnodes] op blocks, stride bytes apart, line aligned */
  size_t stride;           /* immutable */
  /* [nnodes], dense, a node's count of predecessors still to finish this
   * launch (atomic: a predecessor's finish takes one off; the node puts it
   * back to npred when it finishes). Apart from the blocks, so that a
   * finish touches its successors' blocks only when it releases them.
   * NULL for a graph run in order (below): nobody counts its nodes. */
  _Atomic int32_t *pending;
  int32_t *succs;          /* every node's successors (weft_gnode.succ0), node indices
                            * | WEFT_GRAPH_SOLE; in g->store */
  /* A graph with explicit edges (def.h; NULL for one without): each
   * node's failure inherited along them this launch, by node index
   * (atomic: the launch's number << 32 | the status, or 0; stored by a
   * failing predecessor's finish, read by the node as it starts: replay.h,
   * weft_gnode_inherited; cleared at the launch's end), how many are set
   * (xheld: atomic, counted in the engine's nfailed_vars meanwhile, so that
   * no bare path runs a node that inherits one), and each node's successors along them
   * (immutable: xadj[xoff[i] .. xoff[i + 1]), node indices), which a
   * failure or a skip passes its status to, as a failed var would. A
   * graph whose every edge is explicit (no var dependency) and that has
   * successor lists (not run in order) has no xadj: its successor lists
   * are those (weft_graph_xsuccs). */
  _Atomic uint64_t *inherit;
  _Atomic int xheld;
  uint32_t *xoff;
  int32_t *xadj;
  /* The launch in progress's number, for inherit's tags: written by the
   * launcher before the gate registers, read by the nodes it runs. */
  uint32_t launch_no;
  weft_var_use **node_uses; /* [nnodes], by node index: its vars as pushed (in g->store) */
  /* [nnodes], by node index, or NULL in a graph without GPU nodes: whether
   * a GPU node's launch released its device edges (weft_gnode_launched),
   * which its finish then passes by. Written by the launching device
   * worker, read and cleared by the node's finish (the executor's hand-off
   * from launch to completion orders them). */
  bool *dev_early;
  weft_opr **roots;        /* [nroots], in capture order (NULL for a swept graph) */
  int *place;              /* [nnodes]: the node index of each capture index (build.c) */
  weft_var_impl **vars;    /* [nvars], sorted by slot index: the gate's var list */
  weft_var_use *uses;      /* [nvars]: each var's handle (its liveness at launch), its
                            * slot, whether some node writes it: the gate's requests */
  weft_gcounter *counters; /* [ncounters]; the last is the top */
  void *store;             /* the nodes' var arrays, successor lists, uses (one block) */
  /* The recorded pushes' argument boxes (deps/arg.h: weft_push_arg,
   * weft_op_new_arg) and the added nodes' (weft_graph_add_arg), a
   * reference each, let go of with the nodes (not when they are built
   * again: they are the definition's). Room for capboxes. */
  struct weft_arg_box **boxes;
  size_t nboxes, capboxes;
  /* immutable: the graph is swept (above): every node has a count, one
   * more than its predecessors, and no node is a root of the heap */
  bool sweep;
  /* immutable: swept in capture order with no edge at all (graph.h): one
   * worker, and every node a CPU fn of WEFT_PROP_NORMAL, which the sweeper
   * runs where it takes it, to its end; its blocks have no queue line */
  bool in_order;
  /* immutable: built for one launch (build.c, at a launch after a change):
   * a graph that would run in order on several workers runs released by
   * its edges instead, without the lanes' plan, which pays only over
   * launches; its next launch builds it again the full way (graph_api.c). */
  bool lean;
  /* The launch in progress of a swept graph: its epoch, and the next chunk
   * the sweeper takes. Written by the gate's start (the launch before has
   * ended, its sweeper too) before it queues the sweeper, which publishes
   * them; then the sweeper's own. */
  uint64_t sweep_epoch;
  int cursor;
  /* The sweeper's pool task (the pool's while queued). */
  struct weft_task sweep_task;
  /* immutable: a graph run in lanes (above): its lanes (nlanes >= 2; 0 for
   * any other graph) and their waits, one block from lane_plan.c */
  int nlanes;
  weft_glane *lanes;
  const weft_gwait *waits;
  void *lane_store;
  /* The lanes are the capture's guess (lane_plan.h: planned with nodes of
   * WEFT_GRAPH_RELEASE_NS, equal costs having found none), which the
   * first plan from measured costs replaces. Planning's: the capture, and
   * a launch's gate between launches (one at a time). */
  bool lane_guess;
  /* A graph run in lanes runs in one now and then, and keeps whichever
   * launches faster (lanes.h). Touched by a launch's start and its end
   * only: one launch at a time (running orders them). */
  unsigned lane_launches;  /* launches, modulo WEFT_GRAPH_LANE_PERIOD */
  /* The plan's input, kept to plan again with measured costs (lanes.h),
   * for a graph run in order on several workers only (NULL otherwise:
   * weft_lanes_able): the edges (predecessor, successor), sorted by
   * successor; each node's
   * run time in the last launch that timed them, ns (written by the lane
   * that runs it; NULL without memory). */
  int (*plan_edge)[2];
  size_t plan_nedges;
  uint32_t *node_ns;
  bool lane_measure;       /* this launch times its nodes */
  /* Periods between two timings of the nodes, and those left before the
   * next (lanes.h; tunables.h, WEFT_GRAPH_LANE_REPLAN_SHARE). */
  unsigned replan_gap, replan_wait;
  int64_t lane_base;       /* the period before's fastest launch, ns (0: none) */
  bool lane_now;           /* this launch runs in lanes */
  /* Its nodes took WEFT_GRAPH_RELEASE_NS each or more, on average, when a
   * launch timed them, and the plan from those costs has lanes (lanes.c):
   * its next launch builds it again released along its edges (as a graph
   * that is not plain, or lean: graph_api.c), and so does every build
   * until its definition changes. Set by a launch's gate (one launch at a
   * time), read and cleared by the launcher, which holds running; not
   * reset with what a build made (weft_graph_release_built). */
  bool released;
  bool lane_pick;          /* what the last probes picked: lanes */
  /* Set by the tests (white-box) between launches, before the first: 1
   * runs every launch in lanes (when the plan has them), -1 every one in
   * one lane, 0 lets the launches choose (lanes.h). */
  int8_t lane_force;
  int64_t lane_t0;         /* this launch's start, ns */
  int64_t lane_best[2];    /* the probes' fastest launch, in one lane and in lanes, ns */
  /* immutable: its runs of GPU nodes replayed as one device graph
   * (devrun.h), and each node's run by node index (-1: none); 0 and NULL
   * for a graph without one. */
  int nruns;
  weft_grun *runs;
  int32_t *run_of;
  /* immutable: two of its handles name one var slot (one of them was
   * deleted and the slot reused during the capture): every launch fails. */
  bool stale;
  /* immutable: the record (def.h) of each capture index when the build
   * reordered the records (build.c), for the messages; NULL: the same. */
  int32_t *order;
  /* The graph's definition (def.h), from which the fields above are
   * built. Changed only by the thread that holds running at EDITING (a
   * weft_graph_add or weft_graph_edge), read by one that holds it at
   * RUNNING (a launch that builds again) or by the destroy. */
  struct weft_gdef *def;
  /* The launch in progress: its gate (the nodes read its epoch when they
   * are released). Written by the launcher before the gate registers;
   * published to the nodes by the gate's grants. */
  weft_gate *cur;
  /* The gate that holds (or held: keep.h) the graph's vars since the last
   * launch and may go on holding them into the next, or NULL. Touched by
   * the thread that holds running (the launcher, the launch's end before
   * it clears running) and by the destroys (no launch runs). */
  weft_gate *kept;
  /* atomic: WEFT_GRAPH_RUNNING from a launch until its last node has
   * finished, WEFT_GRAPH_ENDING while that node's thread ends the launch
   * (replay.c), then WEFT_GRAPH_IDLE; WEFT_GRAPH_EDITING while a
   * weft_graph_add or weft_graph_edge changes the definition. */
  _Atomic int running;
  /* The launch queue (queue.h), under queue_lock: launches registered and
   * not started (nqueued, WEFT_GRAPH_QUEUED in running while not 0), and
   * the queued gates granted before the launch ahead of them ended
   * (qhead .. qtail, through their next), which that launch's end starts
   * in turn. */
  pthread_mutex_t queue_lock;
  int nqueued;
  weft_gate *qhead, *qtail;
  /* The nodes whose argument the launch in progress replaced (queue.h):
   * their block indices and the arguments they were built with, put back
   * by the next launch's start. Touched by the thread that holds running
   * at RUNNING before the roots are released. */
  weft_garg *over;
  size_t nover;
  /* By node index (the user's: order of adding, captured ones first): its
   * block index, | WEFT_GRAPH_STORED_ARG when its argument is stored with
   * the graph (weft_graph_add_arg, a captured weft_push_arg), made on
   * the first launch with arguments after a build (NULL until then). */
  int32_t *arg_block;
  /* atomic: gates taken and not yet given back (a gate finishing after
   * running went to 0 still reads the graph). */
  _Atomic int gates_out;
  pthread_mutex_t gate_lock;
  weft_gate *free_gates;   /* under gate_lock */
  weft_dlist_node link; /* under the graphs' lock (graph.c): the engines' graphs */
};

/* White-box tests only (NULL otherwise): called by graph_enter (graph_api.c)
 * between reading the graph's engine and entering it, the window a racing
 * weft_engine_destroy must not free the engine in. */
extern void (*weft_graph_window_hook)(struct weft_graph *g);

/* weft_graph.running. ENDING: every node has finished, and the thread of
 * the last one is ending the launch, a few dozen instructions that take no
 * lock and wait for nothing (at most a futex wake, for a pusher waiting at
 * max_inflight), after which it clears running. A var's waiter may
 * see the var free meanwhile (the launch's gate lets go of it as it turns
 * KEPT: keep.h), so a launch or destroy that finds ENDING waits for
 * IDLE (weft_graph_wait_ended) instead of answering WEFT_EBUSY: weft.h
 * promises that a wait on a var the graph writes is a wait for the
 * launch. */
/* EDITING: a weft_graph_add or weft_graph_edge (graph_api.c) changes the
 * graph's definition, a copy and an append or two; launches, destroys
 * and other changes wait it out, as ENDING's. */
/* Two bits beside the state (WEFT_GRAPH_STATE), queue.h: QUEUED, launches
 * wait in the graph's queue (no change or destroy until they have run);
 * REG, a launch that found the graph idle builds it (if it must) and
 * registers its gate, and no queued launch reads the build or registers
 * before it is done (its end may come meanwhile: the state moves on). */
enum {
  WEFT_GRAPH_IDLE = 0,
  WEFT_GRAPH_RUNNING = 1,
  WEFT_GRAPH_ENDING = 2,
  WEFT_GRAPH_EDITING = 3,
  WEFT_GRAPH_STATE = 3,
  WEFT_GRAPH_QUEUED = 4,
  WEFT_GRAPH_REG = 8,
};
/* In weft_graph.arg_block: the node's argument is stored with the graph. */
#define WEFT_GRAPH_STORED_ARG ((int32_t)0x40000000)

/* Waits while g's launch is ENDING with nothing queued (or a change
 * EDITING); returns running's value then (acquire: pairs with the end's
 * release of IDLE, or the change's). */
static inline int weft_graph_wait_ended(struct weft_graph *g)
{
  for (unsigned spins = 0;;) {
    /* acquire: pairs with the release of IDLE at the launch's end
     * (replay.c): its resets and its nodes' writes; or at a change's end
     * (graph_api.c): the definition it changed. */
    int r = atomic_load_explicit(&g->running, memory_order_acquire);
    if (r != WEFT_GRAPH_ENDING && r != WEFT_GRAPH_EDITING)
      return r;
    weft_spin_step(&spins, WEFT_GRAPH_END_SPINS); /* then yields to the ending thread */
  }
}

/* Node i's block. */
static inline weft_opr *weft_graph_node(const struct weft_graph *g, int i)
{
  return (weft_opr *)(g->nodes + (size_t)i * g->stride);
}

/* The engine and the pool of g's launch in progress (its gate's). */
static inline weft_engine *weft_graph_run_engine(const struct weft_graph *g)
{
  return weft_opr_engine(&g->cur->op);
}
static inline weft_pool *weft_graph_run_pool(const struct weft_graph *g)
{
  return weft_engine_pool(weft_graph_run_engine(g));
}

/* Node i's successors along g's explicit edges (g->inherit set): *n node
 * indices from the returned list, each masked with *mask (xadj's, or the
 * successor lists' with their flags off). */
static inline const int32_t *weft_graph_xsuccs(const struct weft_graph *g, int i, int *n,
                                               int32_t *mask)
{
  if (g->xoff) {
    *n = (int)(g->xoff[i + 1] - g->xoff[i]);
    *mask = -1;
    return g->xadj + g->xoff[i];
  }
  const weft_gnode *m = weft_gnode_of(weft_graph_node(g, i));
  *n = m->nsucc;
  *mask = WEFT_GRAPH_DEVICE - 1;
  return g->succs + m->succ0;
}

/* A gate for one launch (from the graph's free list, or new); NULL
 * without memory. */
weft_gate *weft_gate_get(struct weft_graph *g);
/* Gives a finished gate back: its last touch of the graph. */
void weft_gate_put(weft_opr *gate_op);

/* A graph of eng with nothing built and an empty definition (def.h);
 * NULL without memory. */
struct weft_graph *weft_graph_new(weft_engine *eng);
/* Frees g's own memory: its definition, free gates and lock (what it holds
 * of its engine is let go of already: weft_graph_release_nodes). */
void weft_graph_free(struct weft_graph *g);

/* Frees what a graph holds of its engine: its nodes and arrays, its lanes
 * and their plan's input, its argument boxes. */
void weft_graph_release_nodes(struct weft_graph *g);
/* The same but the argument boxes (the definition's, which a graph built
 * again keeps): g is left with nothing built, as weft_graph_new makes it
 * (its runs freed first: weft_devruns_free; no gate kept or out). */
void weft_graph_release_built(struct weft_graph *g);


/* Whether g's launches choose between lanes and one lane (lanes.h): a
 * graph run in order on a pool of several workers, the one kind that keeps
 * its plan's input (build.c). */
static inline bool weft_lanes_able(const struct weft_graph *g)
{
  return g->plan_edge != NULL;
}

#endif /* WEFT_GRAPH_GRAPH_H */
