/* SPDX-License-Identifier: MIT */
/*
 * Graphs with explicit edges (weft_graph_create, weft_graph_add,
 * weft_graph_edge): every node runs once per launch and after everything
 * it follows (its explicit edges and its vars' dependencies, checked
 * against a model of the rules: net_expect), whatever order the nodes and
 * the edges were added in; cycles are refused at the launch with nothing
 * run; failures skip along explicit edges as along vars; the naive engine,
 * which runs the nodes one at a time in the order the launch resolved,
 * agrees; the bad inputs, a launch running (adds refused, launches queued), adds after
 * launches and to captured graphs, stored arguments and GPU nodes on the
 * host backend.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "../gpu/host_engine.h" /* setup(): the host backend's two devices */
#include "deps/engine.h"        /* white-box: the engine's count of failures */

/* The CPU suites: no GPU layer. */
static void cpu_setup(void)
{
  te_setup();
}

/* ------------------------------------------------------------ the model */

#define NMAX 600 /* nodes of one net, at most */
#define NV 6     /* vars of one net */
#define FAIL (-7) /* what a failing node returns */

/* A graph to add: per node its vars and how it behaves, and the explicit
 * edges in the order to add them. */
typedef struct net {
  int n;
  int nuse[NMAX];
  int use_var[NMAX][3];
  bool use_write[NMAX][3];
  int status[NMAX];     /* what the node returns (0 or FAIL) */
  unsigned flags[NMAX]; /* WEFT_OP_* */
  int kind[NMAX];       /* K_* below */
  int (*edge)[2];
  int nedges, capedges;
} net;

enum { K_PLAIN, K_PRIORITIZED, K_INLINE, K_ASYNC, K_KINDS };

static net *net_new(int n)
{
  net *m = calloc(1, sizeof *m);
  cr_assert_not_null(m);
  m->n = n;
  return m;
}

static void net_free(net *m)
{
  free(m->edge);
  free(m);
}

static void net_edge(net *m, int a, int b)
{
  if (m->nedges == m->capedges) {
    m->capedges = m->capedges ? 2 * m->capedges : 64;
    m->edge = realloc(m->edge, sizeof *m->edge * (size_t)m->capedges);
    cr_assert_not_null(m->edge);
  }
  m->edge[m->nedges][0] = a;
  m->edge[m->nedges][1] = b;
  m->nedges++;
}

static void net_use(net *m, int i, int v, bool write)
{
  cr_assert(m->nuse[i] < 3);
  m->use_var[i][m->nuse[i]] = v;
  m->use_write[i][m->nuse[i]] = write;
  m->nuse[i]++;
}

/* Whether nodes i < j of m conflict on a var (one of them writes it): j
 * follows i, as a push of j after i would. */
static bool var_dep(const net *m, int i, int j)
{
  for (int a = 0; a < m->nuse[i]; a++)
    for (int b = 0; b < m->nuse[j]; b++)
      if (m->use_var[i][a] == m->use_var[j][b] && (m->use_write[i][a] || m->use_write[j][b]))
        return true;
  return false;
}

/* What a launch of m must do: whether it has a cycle (then nothing runs),
 * else which nodes run (the others are skipped after a failure they
 * follow), and whether weft_wait_all then reports a failure. The rules:
 * a node is skipped (unless WEFT_OP_NOSKIP) when a predecessor along an
 * explicit edge ended with a failure (its own or a skip's), or when a var
 * it uses was last written (before it, in the order of adding) by a node
 * that ended so; it ends with that status. */
typedef struct expect {
  bool cycle;
  bool ran[NMAX];
  bool failure;
} expect;

static void net_expect(const net *m, expect *x)
{
  int n = m->n;
  memset(x, 0, sizeof *x);
  /* A topological order (Kahn) over both kinds of edge. */
  static int npred[NMAX], order[NMAX];
  static bool dep[NMAX][NMAX]; /* dep[i][j]: i before j */
  memset(dep, 0, sizeof dep);
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      dep[i][j] = var_dep(m, i, j);
  for (int e = 0; e < m->nedges; e++)
    dep[m->edge[e][0]][m->edge[e][1]] = true;
  for (int j = 0; j < n; j++) {
    npred[j] = 0;
    for (int i = 0; i < n; i++)
      npred[j] += dep[i][j];
  }
  int k = 0;
  static bool placed[NMAX];
  memset(placed, 0, sizeof placed);
  for (bool progress = true; progress;) {
    progress = false;
    for (int j = 0; j < n; j++)
      if (!placed[j] && npred[j] == 0) {
        placed[j] = true;
        order[k++] = j;
        for (int s = 0; s < n; s++)
          npred[s] -= dep[j][s];
        progress = true;
      }
  }
  if (k < n) {
    x->cycle = true;
    return;
  }
  static int end[NMAX];
  for (int t = 0; t < n; t++) {
    int j = order[t];
    int inherited = 0;
    for (int e = 0; e < m->nedges && !inherited; e++)
      if (m->edge[e][1] == j)
        inherited = end[m->edge[e][0]];
    for (int a = 0; a < m->nuse[j] && !inherited; a++) {
      int last = -1; /* the last writer of the var before j */
      for (int i = 0; i < j; i++)
        for (int b = 0; b < m->nuse[i]; b++)
          if (m->use_var[i][b] == m->use_var[j][a] && m->use_write[i][b])
            last = i;
      if (last >= 0)
        inherited = end[last];
    }
    if (inherited && !(m->flags[j] & WEFT_OP_NOSKIP)) {
      end[j] = inherited;
    } else {
      x->ran[j] = true;
      end[j] = m->status[j];
    }
    x->failure |= end[j] != 0;
  }
}

/* ----------------------------------------------------- a launch's record */

/* What the nodes of a launch did: each one's runs, and when it started and
 * finished on one clock (read after weft_wait_all). */
typedef struct rec {
  atomic_long clock;
  atomic_int runs[NMAX];
  long start[NMAX], finish[NMAX];
  long seq[NMAX]; /* the nodes in the order they started */
  atomic_long nseq;
} rec;

typedef struct node_arg {
  rec *r;
  const net *m;
  int i;
} node_arg;

static void node_begin(const node_arg *a)
{
  rec *r = a->r;
  r->start[a->i] = atomic_fetch_add(&r->clock, 1);
  r->seq[atomic_fetch_add(&r->nseq, 1)] = a->i;
  atomic_fetch_add(&r->runs[a->i], 1);
}

static int node_end(const node_arg *a)
{
  for (volatile int spin = 0; spin < (a->i * 7919) % 300; spin++)
    ; /* uneven node lengths: overlaps differ from node to node */
  a->r->finish[a->i] = atomic_fetch_add(&a->r->clock, 1);
  return a->m->status[a->i];
}

static int node_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  node_begin(arg);
  return node_end(arg);
}

/* An async node: signals before its async_fn returns. */
static void node_async_fn(const weft_run_ctx *rc, void *arg, weft_done *done)
{
  (void)rc;
  node_begin(arg);
  weft_done_signal(done, node_end(arg));
}

static void rec_reset(rec *r)
{
  atomic_store(&r->clock, 0);
  atomic_store(&r->nseq, 0);
  for (int i = 0; i < NMAX; i++)
    atomic_store(&r->runs[i], 0);
}

/* The descriptor of node i of m (its vars: the caller's arrays). */
static weft_op_desc node_desc(const net *m, int i, node_arg *args, weft_var **vars,
                              weft_var **reads, weft_var **writes)
{
  weft_op_desc d = te_desc(node_fn, &args[i]);
  if (m->kind[i] == K_ASYNC) {
    d.fn = NULL;
    d.async_fn = node_async_fn;
  }
  d.prop = m->kind[i] == K_PRIORITIZED ? WEFT_PROP_PRIORITIZED
           : m->kind[i] == K_INLINE    ? WEFT_PROP_ASYNC
                                       : WEFT_PROP_NORMAL;
  d.priority = i % 3;
  d.flags = m->flags[i];
  d.name = "node";
  int nr = 0, nw = 0;
  for (int k = 0; k < m->nuse[i]; k++) {
    if (m->use_write[i][k])
      writes[nw++] = vars[m->use_var[i][k]];
    else
      reads[nr++] = vars[m->use_var[i][k]];
  }
  d.reads = reads;
  d.num_reads = (size_t)nr;
  d.writes = writes;
  d.num_writes = (size_t)nw;
  return d;
}

