/* SPDX-License-Identifier: MIT */
/*
 * The public calls on graphs (weft_graph_*): capture, creation, adding
 * nodes and edges, launch, destroy. What a graph is and how a launch runs:
 * graph.h; its definition, what the adds change: def.h.
 */
#include <sched.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/error.h"
#include "common/fork.h"
#include "common/guard.h"
#include "deps/ext.h"
#include "graph/capture.h"
#include "graph/def.h"
#include "graph/devrun_plan.h"
#include "graph/hooks.h"
#include "graph/keep.h"
#include "graph/queue.h"
#include "graph/registry.h"

/* Whether eng has the graph layer (weft_engine_create_with may make one
 * without: tests only); call names the call for the message. */
static bool has_graphs(const weft_engine *eng, const char *call)
{
  if (weft_engine_has_ext(eng, &weft_graph_ext_ops))
    return true;
  weft_log("%s: the engine was created without graphs", call);
  return false;
}

/* The graph whose launch this thread makes with REG set (graph.h), or
 * NULL: an operator run inline during that registration may launch it
 * again (queued behind it) without waiting for the bit. */
static _Thread_local weft_graph *reg_tls;

/* Waits while a launch that found g idle builds and registers (REG), unless
 * this thread is that launch's (it is past its registration when anything
 * of it runs here). */
static void wait_registered(weft_graph *g)
{
  if (reg_tls == g)
    return;
  /* acquire: pairs with the release that clears REG: the build, and the
   * gate's place on every var. */
  for (unsigned spins = 0;
       atomic_load_explicit(&g->running, memory_order_acquire) & WEFT_GRAPH_REG;)
    weft_spin_step(&spins, WEFT_GRAPH_END_SPINS);
}

