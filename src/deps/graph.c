/*
 * A captured graph's storage (graph.h): its gates (one per launch in
 * progress, kept on the graph's free list between launches), its nodes'
 * arrays, the list of an engine's graphs (for the engine's destroy), and
 * the check that a wait inside a replayed operator would wait for its own
 * launch.
 */
#include <sched.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "common/fork.h"
#include "common/tunables.h"
#include "deps/graph.h"
#include "deps/lanes.h"
#include "deps/keep.h"
#include "deps/var.h"

weft_gate *weft_gate_get(struct weft_graph *g)
{
  pthread_mutex_lock(&g->gate_lock);
  weft_gate *gate = g->free_gates;
  if (gate)
    g->free_gates = gate->next;
  pthread_mutex_unlock(&g->gate_lock);
  if (!gate) {
    size_t size = offsetof(weft_gate, req) + sizeof(weft_var_req) * (size_t)g->nvars;
    gate = weft_aligned_alloc(WEFT_CACHE_LINE, (size + WEFT_CACHE_LINE - 1) / WEFT_CACHE_LINE *
                                                   WEFT_CACHE_LINE);
    if (!gate)
      return NULL;
    memset(gate, 0, size);
    gate->graph = g;
  }
  /* relaxed: counts gates out; weft_gate_put's decrement is the release. */
  atomic_fetch_add_explicit(&g->gates_out, 1, memory_order_relaxed);
  return gate;
}

void weft_gate_put(weft_opr *gate_op)
{
  weft_gate *gate = gate_op->arg;
  struct weft_graph *g = gate->graph;
  /* relaxed: no var names it any more (keep.h); its next taker sets RUN. */
  atomic_store_explicit(&gate->hold, WEFT_HOLD_OFF, memory_order_relaxed);
  pthread_mutex_lock(&g->gate_lock);
  gate->next = g->free_gates;
  g->free_gates = gate;
  pthread_mutex_unlock(&g->gate_lock);
  /* release: the gate is done with the graph; pairs with the acquire load
   * in weft_graph_destroy, which may free it at once. */
  atomic_fetch_sub_explicit(&g->gates_out, 1, memory_order_release);
}

bool weft_graph_holds(const weft_opr *op, const weft_var_impl *v)
{
  const weft_gnode *n = weft_opr_gnode(op);
  if (!n)
    return false;
  const struct weft_graph *g = n->graph;
  int lo = 0, hi = g->nvars; /* the gate's vars are sorted by slot index */
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (g->vars[mid]->slot.index < v->slot.index)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < g->nvars && g->vars[lo] == v;
}

/* Every engine's graphs, for the engine's destroy: not on any hot path. */
static pthread_mutex_t graphs_lock = PTHREAD_MUTEX_INITIALIZER;
static weft_dlist graphs; /* under graphs_lock */
static pthread_once_t graphs_fork_once = PTHREAD_ONCE_INIT;

static void graphs_fork_prepare(void)
{
  pthread_mutex_lock(&graphs_lock);
}

static void graphs_fork_release(void)
{
  pthread_mutex_unlock(&graphs_lock);
}

static void graphs_fork_register(void)
{
  weft_fork_register(WEFT_FORK_GRAPHS, graphs_fork_prepare, graphs_fork_release,
                     graphs_fork_release);
}

void weft_graph_track(struct weft_graph *g)
{
  pthread_once(&graphs_fork_once, graphs_fork_register);
  pthread_mutex_lock(&graphs_lock);
  weft_dlist_push(&graphs, &g->link);
  pthread_mutex_unlock(&graphs_lock);
}

void weft_graph_untrack(struct weft_graph *g)
{
  pthread_mutex_lock(&graphs_lock);
  if (atomic_load_explicit(&g->eng, memory_order_relaxed)) /* an orphan is off the list */
    weft_dlist_remove(&graphs, &g->link);
  pthread_mutex_unlock(&graphs_lock);
}

void weft_graph_orphan_all(weft_engine *eng)
{
  pthread_mutex_lock(&graphs_lock);
  for (weft_dlist_node *n = graphs.head, *next; n; n = next) {
    next = n->next;
    struct weft_graph *g = weft_dlist_entry(n, struct weft_graph, link);
    if (atomic_load_explicit(&g->eng, memory_order_relaxed) != eng)
      continue;
    weft_dlist_remove(&graphs, n);
    weft_keep_drop(g); /* its vars go with the engine; its gate is put back */
    weft_graph_release_nodes(g);
    /* seq_cst, store and load: a Dekker pair with graph_enter's
     * increment then load: either that load sees NULL, or this one sees the
     * caller inside. The load also acquires graph_enter's release
     * decrement: its reads of the engine come before the engine's free. */
    atomic_store_explicit(&g->eng, NULL, memory_order_seq_cst);
    while (atomic_load_explicit(&g->entering, memory_order_seq_cst))
      sched_yield(); /* a few instructions: an entry the closed guard refuses */
  }
  pthread_mutex_unlock(&graphs_lock);
}

void weft_graph_wait_orphaned(struct weft_graph *g)
{
  /* The orphaning clears eng under the lock and touches the graph no more
   * once it lets go of it: NULL read under the lock means done. The
   * engine's destroy drains its work first, which may take a while: yield,
   * then sleep. */
  for (unsigned round = 0;; round++) {
    pthread_mutex_lock(&graphs_lock);
    bool orphaned = !atomic_load_explicit(&g->eng, memory_order_relaxed);
    pthread_mutex_unlock(&graphs_lock);
    if (orphaned)
      return;
    if (round < WEFT_ORPHAN_WAIT_YIELDS)
      sched_yield();
    else
      nanosleep(&(struct timespec){0, WEFT_ORPHAN_WAIT_SLEEP_NS}, NULL);
  }
}

void weft_graph_release_nodes(struct weft_graph *g)
{
  weft_free(g->nodes);
  weft_free((void *)g->pending);
  weft_free(g->roots);
  weft_free(g->place);
  weft_free(g->vars);
  weft_free(g->uses);
  weft_free(g->counters);
  weft_free(g->store);
  weft_lanes_free(g);
  g->nodes = NULL;
  g->pending = NULL;
  g->roots = NULL;
  g->place = NULL;
  g->succs = NULL;
  g->node_uses = NULL;
  g->vars = NULL;
  g->uses = NULL;
  g->counters = NULL;
  g->store = NULL;
  g->nnodes = g->nroots = g->nvars = g->ncounters = 0;
}