/* Adds m's nodes (in order: node i gets index i) and edges to a new graph
 * of e; args[i] for node i. */
static weft_graph *net_graph(weft_engine *e, const net *m, node_arg *args, rec *r,
                             weft_var **vars)
{
  weft_graph *g = NULL;
  int rc = weft_graph_create(e, &g);
  cr_assert_eq(rc, 0, "weft_graph_create = %d (%s)", rc, weft_strerror(rc));
  cr_assert_not_null(g);
  for (int i = 0; i < m->n; i++) {
    args[i] = (node_arg){r, m, i};
    weft_var *reads[3], *writes[3];
    weft_op_desc d = node_desc(m, i, args, vars, reads, writes);
    size_t at = SIZE_MAX;
    rc = weft_graph_add(g, &d, &at);
    cr_assert_eq(rc, 0, "weft_graph_add(node %d) = %d (%s)", i, rc, weft_strerror(rc));
    cr_assert_eq(at, (size_t)i, "node %d got index %zu", i, at);
  }
  for (int k = 0; k < m->nedges; k++) {
    rc = weft_graph_edge(g, (size_t)m->edge[k][0], (size_t)m->edge[k][1]);
    cr_assert_eq(rc, 0, "weft_graph_edge(%d, %d) = %d (%s)", m->edge[k][0], m->edge[k][1], rc,
                 weft_strerror(rc));
  }
  return g;
}

/* Checks one launch's record against x: what ran, once each; every node
 * that ran after every predecessor (both kinds) that ran. */
static void rec_check(const net *m, const expect *x, const rec *r, const char *what)
{
  for (int i = 0; i < m->n; i++) {
    int runs = atomic_load(&r->runs[i]);
    cr_assert_eq(runs, x->ran[i] ? 1 : 0, "%s: node %d ran %d times, expected %d", what, i, runs,
                 x->ran[i] ? 1 : 0);
  }
  for (int k = 0; k < m->nedges; k++) {
    int a = m->edge[k][0], b = m->edge[k][1];
    if (x->ran[a] && x->ran[b])
      cr_assert_lt(r->finish[a], r->start[b], "%s: edge %d -> %d: %d started before %d finished",
                   what, a, b, b, a);
  }
  for (int i = 0; i < m->n; i++)
    for (int j = i + 1; j < m->n; j++)
      if (x->ran[i] && x->ran[j] && var_dep(m, i, j))
        cr_assert_lt(r->finish[i], r->start[j],
                     "%s: var dependency %d -> %d: %d started before %d finished", what, i, j, j,
                     i);
}

/* Runs m on an engine of kind with threads workers, launches times, each
 * checked against the model; returns the order the last launch's nodes
 * started in (into seq, m->n of them, if it ran them all). */
