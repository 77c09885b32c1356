/*
 * The public calls on captured graphs (weft_graph_*): capture, launch,
 * destroy. What a graph is and how a launch runs: graph.h.
 */
#include <sched.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/error.h"
#include "common/fork.h"
#include "graph/capture.h"
#include "graph/devrun_plan.h"
#include "graph/hooks.h"
#include "deps/inflight.h"
#include "graph/keep.h"
#include "deps/push.h"
#include "graph/registry.h"

int weft_graph_begin_capture(weft_engine *eng)
{
  if (!eng)
    return WEFT_EINVAL;
  if (eng->ext != &weft_graph_ext_ops) { /* weft_engine_create_with without this layer */
    weft_log("weft_graph_begin_capture: the engine was created without graphs");
    return WEFT_EINVAL;
  }
  if (weft_engine_inside_op(eng) || weft_pool_worker_index(eng->pool) >= 0) {
    /* A worker runs others' tasks while it waits or helps: their pushes
     * would be recorded into this thread's capture. */
    weft_log("weft_graph_begin_capture: called from inside one of the engine's operators or "
             "on a worker of its pool");
    return WEFT_EINVAL;
  }
  WEFT_GUARDED(guest, weft_capture_begin(eng));
}

int weft_graph_end_capture(weft_engine *eng, weft_graph **out)
{
  if (!eng || !out)
    return WEFT_EINVAL;
  *out = NULL;
  return weft_capture_end(eng, out); /* orphaned or not, a capture on eng ends here */
}

static void log_dead_var(const weft_graph *g, int k);

/* The naive engine replays each operator as its push would run, once
 * every var is known live (nothing runs otherwise). */
static int launch_naive(weft_engine *eng, weft_graph *g, bool out)
{
  /* As one operator: nothing else runs between its nodes (the lock is
   * recursive: each node's own push takes it again). */
  pthread_mutex_lock(&eng->naive_lock);
  for (int k = 0; k < g->nvars; k++)
    if (!weft_slot_live(&g->vars[k]->slot, weft_handle_gen(g->uses[k].handle))) {
      log_dead_var(g, k);
      pthread_mutex_unlock(&eng->naive_lock);
      return WEFT_EINVAL;
    }
  int rc = 0;
  for (int i = 0; i < g->nnodes && !rc; i++) { /* in capture order */
    const weft_opr *op = weft_graph_node(g, g->place[i]);
    weft_op_desc d = {0};
    d.fn = op->fn;
    d.async_fn = op->fn ? NULL : op->async_fn; /* not in a plain node's block (build.c) */
    d.arg = op->arg;
    d.ctx = op->ctx;
    d.prop = (weft_prop)op->prop;
    d.priority = d.prop == WEFT_PROP_PRIORITIZED ? op->priority : 0;
    d.flags = op->flags;
    d.name = op->name;
    rc = weft_push_uses(eng, &d, g->node_uses[g->place[i]], op->nvars, NULL, out);
  }
  pthread_mutex_unlock(&eng->naive_lock);
  return rc;
}

/* Names the first operator of g that uses its dead var k. */
static void log_dead_var(const weft_graph *g, int k)
{
  for (int i = 0; i < g->nnodes; i++) {
    const weft_opr *op = weft_graph_node(g, g->place[i]);
    for (int j = 0; j < op->nvars; j++)
      if (g->node_uses[g->place[i]][j].handle == g->uses[k].handle) {
        weft_log("weft_graph_launch: var %d of the graph's operator %d (\"%s\") was deleted "
                 "(handle %#llx)", j, i, op->name ? op->name : "op",
                 (unsigned long long)g->uses[k].handle);
        return;
      }
  }
}

/* A gate's block as an operator's: what every launch of it shares. */
static void gate_fill(weft_engine *eng, weft_graph *g, weft_gate *gate)
{
  weft_opr *op = &gate->op;
  op->eng = eng;
  op->fn = NULL;
  op->arg = gate;
  op->name = "weft_graph_launch";
  op->ctx = (weft_ctx){WEFT_DEV_CPU, 0};
  op->prop = WEFT_PROP_ASYNC; /* trivial: run where it becomes ready */
  op->flags = WEFT_OP_NOSKIP;
  op->internal = WEFT_OPR_GATE;
  op->tmpl = NULL;
  op->var = g->vars;
  op->req = gate->req;
  op->nvars = g->nvars;
}

