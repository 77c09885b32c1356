/* SPDX-License-Identifier: MIT */
/*
 * The launch queue and a launch's arguments (queue.h).
 */
#include <stdint.h>
#include <stdlib.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/error.h"
#include "deps/ext.h"
#include "graph/def.h"
#include "graph/queue.h"

static int cmp_addr(const void *a, const void *b)
{
  uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
  return x < y ? -1 : x > y;
}

/* g->arg_block, made once a build (under queue_lock: two launchers may
 * resolve at once). false without memory. */
static bool arg_blocks(struct weft_graph *g)
{
  if (g->arg_block)
    return true;
  size_t n = (size_t)g->nnodes;
  int32_t *map = weft_malloc(n * sizeof *map);
  uintptr_t *stored = g->nboxes ? weft_malloc(g->nboxes * sizeof *stored) : NULL;
  if (!map || (g->nboxes && !stored)) {
    weft_free(map);
    weft_free(stored);
    return false;
  }
  size_t nstored = 0;
  for (size_t i = 0; i < g->nboxes; i++) {
    void *a = weft_arg_box_arg(g->boxes[i]);
    if (a) /* a stored argument of 0 bytes is NULL: nothing to read */
      stored[nstored++] = (uintptr_t)a;
  }
  if (nstored)
    qsort(stored, nstored, sizeof *stored, cmp_addr);
  for (size_t c = 0; c < n; c++) {
    size_t r = g->order ? (size_t)g->order[c] : c; /* the node index of capture index c */
    uintptr_t a = (uintptr_t)g->def->recs[r].arg;
    bool box = a && nstored && bsearch(&a, stored, nstored, sizeof *stored, cmp_addr);
    map[r] = g->place[c] | (box ? WEFT_GRAPH_STORED_ARG : 0);
  }
  weft_free(stored);
  g->arg_block = map;
  return true;
}

static int cmp_block(const void *a, const void *b)
{
  int32_t x = ((const weft_garg *)a)->block, y = ((const weft_garg *)b)->block;
  return x < y ? -1 : x > y;
}

int weft_graph_args_resolve(struct weft_graph *g, const weft_graph_arg *args, size_t nargs,
                            const char *caller, weft_garg **out)
{
  *out = NULL;
  if (!nargs)
    return 0;
  if (!args) {
    weft_log("%s: args is NULL with nargs %zu", caller, nargs);
    return WEFT_EINVAL;
  }
  if (nargs > (size_t)g->nnodes) { /* one is out of range or named twice */
    weft_log("%s: %zu args for a graph of %d nodes", caller, nargs, g->nnodes);
    return WEFT_EINVAL;
  }
  pthread_mutex_lock(&g->queue_lock);
  bool ok = arg_blocks(g);
  pthread_mutex_unlock(&g->queue_lock);
  weft_garg *a = ok ? weft_malloc(nargs * sizeof *a) : NULL;
  if (!a)
    return WEFT_ENOMEM;
  for (size_t k = 0; k < nargs; k++) {
    size_t node = args[k].node;
    if (node >= (size_t)g->nnodes) {
      weft_log("%s: args[%zu] names node %zu; the graph has %d", caller, k, node, g->nnodes);
      weft_free(a);
      return WEFT_EINVAL;
    }
    const weft_capture_rec *rec = &g->def->recs[node];
    const char *name = rec->name ? rec->name : "op";
    int32_t m = g->arg_block[node];
    if (m & WEFT_GRAPH_STORED_ARG) {
      weft_log("%s: node %zu (\"%s\") has its argument stored with the graph "
               "(weft_graph_add_arg, or weft_push_arg captured): its fn reads that copy, "
               "which a launch does not replace", caller, node, name);
      weft_free(a);
      return WEFT_EINVAL;
    }
    int32_t b = m & ~WEFT_GRAPH_STORED_ARG;
    if (weft_opr_ctx(weft_graph_node(g, b)).type != WEFT_DEV_CPU) {
      weft_log("%s: node %zu (\"%s\") is a GPU operator: its argument is the one it was "
               "added with at every launch", caller, node, name);
      weft_free(a);
      return WEFT_EINVAL;
    }
    a[k] = (weft_garg){b, args[k].arg, rec->arg};
  }
  qsort(a, nargs, sizeof *a, cmp_block);
  for (size_t k = 1; k < nargs; k++) {
    if (a[k].block == a[k - 1].block) {
      for (size_t j = 0; j < nargs; j++) /* its node index, for the message */
        if ((g->arg_block[args[j].node] & ~WEFT_GRAPH_STORED_ARG) == a[k].block) {
          weft_log("%s: node %zu is named twice in args", caller, args[j].node);
          break;
        }
      weft_free(a);
      return WEFT_EINVAL;
    }
  }
  *out = a;
  return 0;
}

void weft_graph_launch_begin(struct weft_graph *g, weft_garg *args, size_t nargs)
{
  for (size_t i = 0; i < g->nover; i++) /* what the last launch replaced */
    weft_opr_set_arg(weft_graph_node(g, g->over[i].block), g->over[i].dflt);
  weft_free(g->over);
  for (size_t i = 0; i < nargs; i++) /* published to the nodes by their release */
    weft_opr_set_arg(weft_graph_node(g, args[i].block), args[i].arg);
  g->over = args;
  g->nover = nargs;
  g->launch_no++; /* the tags of the failures it passes on (graph.h, inherit) */
}

