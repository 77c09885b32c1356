/* SPDX-License-Identifier: MIT */
/*
 * Planning a graph's lanes at capture (lane_plan.h): a list schedule of the
 * nodes in capture order on K lanes, each node taking one unit of time and
 * a predecessor in another lane WEFT_GRAPH_LANE_XFER_NS units more; each node
 * goes to the lane where it starts first, or to its latest predecessor's
 * if that starts it at most WEFT_GRAPH_LANE_SLACK_NS units later. Tried for
 * K = 2, 4, ... up to the pool's workers; the fewest lanes whose plan ends
 * within WEFT_GRAPH_LANE_NEAR_PCT of the best are kept, if that plan beats
 * one lane (WEFT_GRAPH_LANES_GAIN_PCT). Then each node's waits: for each
 * other lane, the latest of its predecessors there, unless an earlier
 * node of its own lane waited for as much; and each lane's publish points,
 * the nodes some wait names (the lane publishes its count right after
 * each: lanes.h).
 */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/sync.h"
#include "graph/lane_plan.h"

/* A node's cost in the plan, ns: measured (w), or unit. */
static inline int64_t cost_of(const uint32_t *w, int64_t unit, int i)
{
  return w ? (w[i] ? (int64_t)w[i] : 1) : unit;
}

/* Plans K lanes: lane[i] for every node (fixed: the lanes given, only
 * timed), each costing w[i] (w NULL: unit); returns the plan's end time,
 * ns. */
static int64_t simulate(int n, const int (*edge)[2], size_t nedges, int K, const uint32_t *w,
                        int64_t unit, const int32_t *fixed, int32_t *lane, int64_t *fin)
{
  int64_t free_at[WEFT_GRAPH_LANES_MAX] = {0};
  int npl[WEFT_GRAPH_LANES_MAX] = {0}; /* a node's predecessors in each lane */
  int64_t end = 0;
  size_t e = 0;
  for (int i = 0; i < n; i++) {
    /* The latest predecessor (t1, in lane l1), and the latest in another
     * lane (t2): the node may start in l1 once t1 and t2 + XFER have
     * passed, elsewhere once t1 + XFER has; it takes CROSS longer for each
     * predecessor in another lane. */
    size_t e0 = e;
    int64_t t1 = -1, t2 = -1;
    int l1 = -1, np = 0;
    for (; e < nedges && edge[e][1] == i; e++, np++) {
      int pr = edge[e][0];
      npl[lane[pr]]++;
      if (fin[pr] > t1) {
        t1 = fin[pr];
        l1 = lane[pr];
      }
    }
    for (size_t x = e0; x < e; x++)
      if (lane[edge[x][0]] != l1 && fin[edge[x][0]] > t2)
        t2 = fin[edge[x][0]];
    int64_t elsewhere = t1 < 0 ? 0 : t1 + WEFT_GRAPH_LANE_XFER_NS;
    int64_t in_l1 = t2 < 0 || t1 > t2 + WEFT_GRAPH_LANE_XFER_NS ? t1 : t2 + WEFT_GRAPH_LANE_XFER_NS;
    int best = 0;
    int64_t best_end = INT64_MAX;
    for (int p = 0; p < K; p++) {
      int64_t ready = p == l1 ? in_l1 : elsewhere;
      int64_t t = (free_at[p] > ready ? free_at[p] : ready) + cost_of(w, unit, i) +
                  (int64_t)(np - npl[p]) * WEFT_GRAPH_LANE_CROSS_NS;
      if (t < best_end) {
        best_end = t;
        best = p;
      }
    }
    if (l1 >= 0) {
      int64_t t = (free_at[l1] > in_l1 ? free_at[l1] : in_l1) + cost_of(w, unit, i) +
                  (int64_t)(np - npl[l1]) * WEFT_GRAPH_LANE_CROSS_NS;
      if (t <= best_end + WEFT_GRAPH_LANE_SLACK_NS) {
        best = l1;
        best_end = t;
      }
    }
    if (fixed) {
      int p = best = fixed[i];
      int64_t ready = p == l1 ? in_l1 : elsewhere;
      best_end = (free_at[p] > ready ? free_at[p] : ready) + cost_of(w, unit, i) +
                 (int64_t)(np - npl[p]) * WEFT_GRAPH_LANE_CROSS_NS;
    }
    for (size_t x = e0; x < e; x++)
      npl[lane[edge[x][0]]] = 0;
    lane[i] = best;
    fin[i] = free_at[best] = best_end;
    if (best_end > end)
      end = best_end;
  }
  return end;
}