static void net_run(const net *m, const char *kind, int threads, int launches, long *seq)
{
  te t = te_new(kind, threads, 0);
  weft_var *vars[NV];
  for (int v = 0; v < NV; v++)
    vars[v] = te_var(t.eng);
  static rec r;
  static node_arg args[NMAX];
  rec_reset(&r);
  weft_graph *g = net_graph(t.eng, m, args, &r, vars);
  expect x;
  net_expect(m, &x);
  char what[96];
  for (int l = 0; l < launches; l++) {
    snprintf(what, sizeof what, "%s, %d threads, launch %d", kind, threads, l);
    rec_reset(&r);
    int rc = weft_graph_launch(g);
    int wrc = weft_wait_all(t.eng);
    if (x.cycle) {
      cr_assert_eq(rc, WEFT_EINVAL, "%s: a cycle launched: %d (%s)", what, rc, weft_strerror(rc));
      cr_assert_eq(atomic_load(&r.clock), 0, "%s: a graph with a cycle ran nodes", what);
      cr_assert_eq(wrc, 0);
      continue;
    }
    cr_assert_eq(rc, 0, "%s: weft_graph_launch = %d (%s)", what, rc, weft_strerror(rc));
    cr_assert_eq(wrc, x.failure ? FAIL : 0, "%s: weft_wait_all = %d, expected %d", what, wrc,
                 x.failure ? FAIL : 0);
    rec_check(m, &x, &r, what);
  }
  if (seq)
    for (int i = 0; i < m->n; i++)
      seq[i] = r.seq[i];
  cr_assert_eq(weft_graph_destroy(g), 0);
  for (int v = 0; v < NV; v++)
    cr_assert_eq(weft_var_delete(t.eng, vars[v]), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* A random permutation of 0..n-1. */
static void shuffle(int *a, int n, unsigned *seed)
{
  for (int i = n - 1; i > 0; i--) {
    int j = (int)(rand_r(seed) % (unsigned)(i + 1));
    int t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
}

/* A random DAG of n nodes whose topological rank is a random permutation
 * of the order of adding (so that many edges go backward in it), each
 * node with 1-3 edges to nodes of higher rank; the edges in the order
 * given (0: as made, 1: reversed, 2: shuffled), with a few duplicates. */
static net *random_dag(int n, int mode, bool ranked, unsigned seed)
{
  net *m = net_new(n);
  int rank_of[NMAX], node_at[NMAX];
  for (int i = 0; i < n; i++)
    node_at[i] = i;
  if (ranked)
    shuffle(node_at, n, &seed); /* node_at[r]: the node of rank r */
  for (int r = 0; r < n; r++)
    rank_of[node_at[r]] = r;
  (void)rank_of;
  for (int r = 0; r + 1 < n; r++) {
    int outs = 1 + (int)(rand_r(&seed) % 3);
    for (int k = 0; k < outs; k++) {
      int to = r + 1 + (int)(rand_r(&seed) % (unsigned)(n - r - 1 < 40 ? n - r - 1 : 40));
      net_edge(m, node_at[r], node_at[to]);
    }
  }
  for (int k = 0; k < n / 10; k++) /* duplicates */
    net_edge(m, m->edge[k][0], m->edge[k][1]);
  if (mode == 1) {
    for (int a = 0, b = m->nedges - 1; a < b; a++, b--) {
      int t0 = m->edge[a][0], t1 = m->edge[a][1];
      m->edge[a][0] = m->edge[b][0];
      m->edge[a][1] = m->edge[b][1];
      m->edge[b][0] = t0;
      m->edge[b][1] = t1;
    }
  } else if (mode == 2) {
    for (int i = m->nedges - 1; i > 0; i--) {
      int j = (int)(rand_r(&seed) % (unsigned)(i + 1));
      int t0 = m->edge[i][0], t1 = m->edge[i][1];
      m->edge[i][0] = m->edge[j][0];
      m->edge[i][1] = m->edge[j][1];
      m->edge[j][0] = t0;
      m->edge[j][1] = t1;
    }
  }
  return m;
}

/* ------------------------------------------------------- edges and order */

/* Edges added as made, reversed and shuffled, between nodes added in their
 * topological order and in a random one: every node runs once per launch,
 * after each of its predecessors; on 1, 2 and 4 workers and the naive
 * engine. */
Test(graph_edges, edges_in_any_order, .init = cpu_setup, .timeout = TU_TIMEOUT(180))
{
  for (int ranked = 0; ranked <= 1; ranked++)
    for (int mode = 0; mode < 3; mode++) {
      net *m = random_dag(500, mode, ranked, 1000u + (unsigned)(3 * ranked + mode));
      int backward = 0; /* edges against the order of adding: what a sort must fix */
      for (int e = 0; e < m->nedges; e++)
        backward += m->edge[e][0] > m->edge[e][1];
      cr_assert_gt(m->nedges, 500, "mode %d: a net of 1-3 edges a node", mode);
      if (ranked) /* a ranked net's order of adding is not its topological order */
        cr_assert_gt(backward, 0, "mode %d: no edge goes backward", mode);
      else
        cr_assert_eq(backward, 0, "mode %d: an unranked net is added in its order", mode);
      net_run(m, "naive", 1, 2, NULL);
      for (int threads = 1; threads <= 4; threads *= 2)
        net_run(m, "threaded", threads, 3, NULL);
      net_free(m);
    }
}

/* The order the launch resolves (weft.h: of the nodes ready to run, the
 * one added first goes first): the naive engine runs the nodes in it, one
 * at a time, and so does one worker for a graph of plain CPU operators
 * (run in capture order). */
Test(graph_edges, resolved_order_keeps_the_order_of_adding, .init = cpu_setup,
     .timeout = TU_TIMEOUT(120))
{
  for (unsigned s = 0; s < 4; s++) {
    net *m = random_dag(300, 2, true, 77u + s);
    /* The expected order: the smallest ready node each time. */
    int n = m->n, left[NMAX];
    long want[NMAX];
    bool done[NMAX] = {false};
    for (int i = 0; i < n; i++)
      left[i] = 0;
    for (int e = 0; e < m->nedges; e++) /* duplicates count twice, and go twice */
      left[m->edge[e][1]]++;
    for (int k = 0; k < n; k++) {
      int x = 0;
      while (done[x] || left[x])
        x++;
      done[x] = true;
      want[k] = x;
      for (int e = 0; e < m->nedges; e++)
        if (m->edge[e][0] == x)
          left[m->edge[e][1]]--;
    }
    long got[NMAX];
    net_run(m, "naive", 1, 1, got);
    for (int k = 0; k < n; k++)
      cr_assert_eq(got[k], want[k], "seed %u, naive: position %d ran node %ld, expected %ld", s, k,
                   got[k], want[k]);
    net_run(m, "threaded", 1, 2, got);
    for (int k = 0; k < n; k++)
      cr_assert_eq(got[k], want[k], "seed %u, 1 worker: position %d ran node %ld, expected %ld",
                   s, k, got[k], want[k]);
    net_free(m);
  }
}

/* Random nets of vars and explicit edges (some of them with cycles through
 * both), failing nodes, NOSKIP ones, and every kind of CPU operator: the
 * model, the naive engine and 1, 2 and 4 workers agree, launch after
 * launch (a failure of one launch leaves nothing behind for the next). */
/* Counts the library's messages. */
static void count_msg(void *arg, const char *msg)
{
  if (strstr(msg, "cycle through node "))
    atomic_fetch_add((atomic_int *)arg, 1);
}

static atomic_int msgs;

Test(graph_edges, vars_edges_failures_against_the_model, .init = cpu_setup,
     .timeout = TU_TIMEOUT(240))
{
  int cycles = 0, acyclic = 0, failing = 0;
  weft_set_log_callback(count_msg, &msgs); /* the cycles' messages, one each */
  for (unsigned s = 0; s < 90; s++) {
    unsigned seed = 5000u + s;
    int n = 20 + (int)(rand_r(&seed) % 60);
    net *m = net_new(n);
    bool mixed = s % 2;
    for (int i = 0; i < n; i++) {
      int uses = (int)(rand_r(&seed) % 3);
      for (int k = 0; k < uses; k++)
        net_use(m, i, (int)(rand_r(&seed) % NV), rand_r(&seed) % 2);
      m->status[i] = rand_r(&seed) % 23 == 0 ? FAIL : 0;
      m->flags[i] = rand_r(&seed) % 7 == 0 ? WEFT_OP_NOSKIP : 0;
      m->kind[i] = mixed ? (int)(rand_r(&seed) % K_KINDS) : K_PLAIN;
    }
    /* Two nets in three: edges along a random order the var dependencies
     * allow (a random topological order of them: many edges go backward
     * in the order of adding, and no cycle); else mostly forward edges
     * with a backward one now and then, which may close a cycle. */
    int ne = n + (int)(rand_r(&seed) % (unsigned)n);
    int rank[NMAX];
    bool along = s % 3 != 0;
    if (along) {
      bool placed[NMAX] = {false};
      for (int k = 0; k < n; k++) {
        int ready[NMAX], nr = 0;
        for (int j = 0; j < n; j++) {
          bool ok = !placed[j];
          for (int i = 0; i < j && ok; i++)
            ok = placed[i] || !var_dep(m, i, j);
          if (ok)
            ready[nr++] = j;
        }
        int x = ready[rand_r(&seed) % (unsigned)nr];
        placed[x] = true;
        rank[x] = k;
      }
    }
    for (int k = 0; k < ne; k++) {
      int a = (int)(rand_r(&seed) % (unsigned)n), b = (int)(rand_r(&seed) % (unsigned)n);
      if (a == b)
        continue;
      if (along ? rank[a] > rank[b] : a > b && rand_r(&seed) % 30) {
        int t0 = a;
        a = b;
        b = t0;
      }
      net_edge(m, a, b);
    }
    expect x;
    net_expect(m, &x);
    cycles += x.cycle;
    acyclic += !x.cycle;
    failing += !x.cycle && x.failure;
    net_run(m, "naive", 1, 2, NULL);
    for (int threads = 1; threads <= 4; threads *= 2)
      net_run(m, "threaded", threads, 3, NULL);
    net_free(m);
  }
  weft_set_log_callback(NULL, NULL);
  /* one per launch of a net with a cycle: 2 naive, 3 on each of 3 pools */
  cr_assert_eq(atomic_load(&msgs), 11 * cycles, "%d messages for %d nets with a cycle",
               atomic_load(&msgs), cycles);
  cr_log_info("vars, edges and failures: %d nets with a cycle, %d without (%d failing)", cycles,
              acyclic, failing);
  cr_assert(cycles > 0 && acyclic > 0 && failing > 0,
            "the nets should cover cycles (%d), none (%d) and failures (%d)", cycles, acyclic,
            failing);
}

/* ----------------------------------------------------------------- cycles */

/* A counted node: its runs in the atomic_int at arg. */
static int count_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  atomic_fetch_add((atomic_int *)arg, 1);
  return 0;
}

/* Adds n counted nodes to g (named name), writing v if not NULL; returns
 * the first one's index. */
static size_t add_counted(weft_graph *g, int n, atomic_int *ran, const char *name, weft_var *v)
{
  size_t first = SIZE_MAX;
  for (int i = 0; i < n; i++) {
    weft_op_desc d = te_desc(count_fn, ran);
    d.name = name;
    if (v) {
      d.writes = &v;
      d.num_writes = 1;
    }
    size_t at;
    int rc = weft_graph_add(g, &d, &at);
    cr_assert_eq(rc, 0, "weft_graph_add = %d (%s)", rc, weft_strerror(rc));
    if (i == 0)
      first = at;
  }
  return first;
}

/* Launches g, which has a cycle through nodes lo..hi (by index): WEFT_EINVAL,
 * nothing run, and one message naming one of those nodes. Twice: the graph
 * stays refused. */
static void expect_cycle(weft_engine *e, weft_graph *g, atomic_int *ran, size_t lo, size_t hi,
                         const char *name)
{
  for (int round = 0; round < 2; round++) {
    tu_logbuf lb = TU_LOGBUF_INIT;
    weft_set_log_callback(tu_log_cb, &lb);
    int rc = weft_graph_launch(g);
    weft_set_log_callback(NULL, NULL);
    cr_assert_eq(rc, WEFT_EINVAL, "a graph with a cycle launched: %d (%s)", rc, weft_strerror(rc));
    cr_assert_eq(weft_wait_all(e), 0);
    cr_assert_eq(atomic_load(ran), 0, "%d nodes of a graph with a cycle ran", atomic_load(ran));
    const char *at = strstr(lb.text, "cycle through node ");
    cr_assert_not_null(at, "no message names the cycle: \"%s\"", lb.text);
    size_t node = (size_t)strtoul(at + strlen("cycle through node "), NULL, 10);
    cr_assert(node >= lo && node <= hi, "the message names node %zu, not one of %zu..%zu: %s",
              node, lo, hi, lb.text);
    cr_assert(strstr(lb.text, name), "the message does not name \"%s\": %s", name, lb.text);
    cr_assert_eq(strchr(lb.text, '\n'), lb.text + strlen(lb.text) - 1,
                 "not one message: %s", lb.text);
  }
}

Test(graph_edges, cycles_are_refused_and_nothing_runs, .init = cpu_setup,
     .timeout = TU_TIMEOUT(60))
{
  const char *kinds[] = {"threaded", "naive"};
  for (int kk = 0; kk < 2; kk++)
    for (int threads = 1; threads <= 2; threads++) {
      te t = te_new(kinds[kk], threads, 0);
      atomic_int ran = 0;
      /* A 2-cycle, beside independent nodes. */
      weft_graph *g;
      cr_assert_eq(weft_graph_create(t.eng, &g), 0);
      add_counted(g, 3, &ran, "free", NULL);
      size_t a = add_counted(g, 2, &ran, "two", NULL);
      cr_assert_eq(weft_graph_edge(g, a, a + 1), 0);
      cr_assert_eq(weft_graph_edge(g, a + 1, a), 0);
      expect_cycle(t.eng, g, &ran, a, a + 1, "two");
      cr_assert_eq(weft_graph_destroy(g), 0);

      /* A long cycle, 0 -> 1 -> ... -> 99 -> 0, its edges added shuffled,
       * behind a chain that leads into it. */
      cr_assert_eq(weft_graph_create(t.eng, &g), 0);
      size_t c0 = add_counted(g, 10, &ran, "lead", NULL);
      size_t l0 = add_counted(g, 100, &ran, "ring", NULL);
      int order[100];
      for (int i = 0; i < 100; i++)
        order[i] = i;
      unsigned seed = 9;
      shuffle(order, 100, &seed);
      for (int i = 0; i < 100; i++)
        cr_assert_eq(weft_graph_edge(g, l0 + (size_t)order[i], l0 + (size_t)(order[i] + 1) % 100),
                     0);
      for (size_t i = c0; i + 1 < c0 + 10; i++)
        cr_assert_eq(weft_graph_edge(g, i, i + 1), 0);
      cr_assert_eq(weft_graph_edge(g, c0 + 9, l0 + 50), 0);
      expect_cycle(t.eng, g, &ran, l0, l0 + 99, "ring");
      cr_assert_eq(weft_graph_destroy(g), 0);

      /* Through a var and an edge: node x writes v, node y (added after)
       * reads it, so y follows x; the edge y -> x closes the loop. */
      weft_var *v = te_var(t.eng);
      cr_assert_eq(weft_graph_create(t.eng, &g), 0);
      add_counted(g, 2, &ran, "free", NULL);
      size_t x = add_counted(g, 1, &ran, "writer", v);
      weft_op_desc d = te_desc(count_fn, &ran);
      d.reads = &v;
      d.num_reads = 1;
      d.name = "writer";
      size_t y;
      cr_assert_eq(weft_graph_add(g, &d, &y), 0);
      cr_assert_eq(weft_graph_launch(g), 0); /* no cycle yet */
      cr_assert_eq(weft_wait_all(t.eng), 0);
      cr_assert_eq(atomic_load(&ran), 4);
      atomic_store(&ran, 0);
      cr_assert_eq(weft_graph_edge(g, y, x), 0);
      expect_cycle(t.eng, g, &ran, x, y, "writer");
      cr_assert_eq(weft_graph_destroy(g), 0);
      cr_assert_eq(weft_var_delete(t.eng, v), 0);
      cr_assert_eq(te_free(&t), 0);
    }
}

/* ------------------------------------------------------------- bad input */

Test(graph_edges, bad_input, .init = cpu_setup, .timeout = TU_TIMEOUT(60))
{
  te t = te_new("threaded", 2, 0);
  weft_graph *g = (weft_graph *)0x1;
  cr_assert_eq(weft_graph_create(NULL, &g), WEFT_EINVAL);
  cr_assert_null(g, "*out is NULL on an error");
  cr_assert_eq(weft_graph_create(t.eng, NULL), WEFT_EINVAL);
  cr_assert_eq(weft_graph_create(t.eng, &g), 0);
  atomic_int ran = 0;
  weft_op_desc d = te_desc(count_fn, &ran);
  size_t at = 77;
  cr_assert_eq(weft_graph_add(NULL, &d, &at), WEFT_EINVAL);
  cr_assert_eq(weft_graph_add(g, NULL, &at), WEFT_EINVAL);
  cr_assert_eq(weft_graph_add_arg(NULL, &d, NULL, 0, NULL, &at), WEFT_EINVAL);
  cr_assert_eq(weft_graph_edge(NULL, 0, 1), WEFT_EINVAL);
  cr_assert_eq(at, 77, "*node is untouched on an error");
  /* descriptors a push refuses */
  weft_op_desc bad = d;
  bad.fn = NULL;
  cr_assert_eq(weft_graph_add(g, &bad, &at), WEFT_EINVAL, "neither fn nor async_fn");
  bad = d;
  bad.ctx.type = WEFT_DEV_GPU;
  cr_assert_eq(weft_graph_add(g, &bad, &at), WEFT_ENODEV, "a GPU operator without a GPU");
  bad = d;
  bad.num_reads = 1; /* reads NULL */
  cr_assert_eq(weft_graph_add(g, &bad, &at), WEFT_EINVAL);
  weft_var *dead = te_var(t.eng);
  cr_assert_eq(weft_var_delete(t.eng, dead), 0);
  bad = d;
  bad.writes = &dead;
  bad.num_writes = 1;
  cr_assert_eq(weft_graph_add(g, &bad, &at), WEFT_EINVAL, "a dead var");
  /* an argument stored, with desc->arg set; NULL data with a size */
  int drops = 0;
  cr_assert_eq(weft_graph_add_arg(g, &d, &ran, sizeof ran, NULL, &at), WEFT_EINVAL);
  weft_op_desc noarg = te_desc(count_fn, NULL);
  cr_assert_eq(weft_graph_add_arg(g, &noarg, NULL, 8, NULL, &at), WEFT_EINVAL);
  cr_assert_eq(drops, 0);
  /* edges: nothing was added above */
  cr_assert_eq(weft_graph_edge(g, 0, 1), WEFT_EINVAL, "no nodes yet");
  size_t a, b;
  cr_assert_eq(weft_graph_add(g, &d, &a), 0);
  cr_assert_eq(a, 0, "the failed adds took no index");
  cr_assert_eq(weft_graph_add(g, &d, NULL), 0); /* node NULL: index not wanted */
  b = 1;
  cr_assert_eq(weft_graph_edge(g, a, a), WEFT_EINVAL, "a self edge");
  cr_assert_eq(weft_graph_edge(g, a, 2), WEFT_EINVAL, "an unknown node");
  cr_assert_eq(weft_graph_edge(g, 2, a), WEFT_EINVAL, "an unknown node");
  cr_assert_eq(weft_graph_edge(g, SIZE_MAX, a), WEFT_EINVAL, "an unknown node");
  cr_assert_eq(weft_graph_edge(g, a, b), 0);
  cr_assert_eq(weft_graph_edge(g, a, b), 0, "a duplicate edge is merged, not refused");
  cr_assert_eq(weft_graph_launch(g), 0);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&ran), 2, "%d runs of 2 nodes", atomic_load(&ran));
  cr_assert_eq(weft_graph_destroy(g), 0);
  /* An empty graph launches nothing. */
  cr_assert_eq(weft_graph_create(t.eng, &g), 0);
  cr_assert_eq(weft_graph_launch(g), 0);
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
}