bool weft_graph_queue_enter(struct weft_graph *g, bool *retry)
{
  *retry = false;
  pthread_mutex_lock(&g->queue_lock);
  int r = atomic_load_explicit(&g->running, memory_order_relaxed);
  for (;;) {
    if (r == WEFT_GRAPH_IDLE) {
      /* acquire: as the launcher's (graph_api.c): the launch before ended. */
      if (atomic_compare_exchange_weak_explicit(&g->running, &r,
                                                WEFT_GRAPH_RUNNING | WEFT_GRAPH_REG,
                                                memory_order_acquire, memory_order_relaxed)) {
        pthread_mutex_unlock(&g->queue_lock);
        return false;
      }
      continue;
    }
    if ((r & WEFT_GRAPH_STATE) == WEFT_GRAPH_EDITING || r == WEFT_GRAPH_ENDING) {
      pthread_mutex_unlock(&g->queue_lock);
      *retry = true;
      return false;
    }
    /* relaxed: the bit is read by the end's read-modify-writes, whose
     * handoff then takes this lock; claims read it under the lock. (The
     * launcher reads the build after REG is clear, with acquire.) */
    if (atomic_compare_exchange_weak_explicit(&g->running, &r, r | WEFT_GRAPH_QUEUED,
                                              memory_order_relaxed, memory_order_relaxed))
      break;
  }
  g->nqueued++;
  pthread_mutex_unlock(&g->queue_lock);
  return true;
}

/* Under queue_lock: one fewer queued; the bit goes with the last. */
static void uncount(struct weft_graph *g)
{
  WEFT_ASSERT(g->nqueued > 0); /* only a counted launch leaves */
  if (--g->nqueued == 0)
    atomic_fetch_and_explicit(&g->running, ~WEFT_GRAPH_QUEUED, memory_order_relaxed);
}

void weft_graph_queue_leave(struct weft_graph *g)
{
  pthread_mutex_lock(&g->queue_lock);
  uncount(g);
  pthread_mutex_unlock(&g->queue_lock);
}

/* Under queue_lock, g IDLE|QUEUED: gate's launch takes running. */
static void take(struct weft_graph *g, weft_gate *gate)
{
  WEFT_ASSERT(g->nqueued > 0); /* gate was counted */
  int now = --g->nqueued ? WEFT_GRAPH_RUNNING | WEFT_GRAPH_QUEUED : WEFT_GRAPH_RUNNING;
  /* acquire: pairs with the release at the end of the launch before
   * (replay.c): its counters' resets and its nodes' writes. Nothing but
   * the REG launcher's clearing of its bit writes the word now (the
   * QUEUED bit keeps direct launches, changes and destroys out, and no
   * launch runs): REG stays as it is. */
  int was = atomic_load_explicit(&g->running, memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(&g->running, &was, now | (was & WEFT_GRAPH_REG),
                                                memory_order_acquire, memory_order_relaxed))
    ;
  WEFT_ASSERT((was & ~WEFT_GRAPH_REG) == (WEFT_GRAPH_IDLE | WEFT_GRAPH_QUEUED)); /* ended */
  /* The gate kept since the last launch, if any, holds none of the vars:
   * this gate's registration made it let go of each (keep.h). */
  if (g->kept && g->kept != gate)
    weft_gate_put(&g->kept->op);
  g->kept = gate;
  g->cur = gate;
  gate->queued = false;
}

/* gate took running: its launch begins (its arguments now the graph's). */
static void begin(struct weft_graph *g, weft_gate *gate)
{
  weft_garg *args = gate->args;
  size_t nargs = gate->nargs;
  gate->args = NULL;
  gate->nargs = 0;
  weft_graph_launch_begin(g, args, nargs);
}

bool weft_graph_queue_claim(weft_gate *gate)
{
  struct weft_graph *g = gate->graph;
  pthread_mutex_lock(&g->queue_lock);
  int r = atomic_load_explicit(&g->running, memory_order_relaxed);
  if ((r & WEFT_GRAPH_STATE) == WEFT_GRAPH_IDLE && !g->qhead) {
    take(g, gate);
    pthread_mutex_unlock(&g->queue_lock);
    begin(g, gate);
    return true;
  }
  /* The launch before it has not ended (it may be ending: its end's
   * handoff takes the lock after its release of IDLE), or a gate granted
   * before this one waits already. */
  gate->next = NULL;
  if (g->qtail)
    g->qtail->next = gate;
  else
    g->qhead = gate;
  g->qtail = gate;
  pthread_mutex_unlock(&g->queue_lock);
  return false;
}

void weft_graph_queue_handoff(struct weft_graph *g)
{
  pthread_mutex_lock(&g->queue_lock);
  weft_gate *gate = g->qhead;
  int r = atomic_load_explicit(&g->running, memory_order_relaxed);
  if (!gate || (r & WEFT_GRAPH_STATE) != WEFT_GRAPH_IDLE) {
    /* None granted yet (the next one's grant claims), or one claimed. */
    pthread_mutex_unlock(&g->queue_lock);
    return;
  }
  g->qhead = gate->next;
  if (!g->qhead)
    g->qtail = NULL;
  take(g, gate);
  pthread_mutex_unlock(&g->queue_lock);
  begin(g, gate);
  /* Dispatched again: no longer queued, its hold (run.c) starts it. */
  weft_opr_ready(&gate->op);
}
