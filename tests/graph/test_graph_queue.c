/* SPDX-License-Identifier: MIT */
/*
 * Queued launches and per-launch arguments (weft_graph_launch while a
 * launch runs, weft_graph_launch_args): a launch made while another runs
 * is queued, never refused, and ordered with the pushes around it by the
 * vars it uses; launches from several threads run one after another, each
 * whole, each with its own arguments (the nodes not named, and the next
 * launch, get the ones they were added with); a node that launches its own
 * graph queues behind it; the bad arguments are refused with nothing run;
 * the naive engine, the reference, agrees on every order.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../deps/engine_util.h"

static void setup(void)
{
  te_setup();
}

/* -------------------------------------------------------------- a log */

/* What ran, in order: entries of launch * 1000 + node (or a push's mark). */
#define LOG_MAX 20000

typedef struct qlog {
  atomic_int n;
  int e[LOG_MAX];
} qlog;

static void log_add(qlog *l, int v)
{
  int k = atomic_fetch_add(&l->n, 1);
  if (k < LOG_MAX)
    l->e[k] = v;
}

/* A node's per-launch argument: which launch it runs in, and the log. */
typedef struct tag {
  qlog *log;
  int launch;
  int node;
} tag;

static int tag_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  tag *t = arg;
  log_add(t->log, t->launch * 1000 + t->node);
  return 0;
}

/* A graph of n nodes on var v, each writing it (a chain), node i's
 * argument tags[i] (launch 0). */
static weft_graph *chain_graph(weft_engine *eng, weft_var *v, tag *tags, int n)
{
  weft_graph *g = NULL;
  cr_assert_eq(weft_graph_create(eng, &g), 0);
  for (int i = 0; i < n; i++) {
    weft_op_desc d = te_desc(tag_fn, &tags[i]);
    weft_var *w[1] = {v};
    d.writes = w;
    d.num_writes = 1;
    size_t at;
    cr_assert_eq(weft_graph_add(g, &d, &at), 0);
    cr_assert_eq(at, (size_t)i);
  }
  return g;
}

/* ------------------------------------------ order with pushes between */

/* The first node holds its worker until the gate opens; meanwhile launch
 * 2 (every node's argument its own), a push on the var, and launch 3 (no
 * arguments: the ones added with) are made. The log must read: launch 1's
 * nodes, the push, launch 2's, launch 3's (the nodes' own arguments, tag
 * launch 0), whatever the engine. */