/* ------------------------------------------------------- while it runs */

/* While a launch runs (its first node holds its worker), adds and edges
 * are refused with WEFT_EBUSY and change nothing, and a launch is queued
 * behind it; once both are over, what is added next runs at the next
 * launch, in the order its edges give (a node that a later edge puts
 * before the others). */
Test(graph_edges, busy_while_running_then_added_to, .init = cpu_setup,
     .timeout = TU_TIMEOUT(60))
{
  for (int threads = 1; threads <= 2; threads++) {
    te t = te_new("threaded", threads, 0);
    weft_graph *g;
    cr_assert_eq(weft_graph_create(t.eng, &g), 0);
    te_gate gate = {0};
    weft_op_desc gd = te_desc(te_gate_fn, &gate);
    size_t gn, c;
    cr_assert_eq(weft_graph_add(g, &gd, &gn), 0);
    atomic_long nlog = 0;
    te_rec recs[4];
    memset(recs, 0, sizeof recs);
    for (int i = 0; i < 4; i++)
      recs[i].order_ctr = &nlog;
    weft_op_desc cd = te_desc(te_rec_fn, &recs[0]);
    cr_assert_eq(weft_graph_add(g, &cd, &c), 0);
    cr_assert_eq(weft_graph_edge(g, gn, c), 0);
    cr_assert_eq(weft_graph_launch(g), 0);
    cr_assert(TU_WAIT_UNTIL(atomic_load(&gate.started), TU_DEADLINE_S));
    int drops = 0;
    size_t at = 99;
    cr_assert_eq(weft_graph_add(g, &cd, &at), WEFT_EBUSY);
    weft_op_desc ad = te_desc(te_rec_fn, NULL);
    cr_assert_eq(weft_graph_add_arg(g, &ad, &drops, sizeof drops, NULL, &at), WEFT_EBUSY);
    cr_assert_eq(weft_graph_edge(g, c, gn), WEFT_EBUSY);
    cr_assert_eq(weft_graph_launch(g), 0); /* queued */
    cr_assert_eq(weft_graph_add(g, &cd, &at), WEFT_EBUSY, "an add while a launch is queued");
    cr_assert_eq(weft_graph_destroy(g), WEFT_EBUSY);
    cr_assert_eq(at, 99);
    atomic_store(&gate.open, 1);
    cr_assert_eq(weft_wait_all(t.eng), 0);
    cr_assert_eq(atomic_load(&recs[0].ran), 2, "the running launch and the queued one");
    /* Added after a launch: node 2, which an edge puts before node 1; node
     * 3 after node 2. */
    size_t n2, n3;
    weft_op_desc d2 = te_desc(te_rec_fn, &recs[2]), d3 = te_desc(te_rec_fn, &recs[3]);
    cr_assert_eq(weft_graph_add(g, &d2, &n2), 0);
    cr_assert_eq(weft_graph_add(g, &d3, &n3), 0);
    cr_assert_eq(n2, 2);
    cr_assert_eq(n3, 3);
    cr_assert_eq(weft_graph_edge(g, n2, c), 0);
    cr_assert_eq(weft_graph_edge(g, n2, n3), 0);
    for (int l = 0; l < 3; l++) {
      atomic_store(&nlog, 0);
      cr_assert_eq(weft_graph_launch(g), 0); /* the gate is open: it returns at once */
      cr_assert_eq(weft_wait_all(t.eng), 0);
      cr_assert_eq(atomic_load(&recs[0].ran), 3 + l);
      cr_assert_eq(atomic_load(&recs[2].ran), 1 + l);
      cr_assert_eq(atomic_load(&recs[3].ran), 1 + l);
      cr_assert_lt(recs[2].order, recs[0].order, "node 2 ran after node 1, which follows it");
      cr_assert_lt(recs[2].order, recs[3].order, "node 3 ran before node 2, which it follows");
    }
    cr_assert_eq(weft_graph_destroy(g), 0);
    cr_assert_eq(te_free(&t), 0);
  }
  tu_assert_no_errors();
}

