/*
 * Resolving a graph's definition into a graph (build.h): the dependencies
 * between the records (recorded pushes, or nodes added) are those the var
 * queues would have enforced, found once, in the records' order: a write
 * follows the reads of its var since the last write (or, if none, that
 * write); a read follows the last write. The explicit edges
 * (weft_graph_edge) join them, and duplicate edges are merged. The
 * records' order is an order the graph may run in unless an explicit edge
 * goes backward in it; then the nodes are built in a topological order
 * (order_nodes), and everything after reads the records through it
 * (weft_rec): the node blocks, the roots (no predecessor) and the sink
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
  return (weft_gnode *)(void *)op->ext;
}

/* The scratch space of one build, all freed at its end. */
typedef struct build {
  /* The definition, read through order once the nodes are ordered
   * (order_nodes): what every step after it reads. */
  const weft_recording *c;
  weft_recording rc; /* c's storage */
  int32_t *order;    /* [n] the record at each build index, or NULL: theirs */
  int *rank;         /* [n] the build index of each record, with order */
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
static bool sort_edges(build *b, int (*edge)[2], size_t nedges)
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

/* A binary min-heap of record indices (order_nodes). */
static void heap_push(int *h, int *len, int v)
{
  int i = (*len)++;
  for (; i > 0 && h[(i - 1) / 2] > v; i = (i - 1) / 2)
    h[i] = h[(i - 1) / 2];
  h[i] = v;
}

static int heap_pop(int *h, int *len)
{
  int top = h[0], v = h[--*len];
  int i = 0;
  for (;;) {
    int c = 2 * i + 1;
    if (c >= *len)
      break;
    if (c + 1 < *len && h[c + 1] < h[c])
      c++;
    if (h[c] >= v)
      break;
    h[i] = h[c];
    i = c;
  }
  if (*len)
    h[i] = v;
  return top;
}

/* The order the nodes are built in when an explicit edge goes backward
 * in the records' order: the topological order that takes the smallest
 * ready record each time (the records' own order wherever the edges allow
 * it). A cursor walks the records in order and places each that is ready
 * as it passes; a record that becomes ready behind it waits in a heap,
 * which goes first: the cost is the edges' and the nodes' plus a heap
 * step for each record placed out of order. Then b's edges and counts are
 * put in build indices (b->order, b->rc.order). WEFT_EINVAL if some nodes
 * cannot be placed: a cycle (b->cycle names a record on it). */
static int order_nodes(build *b)
{
  int n = b->n;
  int *off = weft_calloc((size_t)n + 1, sizeof *off);
  int *adj = weft_malloc(sizeof *adj * (b->nedges ? b->nedges : 1));
  int *left = weft_malloc(sizeof *left * (size_t)n);
  int *heap = weft_malloc(sizeof *heap * (size_t)n);
  int *rank = b->rank = weft_malloc(sizeof *rank * (size_t)n);
  b->order = weft_malloc(sizeof *b->order * (size_t)n);
  int rc = WEFT_ENOMEM;
  if (!off || !adj || !left || !heap || !rank || !b->order)
    goto out;
  /* Each record's successors (the edges are sorted by successor: each
   * list comes out in the records' order). */
  for (size_t e = 0; e < b->nedges; e++)
    off[b->edge[e][0] + 1]++;
  for (int i = 0; i < n; i++) {
    off[i + 1] += off[i];
    left[i] = b->npred[i];
  }
  for (size_t e = 0; e < b->nedges; e++)
    adj[off[b->edge[e][0]]++] = b->edge[e][1];
  for (int i = n; i > 0; i--) /* off[i] ended i's list: back to its start */
    off[i] = off[i - 1];
  off[0] = 0;
  int k = 0, cur = 0, nheap = 0;
  for (;;) {
    int x;
    if (nheap) {
      x = heap_pop(heap, &nheap); /* behind the cursor: smaller than any ahead */
    } else {
      while (cur < n && left[cur] > 0)
        cur++;
      if (cur == n)
        break;
      x = cur++;
    }
    b->order[k] = x;
    rank[x] = k++;
    for (int j = off[x]; j < off[x + 1]; j++) {
      int s = adj[j];
      if (--left[s] == 0 && s < cur)
        heap_push(heap, &nheap, s); /* the cursor passed it: the heap's */
    }
  }
  if (k < n) {
    b->cycle = find_cycle(b, left);
    rc = WEFT_EINVAL;
    goto out;
  }
  /* The edges and the counts by build index. */
  for (size_t e = 0; e < b->nedges; e++) {
    b->edge[e][0] = rank[b->edge[e][0]];
    b->edge[e][1] = rank[b->edge[e][1]];
  }
  /* Sorted by successor again, and counted by build index. */
  rc = sort_edges(b, b->edge, b->nedges) ? 0 : WEFT_ENOMEM;
  b->rc.order = b->order;
out:
  weft_free(off);
  weft_free(adj);
  weft_free(left);
  weft_free(heap);
  return rc; /* rank stays, for make_explicit */
}

/* The explicit edges joined to the var edges find_edges found (sorted by
 * successor), duplicates merged, and, if one of them goes backward in the
 * records' order, the nodes ordered (order_nodes). 0, WEFT_ENOMEM,
 * WEFT_EINVAL (a cycle). */
static int add_edges(build *b)
{
  const weft_recording *c = b->c;
  if (c->nxedges == 0)
    return 0;
  size_t total = b->nedges + c->nxedges;
  int (*all)[2] = weft_malloc(sizeof *all * total);
  if (!all)
    return WEFT_ENOMEM;
  memcpy(all, b->edge, sizeof *all * b->nedges);
  bool backward = false;
  for (size_t e = 0; e < c->nxedges; e++) {
    all[b->nedges + e][0] = c->xedge[e][0];
    all[b->nedges + e][1] = c->xedge[e][1];
    backward |= c->xedge[e][0] > c->xedge[e][1];
  }
  bool ok = sort_edges(b, all, total);
  weft_free(all);
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
  int *off = b->soff = weft_malloc(sizeof(int) * ((size_t)n + 1));
  int *adj = b->sadj = weft_malloc(sizeof(int) * (b->nedges ? b->nedges : 1));
  int *left = weft_malloc(sizeof(int) * (size_t)n);
  int *roots = weft_malloc(sizeof(int) * (size_t)n);
  int *rootof = weft_malloc(sizeof(int) * (size_t)n);
  int *stack = weft_malloc(sizeof(int) * (size_t)n);
  int *fill = left; /* the successor lists' fill, before the counts */
  if (!place || !off || !adj || !left || !roots || !rootof || !stack) {
    weft_free(place);
    place = NULL;
    goto out;
  }
  int nroots = 0;
  off[0] = 0;
  for (int i = 0; i < n; i++) {
    off[i + 1] = off[i] + b->nsucc[i];
    fill[i] = off[i];
    rootof[i] = -1;
    if (b->npred[i] == 0) {
      rootof[i] = nroots;
      roots[nroots++] = i;
    }
  }
  for (size_t e = 0; e < b->nedges; e++) /* in capture order */
    adj[fill[b->edge[e][0]]++] = b->edge[e][1];
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
  g->inherit = weft_aligned_alloc(WEFT_CACHE_LINE, sizeof *g->inherit * (size_t)n);
  g->xoff = weft_calloc((size_t)n + 1, sizeof *g->xoff);
  g->xadj = weft_malloc(sizeof *g->xadj * nx);
  if (!g->inherit || !g->xoff || !g->xadj)
    return WEFT_ENOMEM;
  for (int i = 0; i < n; i++)
    atomic_init(&g->inherit[i], 0);
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

/* The node blocks, their places and the graph's arrays, from b. */
static int make_nodes(struct weft_graph *g, build *b)
{
  const weft_recording *c = b->c;
  int n = b->n;
  /* The gate's vars, sorted by slot index as every operator's are. */
  gv_key *order = weft_malloc(sizeof *order * (size_t)b->nv);
  g->vars = weft_malloc(sizeof *g->vars * (size_t)b->nv);
  g->uses = weft_malloc(sizeof *g->uses * (size_t)b->nv);
  /* A graph of plain nodes (a CPU fn, no priority) gets blocks cut after
   * their queue line: they never touch the requests, the async, priority
   * or device fields (deps/opr.h), and a replay reads 3 lines a node, not 7.
   * One run in order (graph.h) is never queued either: 2 lines. */
  bool plain = true, normal = true;
  for (int i = 0; i < n && plain; i++) {
    const weft_capture_rec *d = weft_rec(c, (size_t)i);
    plain = d->fn && d->ctx.type == WEFT_DEV_CPU && d->prop != WEFT_PROP_PRIORITIZED;
    normal &= d->prop == WEFT_PROP_NORMAL;
  }
  int workers = c->eng->pool ? weft_pool_num_threads(c->eng->pool) : 0;
  b->one_worker = workers == 1;
  /* Plain CPU fns of WEFT_PROP_NORMAL run in order, in lanes on several
   * workers if that pays (lanes.h), else in one. */
  b->in_order = g->in_order = workers >= 1 && plain && normal;
  /* Out of memory for the plan (it leaves no lanes then): one lane, which
   * needs nothing more. */
  if (b->in_order && workers > 1)
    (void)weft_lanes_plan(g, n, (const int(*)[2])b->edge, b->nedges, workers, NULL, NULL);
  g->stride = b->in_order ? WEFT_OPR_IN_ORDER_NODE_BYTES
              : plain     ? WEFT_OPR_PLAIN_NODE_BYTES
                          : (sizeof(weft_opr) + WEFT_CACHE_LINE - 1) / WEFT_CACHE_LINE * WEFT_CACHE_LINE;
  g->nodes = weft_aligned_alloc(WEFT_CACHE_LINE, g->stride * (size_t)n);
  g->pending = weft_aligned_alloc(WEFT_CACHE_LINE, sizeof *g->pending * (size_t)n);
  g->roots = weft_malloc(sizeof *g->roots * (size_t)n);
  g->place = place_nodes(b);
  g->sweep = b->sweep;
  /* [n] by capture index: its run of GPU nodes replayed as one, or -1
   * (devrun.h) */
  int *run_at = weft_malloc(sizeof(int) * (size_t)n);
  if (!run_at || !g->place || !g->nodes ||
      weft_devruns_find(g, c, (const int(*)[2])b->edge, b->nedges, b->npred, run_at)) {
    weft_free(order);
    weft_free(run_at);
    return WEFT_ENOMEM;
  }
  size_t bytes = sizeof(weft_var_impl *) * b->u + sizeof(weft_var_use *) * (size_t)n +
                 sizeof(weft_var_use) * b->u + sizeof(int32_t) * b->nedges;
  g->store = weft_malloc(bytes ? bytes : 1);
  if (!order || !g->vars || !g->uses || !g->nodes || !g->pending ||
      !g->roots || !g->place || !g->store) {
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
  memcpy(ustore, c->uses, sizeof *ustore * b->u);
  /* The successor lists in the blocks' order too (a finish reads its own). */
  int *first = weft_malloc(sizeof(int) * (size_t)n);
  if (!first) {
    weft_free(run_at);
    return WEFT_ENOMEM;
  }
  for (int i = 0; i < n; i++)
    first[g->place[i]] = i;
  size_t soff = 0;
  for (int p = 0; p < n; p++) {
    int i = first[p];
    first[p] = (int)soff; /* now by place: where its list starts */
    soff += (size_t)b->nsucc[i];
  }
  for (int i = 0; i < n; i++) {
    const weft_capture_rec *r = weft_rec(c, (size_t)i);
    int at = g->place[i];
    weft_opr *op = weft_graph_node(g, at);
    memset(op, 0, g->stride);
    op->eng = c->eng;
    op->fn = r->fn;
    op->arg = r->arg;
    op->name = r->name;
    op->ctx = r->ctx;
    op->prop = (uint8_t)r->prop;
    op->flags = r->flags;
    if (!plain) { /* the fields past a plain node's block */
      op->async_fn = r->async_fn;
      op->priority = r->priority;
      atomic_init(&op->async_refs, 0);
      atomic_init(&op->async_done, 0);
      atomic_init(&op->ndevwaits, 0);
      atomic_init(&op->dev_refs, 0);
    }
    op->internal = WEFT_OPR_GNODE;
    op->var = vstore + r->use0;
    for (int k = 0; k < r->nuses; k++)
      op->var[k] = c->uses[r->use0 + (size_t)k].var;
    op->req = NULL; /* its requests are its launch's gate's */
    op->nvars = r->nuses;
    atomic_init(&op->wait, 0); /* its count is pending[i] */
    weft_gnode *m = gnode_place(op);
    m->graph = g;
    m->succ0 = (uint32_t)first[at];
    m->nsucc = b->in_order ? 0 : b->nsucc[i]; /* in order: nothing to release */
    for (int j = b->soff[i]; j < b->soff[i + 1]; j++) {
      int to = b->sadj[j];
      const weft_capture_rec *td = weft_rec(c, (size_t)to);
      bool keepable = td->fn && td->prop == WEFT_PROP_NORMAL && td->ctx.type == WEFT_DEV_CPU;
      /* Both on one device: the successor waits on the device (graph.h),
       * in as many device waits as an operator holds. */
      bool dev = r->ctx.type == WEFT_DEV_GPU && td->ctx.type == WEFT_DEV_GPU &&
                 r->ctx.id == td->ctx.id && b->ndevin[to] < WEFT_OPR_DEV_WAITS;
      if (dev) {
        b->ndevin[to]++;
        b->devout[i] = true;
      }
      g->succs[m->succ0 + (uint32_t)(j - b->soff[i])] =
          g->place[to] | (b->npred[to] == 1 && !b->sweep ? WEFT_GRAPH_SOLE : 0) |
          (keepable ? WEFT_GRAPH_KEEPABLE : 0) | (dev ? WEFT_GRAPH_DEVICE : 0);
    }
    /* in order: the sweep's alone; a run's follower: none of the sweep's
     * (devrun.h) */
    m->npred = b->in_order ? 1 : b->npred[i] + (b->sweep && !weft_devrun_follower(run_at, i));
    m->index = at;
    m->root = -1;
    m->counter = -1;
    g->node_uses[at] = ustore + r->use0;
    atomic_init(&g->pending[at], m->npred);
    if (b->npred[i] == 0 && !b->sweep) {
      m->root = g->nroots;
      g->roots[g->nroots++] = op;
    }
  }
  weft_free(first);
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
  if ((rc = map_vars(&b)) || (rc = find_edges(&b)) || (rc = add_edges(&b)) ||
      (rc = make_nodes(g, &b)))
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
  if (rc) {
    weft_devruns_free(g); /* nothing recorded yet */
    weft_graph_release_built(g);
  }
  return rc;
}