static void order_with_pushes(const char *kind, int threads)
{
  te t = te_new(kind, threads, 0);
  static qlog log;
  memset(&log, 0, sizeof log);
  weft_var *v = te_var(t.eng);
  enum { N = 5 };
  tag own[N], l1[N], l2[N];
  for (int i = 0; i < N; i++) {
    own[i] = (tag){&log, 0, i};
    l1[i] = (tag){&log, 1, i};
    l2[i] = (tag){&log, 2, i};
  }
  te_gate gate = {0};
  weft_graph *g;
  cr_assert_eq(weft_graph_create(t.eng, &g), 0);
  weft_op_desc gd = te_desc(te_gate_fn, &gate);
  weft_var *w[1] = {v};
  gd.writes = w;
  gd.num_writes = 1;
  size_t gn;
  cr_assert_eq(weft_graph_add(g, &gd, &gn), 0);
  for (int i = 0; i < N; i++) {
    weft_op_desc d = te_desc(tag_fn, &own[i]);
    d.writes = w;
    d.num_writes = 1;
    cr_assert_eq(weft_graph_add(g, &d, NULL), 0);
  }
  bool naive = !strcmp(kind, "naive");
  if (!naive) {
    weft_graph_arg a1[N];
    for (int i = 0; i < N; i++)
      a1[i] = (weft_graph_arg){(size_t)i + 1, &l1[i]};
    cr_assert_eq(weft_graph_launch_args(g, a1, N), 0);
    cr_assert(TU_WAIT_UNTIL(atomic_load(&gate.started), TU_DEADLINE_S));
  } else {
    atomic_store(&gate.open, 1); /* the naive launch runs on this thread, to its end */
    weft_graph_arg a1[N];
    for (int i = 0; i < N; i++)
      a1[i] = (weft_graph_arg){(size_t)i + 1, &l1[i]};
    cr_assert_eq(weft_graph_launch_args(g, a1, N), 0);
  }
  weft_graph_arg a2[N];
  for (int i = 0; i < N; i++) /* named in another order than the nodes' */
    a2[i] = (weft_graph_arg){(size_t)(N - i), &l2[N - 1 - i]};
  cr_assert_eq(weft_graph_launch_args(g, a2, N), 0, "a launch while one runs: queued");
  tag mark = {&log, 9, 0};
  cr_assert_eq(te_push(t.eng, tag_fn, &mark, TE_NONE, TE_V(v), 0), 0);
  cr_assert_eq(weft_graph_launch(g), 0);
  if (!naive) {
    cr_assert_eq(weft_graph_destroy(g), WEFT_EBUSY, "destroy while launches are queued");
    cr_assert_eq(weft_graph_add(g, &gd, NULL), WEFT_EBUSY, "an add while launches are queued");
    cr_assert_eq(weft_graph_edge(g, 0, 1), WEFT_EBUSY);
    atomic_store(&gate.open, 1);
  }
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&gate.timed_out), 0);
  int want[4 * N + 1], k = 0;
  for (int i = 0; i < N; i++)
    want[k++] = 1000 + i;
  for (int i = 0; i < N; i++)
    want[k++] = 2000 + i;
  want[k++] = 9000;
  for (int i = 0; i < N; i++)
    want[k++] = i;
  cr_assert_eq(atomic_load(&log.n), 3 * N + 1, "%s, %d threads: %d entries", kind, threads,
               atomic_load(&log.n));
  for (int i = 0; i < 3 * N + 1; i++)
    cr_assert_eq(log.e[i], want[i], "%s, %d threads: entry %d is %d, want %d", kind, threads, i,
                 log.e[i], want[i]);
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
}

Test(graph_queue, queued_launches_keep_their_order_with_pushes_and_their_arguments,
     .init = setup, .timeout = TU_TIMEOUT(60))
{
  for (int threads = 1; threads <= 2; threads++)
    order_with_pushes("threaded", threads);
  order_with_pushes("naive", 1);
  tu_assert_no_errors();
}

/* -------------------------------------------- several threads at once */

/* NT threads each launch the chain graph EACH times with every node's
 * argument its own (launch id), while another thread pushes on the var.
 * Every launch runs whole and alone: its N entries in a row, in node
 * order; every launch once; the pushes between whole launches. */
typedef struct qthread {
  weft_graph *g;
  qlog *log;
  int id, each, n;
  tag *tags; /* [each * n] */
} qthread;

static void *launch_many(void *arg)
{
  qthread *q = arg;
  weft_graph_arg *a = malloc(sizeof *a * (size_t)q->n);
  TU_CHECK(a != NULL, "no memory");
  for (int j = 0; a && j < q->each; j++) {
    for (int i = 0; i < q->n; i++) {
      tag *t = &q->tags[j * q->n + i];
      *t = (tag){q->log, 1 + q->id * q->each + j, i};
      a[i] = (weft_graph_arg){(size_t)i, t};
    }
    int rc = weft_graph_launch_args(q->g, a, (size_t)q->n);
    TU_CHECK(rc == 0, "weft_graph_launch_args = %d", rc);
    if (j % 7 == 3)
      sched_yield();
  }
  free(a); /* the launches copied what they need */
  return NULL;
}

typedef struct qpusher {
  weft_engine *eng;
  weft_var *v;
  qlog *log;
  int n;
  tag mark;
} qpusher;

static void *push_marks(void *arg)
{
  qpusher *p = arg;
  p->mark = (tag){p->log, 0, 999};
  for (int i = 0; i < p->n; i++) {
    int rc = te_push(p->eng, tag_fn, &p->mark, TE_NONE, TE_V(p->v), 0);
    TU_CHECK(rc == 0, "push = %d", rc);
  }
  return NULL;
}