/* ------------------------------------------------------------- failures */

/* A fails; B and C follow it along edges, D (WEFT_OP_NOSKIP) too, and E
 * follows D; F reads the var that B writes; G is on its own. B, C and F
 * are skipped, D, E and G run, weft_wait_all reports A's failure; the
 * next launch, with A fine, runs them all (nothing of the failure stays).
 * On every path a node runs by: plain CPU nodes (in order on one worker,
 * in lanes or released on several), prioritized ones (the engine's
 * general path), async ones, and the naive engine. */
typedef struct fail_case {
  te_rec r[7];
} fail_case;

Test(graph_edges, failures_skip_along_edges, .init = cpu_setup, .timeout = TU_TIMEOUT(60))
{
  const char *kinds[] = {"threaded", "naive"};
  for (int kk = 0; kk < 2; kk++)
    for (int threads = 1; threads <= 4; threads *= 2)
      for (int prop = 0; prop < 3; prop++) {
        if (kk == 1 && threads > 1)
          continue;
        te t = te_new(kinds[kk], threads, 0);
        weft_var *v = te_var(t.eng);
        fail_case fc;
        memset(&fc, 0, sizeof fc);
        weft_graph *g;
        cr_assert_eq(weft_graph_create(t.eng, &g), 0);
        size_t id[7];
        /* Added out of order (the edges go backward), F after B. */
        static const int add_order[7] = {6, 4, 2, 1, 5, 3, 0};
        for (int j = 0; j < 7; j++) {
          int k = add_order[j];
          weft_op_desc d = te_desc(te_rec_fn, &fc.r[k]);
          d.prop = prop == 1 ? WEFT_PROP_PRIORITIZED : prop == 2 ? WEFT_PROP_ASYNC
                                                                 : WEFT_PROP_NORMAL;
          d.name = "failing";
          if (k == 3)
            d.flags = WEFT_OP_NOSKIP;
          if (k == 1) {
            d.writes = &v;
            d.num_writes = 1;
          }
          if (k == 5) {
            d.reads = &v;
            d.num_reads = 1;
          }
          cr_assert_eq(weft_graph_add(g, &d, &id[k]), 0);
        }
        cr_assert_eq(weft_graph_edge(g, id[0], id[1]), 0);
        cr_assert_eq(weft_graph_edge(g, id[1], id[2]), 0);
        cr_assert_eq(weft_graph_edge(g, id[0], id[3]), 0);
        cr_assert_eq(weft_graph_edge(g, id[3], id[4]), 0);
        for (int l = 0; l < 3; l++) {
          bool fails = l != 1;
          fc.r[0].status = fails ? FAIL : 0;
          for (int k = 0; k < 7; k++)
            atomic_store(&fc.r[k].ran, 0);
          cr_assert_eq(weft_graph_launch(g), 0);
          int rc = weft_wait_all(t.eng);
          cr_assert_eq(rc, fails ? FAIL : 0, "%s, %d threads, prop %d, launch %d: wait_all %d",
                       kinds[kk], threads, prop, l, rc);
          /* White-box: what the launch held of its failures (counted with
           * the failed vars, graph.h: inherit) went with its end; the
           * failed vars with weft_wait_all. */
          cr_assert(weft_engine_no_failed_var(t.eng), "%s, %d threads, launch %d: failures "
                    "still counted after the launch and weft_wait_all", kinds[kk], threads, l);
          for (int k = 0; k < 7; k++) {
            bool skipped = fails && (k == 1 || k == 2 || k == 5);
            cr_assert_eq(atomic_load(&fc.r[k].ran), skipped ? 0 : 1,
                         "%s, %d threads, prop %d, launch %d: node %c ran %d times", kinds[kk],
                         threads, prop, l, 'A' + k, atomic_load(&fc.r[k].ran));
          }
        }
        cr_assert_eq(weft_graph_destroy(g), 0);
        cr_assert_eq(weft_var_delete(t.eng, v), 0);
        cr_assert_eq(te_free(&t), 0);
      }
}

/* ------------------------------------------------- launches from threads */

/* A diamond lattice whose nodes check, as they start, that each of their
 * predecessors has run once more than they have: launches from several
 * threads queue behind each other (never WEFT_EBUSY), each node run once
 * per launch and after its predecessors in each. */
#define LAT 8 /* a LAT x LAT grid, each node after its left and upper ones */

typedef struct lat {
  atomic_int done[LAT * LAT];
} lat;

typedef struct lat_arg {
  lat *l;
  int i;
} lat_arg;

static int lat_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  lat_arg *a = arg;
  int me = atomic_load(&a->l->done[a->i]);
  int r = a->i / LAT, c = a->i % LAT;
  if (r > 0)
    TU_CHECK(atomic_load(&a->l->done[a->i - LAT]) == me + 1, "node %d ran before its upper one",
             a->i);
  if (c > 0)
    TU_CHECK(atomic_load(&a->l->done[a->i - 1]) == me + 1, "node %d ran before its left one",
             a->i);
  atomic_store(&a->l->done[a->i], me + 1);
  return 0;
}