static int launch(weft_engine *eng, weft_graph *g, bool out)
{
  if (g->nnodes == 0)
    return 0;
  int idle = WEFT_GRAPH_IDLE;
  /* acquire: pairs with the release store of the last node's finish
   * (replay.c): every counter of the previous launch is reset. */
  while (!atomic_compare_exchange_strong_explicit(&g->running, &idle, WEFT_GRAPH_RUNNING,
                                                  memory_order_acquire, memory_order_relaxed)) {
    if (idle != WEFT_GRAPH_ENDING)
      return WEFT_EBUSY;
    weft_graph_wait_ended(g); /* its nodes are done: no longer busy */
    idle = WEFT_GRAPH_IDLE;
  }
  int rc = 0;
  if (g->stale) {
    weft_log("weft_graph_launch: a var of the graph was deleted during its capture");
    rc = WEFT_EINVAL;
  } else if (eng->naive) {
    rc = launch_naive(eng, g, out);
  } else {
    /* A place under max_inflight first: a kept gate turned RUN, then
     * waiting for one, would keep its vars from the operator that holds
     * the place and waits behind it (a yield during a launch waits for its
     * end). Until the resume below, a kept gate is between launches. */
    bool capped = eng->max_inflight > 0;
    if (capped)
      weft_push_admit(eng, out);
    /* The gate that kept the vars since the last launch, or a fresh one. */
    weft_gate *gate = g->kept;
    bool holds_all = false;
    if (gate) {
      holds_all = weft_keep_resume(gate);
    } else if ((gate = weft_gate_get(g))) {
      /* No var names it: its block is ours to fill (a kept gate's stays as
       * it is: a yield reads it, under a var's lock). */
      gate_fill(eng, g, gate);
      /* relaxed: published to the yields by the registration's var locks. */
      atomic_store_explicit(&gate->hold, WEFT_HOLD_RUN, memory_order_relaxed);
      g->kept = gate;
    }
    if (!gate) {
      rc = WEFT_ENOMEM;
      if (capped)
        weft_push_unadmit(eng);
    } else {
      weft_opr *op = &gate->op;
      op->admitted = false;
      op->status = 0;
      WEFT_OPR_SET(op, WEFT_OPR_ST_PUSHED);
      g->cur = gate; /* published to the nodes by the gate's grants, or its dispatch */
      if (holds_all) {
        weft_keep_start(eng, op, capped);
        return 0; /* running until its last node finishes */
      }
      rc = weft_push_register(eng, op, g->uses, g->nvars, capped);
      if (rc) {
        int slot = op->slot;
        for (int k = 0; k < g->nvars; k++)
          if (!weft_slot_live(&g->vars[k]->slot, weft_handle_gen(g->uses[k].handle))) {
            log_dead_var(g, k);
            break;
          }
        /* Nothing was appended (a dead var is found before any append):
         * let go of what the gate still kept, and of it. */
        weft_keep_drop(g);
        weft_engine_count_done(eng, slot);
        if (capped)
          weft_push_unadmit(eng);
      } else {
        return 0; /* running until its last node finishes */
      }
    }
  }
  /* release: as a launch's end (nothing of this one ran). */
  atomic_store_explicit(&g->running, WEFT_GRAPH_IDLE, memory_order_release);
  return rc;
}

void (*weft_graph_window_hook)(struct weft_graph *g);

/* Enters the graph's engine as WEFT_GUARDED does, from a graph: *eng is the
 * engine (NULL: destroyed first), and on 0 the caller is its guest until
 * weft_engine_leave. The engine's destroy may run meanwhile on another
 * thread: the entering count keeps it from freeing the engine between our
 * read of g->eng and the guard's answer (graph.c, weft_graph_orphan_all).
 * fork_stale: a fork child's inherited graph answers WEFT_ESHUTDOWN before
 * anything else. */
static int graph_enter(weft_graph *g, weft_engine **eng, int *guest, bool *fork_stale)
{
  *guest = 0;
  *fork_stale = false;
  /* seq_cst: the increment, then the load below: the Dekker pair with the
   * orphaning's store of NULL, then its load of the count (graph.c). */
  atomic_fetch_add_explicit(&g->entering, 1, memory_order_seq_cst);
  weft_engine *e = atomic_load_explicit(&g->eng, memory_order_seq_cst);
  int rc = WEFT_ESHUTDOWN;
  if (e) {
    if (weft_graph_window_hook)
      weft_graph_window_hook(g);
    *fork_stale = weft_fork_stale(e->fork_gen);
    rc = *fork_stale ? WEFT_ESHUTDOWN : weft_engine_enter(e, guest);
  }
  /* release: our reads of the engine come before the orphaning's load of
   * the count, and so before the engine's free. */
  atomic_fetch_sub_explicit(&g->entering, 1, memory_order_release);
  *eng = e;
  return rc;
}

int weft_graph_launch(weft_graph *g)
{
  if (!g)
    return WEFT_EINVAL;
  weft_engine *eng;
  int guest;
  bool stale;
  int rc = graph_enter(g, &eng, &guest, &stale);
  if (rc)
    return rc; /* its engine was destroyed, or is being destroyed */
  rc = weft_capturing(eng) ? WEFT_EBUSY : launch(eng, g, guest);
  weft_engine_leave(eng, guest);
  return rc;
}

int weft_graph_destroy(weft_graph *g)
{
  if (!g)
    return WEFT_EINVAL;
  weft_engine *eng;
  int guest;
  bool stale;
  if (graph_enter(g, &eng, &guest, &stale)) {
    if (stale)
      return WEFT_ESHUTDOWN; /* inherited through fork: frees nothing (weft.h) */
    if (eng) /* its destroy began: it lets go of the graph, then we free it */
      weft_graph_wait_orphaned(g);
    eng = NULL; /* an orphan: nothing of an engine left to leave */
  }
  /* acquire (in the wait): pairs with the release that ends a launch
   * (replay.c): the nodes' last writes come before their memory is freed.
   * A launch that is ending no longer runs: its end is waited for. */
  if (weft_graph_wait_ended(g) != WEFT_GRAPH_IDLE) {
    if (eng)
      weft_engine_leave(eng, guest);
    return WEFT_EBUSY;
  }
  /* acquire: pairs with weft_gate_put's release; a gate finishing the last
   * launch is done with the graph once the count is back to zero. */
  weft_keep_drop(g); /* the vars it kept since its last launch */
  while (atomic_load_explicit(&g->gates_out, memory_order_acquire))
    sched_yield(); /* a few var releases at most */
  /* What the executor recorded of its runs, while the engine is held (an
   * orphan's went with its engine's closing). */
  weft_devruns_free(g);
  weft_graph_untrack(g); /* off the engine's list: its destroy won't see it */
  if (eng)
    weft_engine_leave(eng, guest);
  weft_graph_release_nodes(g);
  for (weft_gate *gate = g->free_gates; gate;) {
    weft_gate *next = gate->next;
    weft_free(gate);
    gate = next;
  }
  pthread_mutex_destroy(&g->gate_lock);
  weft_free(g);
  return 0;
}