static void launches_from_threads(int threads, bool vars, int max_inflight)
{
  te t = te_new("threaded", threads, max_inflight);
  static qlog log;
  memset(&log, 0, sizeof log);
  weft_var *v = te_var(t.eng);
  enum { NT = 4, EACH = 30, N = 6, PUSHES = 40 };
  tag base[N];
  for (int i = 0; i < N; i++)
    base[i] = (tag){&log, 0, i};
  weft_graph *g;
  if (vars) {
    g = chain_graph(t.eng, v, base, N);
  } else { /* explicit edges only: the graph has no var */
    cr_assert_eq(weft_graph_create(t.eng, &g), 0);
    for (int i = 0; i < N; i++) {
      weft_op_desc d = te_desc(tag_fn, &base[i]);
      cr_assert_eq(weft_graph_add(g, &d, NULL), 0);
      if (i)
        cr_assert_eq(weft_graph_edge(g, (size_t)i - 1, (size_t)i), 0);
    }
  }
  static tag tags[NT][EACH * N];
  qthread q[NT];
  pthread_t th[NT + 1];
  for (int k = 0; k < NT; k++) {
    q[k] = (qthread){g, &log, k, EACH, N, tags[k]};
    cr_assert_eq(pthread_create(&th[k], NULL, launch_many, &q[k]), 0);
  }
  qpusher p = {t.eng, v, &log, vars ? PUSHES : 0, {0}};
  cr_assert_eq(pthread_create(&th[NT], NULL, push_marks, &p), 0);
  for (int k = 0; k <= NT; k++)
    te_join(th[k]);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  int total = NT * EACH * N + p.n;
  cr_assert_eq(atomic_load(&log.n), total, "%d threads, vars %d: %d entries of %d", threads, vars,
               atomic_load(&log.n), total);
  static char seen[NT * EACH + 1];
  memset(seen, 0, sizeof seen);
  for (int i = 0; i < total;) {
    int e = log.e[i];
    if (e == 999) { /* a push: between two launches */
      i++;
      continue;
    }
    int launch = e / 1000;
    cr_assert(launch >= 1 && launch <= NT * EACH && !seen[launch],
              "%d threads: entry %d (%d) starts a launch twice or from nowhere", threads, i, e);
    seen[launch] = 1;
    for (int n = 0; n < N; n++)
      cr_assert_eq(log.e[i + n], launch * 1000 + n,
                   "%d threads, vars %d: launch %d's node %d is entry %d (%d): launches overlap",
                   threads, vars, launch, n, i + n, log.e[i + n]);
    i += N;
  }
  for (int k = 0; k < NT; k++) /* each thread's launches in the order it made them */
    for (int j = 1; j < EACH; j++) {
      int a = -1, b = -1;
      for (int i = 0; i < total; i++) {
        if (log.e[i] == (1 + k * EACH + j - 1) * 1000)
          a = i;
        if (log.e[i] == (1 + k * EACH + j) * 1000)
          b = i;
      }
      cr_assert(a >= 0 && b > a, "thread %d's launch %d ran before its launch %d", k, j, j - 1);
    }
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
}

Test(graph_queue, launches_from_several_threads_run_whole_one_at_a_time, .init = setup,
     .timeout = TU_TIMEOUT(120))
{
  for (int threads = 1; threads <= 4; threads *= 2) {
    launches_from_threads(threads, true, 0);
    launches_from_threads(threads, false, 0);
  }
  /* with max_inflight: each launch takes a place, queued ones too */
  launches_from_threads(2, true, 2);
  launches_from_threads(2, false, 1);
  tu_assert_no_errors();
}

/* ---------------------------------------------- a node launches its own */

typedef struct self_launch {
  weft_graph *g;
  atomic_int runs;
  int max;
} self_launch;

static int relaunch_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  self_launch *s = arg;
  int k = atomic_fetch_add(&s->runs, 1) + 1;
  if (k < s->max) {
    int r = weft_graph_launch(s->g); /* its own graph, which runs: queued behind it */
    TU_CHECK(r == 0, "a launch from inside the graph's own node = %d", r);
  }
  return 0;
}