/* The lanes of K's plan, their nodes and waits, into g. */
static int lay_out(struct weft_graph *g, int n, const int (*edge)[2], size_t nedges, int K,
                   int32_t *lane)
{
  /* Empty lanes dropped: lanes renumbered in order of use. */
  int renum[WEFT_GRAPH_LANES_MAX], count[WEFT_GRAPH_LANES_MAX] = {0}, nl = 0;
  for (int p = 0; p < K; p++)
    renum[p] = -1;
  for (int i = 0; i < n; i++) {
    if (renum[lane[i]] < 0)
      renum[lane[i]] = nl++;
    lane[i] = renum[lane[i]];
    count[lane[i]]++;
  }
  WEFT_ASSERT(nl >= 2);
  /* One block: node lists, wait offsets, waits (at most one per edge),
   * the lanes' seen arrays, their publish points (at most one per node,
   * and each lane's end mark). */
  size_t bytes = sizeof(weft_gwait) * (nedges ? nedges : 1) + sizeof(int32_t) * (size_t)n +
                 sizeof(uint32_t) * ((size_t)n + (size_t)nl) +
                 sizeof(int32_t) * (size_t)nl * (size_t)nl +
                 sizeof(int32_t) * ((size_t)n + (size_t)nl);
  char *store = weft_malloc(bytes);
  weft_glane *lanes = weft_aligned_alloc(WEFT_CACHE_LINE, sizeof *lanes * (size_t)nl);
  int32_t *pos = weft_malloc(sizeof *pos * (size_t)(n ? n : 1));
  int32_t *last = weft_calloc((size_t)nl * (size_t)nl, sizeof *last);
  /* Per node: whether a wait names it (its lane publishes after it). */
  unsigned char *named = weft_calloc((size_t)(n ? n : 1), 1);
  if (!store || !lanes || !pos || !last || !named) {
    weft_free(store);
    weft_free(lanes);
    weft_free(pos);
    weft_free(last);
    weft_free(named);
    return WEFT_ENOMEM;
  }
  weft_gwait *waits = (weft_gwait *)store;
  int32_t *nodes = (int32_t *)(waits + (nedges ? nedges : 1));
  uint32_t *wait0 = (uint32_t *)(nodes + n);
  int32_t *seen = (int32_t *)(wait0 + n + nl);
  int32_t *pubs = seen + (size_t)nl * (size_t)nl;
  memset(lanes, 0, sizeof *lanes * (size_t)nl);
  int32_t *at[WEFT_GRAPH_LANES_MAX];
  uint32_t *w0[WEFT_GRAPH_LANES_MAX];
  int off = 0;
  for (int p = 0; p < nl; p++) {
    weft_glane *L = &lanes[p];
    L->n = count[p];
    L->self = p;
    L->node = at[p] = nodes + off;
    L->wait0 = w0[p] = wait0 + off + p;
    L->seen = seen + (size_t)p * (size_t)nl;
    L->graph = g;
    atomic_init(&L->done, 0);
    atomic_init(&L->waiters, 0);
    atomic_init(&L->need, 0);
    atomic_init(&L->running, 0);
    off += count[p];
  }
  /* Per node, the latest predecessor in each other lane (need[q], for
   * stamp[q] == i); emitted unless its lane waited for as much before.
   * Into tmp in capture order first (node i's: tmp[tw0[i] .. tw0[i + 1]),
   * tw0 in pos's place once the positions are known), then each lane's
   * together, in its order. */
  weft_gwait *tmp = weft_malloc(sizeof *tmp * (nedges ? nedges : 1));
  uint32_t *tw0 = weft_malloc(sizeof *tw0 * ((size_t)n + 1));
  if (!tmp || !tw0) {
    weft_free(tmp);
    weft_free(tw0);
    weft_free(store);
    weft_free(lanes);
    weft_free(pos);
    weft_free(last);
    weft_free(named);
    return WEFT_ENOMEM;
  }
  /* need[q]: the count node i waits for in lane q, from predecessor
   * by[q] (for stamp[q] == i). */
  int32_t need[WEFT_GRAPH_LANES_MAX], stamp[WEFT_GRAPH_LANES_MAX], by[WEFT_GRAPH_LANES_MAX];
  uint32_t lane_waits[WEFT_GRAPH_LANES_MAX] = {0};
  for (int q = 0; q < nl; q++)
    stamp[q] = -1;
  uint32_t nw = 0;
  size_t e = 0;
  for (int i = 0; i < n; i++) {
    int p = lane[i];
    pos[i] = (int32_t)(at[p] - lanes[p].node);
    *at[p]++ = i;
    for (; e < nedges && edge[e][1] == i; e++) {
      int pr = edge[e][0], q = lane[pr];
      WEFT_ASSERT(pr < i); /* capture order is an order the graph may run in */
      if (q == p)
        continue;
      if (stamp[q] != i) {
        stamp[q] = i;
        need[q] = 0;
      }
      if (pos[pr] + 1 > need[q]) {
        need[q] = pos[pr] + 1;
        by[q] = pr;
      }
    }
    tw0[i] = nw;
    for (int q = 0; q < nl; q++)
      if (stamp[q] == i && need[q] > last[p * nl + q]) {
        last[p * nl + q] = need[q];
        tmp[nw++] = (weft_gwait){q, need[q]};
        named[by[q]] = 1;
      }
    lane_waits[p] += nw - tw0[i];
  }
  tw0[n] = nw;
  uint32_t cur[WEFT_GRAPH_LANES_MAX];
  for (int p = 0, sum = 0; p < nl; p++) {
    cur[p] = (uint32_t)sum;
    sum += (int)lane_waits[p];
  }
  for (int i = 0; i < n; i++) {
    int p = lane[i];
    *w0[p]++ = cur[p];
    for (uint32_t x = tw0[i]; x < tw0[i + 1]; x++)
      waits[cur[p]++] = tmp[x];
  }
  for (int p = 0; p < nl; p++)
    *w0[p] = cur[p]; /* the lane's wait0[n] */
  /* Each lane's publish points, in its order: the counts some wait names,
   * then INT32_MAX (no node is past it). */
  for (int p = 0; p < nl; p++) {
    weft_glane *L = &lanes[p];
    L->pub = pubs;
    for (int k = 0; k < L->n; k++)
      if (named[L->node[k]])
        *pubs++ = k + 1;
    *pubs++ = INT32_MAX;
  }
  weft_free(tmp);
  weft_free(tw0);
  weft_free(pos);
  weft_free(last);
  weft_free(named);
  g->nlanes = nl;
  g->lanes = lanes;
  g->waits = waits;
  g->lane_store = store;
  return 0;
}