typedef struct launcher {
  weft_graph *g;
  int want;
  atomic_int *accepted;
  long busy;
} launcher;

static void *launch_thread(void *arg)
{
  launcher *L = arg;
  for (int got = 0; got < L->want;) {
    int rc = weft_graph_launch(L->g);
    if (rc == WEFT_EBUSY)
      L->busy++;
    TU_CHECK(rc == 0, "weft_graph_launch = %d (a launch queues, never busy)", rc);
    if (rc)
      break;
    got++;
    atomic_fetch_add(L->accepted, 1);
  }
  return NULL;
}

Test(graph_edges, relaunch_from_several_threads, .init = cpu_setup, .timeout = TU_TIMEOUT(120))
{
  for (int threads = 1; threads <= 4; threads *= 2) {
    te t = te_new("threaded", threads, 0);
    static lat l;
    static lat_arg args[LAT * LAT];
    weft_graph *g;
    cr_assert_eq(weft_graph_create(t.eng, &g), 0);
    int perm[LAT * LAT];
    for (int i = 0; i < LAT * LAT; i++)
      perm[i] = i;
    unsigned seed = 3;
    shuffle(perm, LAT * LAT, &seed); /* the nodes added in a random order */
    size_t id[LAT * LAT];
    for (int k = 0; k < LAT * LAT; k++) {
      int i = perm[k];
      atomic_store(&l.done[i], 0);
      args[i] = (lat_arg){&l, i};
      weft_op_desc d = te_desc(lat_fn, &args[i]);
      cr_assert_eq(weft_graph_add(g, &d, &id[i]), 0);
    }
    for (int i = 0; i < LAT * LAT; i++) {
      if (i >= LAT)
        cr_assert_eq(weft_graph_edge(g, id[i - LAT], id[i]), 0);
      if (i % LAT)
        cr_assert_eq(weft_graph_edge(g, id[i - 1], id[i]), 0);
    }
    atomic_int accepted = 0;
    enum { NT = 4, EACH = 40 };
    launcher L[NT];
    pthread_t th[NT];
    for (int k = 0; k < NT; k++) {
      L[k] = (launcher){g, EACH, &accepted, 0};
      cr_assert_eq(pthread_create(&th[k], NULL, launch_thread, &L[k]), 0);
    }
    for (int k = 0; k < NT; k++)
      te_join(th[k]);
    cr_assert_eq(weft_wait_all(t.eng), 0);
    cr_assert_eq(atomic_load(&accepted), NT * EACH);
    for (int i = 0; i < LAT * LAT; i++)
      cr_assert_eq(atomic_load(&l.done[i]), NT * EACH, "%d threads: node %d ran %d times of %d",
                   threads, i, atomic_load(&l.done[i]), NT * EACH);
    cr_assert_eq(weft_graph_destroy(g), 0);
    cr_assert_eq(te_free(&t), 0);
  }
  tu_assert_no_errors();
}

/* --------------------------------------------------------------- async */

/* Async nodes signalled later from a thread of their own: a node after an
 * async one (by an edge) starts only after the signal; a failure signalled
 * skips the successors. Threaded and naive (whose launch waits for each
 * signal in turn). */
typedef struct async_node {
  atomic_long *clock;
  long signalled, started;
  int status;
  atomic_int ran;
} async_node;

typedef struct signal_job {
  async_node *n;
  weft_done *done;
} signal_job;

static void *signal_later(void *arg)
{
  signal_job *j = arg;
  tu_sleep_us(2000);
  j->n->signalled = atomic_fetch_add(j->n->clock, 1);
  weft_done_signal(j->done, j->n->status);
  free(j);
  return NULL;
}

static void async_later_fn(const weft_run_ctx *rc, void *arg, weft_done *done)
{
  (void)rc;
  async_node *n = arg;
  n->started = atomic_fetch_add(n->clock, 1);
  atomic_fetch_add(&n->ran, 1);
  signal_job *j = malloc(sizeof *j);
  TU_CHECK(j != NULL, "malloc");
  *j = (signal_job){n, done};
  pthread_t th;
  TU_CHECK(pthread_create(&th, NULL, signal_later, j) == 0, "pthread_create");
  pthread_detach(th);
}

static int stamp_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  async_node *n = arg;
  n->started = atomic_fetch_add(n->clock, 1);
  atomic_fetch_add(&n->ran, 1);
  return 0;
}

Test(graph_edges, async_nodes, .init = cpu_setup, .timeout = TU_TIMEOUT(60))
{
  const char *kinds[] = {"threaded", "naive"};
  for (int kk = 0; kk < 2; kk++)
    for (int fail = 0; fail <= 1; fail++) {
      te t = te_new(kinds[kk], 2, 0);
      atomic_long clock = 0;
      async_node n[4];
      memset(n, 0, sizeof n);
      for (int i = 0; i < 4; i++)
        n[i].clock = &clock;
      n[0].status = fail ? FAIL : 0;
      /* 0 (async) -> 1 (CPU) -> 2 (async) -> 3 (CPU), added backward */
      weft_graph *g;
      cr_assert_eq(weft_graph_create(t.eng, &g), 0);
      size_t id[4];
      for (int i = 3; i >= 0; i--) {
        weft_op_desc d = i % 2 ? te_desc(stamp_fn, &n[i]) : te_adesc(async_later_fn, &n[i]);
        cr_assert_eq(weft_graph_add(g, &d, &id[i]), 0);
      }
      for (int i = 0; i < 3; i++)
        cr_assert_eq(weft_graph_edge(g, id[i], id[i + 1]), 0);
      cr_assert_eq(weft_graph_launch(g), 0);
      cr_assert_eq(weft_wait_all(t.eng), fail ? FAIL : 0);
      cr_assert_eq(atomic_load(&n[0].ran), 1);
      for (int i = 1; i < 4; i++)
        cr_assert_eq(atomic_load(&n[i].ran), fail ? 0 : 1, "%s: node %d ran %d times",
                     kinds[kk], i, atomic_load(&n[i].ran));
      if (!fail) {
        cr_assert_lt(n[0].signalled, n[1].started, "%s: node 1 started before 0's signal",
                     kinds[kk]);
        cr_assert_lt(n[2].signalled, n[3].started, "%s: node 3 started before 2's signal",
                     kinds[kk]);
      }
      cr_assert_eq(weft_graph_destroy(g), 0);
      cr_assert_eq(te_free(&t), 0);
    }
  tu_assert_no_errors();
}

/* ------------------------------------------------- arguments stored */

typedef struct big_arg {
  atomic_int *sum;
  atomic_int *drops;
  int value;
  char pad[100]; /* past WEFT_OP_ARG_INLINE */
} big_arg;

static int arg_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  big_arg *a = arg;
  atomic_fetch_add(a->sum, a->value);
  return 0;
}

static void arg_drop(void *arg)
{
  big_arg *a = arg;
  atomic_fetch_add(a->drops, 1);
}

/* weft_graph_add_arg: every launch's fn gets the graph's copy (the
 * caller's struct changes after the add); each drop runs once, at the
 * graph's destroy (or at its engine's, when that comes first), never at a
 * launch or a failed add. */
