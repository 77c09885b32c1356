/* SPDX-License-Identifier: MIT */
/*
 * Resolving a graph's definition into a graph (build.h): the dependencies
 * between the records (recorded pushes, or nodes added) are those the var
 * queues would have enforced, found once, in the records' order: a write
 * follows the reads of its var since the last write (or, if none, that
 * write); a read follows the last write. The explicit edges
 * (weft_graph_edge) join them, and duplicate edges are merged. The
 * records' order is an order the graph may run in unless an explicit edge
 * goes backward in it; then the nodes are built in a topological order
 * (order_nodes), and everything after reads the records in it (gathered,
 * or through weft_rec): the node blocks, the roots (no predecessor) and the sink
 * counter tree (graph.h), the lanes and the device runs all see an order
 * in which every predecessor comes first, as a capture's.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "graph/build.h"
#include "graph/devrun_plan.h"
#include "graph/lane_plan.h"

/* Node op's place in its graph, to fill in (graph.h, weft_gnode_of). */
static inline weft_gnode *gnode_place(weft_opr *op)
{
  return (weft_gnode *)(void *)((char *)op + WEFT_OPR_EXT_OFFSET);
}

/* The scratch space of one build, all freed at its end. */
typedef struct build {
  /* The definition, read through order once the nodes are ordered
   * (order_nodes): what every step after it reads. */
  const weft_recording *c;
  weft_recording rc; /* c's storage */
  int32_t *order;    /* [n] the record at each build index, or NULL: theirs */
  int *rank;         /* [n] the build index of each record, with order */
  weft_capture_rec *perm; /* [n] the records in the build's order, with order */
  int cycle;         /* order_nodes: a record on a cycle, or -1 */
  int n;             /* nodes */
  size_t u;          /* uses */
  int nv;            /* distinct handles */
  int *use_gv;       /* [u]: the graph var of each use */
  uintptr_t *gv_handle; /* [nv] */
  bool *gv_write;    /* [nv] */
  weft_var_impl **gv_var; /* [nv] */
  int *npred, *nsucc; /* [n] */
  /* [n]: node i's device edges in, and whether it has any out (graph.h,
   * WEFT_GRAPH_DEVICE); set by make_nodes */
  int *ndevin;
  bool *devout;
  /* Each node's successors, by capture index, in capture order (place_nodes
   * builds them; make_nodes copies them out by place): node i's are
   * sadj[soff[i] .. soff[i + 1]). */
  int *soff, *sadj;
  int (*edge)[2];    /* [nedges]: (pred, succ) */
  size_t nedges;
  size_t nvedges;    /* of them, found by find_edges (the vars'), before add_edges */
  bool plain;        /* every node a CPU fn without a priority (classify) */
  int workers;       /* the engine's pool's (0: the naive engine) */
  bool lean;         /* built for one launch (graph.h) */
  bool one_worker;   /* the engine's pool has one worker */
  /* ... and every node is a CPU fn of WEFT_PROP_NORMAL: the sweeper runs
   * each where it takes it, to its end, so capture order alone keeps every
   * edge: the graph is swept with none (graph.h) */
  bool in_order;
  bool sweep;        /* the graph is swept (graph.h; place_nodes decides) */
} build;

