/* SPDX-License-Identifier: MIT */
/*
 * Running a graph in lanes (lanes.h): each lane's sweeper, its waits for
 * other lanes, its stop and its wake, and the launch's end after the last
 * lane.
 */
#include <stddef.h>
#include <stdint.h>

#include "common/assert.h"
#include "common/prof.h"
#include "common/sync.h"
#include "deps/ext.h"
#include "graph/lanes.h"
#include "graph/replay.h"
#include "pool/pool_ext.h"

static int lane_task(void *arg);

/* A lane's running hint (graph.h). */
enum { WEFT_LANE_IDLE, WEFT_LANE_RUNNING, WEFT_LANE_QUEUED };

/* Queues L's sweeper; run here if the pool takes nothing more (shut down:
 * the engine drains before that, so only in a test's fault). */
static void queue_lane(weft_pool *pool, weft_glane *L)
{
  L->task.fn = lane_task;
  L->task.arg = L;
  /* relaxed: a hint (graph.h) */
  atomic_store_explicit(&L->running, WEFT_LANE_QUEUED, memory_order_relaxed);
  if (weft_pool_submit_embedded(pool, &L->task, false, 0) != 0)
    lane_task(L);
}

/* The fastest launch the probes saw (INT64_MAX: none yet). */
static inline int64_t fastest(const struct weft_graph *g)
{
  return g->lane_best[0] < g->lane_best[1] ? g->lane_best[0] : g->lane_best[1];
}

/* Whether g's nodes took WEFT_GRAPH_RELEASE_NS or more each, on average,
 * in the launch that timed them. */
static bool long_nodes(const struct weft_graph *g)
{
  uint64_t sum = 0;
  for (int i = 0; i < g->nnodes; i++)
    sum += g->node_ns[i];
  return sum >= (uint64_t)g->nnodes * WEFT_GRAPH_RELEASE_NS;
}

bool weft_lanes_choose(struct weft_graph *g)
{
  unsigned m = g->lane_launches;
  g->lane_launches = (m + 1) % WEFT_GRAPH_LANE_PERIOD;
  if (m == 1 && g->lane_measure) { /* the first launch timed the nodes */
    int64_t timed = fastest(g); /* the launch that timed them */
    int64_t base = g->lane_base && g->lane_base < timed ? g->lane_base : timed;
    int64_t t0 = weft_now_ns();
    weft_lanes_replan(g, weft_pool_num_threads(weft_graph_run_pool(g)));
    /* The plan, and what timing the nodes added to the launch that did. */
    int64_t cost = weft_now_ns() - t0 + (timed - base);
    /* Dear for this graph's launches: space the timings out (the gate holds
     * every var of the graph meanwhile). */
    unsigned gap = 2 * g->replan_gap + 1;
    g->replan_gap = cost / WEFT_GRAPH_LANE_PERIOD * WEFT_GRAPH_LANE_REPLAN_SHARE > base
                        ? (gap < WEFT_GRAPH_LANE_REPLAN_GAP_MAX ? gap : WEFT_GRAPH_LANE_REPLAN_GAP_MAX)
                        : 0;
    g->replan_wait = g->replan_gap;
    /* Long nodes with parallelism: released along the edges from the next
     * launch on (graph.h, released); this one runs in lanes. */
    if (g->nlanes >= 2 && !g->lane_force && long_nodes(g))
      g->released = true;
  }
  if (m == 0) {
    /* The period before: its fastest launch, what a launch costs (none yet
     * in the first: 0). */
    int64_t b = fastest(g);
    g->lane_base = b > 0 && b < INT64_MAX ? b : 0;
    g->lane_best[0] = g->lane_best[1] = INT64_MAX;
    g->lane_measure = g->node_ns && g->replan_wait == 0;
    if (g->replan_wait)
      g->replan_wait--;
  } else {
    g->lane_measure = false;
  }
  if (!g->nlanes)
    g->lane_now = false;
  else if (g->released)
    g->lane_now = true; /* no probe in one lane: it runs one node at a time */
  else if (m < 2 * WEFT_GRAPH_LANE_PROBES)
    g->lane_now = !(m & 1); /* lanes first */
  else {
    if (m == 2 * WEFT_GRAPH_LANE_PROBES)
      g->lane_pick = g->lane_best[1] <= g->lane_best[0];
    g->lane_now = g->lane_pick;
  }
  if (g->lane_force && g->nlanes)
    g->lane_now = g->lane_force > 0;
  /* relaxed: the top counter counts this launch's sweepers (its start
   * value, one, is the one sweeper's); the queuing of the sweepers
   * publishes it. */
  atomic_store_explicit(&g->counters[g->ncounters - 1].left, g->lane_now ? g->nlanes : 1,
                        memory_order_relaxed);
  g->lane_t0 = weft_now_ns();
  return g->lane_now;
}