/* weft_lanes_plan, with unit as every node's cost when w is NULL. */
static int plan(struct weft_graph *g, int n, const int (*edge)[2], size_t nedges, int workers,
                const uint32_t *w, int64_t unit, int64_t *end)
{
  int kmax = workers < WEFT_GRAPH_LANES_MAX ? workers : WEFT_GRAPH_LANES_MAX;
  if (kmax < 2 || n < 2)
    return 0;
  int32_t *lane = weft_malloc(sizeof *lane * (size_t)n);
  int32_t *keep = weft_malloc(sizeof *keep * (size_t)n);
  int64_t *fin = weft_malloc(sizeof *fin * (size_t)n);
  if (!lane || !keep || !fin) {
    weft_free(lane);
    weft_free(keep);
    weft_free(fin);
    return WEFT_ENOMEM;
  }
  /* Each lane count's end time; the fewest lanes near the best kept. */
  int ks[8 * sizeof(int)], nk = 0;
  int64_t ends[8 * sizeof(int)];
  for (int k = 2; k < kmax; k *= 2)
    ks[nk++] = k;
  ks[nk++] = kmax;
  int64_t best = INT64_MAX;
  for (int j = 0; j < nk; j++) {
    ends[j] = simulate(n, edge, nedges, ks[j], w, unit, NULL, lane, fin);
    if (ends[j] < best)
      best = ends[j];
  }
  int pick = -1;
  for (int j = 0; j < nk && pick < 0; j++)
    if (ends[j] * 100 <= best * WEFT_GRAPH_LANE_NEAR_PCT)
      pick = j;
  int64_t one = 0; /* the plan's time in one lane */
  for (int i = 0; i < n; i++)
    one += cost_of(w, unit, i);
  int rc = 0;
  if (ends[pick] * 100 <= one * WEFT_GRAPH_LANES_GAIN_PCT) {
    /* The last count simulated left its plan in lane (the only one, on a
     * pool of 2 or 3): planned again only for another. */
    int32_t *plan = lane;
    if (pick != nk - 1) {
      simulate(n, edge, nedges, ks[pick], w, unit, NULL, keep, fin);
      plan = keep;
    }
    if (end)
      *end = ends[pick];
    rc = lay_out(g, n, edge, nedges, ks[pick], plan);
  }
  weft_free(lane);
  weft_free(keep);
  weft_free(fin);
  return rc;
}