Test(graph_edges, add_arg_drops_once_at_destroy, .init = cpu_setup, .timeout = TU_TIMEOUT(60))
{
  const char *kinds[] = {"threaded", "naive"};
  for (int kk = 0; kk < 2; kk++)
    for (int engine_first = 0; engine_first <= 1; engine_first++) {
      te t = te_new(kinds[kk], 2, 0);
      atomic_int sum = 0, drops = 0;
      weft_graph *g;
      cr_assert_eq(weft_graph_create(t.eng, &g), 0);
      big_arg a = {&sum, &drops, 0, {0}};
      weft_op_desc d = te_desc(arg_fn, NULL);
      size_t prev = 0;
      for (int i = 0; i < 6; i++) {
        a.value = 1 << i;
        size_t at;
        /* small (the struct's head) and large copies alike */
        size_t size = i % 2 ? sizeof a : offsetof(big_arg, pad);
        cr_assert_eq(weft_graph_add_arg(g, &d, &a, size, arg_drop, &at), 0);
        if (i)
          cr_assert_eq(weft_graph_edge(g, at, prev), 0); /* a chain, backward */
        prev = at;
      }
      a.value = 1000; /* the graph has its own copies */
      weft_op_desc bad = te_desc(arg_fn, &a);
      cr_assert_eq(weft_graph_add_arg(g, &bad, &a, sizeof a, arg_drop, NULL), WEFT_EINVAL);
      for (int l = 1; l <= 3; l++) {
        cr_assert_eq(weft_graph_launch(g), 0);
        cr_assert_eq(weft_wait_all(t.eng), 0);
        cr_assert_eq(atomic_load(&sum), 63 * l, "%s: launch %d summed %d", kinds[kk], l,
                     atomic_load(&sum));
        cr_assert_eq(atomic_load(&drops), 0, "a drop ran before the destroy");
      }
      if (engine_first) {
        cr_assert_eq(te_free(&t), 0);
        cr_assert_eq(atomic_load(&drops), 6, "%d drops at the engine's destroy",
                     atomic_load(&drops));
        cr_assert_eq(weft_graph_launch(g), WEFT_ESHUTDOWN);
        size_t at;
        cr_assert_eq(weft_graph_add(g, &d, &at), WEFT_ESHUTDOWN);
        cr_assert_eq(weft_graph_edge(g, 0, 1), WEFT_ESHUTDOWN);
        cr_assert_eq(weft_graph_destroy(g), 0);
        cr_assert_eq(atomic_load(&drops), 6);
      } else {
        cr_assert_eq(weft_graph_destroy(g), 0);
        cr_assert_eq(atomic_load(&drops), 6, "%d drops at the graph's destroy",
                     atomic_load(&drops));
        cr_assert_eq(te_free(&t), 0);
      }
    }
}

/* ------------------------------------------------------- captured graphs */

/* A captured graph may be added to: the i-th recorded push is node i; an
 * edge from a new node to a recorded one puts it first; the recorded
 * pushes' own order (by their vars) stays. */
Test(graph_edges, a_captured_graph_is_added_to, .init = cpu_setup, .timeout = TU_TIMEOUT(60))
{
  for (int threads = 1; threads <= 2; threads++) {
    te t = te_new("threaded", threads, 0);
    weft_var *v = te_var(t.eng);
    atomic_long order = 0;
    te_rec r[5];
    memset(r, 0, sizeof r);
    for (int i = 0; i < 5; i++)
      r[i].order_ctr = &order;
    cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
    for (int i = 0; i < 3; i++) /* a chain on v */
      cr_assert_eq(te_push(t.eng, te_rec_fn, &r[i], TE_NONE, TE_V(v), 0), 0);
    weft_graph *g = NULL;
    cr_assert_eq(weft_graph_end_capture(t.eng, &g), 0);
    cr_assert_eq(weft_graph_launch(g), 0);
    cr_assert_eq(weft_wait_all(t.eng), 0);
    size_t a, b;
    weft_op_desc d3 = te_desc(te_rec_fn, &r[3]), d4 = te_desc(te_rec_fn, &r[4]);
    cr_assert_eq(weft_graph_add(g, &d3, &a), 0);
    cr_assert_eq(a, 3, "the captured graph's nodes come first");
    cr_assert_eq(weft_graph_add(g, &d4, &b), 0);
    cr_assert_eq(weft_graph_edge(g, a, 0), 0); /* 3 before the chain */
    cr_assert_eq(weft_graph_edge(g, 1, b), 0); /* 4 after its second link */
    atomic_store(&order, 0);
    cr_assert_eq(weft_graph_launch(g), 0);
    cr_assert_eq(weft_wait_all(t.eng), 0);
    for (int i = 0; i < 5; i++)
      cr_assert_eq(atomic_load(&r[i].ran), i < 3 ? 2 : 1, "node %d ran %d times", i,
                   atomic_load(&r[i].ran));
    cr_assert_lt(r[3].order, r[0].order);
    cr_assert_lt(r[0].order, r[1].order);
    cr_assert_lt(r[1].order, r[2].order);
    cr_assert_lt(r[1].order, r[4].order);
    cr_assert_eq(weft_graph_destroy(g), 0);
    cr_assert_eq(weft_var_delete(t.eng, v), 0);
    cr_assert_eq(te_free(&t), 0);
  }
}

/* A launch is ordered with the engine's other operators as a captured
 * graph's is: one operator on all its nodes' vars. */
Test(graph_edges, launch_is_ordered_with_pushes_around_it, .init = cpu_setup,
     .timeout = TU_TIMEOUT(60))
{
  for (int threads = 1; threads <= 4; threads *= 2) {
    te t = te_new("threaded", threads, 0);
    weft_var *v = te_var(t.eng), *w = te_var(t.eng);
    atomic_long order = 0;
    te_rec before, after, in[3];
    memset(&before, 0, sizeof before);
    memset(&after, 0, sizeof after);
    memset(in, 0, sizeof in);
    before.order_ctr = after.order_ctr = &order;
    weft_graph *g;
    cr_assert_eq(weft_graph_create(t.eng, &g), 0);
    size_t id[3];
    for (int i = 0; i < 3; i++) {
      in[i].order_ctr = &order;
      weft_op_desc d = te_desc(te_rec_fn, &in[i]);
      if (i == 1) { /* the one node on a var: the launch holds it */
        d.writes = &v;
        d.num_writes = 1;
      }
      cr_assert_eq(weft_graph_add(g, &d, &id[i]), 0);
    }
    cr_assert_eq(weft_graph_edge(g, id[2], id[1]), 0);
    cr_assert_eq(weft_graph_edge(g, id[1], id[0]), 0);
    te_gate gate = {0};
    cr_assert_eq(te_push(t.eng, te_gate_fn, &gate, TE_NONE, TE_V(v), 0), 0);
    cr_assert_eq(te_push(t.eng, te_rec_fn, &before, TE_V(v), TE_V(w), 0), 0);
    cr_assert_eq(weft_graph_launch(g), 0);
    cr_assert_eq(te_push(t.eng, te_rec_fn, &after, TE_V(v), TE_NONE, 0), 0);
    cr_assert(TU_WAIT_UNTIL(atomic_load(&gate.started), TU_DEADLINE_S));
    cr_assert_eq(atomic_load(&order), 0, "something ran while v was held before the launch");
    atomic_store(&gate.open, 1);
    cr_assert_eq(weft_wait_all(t.eng), 0);
    cr_assert_eq(before.order, 0);
    cr_assert_eq(in[2].order, 1);
    cr_assert_eq(in[1].order, 2);
    cr_assert_eq(in[0].order, 3);
    cr_assert_eq(after.order, 4);
    cr_assert_eq(weft_graph_destroy(g), 0);
    cr_assert_eq(te_free(&t), 0);
  }
}

/* ------------------------------------------------------------ GPU nodes */

/* GPU nodes on the host backend's emulated devices (WEFT_GPU_BACKEND=host,
 * two devices): 0 (GPU 0) -> 1 (GPU 0: it waits on the device) -> 2 (a CPU
 * node: it waits for 1's work) -> 3 (GPU 1), added backward, with and
 * without WEFT_OP_GPU_GRAPH (0 and 1 then replay as one device graph). The
 * device work and the CPU node run in edge order at every launch; a failed
 * fn skips what follows it (GPU node 0's, or with the flag the CPU node's:
 * a run's fns are called only when it is recorded). Threaded and naive. */
typedef struct glog {
  pthread_mutex_t mu;
  int seq[64];
  int n;
} glog;

typedef struct gwork {
  glog *log;
  int id;
  int status;
} gwork;

static void glog_add(glog *l, int id)
{
  pthread_mutex_lock(&l->mu);
  if (l->n < 64)
    l->seq[l->n++] = id;
  pthread_mutex_unlock(&l->mu);
}

static void gwork_item(void *arg)
{
  gwork *w = arg;
  glog_add(w->log, w->id);
}