void weft_lanes_start(struct weft_graph *g)
{
  WEFT_ASSERT(g->nlanes >= 2);
  /* The launch before has ended, every lane of it: nothing reads these
   * until the queuing below publishes them. */
  for (int p = 0; p < g->nlanes; p++) {
    weft_glane *L = &g->lanes[p];
    WEFT_ASSERT(atomic_load_explicit(&L->waiters, memory_order_relaxed) == 0);
    atomic_store_explicit(&L->done, 0, memory_order_relaxed);
    L->cursor = 0;
    L->pub_at = 0;
    for (int q = 0; q < g->nlanes; q++)
      L->seen[q] = 0;
  }
  weft_pool *pool = weft_graph_run_pool(g);
  for (int p = g->nlanes - 1; p >= 0; p--) /* lane 0 last: on a deque, run first here */
    queue_lane(pool, &g->lanes[p]);
}

/* L's holder, done at done nodes (stored): hands their runs back to the
 * lanes waiting for no more than that. The waiters are read with a
 * read-modify-write: of it and a stopping lane's fetch_or, the later sees
 * the other (the bit, or done), which two plain loads after the stores
 * would not (lanes.h). */
static void wake(weft_glane *L, int32_t done)
{
  /* acq_rel: acquire pairs with the waiters' release fetch_or (their need);
   * release passes done on to a lane whose fetch_or comes after. */
  uint64_t w = atomic_fetch_or_explicit(&L->waiters, 0, memory_order_acq_rel);
  weft_glane *lanes = L->graph->lanes;
  weft_pool *pool = weft_graph_run_pool(L->graph);
  while (w) {
    int q = __builtin_ctzll(w);
    uint64_t bit = 1ull << q;
    w &= ~bit;
    /* relaxed: a stale need (the lane stopped again since) wakes it early,
     * and it looks again. */
    if (atomic_load_explicit(&lanes[q].need, memory_order_relaxed) > done)
      continue;
    /* acq_rel: whoever clears the bit takes the lane's run and queues it
     * (the lane's own second look at done is the other candidate: see
     * wait_lane); acquire sees its cursor. */
    if (atomic_fetch_and_explicit(&L->waiters, ~bit, memory_order_acq_rel) & bit)
      queue_lane(pool, &lanes[q]);
  }
}

/* L's holder has run done nodes: tells the lanes that wait (right after
 * each node a wait names, its publish points, and before it waits, stops,
 * yields or ends; never after a node nobody waits for: a store per node
 * would move done's line between the cores at every node of two lanes in
 * step, for nothing). */
static inline void publish(weft_glane *L, int32_t done)
{
  /* release: the nodes' writes, to the lanes that wait for them (their
   * acquire loads in wait_lane). */
  atomic_store_explicit(&L->done, done, memory_order_release);
  wake(L, done);
}

/* L's holder waits until lane q has run need nodes: spins a while, then
 * stops. Returns true once it may go on; false if it stopped: its run is
 * q's to give back (or queued already), and L is no longer this thread's
 * to touch, nor the graph. plain: as lane_task's. */
static bool wait_lane(weft_glane *L, int q, int32_t need, bool plain)
{
  weft_glane *Q = &L->graph->lanes[q];
  /* acquire: pairs with Q's release store of done: Q's nodes' writes. */
  int32_t d = atomic_load_explicit(&Q->done, memory_order_acquire);
  if (d < need) /* what L ran since it last published: Q may wait for it */
    publish(L, L->cursor);
  for (int i = 0; d < need && i < WEFT_GRAPH_LANE_SPIN; i++) {
    /* relaxed: a hint (graph.h). Q queued: a searching worker takes it in
     * a moment, or none does, and this thread may run it once L stops. */
    int r = atomic_load_explicit(&Q->running, memory_order_relaxed);
    if (r == WEFT_LANE_IDLE || (r == WEFT_LANE_QUEUED && i >= WEFT_GRAPH_LANE_SPIN_QUEUED))
      break;
    weft_cpu_pause();
    /* acquire: as above. */
    d = atomic_load_explicit(&Q->done, memory_order_acquire);
  }
  if (d >= need) {
    L->seen[q] = d;
    return true;
  }
  /* Stop: L's state (cursor, seen) is final before the bit is set, and
   * L's holder stops running (its own waiters were woken by the publish
   * above: a lane waiting for L while L waits for Q would wait for what L
   * already ran). Once the bit is set, L's run is its waker's, which may
   * run L to the launch's end: this thread holds the launch open (one more
   * count on its top counter) until its last look at Q, so the graph, and
   * a plan that replaces these lanes, wait for it. */
  struct weft_graph *g = L->graph;
  atomic_store_explicit(&L->need, need, memory_order_relaxed);
  /* relaxed: a hint (graph.h) */
  atomic_store_explicit(&L->running, WEFT_LANE_IDLE, memory_order_relaxed);
  /* relaxed: L has not counted itself off (its run is this thread's), so
   * the count is not 0; the count-offs after it are ordered after it by
   * the hand-over of L's run (fetch_or, then its waker's fetch_and). */
  atomic_fetch_add_explicit(&g->counters[g->ncounters - 1].left, 1, memory_order_relaxed);
  uint64_t bit = 1ull << L->self;
  /* acq_rel: release publishes L's state to Q's waker (its acquire
   * fetch_and); acquire sees Q's done up to Q's last read-modify-write on
   * waiters (wake's: lanes.h). */
  atomic_fetch_or_explicit(&Q->waiters, bit, memory_order_acq_rel);
  /* acquire: as the first load. Q got there meanwhile: wake L as Q would.
   * Never take the bit back and go on: once set, the bit may be a later
   * stop's of L (a waker took this one, queued L, and L ran and stopped
   * again), and whoever clears it queues L. */
  if (atomic_load_explicit(&Q->done, memory_order_acquire) >= need &&
      /* acq_rel: as wake's */
      (atomic_fetch_and_explicit(&Q->waiters, ~bit, memory_order_acq_rel) & bit))
    queue_lane(weft_graph_run_pool(g), L);
  weft_sweeper_end(g, plain); /* the hold, off: maybe the launch's end */
  return false;
}