int weft_lanes_plan(struct weft_graph *g, int n, const int (*edge)[2], size_t nedges, int workers,
                    const uint32_t *w, int64_t *end)
{
  return plan(g, n, edge, nedges, workers, w, WEFT_GRAPH_LANE_NODE_NS, end);
}

int weft_lanes_plan_capture(struct weft_graph *g, int n, const int (*edge)[2], size_t nedges,
                            int workers)
{
  int rc = plan(g, n, edge, nedges, workers, NULL, WEFT_GRAPH_LANE_NODE_NS, NULL);
  if (rc || g->nlanes)
    return rc;
  /* None with short nodes: those of a graph whose parallelism crosses
   * lanes at every step (a stencil's neighbours, a butterfly's partners)
   * wait for more than they run. Long ones would not: planned so, the
   * first launch (which times them) runs in lanes, and the plan from their
   * measured costs replaces this guess, lanes or none (lanes.h). */
  rc = plan(g, n, edge, nedges, workers, NULL, WEFT_GRAPH_RELEASE_NS, NULL);
  g->lane_guess = g->nlanes != 0;
  return rc;
}

/* Frees the lanes and their waits (not the plan's input). */
static void free_plan(struct weft_graph *g)
{
  weft_free(g->lanes);
  weft_free(g->lane_store);
  g->lanes = NULL;
  g->lane_store = NULL;
  g->waits = NULL;
  g->nlanes = 0;
}

void weft_lanes_replan(struct weft_graph *g, int workers)
{
  if (!g->node_ns)
    return;
  int n = g->nnodes;
  const int(*edge)[2] = (const int(*)[2])g->plan_edge;
  uint32_t *w = weft_malloc(sizeof *w * (size_t)(n ? n : 1));
  int32_t *lane = weft_malloc(sizeof *lane * (size_t)(n ? n : 1));
  int32_t *scratch = weft_malloc(sizeof *scratch * (size_t)(n ? n : 1));
  int64_t *fin = weft_malloc(sizeof *fin * (size_t)(n ? n : 1));
  if (!w || !lane || !scratch || !fin) {
    weft_free(w);
    weft_free(lane);
    weft_free(scratch);
    weft_free(fin);
    return;
  }
  /* The costs: each time less what a timing of nothing reads (every
   * node's time holds one). */
  int64_t over = INT64_MAX;
  for (int i = 0; i < 16; i++) {
    int64_t a = weft_now_ns(), b = weft_now_ns();
    if (b - a < over)
      over = b - a;
  }
  for (int i = 0; i < n; i++)
    w[i] = (int64_t)g->node_ns[i] > over ? g->node_ns[i] - (uint32_t)over : 1;
  /* The plan in place, timed with these costs. */
  for (int i = 0; i < n; i++)
    lane[i] = 0; /* no lanes yet: all in one */
  for (int p = 0; p < g->nlanes; p++)
    for (int k = 0; k < g->lanes[p].n; k++)
      lane[g->lanes[p].node[k]] = p;
  int64_t old_end = simulate(n, edge, g->plan_nedges, g->nlanes ? g->nlanes : 1, w, 0, lane,
                             scratch, fin);
  weft_free(lane);
  weft_free(scratch);
  weft_free(fin);
  weft_glane *lanes = g->lanes;
  void *store = g->lane_store;
  const weft_gwait *waits = g->waits;
  int nlanes = g->nlanes;
  g->lanes = NULL;
  g->lane_store = NULL;
  g->waits = NULL;
  g->nlanes = 0;
  int64_t new_end = INT64_MAX;
  bool guess = g->lane_guess; /* the plan in place is the capture's guess: it gives way */
  g->lane_guess = false;
  if (weft_lanes_plan(g, n, edge, g->plan_nedges, workers, w, &new_end) ||
      (!guess && (g->nlanes < 2 || new_end * 100 > old_end * WEFT_GRAPH_LANE_REPLAN_PCT))) {
    /* No memory, no lanes with these costs, or not enough better than the
     * plan in place (its lanes keep their vars' chains, which measured
     * noise would scatter): the plan before stays (the launches' own
     * times choose between it and one lane). */
    g->lane_guess = guess;
    free_plan(g);
    g->lanes = lanes;
    g->lane_store = store;
    g->waits = waits;
    g->nlanes = nlanes;
    weft_free(w);
    return;
  }
  weft_free(w);
  weft_free((void *)lanes);
  weft_free(store);
}
