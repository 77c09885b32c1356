/*
 * Every engine's graphs (registry.h): the list, its fork handlers, and the
 * orphaning at an engine's destroy.
 */
#include <sched.h>
#include <time.h>

#include "common/dlist.h"
#include "common/fork.h"
#include "common/tunables.h"
#include "graph/devrun_plan.h"
#include "graph/keep.h"
#include "graph/registry.h"

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
    /* No launch runs (the engine is drained), but a change may (graph_api.c,
     * edit_begin: it counts itself nowhere else): it goes first, and the
     * ones after it wait until eng is NULL, then find it so. acquire:
     * pairs with its release of IDLE (what it added). */
    for (int idle = WEFT_GRAPH_IDLE;
         !atomic_compare_exchange_weak_explicit(&g->running, &idle, WEFT_GRAPH_EDITING,
                                                memory_order_acquire, memory_order_relaxed);
         idle = WEFT_GRAPH_IDLE)
      sched_yield(); /* a copy and an append or two */
    weft_keep_drop(g); /* its vars go with the engine; its gate is put back */
    weft_devruns_free(g); /* before the executor closes */
    weft_graph_release_nodes(g);
    /* seq_cst, store and load: a Dekker pair with graph_enter's
     * increment then load: either that load sees NULL, or this one sees the
     * caller inside. The load also acquires graph_enter's release
     * decrement: its reads of the engine come before the engine's free. */
    atomic_store_explicit(&g->eng, NULL, memory_order_seq_cst);
    while (atomic_load_explicit(&g->entering, memory_order_seq_cst))
      sched_yield(); /* a few instructions: an entry the closed guard refuses */
    /* release: a change after this one sees eng NULL (edit_begin). */
    atomic_store_explicit(&g->running, WEFT_GRAPH_IDLE, memory_order_release);
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