/* A hash of handles to graph var numbers (open addressing). */
static int map_vars(build *b)
{
  size_t cap = 16;
  while (cap < 2 * b->u)
    cap *= 2;
  uintptr_t *keys = weft_calloc(cap, sizeof *keys);
  int *vals = weft_malloc(cap * sizeof *vals);
  if (!keys || !vals) {
    weft_free(keys);
    weft_free(vals);
    return WEFT_ENOMEM;
  }
  const weft_var_use *uses = b->c->uses;
  for (size_t k = 0; k < b->u; k++) {
    uintptr_t h = uses[k].handle; /* never 0: a live handle has an odd generation */
    size_t i = (size_t)((h * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
    while (keys[i] && keys[i] != h)
      i = (i + 1) & (cap - 1);
    if (!keys[i]) {
      keys[i] = h;
      vals[i] = b->nv;
      b->gv_handle[b->nv] = h;
      b->gv_var[b->nv] = uses[k].var;
      b->gv_write[b->nv] = false;
      b->nv++;
    }
    b->use_gv[k] = vals[i];
    b->gv_write[vals[i]] |= uses[k].write;
  }
  weft_free(keys);
  weft_free(vals);
  return 0;
}

/* A graph var by slot index, for the sort. */
typedef struct gv_key {
  uint32_t index;
  int gv;
} gv_key;

static int cmp_gv(const void *a, const void *b)
{
  uint32_t x = ((const gv_key *)a)->index, y = ((const gv_key *)b)->index;
  return x < y ? -1 : x > y;
}

/* The dependency edges, in the order the var queues would grant. */
static int find_edges(build *b)
{
  int *last_w = weft_malloc(sizeof(int) * (size_t)(b->nv ? b->nv : 1));
  int *rhead = weft_malloc(sizeof(int) * (size_t)(b->nv ? b->nv : 1));
  int *rnext = weft_malloc(sizeof(int) * (b->u ? b->u : 1)); /* reader chains, by use */
  int *rnode = weft_malloc(sizeof(int) * (b->u ? b->u : 1));
  int *stamp = weft_malloc(sizeof(int) * (size_t)b->n);
  b->edge = weft_malloc(sizeof *b->edge * (2 * b->u + 1)); /* each use adds at most two */
  if (!last_w || !rhead || !rnext || !rnode || !stamp || !b->edge) {
    weft_free(last_w);
    weft_free(rhead);
    weft_free(rnext);
    weft_free(rnode);
    weft_free(stamp);
    return WEFT_ENOMEM;
  }
  for (int v = 0; v < b->nv; v++)
    last_w[v] = rhead[v] = -1;
  for (int i = 0; i < b->n; i++)
    stamp[i] = -1;
#define EDGE(p, s)                                  \
  do {                                              \
    if (stamp[p] != (s)) {                          \
      stamp[p] = (s);                               \
      b->edge[b->nedges][0] = (p);                  \
      b->edge[b->nedges][1] = (s);                  \
      b->nedges++;                                  \
      b->npred[s]++;                                \
      b->nsucc[p]++;                                \
    }                                               \
  } while (0)
  for (int i = 0; i < b->n; i++) {
    const weft_capture_rec *r = weft_rec(b->c, (size_t)i);
    for (int k = 0; k < r->nuses; k++) {
      size_t u = r->use0 + (size_t)k;
      int v = b->use_gv[u];
      if (b->c->uses[u].write) {
        if (rhead[v] >= 0) { /* after every read since the last write */
          for (int x = rhead[v]; x >= 0; x = rnext[x])
            EDGE(rnode[x], i);
          rhead[v] = -1;
        } else if (last_w[v] >= 0) {
          EDGE(last_w[v], i);
        }
        last_w[v] = i;
      } else {
        if (last_w[v] >= 0)
          EDGE(last_w[v], i);
        rnode[u] = i;
        rnext[u] = rhead[v];
        rhead[v] = (int)u;
      }
    }
  }
#undef EDGE
  weft_free(last_w);
  weft_free(rhead);
  weft_free(rnext);
  weft_free(rnode);
  weft_free(stamp);
  return 0;
}

/* Sorts b's nedges edges (pred, succ) by successor (a counting sort, stable:
 * within a successor, in the order they come), merging duplicates; and
 * counts each node's predecessors and successors again. Returns false
 * without memory (b's edges unchanged). */
static bool sort_edges(build *b, const int (*edge)[2], size_t nedges)
{
  int n = b->n;
  int *off = weft_calloc((size_t)n + 1, sizeof *off);
  int *stamp = weft_malloc(sizeof *stamp * (size_t)n);
  int (*out)[2] = weft_malloc(sizeof *out * (nedges ? nedges : 1));
  if (!off || !stamp || !out) {
    weft_free(off);
    weft_free(stamp);
    weft_free(out);
    return false;
  }
  for (size_t e = 0; e < nedges; e++)
    off[edge[e][1] + 1]++;
  for (int i = 0; i < n; i++) {
    off[i + 1] += off[i];
    stamp[i] = -1;
    b->npred[i] = b->nsucc[i] = 0;
  }
  for (size_t e = 0; e < nedges; e++) { /* off[s]: where successor s's next goes */
    int at = off[edge[e][1]]++;
    out[at][0] = edge[e][0];
    out[at][1] = edge[e][1];
  }
  size_t m = 0; /* off[s] now ends s's edges: merge each successor's duplicates */
  for (int s = 0, e = 0; s < n; s++)
    for (; e < off[s]; e++) {
      int p = out[e][0];
      if (stamp[p] == s)
        continue;
      stamp[p] = s;
      out[m][0] = p;
      out[m][1] = s;
      m++;
      b->npred[s]++;
      b->nsucc[p]++;
    }
  weft_free(off);
  weft_free(stamp);
  weft_free(b->edge);
  b->edge = out;
  b->nedges = m;
  return true;
}

/* A record on a cycle among the nodes order_nodes could not place (left:
 * each one's predecessors not placed, > 0): each has one of them as a
 * predecessor, so a walk back from any of them closes a loop. */
static int find_cycle(const build *b, const int *left)
{
  int n = b->n;
  int *back = weft_malloc(sizeof *back * (size_t)n);
  int start = -1;
  for (int i = 0; i < n && start < 0; i++)
    if (left[i] > 0)
      start = i;
  if (!back)
    return start; /* no memory for the walk: a node downstream of the cycle at worst */
  for (size_t e = 0; e < b->nedges; e++)
    if (left[b->edge[e][0]] > 0 && left[b->edge[e][1]] > 0)
      back[b->edge[e][1]] = b->edge[e][0];
  for (int i = 0; i < n; i++)
    if (left[i] > 0)
      back[i] |= INT_MIN; /* not visited: the mark comes off on the way */
  int x = start;
  while (back[x] < 0) {
    back[x] &= INT_MAX;
    x = back[x];
  }
  weft_free(back);
  return x; /* reached twice: on the loop */
}

/* A set of record indices that gives its smallest first (order_nodes): a
 * bit per record in 64-bit words (level 0), and above each level a bit per
 * word of the level below that is not empty, up to one word. An insert
 * and a removal of the smallest cost a few instructions a level (5 levels
 * hold every graph: WEFT_GRAPH_DEVICE records), where a binary heap's
 * steps, one per level of a heap of n, miss a line each. */
enum { IDXSET_LEVELS = 6 };
typedef struct idxset {
  uint64_t *lv[IDXSET_LEVELS];
  int top; /* the level of one word */
} idxset;

static bool idxset_init(idxset *set, int n)
{
  memset(set, 0, sizeof *set);
  size_t words = ((size_t)n + 63) / 64;
  for (int k = 0;; k++) {
    WEFT_ASSERT(k < IDXSET_LEVELS);
    if (!(set->lv[k] = weft_calloc(words ? words : 1, sizeof(uint64_t))))
      return false;
    if (words <= 1) {
      set->top = k;
      return true;
    }
    words = (words + 63) / 64;
  }
}

static void idxset_free(idxset *set)
{
  for (int k = 0; k < IDXSET_LEVELS; k++)
    weft_free(set->lv[k]);
}

static inline void idxset_add(idxset *set, int x)
{
  for (int k = 0; k <= set->top; k++) {
    uint64_t *w = &set->lv[k][x >> 6];
    bool was = *w != 0;
    *w |= 1ull << (x & 63);
    if (was)
      return; /* the levels above have this word's bit already */
    x >>= 6;
  }
}

/* Removes and returns the smallest; -1 when empty. */
static inline int idxset_take(idxset *set)
{
  if (!set->lv[set->top][0])
    return -1;
  int x = 0;
  for (int k = set->top; k >= 0; k--)
    x = x * 64 + __builtin_ctzll(set->lv[k][x]);
  for (int k = 0, y = x; k <= set->top; k++, y >>= 6) {
    uint64_t *w = &set->lv[k][y >> 6];
    *w &= ~(1ull << (y & 63));
    if (*w)
      break; /* the word is not empty: the levels above keep its bit */
  }
  return x;
}

/* The order the nodes are built in when an explicit edge goes backward
 * in the records' order: the topological order that takes the smallest
 * ready record each time (the records' own order wherever the edges allow
 * it), the ready ones in an idxset. Then b's edges and counts are put in
 * build indices (b->order; b->rank, the other way), and the records
 * gathered in that order (b->perm, the recs of b->rc).
 * WEFT_EINVAL if some nodes cannot be placed: a cycle (b->cycle names a
 * record on it). */
static int order_nodes(build *b)
{
  int n = b->n;
  int *off = weft_calloc((size_t)n + 1, sizeof *off);
  int *adj = weft_malloc(sizeof *adj * (b->nedges ? b->nedges : 1));
  int *left = weft_malloc(sizeof *left * (size_t)n);
  int *rank = b->rank = weft_malloc(sizeof *rank * (size_t)n);
  b->order = weft_malloc(sizeof *b->order * (size_t)n);
  idxset ready;
  bool set_ok = idxset_init(&ready, n);
  int rc = WEFT_ENOMEM;
  if (!off || !adj || !left || !rank || !b->order || !set_ok)
    goto out;
  /* Each record's successors (the edges are sorted by successor: each
   * list comes out in the records' order). */
  for (size_t e = 0; e < b->nedges; e++)
    off[b->edge[e][0] + 1]++;
  for (int i = 0; i < n; i++) {
    off[i + 1] += off[i];
    left[i] = b->npred[i];
    if (!left[i])
      idxset_add(&ready, i);
  }
  for (size_t e = 0; e < b->nedges; e++)
    adj[off[b->edge[e][0]]++] = b->edge[e][1];
  for (int i = n; i > 0; i--) /* off[i] ended i's list: back to its start */
    off[i] = off[i - 1];
  off[0] = 0;
  int k = 0;
  for (int x; (x = idxset_take(&ready)) >= 0;) {
    b->order[k] = x;
    rank[x] = k++;
    for (int j = off[x]; j < off[x + 1]; j++)
      if (--left[adj[j]] == 0)
        idxset_add(&ready, adj[j]);
  }
  if (k < n) {
    b->cycle = find_cycle(b, left);
    rc = WEFT_EINVAL;
    goto out;
  }
  /* The edges by build index, sorted by successor: each record's come
   * together in the sorted edges (left, all 0 now, takes where they
   * start), and go out in the build's order. */
  int (*sorted)[2] = weft_malloc(sizeof *sorted * (b->nedges ? b->nedges : 1));
  if (!sorted)
    goto out;
  for (int i = 0, at = 0; i < n; i++) {
    left[i] = at;
    at += b->npred[i];
  }
  size_t m = 0;
  for (int q = 0; q < n; q++) {
    int x = b->order[q];
    for (int e = left[x]; e < left[x] + b->npred[x]; e++) {
      sorted[m][0] = rank[b->edge[e][0]];
      sorted[m][1] = q;
      m++;
    }
  }
  weft_free(b->edge);
  b->edge = sorted;
  /* The counts by build index (off is free: n + 1 ints). */
  for (int q = 0; q < n; q++)
    off[q] = b->npred[b->order[q]];
  memcpy(b->npred, off, sizeof *off * (size_t)n);
  for (int i = 0; i < n; i++)
    off[rank[i]] = b->nsucc[i];
  memcpy(b->nsucc, off, sizeof *off * (size_t)n);
  /* The records in the build's order: one gather (its reads prefetched),
   * so that every pass after reads them in order; without memory, read
   * through the order instead. */
  b->perm = weft_malloc(sizeof *b->perm * (size_t)n);
  if (b->perm) {
    const weft_capture_rec *recs = b->rc.recs;
    for (int q = 0; q < n; q++) {
      if (q + WEFT_GRAPH_GATHER_AHEAD < n)
        __builtin_prefetch(&recs[b->order[q + WEFT_GRAPH_GATHER_AHEAD]]);
      b->perm[q] = recs[b->order[q]];
    }
    b->rc.recs = b->perm;
  } else {
    b->rc.order = b->order;
  }
  rc = 0;
out:
  weft_free(off);
  weft_free(adj);
  weft_free(left);
  idxset_free(&ready);
  return rc; /* rank stays, for make_explicit */
}

/* A lean build (graph.h) whose edges are all explicit and forward: each
 * node's successors straight from them (b->soff, b->sadj, as successors()
 * makes them, each list in the order its edges were given), duplicates
 * merged, and the counts; no list of edges by successor (nothing of a lean
 * build reads one: no lanes, no device runs, no order to find). false
 * without memory. */
static bool pred_lists(build *b)
{
  const weft_recording *c = b->c;
  int n = b->n;
  int *off = b->soff = weft_calloc((size_t)n + 1, sizeof(int));
  int *adj = b->sadj = weft_malloc(sizeof(int) * (c->nxedges ? c->nxedges : 1));
  int *stamp = weft_malloc(sizeof(int) * (size_t)n);
  if (!off || !adj || !stamp) {
    weft_free(stamp);
    return false;
  }
  for (size_t e = 0; e < c->nxedges; e++)
    off[c->xedge[e][0] + 1]++;
  for (int i = 0; i < n; i++) {
    off[i + 1] += off[i];
    stamp[i] = -1;
  }
  for (size_t e = 0; e < c->nxedges; e++) /* off[p]: where p's next goes */
    adj[off[c->xedge[e][0]]++] = c->xedge[e][1];
  /* off[p] ends p's list now: merge each list's duplicates, in place. */
  size_t m = 0;
  for (int p = 0, j = 0; p < n; p++) {
    int end = off[p];
    off[p] = (int)m;
    for (; j < end; j++) {
      int s = adj[j];
      if (stamp[s] == p)
        continue;
      stamp[s] = p;
      adj[m++] = s;
      b->npred[s]++;
    }
    b->nsucc[p] = (int)m - off[p];
  }
  off[n] = (int)m;
  b->nedges = m;
  weft_free(stamp);
  return true;
}

/* The explicit edges joined to the var edges find_edges found (sorted by
 * successor), duplicates merged, and, if one of them goes backward in the
 * records' order (backward), the nodes ordered (order_nodes). 0,
 * WEFT_ENOMEM, WEFT_EINVAL (a cycle). */
static int add_edges(build *b, bool backward)
{
  const weft_recording *c = b->c;
  if (c->nxedges == 0)
    return 0;
  bool ok;
  b->nvedges = b->nedges;
  if (b->nedges == 0) { /* no var edges (nodes without vars): the explicit ones alone */
    ok = sort_edges(b, (const int(*)[2])c->xedge, c->nxedges);
  } else {
    size_t total = b->nedges + c->nxedges;
    int (*all)[2] = weft_malloc(sizeof *all * total);
    if (!all)
      return WEFT_ENOMEM;
    if (b->nedges) /* either array may be NULL when empty */
      memcpy(all, b->edge, sizeof *all * b->nedges);
    if (c->nxedges)
      memcpy(all + b->nedges, c->xedge, sizeof *all * c->nxedges);
    ok = sort_edges(b, (const int(*)[2])all, total);
    weft_free(all);
  }
  if (!ok)
    return WEFT_ENOMEM;
  return backward ? order_nodes(b) : 0;
}

/* The sink counter tree: leaves of WEFT_GRAPH_FANIN sinks, parents of as
 * many counters, up to one, whose count also holds a swept graph's
 * sweeper. Sets each sink's leaf in meta. */
static int make_counters(struct weft_graph *g, const build *b)
{
  int nsinks = 0;
  for (int i = 0; i < b->n && !b->in_order; i++) /* in order: the sweeper alone */
    if (b->nsucc[i] == 0 || b->devout[i]) /* device edges: as a sink (graph.h) */
      gnode_place(weft_graph_node(g, g->place[i]))->counter = nsinks++ / WEFT_GRAPH_FANIN;
  int leaves = nsinks ? (nsinks + WEFT_GRAPH_FANIN - 1) / WEFT_GRAPH_FANIN : 1;
  int total = 0;
  for (int level = leaves;;
       level = (level + WEFT_GRAPH_FANIN - 1) / WEFT_GRAPH_FANIN) {
    total += level;
    if (level == 1)
      break;
  }
  g->counters = weft_aligned_alloc(WEFT_CACHE_LINE, sizeof *g->counters * (size_t)total);
  if (!g->counters)
    return WEFT_ENOMEM;
  g->ncounters = total;
  int base = 0, below = nsinks;
  for (int level = leaves;;
       level = (level + WEFT_GRAPH_FANIN - 1) / WEFT_GRAPH_FANIN) {
    for (int j = 0; j < level; j++) {
      weft_gcounter *gc = &g->counters[base + j];
      int left = below - j * WEFT_GRAPH_FANIN;
      gc->init = left < WEFT_GRAPH_FANIN ? left : WEFT_GRAPH_FANIN;
      gc->parent = level == 1 ? -1 : base + level + j / WEFT_GRAPH_FANIN;
      atomic_init(&gc->left, gc->init);
    }
    if (level == 1) {
      weft_gcounter *top = &g->counters[base];
      /* the sweeper counts itself off there when done (a graph that may run
       * in lanes sets each launch's count: weft_lanes_choose) */
      top->init += g->sweep;
      atomic_init(&top->left, top->init);
      break;
    }
    base += level;
    below = level;
  }
  return 0;
}

/* Each node's successors, by capture index, in capture order (b->soff,
 * b->sadj: node i's are sadj[soff[i] .. soff[i + 1])), from the edges
 * (sorted by successor); fill: scratch of n ints. false without memory. */
static bool successors(build *b, int *fill)
{
  int n = b->n;
  int *off = b->soff = weft_malloc(sizeof(int) * ((size_t)n + 1));
  int *adj = b->sadj = weft_malloc(sizeof(int) * (b->nedges ? b->nedges : 1));
  if (!off || !adj)
    return false;
  off[0] = 0;
  for (int i = 0; i < n; i++) {
    off[i + 1] = off[i] + b->nsucc[i];
    fill[i] = off[i];
  }
  for (size_t e = 0; e < b->nedges; e++) /* in capture order */
    adj[fill[b->edge[e][0]]++] = b->edge[e][1];
  return true;
}

/* Where each node's block goes (place[i] for capture index i): in the
 * order one worker alone would run them (graph.h: the roots' heap, each
 * finish keeping its first ready CPU successor and queuing the rest, the
 * queue taken newest first). A replay then walks the blocks and the
 * pending array forward, mostly a line or a page after the last, instead
 * of in capture order (the successors of a capture are often far apart:
 * a chain per var, in a graph of interleaved chains). Unless the pool has
 * one worker and that order mostly jumps about the capture
 * (WEFT_GRAPH_SWEEP_IN_ORDER_PCT): then the graph is swept (b->sweep) and
 * its blocks stay in capture order. NULL without memory. */
static int *place_nodes(build *b)
{
  int n = b->n;
  int *place = weft_malloc(sizeof(int) * (size_t)n);
  int *left = weft_malloc(sizeof(int) * (size_t)n);
  int *roots = weft_malloc(sizeof(int) * (size_t)n);
  int *rootof = weft_malloc(sizeof(int) * (size_t)n);
  int *stack = weft_malloc(sizeof(int) * (size_t)n);
  if (!place || !left || !roots || !rootof || !stack || !successors(b, left)) {
    weft_free(place);
    place = NULL;
    goto out;
  }
  const int *off = b->soff, *adj = b->sadj;
  int nroots = 0;
  for (int i = 0; i < n; i++) {
    rootof[i] = -1;
    if (b->npred[i] == 0) {
      rootof[i] = nroots;
      roots[nroots++] = i;
    }
  }
  for (int i = 0; i < n; i++)
    left[i] = b->npred[i];
  int sp = 0, k = 0, prev = -2;
  size_t steps_in_order = 0; /* steps of that order to the next capture index */
  for (int x = nroots ? roots[0] : -1; x >= 0;) {
    place[x] = k++;
    steps_in_order += x == prev + 1;
    prev = x;
    for (int c = 2 * rootof[x] + 1; rootof[x] >= 0 && c <= 2 * rootof[x] + 2 && c < nroots; c++)
      stack[sp++] = roots[c];
    int next = -1;
    for (int j = off[x]; j < off[x + 1]; j++) {
      int s = adj[j];
      if (--left[s])
        continue;
      const weft_capture_rec *d = weft_rec(b->c, (size_t)s);
      if (next < 0 && d->prop == WEFT_PROP_NORMAL && d->ctx.type == WEFT_DEV_CPU)
        next = s;
      else
        stack[sp++] = s;
    }
    x = next >= 0 ? next : sp ? stack[--sp] : -1;
  }
  WEFT_ASSERT(k == n); /* a graph is acyclic: every node is reached from the roots */
  b->sweep = b->in_order ||
             (b->one_worker && steps_in_order * 100 < (size_t)(n - 1) * WEFT_GRAPH_SWEEP_IN_ORDER_PCT);
  if (b->sweep)
    for (int i = 0; i < n; i++)
      place[i] = i;
out: /* off and adj stay in b, for make_nodes */
  weft_free(left);
  weft_free(roots);
  weft_free(rootof);
  weft_free(stack);
  return place;
}

/* A graph with explicit edges: each node's successors along them, and the
 * failures it inherits along them (graph.h: xoff, xadj, inherit), by node
 * index (g->place is set). A duplicate edge is listed twice: it passes a
 * failure on twice, to no more effect. */
static int make_explicit(struct weft_graph *g, const build *b)
{
  const weft_recording *c = b->c;
  size_t nx = c->nxedges;
  if (nx == 0)
    return 0;
  int n = b->n;
  /* Zeroed, as atomic_init would leave them (a 0 is no failure), without a
   * pass of stores over memory the allocator may hand over zeroed. */
  g->inherit = weft_calloc((size_t)n, sizeof *g->inherit);
  if (!g->inherit)
    return WEFT_ENOMEM;
  if (!b->in_order && b->nvedges == 0)
    return 0; /* every edge explicit: the successor lists are those (graph.h) */
  g->xoff = weft_calloc((size_t)n + 1, sizeof *g->xoff);
  g->xadj = weft_malloc(sizeof *g->xadj * nx);
  if (!g->xoff || !g->xadj)
    return WEFT_ENOMEM;
#define AT(r) g->place[b->rank ? b->rank[r] : (r)] /* a record's node index */
  for (size_t e = 0; e < nx; e++)
    g->xoff[AT(c->xedge[e][0]) + 1]++;
  for (int i = 0; i < n; i++)
    g->xoff[i + 1] += g->xoff[i];
  for (size_t e = 0; e < nx; e++)
    g->xadj[g->xoff[AT(c->xedge[e][0])]++] = AT(c->xedge[e][1]);
#undef AT
  for (int i = n; i > 0; i--) /* xoff[i] ended i's list: back to its start */
    g->xoff[i] = g->xoff[i - 1];
  g->xoff[0] = 0;
  return 0;
}

/* How the graph runs, from its records and its engine's pool (b->plain,
 * workers, one_worker, in_order, lean). */
static void classify(build *b)
{
  const weft_recording *c = b->c;
  /* A graph of plain nodes (a CPU fn, no priority) gets blocks cut after
   * their queue line: they never touch the requests, the async, priority
   * or device fields (deps/opr.h), and a replay reads 3 lines a node, not 7.
   * One run in order (graph.h) is never queued either: 2 lines. */
  bool plain = true, normal = true;
  for (int i = 0; i < b->n && plain; i++) {
    const weft_capture_rec *d = weft_rec(c, (size_t)i);
    plain = d->fn && d->ctx.type == WEFT_DEV_CPU && d->prop != WEFT_PROP_PRIORITIZED;
    normal &= d->prop == WEFT_PROP_NORMAL;
  }
  b->plain = plain;
  weft_pool *pool = weft_engine_pool(c->eng);
  b->workers = pool ? weft_pool_num_threads(pool) : 0;
  b->one_worker = b->workers == 1;
  /* Plain CPU fns of WEFT_PROP_NORMAL run in order, in lanes on several
   * workers if that pays (lanes.h), else in one. But a launch's build after
   * a change may be for that launch alone (a graph made with weft_graph_add
   * and launched once): on several workers the lanes' plan, which pays
   * over launches, would cost it more than every other step of its build
   * together (a random DAG of 65,536 nodes on 2 workers: about 100 ns a
   * node); it runs released by its edges instead, and a next launch builds
   * it again in order (graph.h, lean). Nodes timed long (graph.h,
   * released) run released by the edges on several workers, for good. */
  bool ordered = b->workers >= 1 && plain && normal && !(c->released && b->workers > 1);
  b->lean = ordered && b->workers > 1 && c->at_launch;
  b->in_order = ordered && !b->lean;
}

/* The node blocks, their places and the graph's arrays, from b. */
static int make_nodes(struct weft_graph *g, build *b)
{
  const weft_recording *c = b->c;
  int n = b->n;
  /* The gate's vars, sorted by slot index as every operator's are. */
  gv_key *order = weft_malloc(sizeof *order * (size_t)b->nv);
  g->vars = weft_malloc(sizeof *g->vars * (size_t)b->nv);
  g->uses = weft_malloc(sizeof *g->uses * (size_t)b->nv);
  bool plain = b->plain;
  int workers = b->workers;
  g->lean = b->lean;
  g->in_order = b->in_order;
  /* Out of memory for the plan (it leaves no lanes then): one lane, which
   * needs nothing more. */
  if (b->in_order && workers > 1)
    (void)weft_lanes_plan_capture(g, n, (const int(*)[2])b->edge, b->nedges, workers);
  g->stride = b->in_order ? WEFT_OPR_IN_ORDER_NODE_BYTES
              : plain     ? WEFT_OPR_PLAIN_NODE_BYTES
                          : (sizeof(weft_opr) + WEFT_CACHE_LINE - 1) / WEFT_CACHE_LINE * WEFT_CACHE_LINE;
  g->nodes = weft_aligned_alloc(WEFT_CACHE_LINE, g->stride * (size_t)n);
  /* A graph run in order is swept in capture order with no edge (graph.h):
   * its blocks stay in that order, and it has no successor lists, counts,
   * roots or device runs (all CPU fns) to make. */
  bool ord = b->in_order;
  if (ord) {
    g->place = weft_malloc(sizeof(int) * (size_t)n);
    for (int i = 0; g->place && i < n; i++)
      g->place[i] = i;
    b->sweep = true;
  } else if (g->lean) {
    /* Built for one launch (graph.h, lean): its blocks in capture order,
     * without the walk that lays them out in run order (a replay reads
     * them faster so; a first launch reads them cold either way). */
    g->pending = weft_aligned_alloc(WEFT_CACHE_LINE, sizeof *g->pending * (size_t)n);
    g->place = weft_malloc(sizeof(int) * (size_t)n);
    int *fill = weft_malloc(sizeof(int) * (size_t)n);
    if (g->place && fill && (b->soff || successors(b, fill))) /* pred_lists made them */
      for (int i = 0; i < n; i++)
        g->place[i] = i;
    else {
      weft_free(g->place);
      g->place = NULL;
    }
    weft_free(fill);
    b->sweep = false; /* several workers */
    g->roots = weft_malloc(sizeof *g->roots * (size_t)n);
  } else {
    g->pending = weft_aligned_alloc(WEFT_CACHE_LINE, sizeof *g->pending * (size_t)n);
    g->place = place_nodes(b);
    if (!b->sweep)
      g->roots = weft_malloc(sizeof *g->roots * (size_t)n);
  }
  g->sweep = b->sweep;
  /* [n] by capture index: its run of GPU nodes replayed as one, or -1
   * (devrun.h) */
  int *run_at = ord ? NULL : weft_malloc(sizeof(int) * (size_t)n);
  if ((!ord && !run_at) || !g->place || !g->nodes ||
      (!ord && weft_devruns_find(g, c, (const int(*)[2])b->edge, b->nedges, b->npred, run_at))) {
    weft_free(order);
    weft_free(run_at);
    return WEFT_ENOMEM;
  }
  size_t bytes = sizeof(weft_var_impl *) * b->u + sizeof(weft_var_use *) * (size_t)n +
                 sizeof(weft_var_use) * b->u + (ord ? 0 : sizeof(int32_t) * b->nedges);
  g->store = weft_malloc(bytes ? bytes : 1);
  if (!order || !g->vars || !g->uses || !g->nodes || (!ord && !g->pending) ||
      (!b->sweep && !g->roots) || !g->place || !g->store) {
    weft_free(order);
    weft_free(run_at);
    return WEFT_ENOMEM;
  }
  for (int v = 0; v < b->nv; v++)
    order[v] = (gv_key){(uint32_t)b->gv_handle[v], v};
  qsort(order, (size_t)b->nv, sizeof *order, cmp_gv);
  for (int k = 0; k < b->nv; k++) {
    int v = order[k].gv;
    g->vars[k] = b->gv_var[v];
    g->uses[k] = (weft_var_use){b->gv_handle[v], g->vars[k], b->gv_write[v]};
    if (k > 0 && (uint32_t)g->uses[k].handle == (uint32_t)g->uses[k - 1].handle)
      g->stale = true; /* one slot, two generations: one of them is dead */
  }
  g->nvars = b->nv;
  weft_free(order);

  /* One block for the nodes' arrays: var lists (a node's block has no
   * inline array: its place in the graph is there), uses, successor
   * lists. */
  weft_var_impl **vstore = g->store; /* the 8-byte-aligned arrays first */
  g->node_uses = (weft_var_use **)(vstore + b->u);
  weft_var_use *ustore = (weft_var_use *)(g->node_uses + n);
  g->succs = (int32_t *)(ustore + b->u);
  if (b->u) /* a graph of nodes without vars has no uses (c->uses may be NULL) */
    memcpy(ustore, c->uses, sizeof *ustore * b->u);
  /* The blocks are filled in their order (each written once, a line after
   * the last), not in capture order (which scatters the writes of a graph
   * laid out in run order over all of them): who[p] is the capture index
   * of block p, first[p] where its successor list starts (the lists in the
   * blocks' order too: a finish reads its own). entry[i]: what a successor
   * list says of capture index i (its place, WEFT_GRAPH_SOLE,
   * WEFT_GRAPH_KEEPABLE), made in one pass over the records, so that a list
   * reads one word a successor. dev[j]: whether successor sadj[j] waits on
   * the device (graph.h, WEFT_GRAPH_DEVICE), decided in capture order (a
   * successor takes the first WEFT_OPR_DEV_WAITS); NULL without GPU nodes. */
  int *who = ord ? NULL : weft_malloc(sizeof(int) * (size_t)n);
  int *first = ord ? NULL : weft_malloc(sizeof(int) * (size_t)n);
  int32_t *entry = ord ? NULL : weft_malloc(sizeof(int32_t) * (size_t)n);
  bool gpu = false;
  for (int i = 0; !ord && i < n && !gpu; i++)
    gpu = weft_rec(c, (size_t)i)->ctx.type == WEFT_DEV_GPU;
  bool *dev = gpu ? weft_calloc(b->nedges ? b->nedges : 1, sizeof *dev) : NULL;
  g->dev_early = gpu ? weft_calloc((size_t)n, sizeof *g->dev_early) : NULL;
  if (!ord && (!who || !first || !entry || (gpu && (!dev || !g->dev_early)))) {
    weft_free(g->dev_early);
    g->dev_early = NULL;
    weft_free(who);
    weft_free(first);
    weft_free(entry);
    weft_free(dev);
    weft_free(run_at);
    return WEFT_ENOMEM;
  }
  for (int i = 0; !ord && i < n; i++) {
    const weft_capture_rec *r = weft_rec(c, (size_t)i);
    bool keepable = r->fn && r->prop == WEFT_PROP_NORMAL && r->ctx.type == WEFT_DEV_CPU;
    who[g->place[i]] = i;
    entry[i] = g->place[i] | (b->npred[i] == 1 && !b->sweep ? WEFT_GRAPH_SOLE : 0) |
               (keepable ? WEFT_GRAPH_KEEPABLE : 0);
    if (!gpu || r->ctx.type != WEFT_DEV_GPU)
      continue;
    for (int j = b->soff[i]; j < b->soff[i + 1]; j++) {
      int to = b->sadj[j];
      const weft_capture_rec *td = weft_rec(c, (size_t)to);
      /* Both on one device: the successor waits on the device (graph.h),
       * in as many device waits as an operator holds. */
      if (td->ctx.type == WEFT_DEV_GPU && r->ctx.id == td->ctx.id &&
          b->ndevin[to] < WEFT_OPR_DEV_WAITS) {
        dev[j] = true;
        b->ndevin[to]++;
        b->devout[i] = true;
      }
    }
  }
  size_t soff = 0;
  for (int p = 0; !ord && p < n; p++) {
    first[p] = (int)soff; /* where block p's list starts */
    soff += (size_t)b->nsucc[who[p]];
  }
  weft_op_desc d = {0}; /* each node's record, as a descriptor */
  for (int p = 0; p < n; p++) {
    int i = ord ? p : who[p], at = p;
    const weft_capture_rec *r = weft_rec(c, (size_t)i);
    weft_opr *op = weft_graph_node(g, at);
    memset(op, 0, g->stride);
    weft_var_impl **var = vstore + r->use0;
    for (int k = 0; k < r->nuses; k++)
      var[k] = c->uses[r->use0 + (size_t)k].var;
    d.fn = r->fn;
    d.async_fn = r->async_fn;
    d.arg = r->arg;
    d.name = r->name;
    d.ctx = r->ctx;
    d.prop = (weft_prop)r->prop;
    d.flags = r->flags;
    d.priority = r->priority;
    /* Its requests are its launch's gate's, its count is pending[i]; a
     * plain node's block (its stride) ends before the async, priority and
     * device fields. */
    weft_opr_init_held(op, g->stride, c->eng, &d, var, r->nuses);
    weft_gnode *m = gnode_place(op);
    m->graph = g;
    m->succ0 = ord ? 0 : (uint32_t)first[at];
    m->nsucc = ord ? 0 : b->nsucc[i]; /* in order: nothing to release */
    for (int j = ord ? 0 : b->soff[i], k = 0; j < (ord ? 0 : b->soff[i + 1]); j++, k++)
      g->succs[m->succ0 + (uint32_t)k] =
          entry[b->sadj[j]] | (dev && dev[j] ? WEFT_GRAPH_DEVICE : 0);
    /* in order: the sweep's alone; a run's follower: none of the sweep's
     * (devrun.h) */
    m->npred = ord ? 1 : b->npred[i] + (b->sweep && !weft_devrun_follower(run_at, i));
    m->index = at;
    m->root = -1;
    m->counter = -1;
    g->node_uses[at] = ustore + r->use0;
    if (!ord)
      atomic_init(&g->pending[at], m->npred);
  }
  for (int i = 0; i < n && !b->sweep; i++) /* the roots in capture order (their heap) */
    if (b->npred[i] == 0) {
      weft_opr *op = weft_graph_node(g, g->place[i]);
      gnode_place(op)->root = g->nroots;
      g->roots[g->nroots++] = op;
    }
  weft_free(who);
  weft_free(first);
  weft_free(entry);
  weft_free(dev);
  weft_free(run_at);
  g->nnodes = n;
  int rc = make_explicit(g, b);
  return rc ? rc : make_counters(g, b);
}

int weft_graph_build(struct weft_graph *g, const weft_recording *c, size_t *cycle)
{
  if (c->nrecs == 0)
    return 0; /* empty: its launch does nothing */
  int rc = WEFT_ENOMEM;
  build b = {0};
  b.rc = *c;
  b.rc.order = NULL;
  b.c = &b.rc;
  b.cycle = -1;
  b.u = c->nuses;
  if (c->nrecs >= WEFT_GRAPH_DEVICE || c->nuses > INT_MAX / 4 || c->nxedges > INT_MAX / 4)
    goto out; /* beyond what the counters hold: as out of memory */
  b.n = (int)c->nrecs;
  size_t nu = b.u ? b.u : 1;
  b.use_gv = weft_malloc(sizeof *b.use_gv * nu);
  b.gv_handle = weft_malloc(sizeof *b.gv_handle * nu);
  b.gv_write = weft_malloc(sizeof *b.gv_write * nu);
  b.gv_var = weft_malloc(sizeof *b.gv_var * nu);
  b.npred = weft_calloc((size_t)b.n, sizeof *b.npred);
  b.nsucc = weft_calloc((size_t)b.n, sizeof *b.nsucc);
  b.ndevin = weft_calloc((size_t)b.n, sizeof *b.ndevin);
  b.devout = weft_calloc((size_t)b.n, sizeof *b.devout);
  if (!b.use_gv || !b.gv_handle || !b.gv_write || !b.gv_var || !b.npred || !b.nsucc ||
      !b.ndevin || !b.devout)
    goto out;
  bool backward = false; /* an explicit edge backward in the records' order */
  for (size_t e = 0; e < c->nxedges; e++)
    backward |= c->xedge[e][0] > c->xedge[e][1];
  classify(&b);
  /* In order on one worker, with no edge backward: the records' order keeps
   * every edge (graph.h), and nothing reads the edges (no lanes, successor
   * lists or device runs): they are not even found. */
  bool edgeless = b.in_order && b.one_worker && !backward;
  if ((rc = map_vars(&b)) || (!edgeless && (rc = find_edges(&b))))
    goto out;
  /* Lean, with no var edge and no explicit one backward: the successor
   * lists straight from the explicit edges. */
  if (!edgeless && b.lean && !backward && b.nedges == 0 && c->nxedges)
    rc = pred_lists(&b) ? 0 : WEFT_ENOMEM;
  else if (!edgeless)
    rc = add_edges(&b, backward);
  if (rc || (rc = make_nodes(g, &b)))
    goto out;
  if (g->in_order && !b.one_worker) {
    /* Kept to plan again with measured costs (lanes.h): lanes may pay
     * where equal costs found none (a few long operators beside a chain). */
    g->plan_edge = b.edge; /* never NULL: sized for one edge at least */
    g->plan_nedges = b.nedges;
    b.edge = NULL;
    g->node_ns = weft_calloc((size_t)b.n, sizeof *g->node_ns); /* NULL: never measured */
  }
  g->order = b.order; /* for the messages: the record of each build index */
  b.order = NULL;
out:
  if (rc == WEFT_EINVAL && cycle)
    *cycle = (size_t)b.cycle;
  weft_free(b.use_gv);
  weft_free(b.gv_handle);
  weft_free(b.gv_write);
  weft_free(b.gv_var);
  weft_free(b.npred);
  weft_free(b.nsucc);
  weft_free(b.ndevin);
  weft_free(b.devout);
  weft_free(b.soff);
  weft_free(b.sadj);
  weft_free(b.edge);
  weft_free(b.order);
  weft_free(b.rank);
  weft_free(b.perm);
  if (rc) {
    weft_devruns_free(g); /* nothing recorded yet */
    weft_graph_release_built(g);
  }
  return rc;
}