/* A lane's sweeper (the pool task of its run): its nodes from its cursor,
 * in order, each after its waits, as a graph run in order runs them. */
static int lane_task(void *arg)
{
  weft_glane *L = arg;
  /* relaxed: a hint (graph.h) */
  atomic_store_explicit(&L->running, WEFT_LANE_RUNNING, memory_order_relaxed);
  struct weft_graph *g = L->graph;
  weft_pool *pool = weft_graph_run_pool(g);
  const bool plain = !weft_tls_opr;
  const int worker = plain ? weft_pool_worker_index(pool) : -1;
  /* As run.c's sweeper of a graph run in order: each node bare, its
   * fn and its status, unless a hook or a failed var asks for more. */
  const bool bare = plain && !weft_tls_between && !weft_prof_tls;
  weft_run_ctx rc = {weft_opr_ctx(&g->cur->op), NULL, worker};
  const uint64_t epoch = g->sweep_epoch;
  const int32_t n = L->n;
  const int32_t *node = L->node;
  const weft_gwait *waits = g->waits;
  int32_t *seen = L->seen;
  uint32_t *node_ns = g->lane_measure ? g->node_ns : NULL; /* this launch times its nodes */
  int32_t k = L->cursor;
  uint32_t wi = L->wait0[k];
  const int32_t *pub = L->pub + L->pub_at; /* the next publish point: > k */
  for (int since = 0; k < n; k++) {
    for (uint32_t we = L->wait0[k + 1]; wi < we; wi++) {
      weft_gwait w = waits[wi];
      if (seen[w.lane] < w.done) {
        L->cursor = k;
        L->pub_at = (int32_t)(pub - L->pub);
        if (!wait_lane(L, w.lane, w.done, plain))
          return 0;
      }
    }
    if (k + WEFT_GRAPH_SWEEP_AHEAD < n) { /* the blocks it reads next, in order */
      const char *ahead = (const char *)weft_graph_node(g, node[k + WEFT_GRAPH_SWEEP_AHEAD]);
      __builtin_prefetch(ahead, 1);
      __builtin_prefetch(ahead + WEFT_CACHE_LINE, 1);
    }
    weft_opr *op = weft_graph_node(g, node[k]);
    weft_opr_held_ready(op, epoch);
    int64_t t0 = node_ns ? weft_now_ns() : 0;
    if (bare && weft_engine_no_failed_var(weft_opr_engine(op))) {
      weft_gnode_call(op, &rc);
      weft_opr_state_set(op, WEFT_OPR_ST_DONE); /* nothing to release */
    } else {
      weft_opr_task(op); /* skipped for a failed var, traced, or nested */
    }
    if (node_ns)
      node_ns[node[k]] = weft_lanes_elapsed(t0);
    if (k + 1 == *pub) { /* another lane waits for this node: at once */
      pub++;
      publish(L, k + 1);
    }
    if (++since < WEFT_KEEP_RUN_MAX)
      continue;
    since = 0;
    if (k + 1 < n && weft_pool_yield_due(pool)) {
      /* Behind the work that waits for this worker; its waiters first. */
      publish(L, k + 1);
      L->cursor = k + 1;
      L->pub_at = (int32_t)(pub - L->pub);
      /* relaxed: a hint (graph.h); its waiters were woken just above */
      atomic_store_explicit(&L->running, WEFT_LANE_QUEUED, memory_order_relaxed);
      if (weft_pool_submit_embedded_last(pool, &L->task) == 0)
        return 0;
      /* relaxed: a hint (graph.h) */
      atomic_store_explicit(&L->running, WEFT_LANE_RUNNING, memory_order_relaxed);
    }
  }
  /* relaxed: a hint (graph.h) */
  atomic_store_explicit(&L->running, WEFT_LANE_IDLE, memory_order_relaxed);
  publish(L, n);
  weft_sweeper_end(g, plain);
  return 0;
}