static int gwork_fn(const weft_run_ctx *rc, void *arg)
{
  gwork *w = arg;
  if (w->status)
    return w->status;
  return weft_gpu_host_enqueue(rc->stream, gwork_item, arg);
}

static int gcpu_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  gwork *w = arg;
  glog_add(w->log, w->id);
  return w->status;
}

Test(graph_edges, gpu_nodes_on_the_host_backend, .init = setup, .timeout = TU_TIMEOUT(120))
{
  const char *kinds[] = {"threaded", "naive"};
  for (int kk = 0; kk < 2; kk++)
    for (int flagged = 0; flagged <= 1; flagged++) {
      te t = te_new(kinds[kk], 2, 0);
      cr_assert_geq(weft_gpu_count(t.eng), 2);
      glog log = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};
      gwork w[4];
      for (int i = 0; i < 4; i++)
        w[i] = (gwork){&log, i, 0};
      weft_graph *g;
      cr_assert_eq(weft_graph_create(t.eng, &g), 0);
      size_t id[4];
      for (int i = 3; i >= 0; i--) {
        weft_op_desc d = i == 2 ? te_desc(gcpu_fn, &w[i]) : gpu_desc(gwork_fn, &w[i], i == 3);
        if (flagged && i < 2)
          d.flags = WEFT_OP_GPU_GRAPH;
        cr_assert_eq(weft_graph_add(g, &d, &id[i]), 0);
      }
      for (int i = 0; i < 3; i++)
        cr_assert_eq(weft_graph_edge(g, id[i], id[i + 1]), 0);
      for (int l = 0; l < 4; l++) {
        /* A run's fns are called only when it is recorded (weft.h): with
         * the flag, the CPU node fails instead of the first GPU one. */
        bool fails = l == 2;
        int failing = flagged ? 2 : 0, want = fails ? failing : 4;
        w[failing].status = fails ? FAIL : 0;
        log.n = 0;
        cr_assert_eq(weft_graph_launch(g), 0);
        int rc = weft_wait_all(t.eng);
        cr_assert_eq(rc, fails ? FAIL : 0, "%s, flagged %d, launch %d: wait_all = %d", kinds[kk],
                     flagged, l, rc);
        pthread_mutex_lock(&log.mu);
        int n = log.n;
        int seq[64];
        memcpy(seq, log.seq, sizeof seq);
        pthread_mutex_unlock(&log.mu);
        if (fails && flagged)
          want++; /* the CPU node logs before it fails */
        cr_assert_eq(n, want, "%s, flagged %d, launch %d: %d work items ran", kinds[kk], flagged,
                     l, n);
        for (int k = 0; k < n; k++)
          cr_assert_eq(seq[k], k, "%s, flagged %d, launch %d: position %d ran node %d",
                       kinds[kk], flagged, l, k, seq[k]);
      }
      cr_assert_eq(weft_graph_destroy(g), 0);
      cr_assert_eq(te_free(&t), 0);
    }
  tu_assert_no_errors();
}

/* ------------------------------------------- adds racing the engine's end */

typedef struct adder {
  weft_graph *g;
  atomic_int *started;
  long added, edges;
  int last_rc;
} adder;

static void *add_until_refused(void *arg)
{
  adder *a = arg;
  atomic_int ran = 0;
  weft_op_desc d = te_desc(count_fn, &ran);
  for (;;) {
    size_t at;
    int rc = weft_graph_add(a->g, &d, &at);
    if (rc == 0) {
      a->added++;
      atomic_store(a->started, 1);
      if (at > 0 && (rc = weft_graph_edge(a->g, at - 1, at)) == 0)
        a->edges++;
    }
    if (rc) {
      a->last_rc = rc;
      return NULL;
    }
  }
}

/* Adds and edges on another thread while the graph's engine is destroyed:
 * each returns 0 until the destroy began, then WEFT_ESHUTDOWN, and the
 * graph is destroyed after (the adds hold no count on the engine: the
 * destroy's letting go of the graph waits for the one under way). */
Test(graph_edges, adds_race_the_engines_destroy, .init = cpu_setup, .timeout = TU_TIMEOUT(60))
{
  for (int round = 0; round < 20; round++) {
    te t = te_new("threaded", 2, 0);
    weft_graph *g;
    cr_assert_eq(weft_graph_create(t.eng, &g), 0);
    atomic_int started = 0;
    adder a = {g, &started, 0, 0, 0};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, add_until_refused, &a), 0);
    cr_assert(TU_WAIT_UNTIL(atomic_load(&started), TU_DEADLINE_S));
    tu_sleep_us(round * 50);
    cr_assert_eq(te_free(&t), 0);
    te_join(th);
    cr_assert_eq(a.last_rc, WEFT_ESHUTDOWN, "round %d: the adds ended with %d (%s)", round,
                 a.last_rc, weft_strerror(a.last_rc));
    cr_assert(a.added > 0);
    cr_assert_eq(weft_graph_launch(g), WEFT_ESHUTDOWN);
    cr_assert_eq(weft_graph_destroy(g), 0);
  }
}

/* ---------------------------------------------------- out of memory */

#include "common/alloc.h" /* the fault injection hook (white-box) */

/* A graph's build at its launch with each allocation failing in turn, at
 * its first launch (a build for one launch) and, on 2 workers, at its
 * second (the full build: graph.h, lean; on one worker the first build is
 * the full one): the launch returns WEFT_ENOMEM and runs nothing,
 * and the next one, without the fault, runs every node in order; on 1 and
 * 2 workers, with the nodes added in and out of order. */
Test(graph_edges, a_launch_out_of_memory_runs_nothing, .init = cpu_setup,
     .timeout = TU_TIMEOUT(240))
{
  for (int threads = 1; threads <= 2; threads++)
    for (int ranked = 0; ranked <= 1; ranked++)
      for (int which = 0; which < threads; which++) { /* the first launch's build, or the
                                                        * second's (2 workers: graph.h, lean) */
        net *m = random_dag(40, 2, ranked, 31u + (unsigned)ranked);
        for (int i = 0; i < m->n; i += 7)
          net_use(m, i, i % 3, true); /* some var dependencies too */
        expect x;
        net_expect(m, &x);
        cr_assert_not(x.cycle);
        long points = 0, k;
        for (k = 1; k < 5000; k++) {
          te t = te_new("threaded", threads, 0);
          weft_var *vars[NV];
          for (int v = 0; v < NV; v++)
            vars[v] = te_var(t.eng);
          static rec r;
          static node_arg args[NMAX];
          rec_reset(&r);
          weft_graph *g = net_graph(t.eng, m, args, &r, vars);
          if (which == 1) { /* the first launch, fine */
            cr_assert_eq(weft_graph_launch(g), 0);
            cr_assert_eq(weft_wait_all(t.eng), 0);
            rec_reset(&r);
          }
          weft_test_fail_alloc_at(k);
          int rc = weft_graph_launch(g);
          weft_test_fail_alloc_at(0);
          cr_assert_eq(weft_wait_all(t.eng), 0);
          if (rc) {
            points++;
            cr_assert_eq(rc, WEFT_ENOMEM, "k=%ld: launch = %d (%s)", k, rc, weft_strerror(rc));
            cr_assert_eq(atomic_load(&r.clock), 0, "k=%ld: a launch out of memory ran nodes", k);
            cr_assert_eq(weft_graph_launch(g), 0, "k=%ld: the launch after the fault", k);
            cr_assert_eq(weft_wait_all(t.eng), 0);
          }
          rec_check(m, &x, &r, "after a fault");
          cr_assert_eq(weft_graph_destroy(g), 0);
          cr_assert_eq(te_free(&t), 0);
          if (!rc)
            break;
        }
        cr_assert_lt(k, 5000);
        cr_assert_gt(points, 0, "the launch's build made no allocation through the hook");
        cr_log_info("fault sweep: a launch of 40 nodes with edges (%d worker%s, added %s, "
                    "%s build): %ld allocation failure points", threads, threads > 1 ? "s" : "",
                    ranked ? "out of order" : "in order", which ? "the full" : "the first",
                    points);
        net_free(m);
      }
  tu_assert_no_errors();
  tu_assert_no_leaks();
}