Test(graph_queue, a_node_that_launches_its_own_graph_queues_behind_it, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  const char *kinds[] = {"threaded", "naive"};
  for (int kk = 0; kk < 2; kk++) {
    for (int prop = 0; prop < 2; prop++) { /* a CPU node, then one run inline */
      te t = te_new(kinds[kk], 2, 0);
      weft_var *v = te_var(t.eng);
      self_launch s = {NULL, 0, 50};
      atomic_int after = 0;
      cr_assert_eq(weft_graph_create(t.eng, &s.g), 0);
      weft_op_desc d = te_desc(relaunch_fn, &s);
      weft_var *w[1] = {v};
      d.writes = w;
      d.num_writes = 1;
      d.prop = prop ? WEFT_PROP_ASYNC : WEFT_PROP_NORMAL;
      cr_assert_eq(weft_graph_add(s.g, &d, NULL), 0);
      weft_op_desc c = te_desc(te_count_fn, &after);
      c.reads = w;
      c.num_reads = 1;
      cr_assert_eq(weft_graph_add(s.g, &c, NULL), 0);
      cr_assert_eq(weft_graph_launch(s.g), 0);
      cr_assert_eq(weft_wait_all(t.eng), 0);
      cr_assert_eq(atomic_load(&s.runs), s.max, "%s, prop %d: %d launches ran", kinds[kk], prop,
                   atomic_load(&s.runs));
      cr_assert_eq(atomic_load(&after), s.max);
      cr_assert_eq(weft_graph_destroy(s.g), 0);
      cr_assert_eq(te_free(&t), 0);
    }
  }
  tu_assert_no_errors();
}

/* ------------------------------------------------------ bad arguments */

Test(graph_queue, bad_arguments_are_refused_and_nothing_runs, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  const char *kinds[] = {"threaded", "naive"};
  for (int kk = 0; kk < 2; kk++) {
    te t = te_new(kinds[kk], 2, 0);
    static qlog log;
    memset(&log, 0, sizeof log);
    weft_var *v = te_var(t.eng);
    tag base[3] = {{&log, 0, 0}, {&log, 0, 1}, {&log, 0, 2}};
    weft_graph *g = chain_graph(t.eng, v, base, 3);
    weft_op_desc sd = te_desc(te_count_fn, NULL); /* counts into its stored copy */
    atomic_int data = 0;
    size_t stored;
    cr_assert_eq(weft_graph_add_arg(g, &sd, &data, sizeof data, NULL, &stored), 0);
    tag other = {&log, 7, 0};
    weft_graph_arg out_of_range = {4, &other};
    weft_graph_arg twice[2] = {{1, &other}, {1, &other}};
    weft_graph_arg on_stored = {stored, &other};
    cr_assert_eq(weft_graph_launch_args(g, NULL, 1), WEFT_EINVAL, "NULL args");
    cr_assert_eq(weft_graph_launch_args(g, twice, SIZE_MAX / 8), WEFT_EINVAL, "more than nodes");
    cr_assert_eq(weft_graph_launch_args(g, &out_of_range, 1), WEFT_EINVAL, "node 4 of 4");
    cr_assert_eq(weft_graph_launch_args(g, twice, 2), WEFT_EINVAL, "node 1 twice");
    cr_assert_eq(weft_graph_launch_args(g, &on_stored, 1), WEFT_EINVAL, "a stored argument");
    cr_assert_eq(weft_graph_launch_args(NULL, &on_stored, 1), WEFT_EINVAL);
    cr_assert_eq(weft_wait_all(t.eng), 0);
    cr_assert_eq(atomic_load(&log.n), 0, "%s: a refused launch ran %d nodes", kinds[kk],
                 atomic_load(&log.n));
    /* NULL args with none named is a plain launch; then one that names
     * node 2 alone: the others keep theirs. */
    cr_assert_eq(weft_graph_launch_args(g, NULL, 0), 0);
    weft_graph_arg one = {2, &other};
    cr_assert_eq(weft_graph_launch_args(g, &one, 1), 0);
    cr_assert_eq(weft_graph_launch(g), 0);
    cr_assert_eq(weft_wait_all(t.eng), 0);
    int want[9] = {0, 1, 2, 0, 1, 7000, 0, 1, 2};
    cr_assert_eq(atomic_load(&log.n), 9);
    for (int i = 0; i < 9; i++)
      cr_assert_eq(log.e[i], want[i], "%s: entry %d is %d, want %d", kinds[kk], i, log.e[i],
                   want[i]);
    cr_assert_eq(weft_graph_destroy(g), 0);
    cr_assert_eq(te_free(&t), 0);
  }
  tu_assert_no_errors();
}