int weft_graph_begin_capture(weft_engine *eng)
{
  if (!eng)
    return WEFT_EINVAL;
  if (!has_graphs(eng, "weft_graph_begin_capture")) /* weft_engine_create_with without it */
    return WEFT_EINVAL;
  if (weft_engine_inside_op(eng) || weft_pool_worker_index(weft_engine_pool(eng)) >= 0) {
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

static int graph_create(weft_engine *eng, weft_graph **out)
{
  weft_graph *g = weft_graph_new(eng);
  if (!g)
    return WEFT_ENOMEM;
  weft_graph_track(g); /* inside the engine: its destroy waits for us */
  *out = g;
  return 0;
}

int weft_graph_create(weft_engine *eng, weft_graph **out)
{
  if (!out)
    return WEFT_EINVAL;
  *out = NULL;
  if (!eng || !has_graphs(eng, "weft_graph_create"))
    return WEFT_EINVAL;
  WEFT_GUARDED(guest, graph_create(eng, out));
}

/* Takes g's running word for a change of its definition (IDLE ->
 * EDITING), waiting out a launch that is ending, another change or the
 * orphaning (registry.c): 0 and *eng its engine; or WEFT_EBUSY while a
 * launch runs or is queued (queue.h), WEFT_ESHUTDOWN once the engine's destroy began (or let go
 * of g, or g was inherited through fork), and then nothing is held. A
 * change enters no count on g and no guard of the engine (launches and
 * destroys do: graph_enter): the orphaning takes the running word before
 * it lets go of g and clears g->eng, and the engine's free comes after
 * it, so while a change holds the word its engine is alive, and one that
 * finds g->eng cleared has nothing to do. One read-modify-write a change
 * (an add or an edge costs about what a push costs to check and copy its
 * descriptor). */
static int edit_begin(weft_graph *g, weft_engine **eng)
{
  int idle = WEFT_GRAPH_IDLE;
  /* acquire: pairs with the release store of IDLE that ended the last
   * launch, change or orphaning: the definition, the built graph and
   * g->eng as they left them. */
  while (!atomic_compare_exchange_strong_explicit(&g->running, &idle, WEFT_GRAPH_EDITING,
                                                  memory_order_acquire, memory_order_relaxed)) {
    if ((idle & WEFT_GRAPH_STATE) == WEFT_GRAPH_RUNNING || (idle & WEFT_GRAPH_QUEUED))
      return WEFT_EBUSY; /* launches run or wait */
    wait_registered(g); /* a launch that ended as it registered */
    weft_graph_wait_ended(g);
    idle = WEFT_GRAPH_IDLE;
  }
  /* relaxed: written by the orphaning while it held the running word,
   * which the acquire above took after it. */
  weft_engine *e = atomic_load_explicit(&g->eng, memory_order_relaxed);
  /* Refused from outside the engine's work once its destroy began, as an
   * entry of its guard would be (the engine's own operators, which the
   * destroy drains, may still add). */
  if (!e || weft_engine_fork_stale(e) || weft_engine_closed_to(e)) {
    /* release: as edit_end (nothing changed). */
    atomic_store_explicit(&g->running, WEFT_GRAPH_IDLE, memory_order_release);
    return WEFT_ESHUTDOWN;
  }
  *eng = e;
  return 0;
}

/* Ends a change (edit_begin's 0). */
static void edit_end(weft_graph *g)
{
  /* release: the change comes before the next launch's (or change's)
   * acquire of IDLE. */
  atomic_store_explicit(&g->running, WEFT_GRAPH_IDLE, memory_order_release);
}

/* weft_graph_add and weft_graph_add_arg (box: the latter's argument, or
 * NULL: desc->arg). */
static int graph_add(weft_graph *g, const weft_op_desc *desc, weft_arg_box *box, size_t *node)
{
  weft_engine *eng;
  int rc = edit_begin(g, &eng);
  if (rc)
    return rc;
  if ((rc = weft_push_check_desc(eng, desc)) == 0) {
    if (box && !weft_graph_grow((void **)&g->boxes, &g->capboxes, g->nboxes, 1, sizeof *g->boxes))
      rc = WEFT_ENOMEM;
    else
      rc = weft_gdef_add(g->def, eng, desc, box ? weft_arg_box_arg(box) : desc->arg, node);
  }
  if (!rc && box) /* the graph's now: its destroy lets go of it */
    g->boxes[g->nboxes++] = box;
  edit_end(g);
  return rc;
}

int weft_graph_add(weft_graph *g, const weft_op_desc *desc, size_t *node)
{
  if (!g || !desc)
    return WEFT_EINVAL;
  size_t at = 0;
  int rc = graph_add(g, desc, NULL, &at);
  if (!rc && node)
    *node = at;
  return rc;
}

int weft_graph_add_arg(weft_graph *g, const weft_op_desc *desc, const void *data, size_t size,
                       weft_arg_drop_fn drop, size_t *node)
{
  if (!g)
    return WEFT_EINVAL;
  int rc = weft_arg_check(desc, data, size);
  if (rc)
    return rc;
  weft_arg_box *box = weft_arg_box_new(data, size, drop);
  if (!box)
    return WEFT_ENOMEM;
  size_t at = 0;
  if ((rc = graph_add(g, desc, box, &at)))
    weft_arg_box_discard(box); /* never used: no drop, as weft.h promises */
  else if (node)
    *node = at;
  return rc;
}

int weft_graph_edge(weft_graph *g, size_t before, size_t after)
{
  if (!g)
    return WEFT_EINVAL;
  weft_engine *eng;
  int rc = edit_begin(g, &eng);
  if (rc)
    return rc;
  rc = weft_gdef_edge(g->def, before, after);
  edit_end(g);
  return rc;
}

static void log_dead_var(const weft_graph *g, int k, const char *caller);

/* Whether a var of g has been deleted; the first such one is named on the
 * log (caller: the public call). */
static bool dead_var(const weft_graph *g, const char *caller)
{
  for (int k = 0; k < g->nvars; k++)
    if (!weft_var_live(g->vars[k], g->uses[k].handle)) {
      log_dead_var(g, k, caller);
      return true;
    }
  return false;
}

/* A built graph that no launch may run (graph.h, stale): WEFT_EINVAL, with
 * its message; else 0. */
static int stale_check(const weft_graph *g, const char *caller)
{
  if (!g->stale)
    return 0;
  weft_log("%s: a var of the graph was deleted, and its slot reused, while the graph was "
           "captured or added to", caller);
  return WEFT_EINVAL;
}

/* The naive engine replays each operator as its push would run, once
 * every var is known live (nothing runs otherwise). */
static int launch_naive(weft_engine *eng, weft_graph *g, bool out)
{
  /* As one operator: nothing else runs between its nodes (the lock is
   * recursive: each node's own push takes it again). */
  weft_engine_naive_lock(eng);
  if (dead_var(g, "weft_graph_launch")) {
    weft_engine_naive_unlock(eng);
    return WEFT_EINVAL;
  }
  /* A graph with explicit edges: each node's failure inherited along them
   * (by node index), passed on here as the threaded replay passes it. */
  int *pass = g->inherit ? weft_calloc((size_t)g->nnodes, sizeof *pass) : NULL;
  if (g->inherit && !pass) {
    weft_engine_naive_unlock(eng);
    return WEFT_ENOMEM;
  }
  int rc = 0;
  for (int i = 0; i < g->nnodes && !rc; i++) { /* in capture order */
    int at = g->place[i];
    const weft_opr *op = weft_graph_node(g, at);
    weft_op_desc d = weft_opr_desc(op); /* a plain node's block has no async_fn (build.c) */
    if (!pass) {
      rc = weft_push_uses(eng, &d, g->node_uses[at], weft_opr_nvars(op), NULL, out);
      continue;
    }
    int ended = 0;
    rc = weft_push_naive(eng, &d, g->node_uses[at], weft_opr_nvars(op), pass[at], &ended);
    int nx;
    int32_t mask;
    const int32_t *x = weft_graph_xsuccs(g, at, &nx, &mask);
    for (int k = 0; ended && k < nx; k++)
      if (!pass[x[k] & mask])
        pass[x[k] & mask] = ended;
  }
  weft_engine_naive_unlock(eng);
  weft_free(pass);
  return rc;
}

/* Names the first operator of g that uses its dead var k. */
static void log_dead_var(const weft_graph *g, int k, const char *caller)
{
  for (int i = 0; i < g->nnodes; i++) {
    const weft_opr *op = weft_graph_node(g, g->place[i]);
    for (int j = 0; j < weft_opr_nvars(op); j++)
      if (g->node_uses[g->place[i]][j].handle == g->uses[k].handle) {
        weft_log("%s: var %d of the graph's operator %d (\"%s\") was deleted (handle %#llx)",
                 caller, j, g->order ? (int)g->order[i] : i, weft_opr_name(op) ? weft_opr_name(op) : "op",
                 (unsigned long long)g->uses[k].handle);
        return;
      }
  }
}

/* A gate taken for this launch (no var names it: its block is ours to
 * fill), queued or not (queue.h), running once it holds the vars. */
static void gate_fresh(weft_engine *eng, weft_graph *g, weft_gate *gate, bool queued)
{
  /* its block as an operator's: what every launch of it shares */
  weft_opr_init_holder(&gate->op, eng, gate, "weft_graph_launch", g->vars, gate->req, g->nvars);
  gate->queued = queued;
  /* relaxed: published to the yields by the registration's var locks. */
  atomic_store_explicit(&gate->hold, WEFT_HOLD_RUN, memory_order_relaxed);
}


/* Builds g again from its definition (def.h), which changed since its
 * last build (at_launch: maybe for this launch alone, build.h), or for
 * more launches than the one it was built for (lean); the caller holds
 * running (a launch). What the last build
 * made goes first: the vars its gate kept, its gates (sized for its vars),
 * its runs and its nodes (the argument boxes stay: the definition's).
 * 0, WEFT_ENOMEM, or WEFT_EINVAL for a cycle (one message names a node on
 * it); on an error g has nothing built, and counts as changed (the next
 * launch tries again). */
static int rebuild(weft_engine *eng, weft_graph *g, bool at_launch)
{
  weft_keep_drop(g);
  /* acquire: pairs with weft_gate_put's release (as in the destroy): a
   * gate that finished the last launch is done with the graph. */
  while (atomic_load_explicit(&g->gates_out, memory_order_acquire))
    sched_yield(); /* a few var releases at most */
  pthread_mutex_lock(&g->gate_lock);
  weft_gate *gate = g->free_gates;
  g->free_gates = NULL;
  pthread_mutex_unlock(&g->gate_lock);
  while (gate) {
    weft_gate *next = gate->next;
    weft_free(gate);
    gate = next;
  }
  weft_devruns_free(g);
  weft_graph_release_built(g);
  weft_recording rec = weft_gdef_recording(g->def, eng);
  rec.at_launch = at_launch;
  rec.released = g->released;
  size_t cycle = 0;
  int rc = weft_graph_build(g, &rec, &cycle);
  if (rc == WEFT_EINVAL) {
    const char *name = g->def->recs[cycle].name;
    weft_log("weft_graph_launch: the graph's edges and var dependencies form a cycle through "
             "node %zu (\"%s\"); nothing ran", cycle, name ? name : "op");
  }
  /* On an error nothing is built: the next launch builds again. */
  g->def->dirty = rc != 0;
  return rc;
}

static int launch_direct_reg(weft_engine *eng, weft_graph *g, bool out,
                             const weft_graph_arg *args, size_t nargs, const char *caller);

/* The rest of a launch that found g idle and took it (IDLE -> RUNNING |
 * REG): built again if it must be, its gate registered (or resumed), then
 * REG cleared; running back to IDLE if nothing runs. */
static int launch_direct(weft_engine *eng, weft_graph *g, bool out, const weft_graph_arg *args,
                         size_t nargs, const char *caller)
{
  weft_graph *prev = reg_tls;
  reg_tls = g;
  int rc = launch_direct_reg(eng, g, out, args, nargs, caller);
  reg_tls = prev;
  if (rc)
    /* release: as a launch's end (nothing of this one ran); launches
     * queued meanwhile stay queued. */
    atomic_fetch_and_explicit(&g->running, ~(WEFT_GRAPH_STATE | WEFT_GRAPH_REG),
                              memory_order_release);
  else
    /* release: the build and the gate's registration, before the queued
     * launches' reads (wait_registered). */
    atomic_fetch_and_explicit(&g->running, ~WEFT_GRAPH_REG, memory_order_release);
  return rc;
}

static int launch_direct_reg(weft_engine *eng, weft_graph *g, bool out,
                             const weft_graph_arg *args, size_t nargs, const char *caller)
{
  /* Changed since its last build (weft_graph_add, weft_graph_edge): built
   * again first, for this launch (at_launch), and its nodes' times learnt
   * again (released); or built for one launch and launched again: built
   * the full way (graph.h, lean); or run in order, and its nodes timed
   * long: built released along its edges (graph.h, released). */
  int rc = 0;
  if (g->def->dirty) {
    g->released = false;
    rc = rebuild(eng, g, true);
  } else if (g->lean || (g->released && g->in_order)) {
    rc = rebuild(eng, g, false);
  }
  weft_garg *ga = NULL;
  if (!rc)
    rc = weft_graph_args_resolve(g, args, nargs, caller, &ga); /* on what was built */
  if (rc || g->nnodes == 0) {
    /* not built (nothing runs), a bad argument, or empty: a launch that does nothing */
  } else if ((rc = stale_check(g, caller))) {
    /* nothing runs */
  } else {
    weft_graph_launch_begin(g, ga, nargs); /* the graph's now */
    ga = NULL;
  }
  if (rc || g->nnodes == 0) {
    /* nothing to run */
  } else if (weft_engine_naive(eng)) {
    /* Nothing registers: a launch from one of its nodes (this thread)
     * finds RUNNING alone (launch_naive_call). */
    atomic_fetch_and_explicit(&g->running, ~WEFT_GRAPH_REG, memory_order_relaxed);
    rc = launch_naive(eng, g, out);
    atomic_fetch_and_explicit(&g->running, ~WEFT_GRAPH_STATE, memory_order_release);
    weft_free(ga);
    return rc;
  } else {
    /* A place under max_inflight first: a kept gate turned RUN, then
     * waiting for one, would keep its vars from the operator that holds
     * the place and waits behind it (a yield during a launch waits for its
     * end). Until the resume below, a kept gate is between launches. */
    bool capped = weft_engine_capped(eng);
    if (capped)
      weft_push_admit(eng, out);
    /* The gate that kept the vars since the last launch, or a fresh one. */
    weft_gate *gate = g->kept;
    bool holds_all = false;
    if (gate) {
      holds_all = weft_keep_resume(gate);
    } else if ((gate = weft_gate_get(g))) {
      /* A fresh one (a kept gate's block stays as it is: a yield reads it,
       * under a var's lock). */
      gate_fresh(eng, g, gate, false);
      g->kept = gate;
    }
    if (!gate) {
      rc = WEFT_ENOMEM;
      if (capped)
        weft_push_unadmit(eng);
    } else {
      weft_opr *op = &gate->op;
      weft_opr_arm_holder(op);
      g->cur = gate; /* published to the nodes by the gate's grants, or its dispatch */
      if (holds_all) {
        weft_keep_start(eng, op, capped);
        return 0; /* running until its last node finishes */
      }
      rc = weft_push_register(eng, op, g->uses, g->nvars, capped);
      if (rc) {
        int slot = weft_opr_slot(op);
        (void)dead_var(g, caller); /* the one registration found */
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
  weft_free(ga);
  if (!rc) /* empty: nothing ran, but nothing failed */
    atomic_fetch_and_explicit(&g->running, ~WEFT_GRAPH_STATE, memory_order_release);
  return rc;
}

/* A launch made while another runs or waits (queue.h), counted in the
 * queue already: its gate registers now, and starts when granted and the
 * launch before it ended. Nothing is built again (no change can come while
 * launches are queued; a lean or released graph runs as it was built, and
 * the next launch that finds the graph idle builds it the full way). */
static int launch_queued(weft_engine *eng, weft_graph *g, bool out, const weft_graph_arg *args,
                         size_t nargs, const char *caller)
{
  wait_registered(g); /* the build is done, and the launch before has its place */
  weft_garg *ga = NULL;
  int rc = weft_graph_args_resolve(g, args, nargs, caller, &ga);
  if (rc || g->nnodes == 0) { /* a bad argument, or an empty graph: nothing to run */
    weft_graph_queue_leave(g);
    weft_free(ga);
    return rc;
  }
  if ((rc = stale_check(g, caller))) {
    weft_graph_queue_leave(g);
    weft_free(ga);
    return rc;
  }
  bool capped = weft_engine_capped(eng);
  if (capped)
    weft_push_admit(eng, out);
  weft_gate *gate = weft_gate_get(g);
  if (!gate) {
    if (capped)
      weft_push_unadmit(eng);
    weft_graph_queue_leave(g);
    weft_free(ga);
    return WEFT_ENOMEM;
  }
  gate_fresh(eng, g, gate, true);
  gate->args = ga;
  gate->nargs = nargs;
  weft_opr *op = &gate->op;
  weft_opr_arm_holder(op);
  rc = weft_push_register(eng, op, g->uses, g->nvars, capped);
  if (!rc)
    return 0; /* queued; from here on its grant may have started it already */
  int slot = weft_opr_slot(op);
  (void)dead_var(g, caller); /* the one registration found */
  /* Nothing was appended (a dead var is found before any append). */
  weft_free(gate->args);
  gate->args = NULL;
  gate->nargs = 0;
  weft_gate_put(op);
  weft_engine_count_done(eng, slot);
  if (capped)
    weft_push_unadmit(eng);
  weft_graph_queue_leave(g);
  return rc;
}

/* A launch on the naive engine, whose launches run on the launcher's
 * thread, one at a time (its lock): one made from inside a node of the
 * graph's own launch (the thread holds running) waits in the graph's
 * queue, and the launch that runs takes it when its own nodes are done. */
static int launch_naive_call(weft_engine *eng, weft_graph *g, bool out,
                             const weft_graph_arg *args, size_t nargs, const char *caller)
{
  weft_engine_naive_lock(eng); /* recursive: a node's own pushes take it */
  int idle = WEFT_GRAPH_IDLE;
  while (!atomic_compare_exchange_strong_explicit(&g->running, &idle,
                                                  WEFT_GRAPH_RUNNING | WEFT_GRAPH_REG,
                                                  memory_order_acquire, memory_order_relaxed)) {
    if (idle == WEFT_GRAPH_RUNNING) { /* this thread's own launch: after it */
      weft_garg *ga = NULL;
      int rc = weft_graph_args_resolve(g, args, nargs, caller, &ga);
      weft_gate *q = rc ? NULL : weft_gate_get(g);
      if (!rc && !q)
        rc = WEFT_ENOMEM;
      if (rc) {
        weft_free(ga);
        weft_engine_naive_unlock(eng);
        return rc;
      }
      weft_opr_set_arg(&q->op, q); /* a record of the queue, put back as a gate (weft_gate_put) */
      q->args = ga;
      q->nargs = nargs;
      q->next = NULL;
      if (g->qtail) /* under naive_lock: the naive engine's queue is this thread's */
        g->qtail->next = q;
      else
        g->qhead = q;
      g->qtail = q;
      weft_engine_naive_unlock(eng);
      return 0;
    }
    weft_graph_wait_ended(g); /* a change: a copy and an append or two */
    idle = WEFT_GRAPH_IDLE;
  }
  int rc = launch_direct(eng, g, out, args, nargs, caller); /* IDLE again when it returns */
  /* The launches its nodes made, in turn (each may queue more). */
  while (g->qhead) {
    weft_gate *q = g->qhead;
    g->qhead = q->next;
    if (!g->qhead)
      g->qtail = NULL;
    idle = WEFT_GRAPH_IDLE;
    bool took = atomic_compare_exchange_strong_explicit(&g->running, &idle, WEFT_GRAPH_RUNNING,
                                                        memory_order_acquire,
                                                        memory_order_relaxed);
    WEFT_ASSERT(took); /* nobody else launches or changes it meanwhile: the lock */
    (void)took;
    int qrc = 0;
    if (g->nnodes > 0) {
      weft_graph_launch_begin(g, q->args, q->nargs);
      q->args = NULL;
      q->nargs = 0;
      qrc = launch_naive(eng, g, out);
    }
    weft_free(q->args);
    q->args = NULL;
    weft_gate_put(&q->op);
    /* release: as a launch's end. */
    atomic_store_explicit(&g->running, WEFT_GRAPH_IDLE, memory_order_release);
    if (qrc)
      weft_engine_record_failure(eng, qrc, "weft_graph_launch (queued)");
  }
  weft_engine_naive_unlock(eng);
  return rc;
}

static int launch_entered(weft_engine *eng, weft_graph *g, bool out,
                          const weft_graph_arg *args, size_t nargs, const char *caller)
{
  if (weft_engine_naive(eng))
    return launch_naive_call(eng, g, out, args, nargs, caller);
  for (;;) {
    int idle = WEFT_GRAPH_IDLE;
    /* acquire: pairs with the release store of the last node's finish
     * (replay.c): every counter of the previous launch is reset; or with a
     * change's end (graph_add): the definition as it left it. */
    if (atomic_compare_exchange_strong_explicit(&g->running, &idle,
                                                WEFT_GRAPH_RUNNING | WEFT_GRAPH_REG,
                                                memory_order_acquire, memory_order_relaxed))
      return launch_direct(eng, g, out, args, nargs, caller);
    if (idle == WEFT_GRAPH_ENDING || idle == WEFT_GRAPH_EDITING) {
      weft_graph_wait_ended(g); /* its nodes are done, or its change: no longer busy */
      continue;
    }
    bool retry;
    if (weft_graph_queue_enter(g, &retry))
      return launch_queued(eng, g, out, args, nargs, caller);
    if (!retry)
      return launch_direct(eng, g, out, args, nargs, caller); /* it found the graph idle */
    weft_graph_wait_ended(g);
  }
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
    *fork_stale = weft_engine_fork_stale(e);
    rc = *fork_stale ? WEFT_ESHUTDOWN : weft_engine_enter(e, guest);
  }
  /* release: our reads of the engine come before the orphaning's load of
   * the count, and so before the engine's free. */
  atomic_fetch_sub_explicit(&g->entering, 1, memory_order_release);
  *eng = e;
  return rc;
}

static int launch_call(weft_graph *g, const weft_graph_arg *args, size_t nargs,
                       const char *caller)
{
  if (!g)
    return WEFT_EINVAL;
  weft_engine *eng;
  int guest;
  bool stale;
  int rc = graph_enter(g, &eng, &guest, &stale);
  if (rc)
    return rc; /* its engine was destroyed, or is being destroyed */
  rc = weft_capturing(eng) ? WEFT_EBUSY : launch_entered(eng, g, guest, args, nargs, caller);
  weft_engine_leave(eng, guest);
  return rc;
}

int weft_graph_launch(weft_graph *g)
{
  return launch_call(g, NULL, 0, "weft_graph_launch");
}

int weft_graph_launch_args(weft_graph *g, const weft_graph_arg *args, size_t nargs)
{
  return launch_call(g, args, nargs, "weft_graph_launch_args");
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
  wait_registered(g); /* a launch that ended as it registered: over, as at ENDING */
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
  weft_graph_free(g);
  return 0;
}
