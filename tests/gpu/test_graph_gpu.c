/* SPDX-License-Identifier: MIT */
/*
 * Replays that stay on the device (src/graph/graph.h, WEFT_GRAPH_DEVICE), on
 * the host backend's emulated devices: an edge between two GPU nodes of one
 * device is a device-side wait, so a node's GPU successors launch as soon as
 * it launched, not when the host saw its work complete; on its stream or on
 * another one; past WEFT_OPR_DEV_WAITS such edges through the host; a CPU
 * successor still waits for the work; a failed fn releases nothing early; a
 * device error fails what waited on the device; and many launches of graphs
 * whose successors complete before their predecessors are retired.
 */
#include <stdatomic.h>
#include <string.h>

#include "../deps/engine_util.h"
#include "common/tunables.h"
#include "gpu/gpu.h"
#include "gpu/host.h"
#include "graph/graph.h" /* white-box: a graph's runs, whether it is swept */
#include "host_engine.h"

static weft_graph *end_capture(weft_engine *e)
{
  weft_graph *g = NULL;
  cr_assert_eq(weft_graph_end_capture(e, &g), 0);
  cr_assert_not_null(g);
  return g;
}

/* ------------------------------------------ a chain launches at once */

/* A replayed chain of GPU writers of one var: the first one's work is held
 * until every other one was launched, which only device-side waits allow
 * (a host edge launches a successor after its predecessor's work). The
 * work items must still run in chain order. */
enum { CHAIN = 24 };

typedef struct gchain {
  atomic_int launched; /* fns run this launch */
  atomic_int next;     /* work items run this launch, in order */
  atomic_int bad;
  void *streams[CHAIN];
} gchain;

typedef struct glink {
  gchain *c;
  int index;
} glink;

static void glink_item(void *arg)
{
  glink *l = arg;
  if (l->index == 0)
    TU_CHECK(TU_WAIT_UNTIL(atomic_load(&l->c->launched) == CHAIN, TU_DEADLINE_S),
             "only %d of %d GPU nodes launched while the first one's work was pending "
             "(host round trips)", atomic_load(&l->c->launched), CHAIN);
  if (atomic_fetch_add(&l->c->next, 1) != l->index)
    atomic_fetch_add(&l->c->bad, 1);
}

static int glink_fn(const weft_run_ctx *rc, void *arg)
{
  glink *l = arg;
  l->c->streams[l->index] = rc->stream;
  atomic_fetch_add(&l->c->launched, 1);
  return weft_gpu_host_enqueue(rc->stream, glink_item, arg);
}

Test(graph_gpu, a_replayed_chain_waits_on_the_device, .init = setup, .timeout = TU_TIMEOUT(60))
{
  te t = te_new(NULL, 2, 0);
  weft_var *v = te_var(t.eng);
  gchain c;
  glink l[CHAIN];
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  for (int i = 0; i < CHAIN; i++) {
    l[i] = (glink){&c, i};
    cr_assert_eq(push_rw(t.eng, gpu_desc(glink_fn, &l[i], 0), NULL, v), 0);
  }
  weft_graph *g = end_capture(t.eng);
  for (int r = 0; r < 5; r++) {
    atomic_init(&c.launched, 0);
    atomic_init(&c.next, 0);
    atomic_init(&c.bad, 0);
    cr_assert_eq(weft_graph_launch(g), 0);
    cr_assert_eq(weft_var_wait(t.eng, v), 0);
    cr_assert_eq(atomic_load(&c.next), CHAIN, "launch %d", r);
    cr_assert_eq(atomic_load(&c.bad), 0, "launch %d: a node's work ran out of order", r);
    for (int i = 1; i < CHAIN; i++) /* a chain follows its predecessor's stream */
      cr_assert_eq(c.streams[i], c.streams[0], "launch %d: node %d left the chain's stream", r,
                   i);
  }
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* ------------------------- a fan-out waits on the device, across streams */

/* A writes a; B and C read it on the same device, each writing its own
 * var. A's work is held until B and C both launched; B and C spread over
 * two streams (one follows A, the other does not), and each one's work must
 * see A's. Then D, a GPU reader of b and c, and E, a CPU reader of a. */
typedef struct fan {
  atomic_int launched; /* B's and C's fns */
  atomic_int a_done, seen_bad, cpu_early;
  atomic_int d_seen;   /* D's work saw B's and C's */
  atomic_int b_done, c_done;
  void *stream[3];
} fan;

static void a_item(void *arg)
{
  fan *f = arg;
  TU_CHECK(TU_WAIT_UNTIL(atomic_load(&f->launched) == 2, TU_DEADLINE_S),
           "B and C were not both launched while A's work was pending");
  tu_sleep_us(1000);
  atomic_store(&f->a_done, 1);
}

static int a_fn(const weft_run_ctx *rc, void *arg)
{
  ((fan *)arg)->stream[0] = rc->stream;
  return weft_gpu_host_enqueue(rc->stream, a_item, arg);
}

static void b_item(void *arg)
{
  fan *f = arg;
  if (!atomic_load(&f->a_done))
    atomic_fetch_add(&f->seen_bad, 1);
  atomic_store(&f->b_done, 1);
}

static void c_item(void *arg)
{
  fan *f = arg;
  if (!atomic_load(&f->a_done))
    atomic_fetch_add(&f->seen_bad, 1);
  atomic_store(&f->c_done, 1);
}

static int b_fn(const weft_run_ctx *rc, void *arg)
{
  fan *f = arg;
  f->stream[1] = rc->stream;
  atomic_fetch_add(&f->launched, 1);
  return weft_gpu_host_enqueue(rc->stream, b_item, arg);
}

static int c_fn(const weft_run_ctx *rc, void *arg)
{
  fan *f = arg;
  f->stream[2] = rc->stream;
  atomic_fetch_add(&f->launched, 1);
  return weft_gpu_host_enqueue(rc->stream, c_item, arg);
}

static void d_item(void *arg)
{
  fan *f = arg;
  atomic_store(&f->d_seen, atomic_load(&f->b_done) && atomic_load(&f->c_done));
}

static int d_fn(const weft_run_ctx *rc, void *arg)
{
  return weft_gpu_host_enqueue(rc->stream, d_item, arg);
}

static int e_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  fan *f = arg;
  if (!atomic_load(&f->a_done))
    atomic_fetch_add(&f->cpu_early, 1);
  return 0;
}

Test(graph_gpu, a_fan_out_waits_on_the_device_across_streams, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  setenv("WEFT_GPU_WORKERS", "2", 1);
  te t = te_new(NULL, 2, 0);
  weft_var *a = te_var(t.eng), *b = te_var(t.eng), *c = te_var(t.eng), *d = te_var(t.eng),
           *e = te_var(t.eng);
  fan f;
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  cr_assert_eq(push_rw(t.eng, gpu_desc(a_fn, &f, 0), NULL, a), 0);
  cr_assert_eq(push_rw(t.eng, gpu_desc(b_fn, &f, 0), a, b), 0);
  cr_assert_eq(push_rw(t.eng, gpu_desc(c_fn, &f, 0), a, c), 0);
  weft_op_desc dd = gpu_desc(d_fn, &f, 0);
  weft_var *dr[2] = {b, c};
  dd.reads = dr;
  dd.num_reads = 2;
  dd.writes = &d;
  dd.num_writes = 1;
  cr_assert_eq(weft_push(t.eng, &dd), 0);
  cr_assert_eq(push_rw(t.eng, te_desc(e_fn, &f), a, e), 0);
  weft_graph *g = end_capture(t.eng);
  for (int r = 0; r < 10; r++) {
    memset(f.stream, 0, sizeof f.stream);
    atomic_init(&f.launched, 0);
    atomic_init(&f.a_done, 0);
    atomic_init(&f.seen_bad, 0);
    atomic_init(&f.cpu_early, 0);
    atomic_init(&f.d_seen, 0);
    atomic_init(&f.b_done, 0);
    atomic_init(&f.c_done, 0);
    cr_assert_eq(weft_graph_launch(g), 0);
    cr_assert_eq(weft_wait_all(t.eng), 0);
    cr_assert_eq(atomic_load(&f.seen_bad), 0, "launch %d: B's or C's work ran before A's", r);
    cr_assert_eq(atomic_load(&f.cpu_early), 0, "launch %d: the CPU reader ran before A's work",
                 r);
    cr_assert_eq(atomic_load(&f.d_seen), 1, "launch %d: D's work ran before B's and C's", r);
    cr_assert_neq(f.stream[1], f.stream[2], "launch %d: the fan-out stayed on one stream", r);
  }
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* ------------------------------------- more device edges than waits */

/* A GPU joiner of WEFT_OPR_DEV_WAITS + 3 GPU writers on two streams: its
 * first WEFT_OPR_DEV_WAITS edges wait on the device, the others on the
 * host; its work sees every writer's. */
enum { NJOIN = WEFT_OPR_DEV_WAITS + 3 };

typedef struct join {
  atomic_int done[NJOIN];
  atomic_int seen; /* writers the joiner's work saw done */
} join;

typedef struct jw {
  join *j;
  int index;
} jw;

static void jw_item(void *arg)
{
  jw *w = arg;
  tu_sleep_us(200 * (unsigned)(w->index % 3));
  atomic_store(&w->j->done[w->index], 1);
}

static int jw_fn(const weft_run_ctx *rc, void *arg)
{
  return weft_gpu_host_enqueue(rc->stream, jw_item, arg);
}

static void joiner_item(void *arg)
{
  join *j = arg;
  int n = 0;
  for (int i = 0; i < NJOIN; i++)
    n += atomic_load(&j->done[i]);
  atomic_store(&j->seen, n);
}

static int joiner_fn(const weft_run_ctx *rc, void *arg)
{
  return weft_gpu_host_enqueue(rc->stream, joiner_item, arg);
}

Test(graph_gpu, a_joiner_of_more_writers_than_device_waits, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  setenv("WEFT_GPU_WORKERS", "2", 1);
  te t = te_new(NULL, 2, 0);
  weft_var *v[NJOIN], *out = te_var(t.eng);
  join j;
  jw w[NJOIN];
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  for (int i = 0; i < NJOIN; i++) {
    v[i] = te_var(t.eng);
    w[i] = (jw){&j, i};
    cr_assert_eq(push_rw(t.eng, gpu_desc(jw_fn, &w[i], 0), NULL, v[i]), 0);
  }
  weft_op_desc d = gpu_desc(joiner_fn, &j, 0);
  d.reads = v;
  d.num_reads = NJOIN;
  d.writes = &out;
  d.num_writes = 1;
  cr_assert_eq(weft_push(t.eng, &d), 0);
  weft_graph *g = end_capture(t.eng);
  for (int r = 0; r < 20; r++) {
    for (int i = 0; i < NJOIN; i++)
      atomic_init(&j.done[i], 0);
    atomic_init(&j.seen, -1);
    cr_assert_eq(weft_graph_launch(g), 0);
    cr_assert_eq(weft_var_wait(t.eng, out), 0);
    cr_assert_eq(atomic_load(&j.seen), NJOIN, "launch %d: the joiner's work saw %d of %d writers",
                 r, atomic_load(&j.seen), NJOIN);
  }
  cr_assert_eq(weft_graph_destroy(g), 0);
  for (int i = 0; i < NJOIN; i++)
    cr_assert_eq(weft_var_delete(t.eng, v[i]), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* ------------------------------------------------------------- failures */

static atomic_int first_runs, second_runs;

static int fail_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  (void)arg;
  atomic_fetch_add(&first_runs, 1);
  return 13;
}

static int second_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  (void)arg;
  atomic_fetch_add(&second_runs, 1);
  return 0;
}

/* A GPU node whose fn fails releases nothing at its launch: its GPU reader
 * is skipped at every launch, and weft_wait_all reports the failure. */
Test(graph_gpu, a_failed_fn_releases_no_device_successor, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  te t = te_new(NULL, 2, 0);
  weft_var *a = te_var(t.eng), *b = te_var(t.eng);
  atomic_store(&first_runs, 0);
  atomic_store(&second_runs, 0);
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  cr_assert_eq(push_rw(t.eng, gpu_desc(fail_fn, NULL, 0), NULL, a), 0);
  cr_assert_eq(push_rw(t.eng, gpu_desc(second_fn, NULL, 0), a, b), 0);
  weft_graph *g = end_capture(t.eng);
  for (int r = 0; r < 4; r++) {
    cr_assert_eq(weft_graph_launch(g), 0);
    /* (weft_wait_all clears every var's failure: the var first.) */
    cr_assert_eq(weft_var_wait(t.eng, b), 13, "launch %d: the skipped reader's var", r);
    cr_assert_eq(weft_wait_all(t.eng), 13, "launch %d", r);
    cr_assert_eq(atomic_load(&first_runs), r + 1);
    cr_assert_eq(atomic_load(&second_runs), 0, "launch %d: the reader of the failed var ran", r);
  }
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

static void late_item(void *arg)
{
  atomic_store((atomic_int *)arg, 1);
}

static int inject_fn(const weft_run_ctx *rc, void *arg)
{
  (void)arg;
  atomic_fetch_add(&first_runs, 1);
  return weft_gpu_host_test_inject_error(rc->stream);
}

static int late_fn(const weft_run_ctx *rc, void *arg)
{
  atomic_fetch_add(&second_runs, 1);
  return weft_gpu_host_enqueue(rc->stream, late_item, arg);
}

/* The device fails under a node after its launch released its successor
 * (which waits for it on the device): the successor's work never runs,
 * both fail with WEFT_EDEVICE, and the CPU reader of the last var is
 * skipped. */
Test(graph_gpu, a_device_error_fails_what_waited_on_the_device, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  te t = te_new(NULL, 2, 0);
  weft_var *a = te_var(t.eng), *b = te_var(t.eng), *c = te_var(t.eng);
  atomic_store(&first_runs, 0);
  atomic_store(&second_runs, 0);
  atomic_int late_ran, cpu_ran;
  atomic_init(&late_ran, 0);
  atomic_init(&cpu_ran, 0);
  tu_capture cap;
  char err[4096];
  tu_capture_begin(&cap);
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  cr_assert_eq(push_rw(t.eng, gpu_desc(inject_fn, NULL, 0), NULL, a), 0);
  cr_assert_eq(push_rw(t.eng, gpu_desc(late_fn, &late_ran, 0), a, b), 0);
  cr_assert_eq(push_rw(t.eng, te_desc(te_count_fn, &cpu_ran), b, c), 0);
  weft_graph *g = end_capture(t.eng);
  cr_assert_eq(weft_graph_launch(g), 0);
  /* (weft_wait_all clears every var's failure: the vars first.) */
  cr_assert_eq(weft_var_wait(t.eng, c), WEFT_EDEVICE);
  cr_assert_eq(weft_var_wait(t.eng, b), WEFT_EDEVICE);
  cr_assert_eq(weft_wait_all(t.eng), WEFT_EDEVICE);
  tu_capture_end(&cap, err, sizeof err);
  cr_assert_eq(atomic_load(&first_runs), 1);
  cr_assert_leq(atomic_load(&second_runs), 1);
  cr_assert_eq(atomic_load(&late_ran), 0, "the successor's work ran after a device error");
  cr_assert_eq(atomic_load(&cpu_ran), 0, "the CPU reader of a failed var ran");
  cr_assert(strstr(err, "weft: "), "no log line for the device error: \"%s\"", err);
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* ------------------------------------------------ many launches, jitter */

/* A diamond per var pair, replayed many times on two streams with jitter:
 * successors often complete before the predecessor they waited for on the
 * device is retired (its lane is swept later), so a node with device edges
 * must count off the launch as a sink does, or a launch ends (and the next
 * one begins) under its finish. Every node's work runs once per launch, in
 * edge order (a sequence number per var). */
enum { DIAMONDS = 6, LAUNCHES = 150 };

typedef struct dnode {
  atomic_int *seq;  /* the diamond's step counter */
  int step;         /* what it must see before its work: 0, 1 (B, C: either), 3 */
  atomic_int *bad, *runs;
} dnode;

static void dnode_item(void *arg)
{
  dnode *n = arg;
  int s = atomic_fetch_add(n->seq, 1);
  bool ok = n->step == 1 ? (s == 1 || s == 2) : s == n->step;
  if (!ok)
    atomic_fetch_add(n->bad, 1);
  atomic_fetch_add(n->runs, 1);
}

static int dnode_fn(const weft_run_ctx *rc, void *arg)
{
  return weft_gpu_host_enqueue(rc->stream, dnode_item, arg);
}

static int cpu_check_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  dnode *n = arg;
  if (atomic_load(n->seq) != 4)
    atomic_fetch_add(n->bad, 1);
  atomic_fetch_add(n->runs, 1);
  return 0;
}

Test(graph_gpu, many_launches_of_diamonds_on_two_streams, .init = setup,
     .timeout = TU_TIMEOUT(120))
{
  setenv("WEFT_GPU_WORKERS", "2", 1);
  weft_gpu_test_host_jitter(30);
  te t = te_new(NULL, 2, 0);
  atomic_int seq[DIAMONDS], bad, runs;
  atomic_init(&bad, 0);
  atomic_init(&runs, 0);
  dnode nodes[DIAMONDS][5];
  weft_var *vars[DIAMONDS][5];
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  for (int k = 0; k < DIAMONDS; k++) {
    atomic_init(&seq[k], 0);
    for (int i = 0; i < 5; i++)
      vars[k][i] = te_var(t.eng);
    static const int step[5] = {0, 1, 1, 3, 4};
    for (int i = 0; i < 5; i++)
      nodes[k][i] = (dnode){&seq[k], step[i], &bad, &runs};
    weft_var **v = vars[k];
    cr_assert_eq(push_rw(t.eng, gpu_desc(dnode_fn, &nodes[k][0], 0), NULL, v[0]), 0);
    cr_assert_eq(push_rw(t.eng, gpu_desc(dnode_fn, &nodes[k][1], 0), v[0], v[1]), 0);
    cr_assert_eq(push_rw(t.eng, gpu_desc(dnode_fn, &nodes[k][2], 0), v[0], v[2]), 0);
    weft_op_desc d = gpu_desc(dnode_fn, &nodes[k][3], 0);
    weft_var *r[2] = {v[1], v[2]};
    d.reads = r;
    d.num_reads = 2;
    d.writes = &v[3];
    d.num_writes = 1;
    cr_assert_eq(weft_push(t.eng, &d), 0);
    cr_assert_eq(push_rw(t.eng, te_desc(cpu_check_fn, &nodes[k][4]), v[3], v[4]), 0);
  }
  weft_graph *g = end_capture(t.eng);
  for (int l = 0; l < LAUNCHES; l++) {
    /* The launch before ended (weft_wait_all below): its work is done. */
    for (int k = 0; k < DIAMONDS; k++)
      atomic_store(&seq[k], 0);
    cr_assert_eq(weft_graph_launch(g), 0);
    cr_assert_eq(weft_wait_all(t.eng), 0, "launch %d", l);
    cr_assert_eq(atomic_load(&runs), (l + 1) * DIAMONDS * 5, "launch %d: runs", l);
    cr_assert_eq(atomic_load(&bad), 0, "launch %d: a node's work ran out of edge order", l);
  }
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* Launches back to back, without a wait between them: a launch begins as
 * soon as the one before has ended (weft_graph_launch waits for it), so an
 * end that came before a node with device edges finished would show as a
 * node run twice in one launch or a count off a counter reset under it
 * (assertions in the library). */
Test(graph_gpu, back_to_back_launches_of_a_fan_out, .init = setup, .timeout = TU_TIMEOUT(120))
{
  setenv("WEFT_GPU_WORKERS", "3", 1);
  weft_gpu_test_host_jitter(20);
  te t = te_new(NULL, 2, 0);
  weft_var *a = te_var(t.eng), *s[4];
  atomic_int count;
  atomic_init(&count, 0);
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  cr_assert_eq(push_rw(t.eng, gpu_desc(te_count_fn, &count, 0), NULL, a), 0);
  for (int i = 0; i < 4; i++) {
    s[i] = te_var(t.eng);
    cr_assert_eq(push_rw(t.eng, gpu_desc(te_count_fn, &count, 0), a, s[i]), 0);
  }
  weft_graph *g = end_capture(t.eng);
  enum { N = 300 };
  for (int l = 0; l < N; l++) {
    int rc;
    while ((rc = weft_graph_launch(g)) == WEFT_EBUSY)
      tu_sleep_us(10);
    cr_assert_eq(rc, 0, "launch %d", l);
  }
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&count), N * 5);
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* ------------------------------------------------------------ GPU runs */

/* A log of work items, to check order and count (stream threads append). */
typedef struct wlog {
  atomic_int n;
  int item[4096];
  void *stream[4096];
} wlog;

typedef struct rnode {
  wlog *log;
  int id;
  atomic_int *calls; /* fn calls */
  atomic_int fail_first; /* fn returns 7 while > 0 (counting down) */
  bool inject;       /* fn injects a device error instead of an item */
} rnode;

static void rnode_item(void *arg)
{
  rnode *r = arg;
  int k = atomic_fetch_add(&r->log->n, 1);
  if (k < 4096)
    r->log->item[k] = r->id;
}

static int rnode_fn(const weft_run_ctx *rc, void *arg)
{
  rnode *r = arg;
  atomic_fetch_add(r->calls, 1);
  if (atomic_load(&r->fail_first) > 0) {
    atomic_fetch_sub(&r->fail_first, 1);
    return 7;
  }
  if (r->inject)
    return weft_gpu_host_test_inject_error(rc->stream);
  return weft_gpu_host_enqueue(rc->stream, rnode_item, arg);
}

static weft_op_desc run_desc(rnode *r, unsigned flags)
{
  weft_op_desc d = gpu_desc(rnode_fn, r, 0);
  d.flags = WEFT_OP_GPU_GRAPH | flags;
  return d;
}

static void rnode_init(rnode *r, wlog *log, int id, atomic_int *calls)
{
  r->log = log;
  r->id = id;
  r->calls = calls;
  atomic_init(&r->fail_first, 0);
  r->inject = false;
}

static int cpu_log_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  rnode_item(arg);
  return 0;
}

/* A chain of WEFT_OP_GPU_GRAPH operators, then a GPU operator without the
 * flag (outside the run: it waits for the run on the device) and a CPU
 * reader: the run's fns are called once, at the first launch (recorded),
 * and every launch runs its work once, in order, before the others'. */
Test(graph_gpu, a_run_is_recorded_once_and_replayed, .init = setup, .timeout = TU_TIMEOUT(60))
{
  weft_gpu_test_host_jitter(20);
  te t = te_new(NULL, 2, 0);
  enum { R = 6, L = 12 };
  weft_var *v = te_var(t.eng), *u = te_var(t.eng), *z = te_var(t.eng);
  static wlog log;
  atomic_int calls, other_calls;
  atomic_init(&calls, 0);
  atomic_init(&other_calls, 0);
  rnode r[R + 2];
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  for (int i = 0; i < R; i++) {
    rnode_init(&r[i], &log, i, &calls);
    cr_assert_eq(push_rw(t.eng, run_desc(&r[i], 0), NULL, v), 0);
  }
  rnode_init(&r[R], &log, R, &other_calls);
  cr_assert_eq(push_rw(t.eng, gpu_desc(rnode_fn, &r[R], 0), v, u), 0); /* no flag */
  rnode_init(&r[R + 1], &log, R + 1, &other_calls);
  cr_assert_eq(push_rw(t.eng, te_desc(cpu_log_fn, &r[R + 1]), u, z), 0);
  weft_graph *g = end_capture(t.eng);
  cr_assert_eq(g->nruns, 1, "the chain is one run");
  cr_assert_eq(g->runs[0].n, R);
  for (int l = 0; l < L; l++) {
    atomic_store(&log.n, 0);
    cr_assert_eq(weft_graph_launch(g), 0);
    cr_assert_eq(weft_var_wait(t.eng, z), 0, "launch %d", l);
    cr_assert_eq(atomic_load(&log.n), R + 2, "launch %d: work items", l);
    for (int i = 0; i < R + 2; i++)
      cr_assert_eq(log.item[i], i, "launch %d: item %d is node %d's", l, i, log.item[i]);
    cr_assert_eq(atomic_load(&calls), R, "launch %d: the run's fns were called again", l);
    cr_assert_eq(atomic_load(&other_calls), l + 1);
  }
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

static int fail_var_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  (void)arg;
  return 13;
}

/* A launch in which a var of the run is failed runs it node by node: with
 * WEFT_OP_NOSKIP the fns are called again (each skipped or not as usual),
 * without it both are skipped and their vars fail; the next launches with
 * no failed var replay the record again. */
Test(graph_gpu, a_failed_var_runs_the_run_node_by_node, .init = setup, .timeout = TU_TIMEOUT(60))
{
  te t = te_new(NULL, 2, 0);
  weft_var *x = te_var(t.eng), *a = te_var(t.eng), *b = te_var(t.eng);
  static wlog log;
  atomic_int calls;
  atomic_init(&calls, 0);
  rnode r[2];
  for (int noskip = 1; noskip >= 0; noskip--) {
    atomic_store(&calls, 0);
    rnode_init(&r[0], &log, 0, &calls);
    rnode_init(&r[1], &log, 1, &calls);
    unsigned f = noskip ? WEFT_OP_NOSKIP : 0;
    cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
    cr_assert_eq(push_rw(t.eng, run_desc(&r[0], f), x, a), 0);
    cr_assert_eq(push_rw(t.eng, run_desc(&r[1], f), a, b), 0);
    weft_graph *g = end_capture(t.eng);
    cr_assert_eq(g->nruns, 1);
    atomic_store(&log.n, 0);
    cr_assert_eq(weft_graph_launch(g), 0); /* recorded */
    cr_assert_eq(weft_var_wait(t.eng, b), 0);
    cr_assert_eq(atomic_load(&calls), 2);
    cr_assert_eq(atomic_load(&log.n), 2);
    cr_assert_eq(push_rw(t.eng, te_desc(fail_var_fn, NULL), NULL, x), 0); /* x fails */
    cr_assert_eq(weft_graph_launch(g), 0);
    cr_assert_eq(weft_var_wait(t.eng, b), noskip ? 0 : 13, "noskip %d", noskip);
    cr_assert_eq(atomic_load(&calls), noskip ? 4 : 2, "noskip %d: fn calls", noskip);
    cr_assert_eq(atomic_load(&log.n), noskip ? 4 : 2, "noskip %d: work items", noskip);
    cr_assert_eq(weft_wait_all(t.eng), 13); /* clears x's failure */
    cr_assert_eq(weft_graph_launch(g), 0); /* replayed again */
    cr_assert_eq(weft_var_wait(t.eng, b), 0);
    cr_assert_eq(atomic_load(&calls), noskip ? 4 : 2, "noskip %d: fn calls after", noskip);
    cr_assert_eq(atomic_load(&log.n), noskip ? 6 : 4, "noskip %d: work items after", noskip);
    cr_assert_eq(weft_graph_destroy(g), 0);
  }
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* A fn that fails while the run is recorded: the run goes node by node,
 * from this launch on (its fns called again, unrecorded), with one line. */
Test(graph_gpu, a_run_that_cannot_be_recorded_goes_node_by_node, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  te t = te_new(NULL, 2, 0);
  weft_var *a = te_var(t.eng), *b = te_var(t.eng), *c = te_var(t.eng);
  static wlog log;
  atomic_int calls;
  atomic_init(&calls, 0);
  rnode r[3];
  for (int i = 0; i < 3; i++)
    rnode_init(&r[i], &log, i, &calls);
  atomic_store(&r[1].fail_first, 1); /* fails while recorded only */
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  cr_assert_eq(push_rw(t.eng, run_desc(&r[0], 0), NULL, a), 0);
  cr_assert_eq(push_rw(t.eng, run_desc(&r[1], 0), a, b), 0);
  cr_assert_eq(push_rw(t.eng, run_desc(&r[2], 0), b, c), 0);
  weft_graph *g = end_capture(t.eng);
  tu_capture cap;
  char err[4096];
  tu_capture_begin(&cap);
  for (int l = 0; l < 3; l++) {
    atomic_store(&log.n, 0);
    cr_assert_eq(weft_graph_launch(g), 0);
    cr_assert_eq(weft_var_wait(t.eng, c), 0, "launch %d", l);
    cr_assert_eq(atomic_load(&log.n), 3, "launch %d: work items", l);
    /* launch 0: 2 fns recorded, then 3 run; then 3 a launch */
    cr_assert_eq(atomic_load(&calls), 5 + 3 * l, "launch %d: fn calls", l);
  }
  tu_capture_end(&cap, err, sizeof err);
  cr_assert(strstr(err, "returned 7 while it was recorded"), "no line for the failed recording: \"%s\"",
            err);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* A device error inside a replayed run fails every operator of the run and
 * what depends on them. */
Test(graph_gpu, a_device_error_fails_the_whole_run, .init = setup, .timeout = TU_TIMEOUT(60))
{
  te t = te_new(NULL, 2, 0);
  weft_var *a = te_var(t.eng), *b = te_var(t.eng), *c = te_var(t.eng), *d = te_var(t.eng);
  static wlog log;
  atomic_int calls, cpu_ran;
  atomic_init(&calls, 0);
  atomic_init(&cpu_ran, 0);
  rnode r[3];
  for (int i = 0; i < 3; i++)
    rnode_init(&r[i], &log, i, &calls);
  r[1].inject = true;
  atomic_store(&log.n, 0);
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  cr_assert_eq(push_rw(t.eng, run_desc(&r[0], 0), NULL, a), 0);
  cr_assert_eq(push_rw(t.eng, run_desc(&r[1], 0), a, b), 0);
  cr_assert_eq(push_rw(t.eng, run_desc(&r[2], 0), b, c), 0);
  cr_assert_eq(push_rw(t.eng, te_desc(te_count_fn, &cpu_ran), c, d), 0);
  weft_graph *g = end_capture(t.eng);
  cr_assert_eq(g->nruns, 1);
  tu_capture cap;
  char err[4096];
  tu_capture_begin(&cap);
  cr_assert_eq(weft_graph_launch(g), 0);
  cr_assert_eq(weft_var_wait(t.eng, d), WEFT_EDEVICE);
  cr_assert_eq(weft_var_wait(t.eng, a), WEFT_EDEVICE, "the run's first operator did not fail");
  cr_assert_eq(weft_var_wait(t.eng, c), WEFT_EDEVICE);
  cr_assert_eq(weft_wait_all(t.eng), WEFT_EDEVICE);
  tu_capture_end(&cap, err, sizeof err);
  cr_assert_eq(atomic_load(&calls), 3, "recorded once");
  cr_assert_eq(atomic_load(&cpu_ran), 0, "the CPU reader of a failed var ran");
  cr_assert_leq(atomic_load(&log.n), 1, "work after the device error ran");
  cr_assert(strstr(err, "weft: "), "no log line for the device error: \"%s\"", err);
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* Runs in a swept graph (one worker, capture order far from the run order)
 * and runs broken up by what may not join them: a node of another device,
 * one without the flag, one with a predecessor before the run. */
Test(graph_gpu, runs_where_they_may_be_and_a_swept_graph, .init = setup, .timeout = TU_TIMEOUT(60))
{
  te t = te_new(NULL, 1, 0);
  enum { CH = 8, LEN = 6 };
  weft_var *cv[CH];
  atomic_int cpu;
  atomic_init(&cpu, 0);
  static wlog log;
  atomic_int calls;
  atomic_init(&calls, 0);
  rnode r[8];
  for (int i = 0; i < 8; i++)
    rnode_init(&r[i], &log, i, &calls);
  weft_var *a = te_var(t.eng), *b = te_var(t.eng), *e = te_var(t.eng), *f = te_var(t.eng);
  for (int k = 0; k < CH; k++)
    cv[k] = te_var(t.eng);
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  /* interleaved CPU chains: one worker sweeps this graph */
  for (int s = 0; s < LEN; s++)
    for (int k = 0; k < CH; k++)
      cr_assert_eq(push_rw(t.eng, te_desc(te_count_fn, &cpu), NULL, cv[k]), 0);
  /* run 1: r0 -> r1 -> r2 (writers of a) */
  for (int i = 0; i < 3; i++)
    cr_assert_eq(push_rw(t.eng, run_desc(&r[i], 0), NULL, a), 0);
  /* r3 reads cv[0] (a CPU predecessor before the run): leads run 2 */
  cr_assert_eq(push_rw(t.eng, run_desc(&r[3], 0), cv[0], b), 0);
  cr_assert_eq(push_rw(t.eng, run_desc(&r[4], 0), b, e), 0);
  /* r5 reads a (run 1's, not run 2's): it may not join run 2 */
  cr_assert_eq(push_rw(t.eng, run_desc(&r[5], 0), a, f), 0);
  /* r6 on device 1: not with r5 */
  weft_op_desc d6 = run_desc(&r[6], 0);
  d6.ctx.id = 1;
  cr_assert_eq(push_rw(t.eng, d6, f, NULL), 0);
  weft_graph *g = end_capture(t.eng);
  cr_assert(g->sweep, "the graph is not swept: the test misses its case");
  cr_assert_eq(g->nruns, 2, "runs: %d", g->nruns);
  cr_assert_eq(g->runs[0].n, 3);
  cr_assert_eq(g->runs[1].n, 2);
  for (int l = 0; l < 20; l++) {
    atomic_store(&log.n, 0);
    cr_assert_eq(weft_graph_launch(g), 0);
    cr_assert_eq(weft_wait_all(t.eng), 0, "launch %d", l);
    cr_assert_eq(atomic_load(&log.n), 7, "launch %d: work items", l);
    cr_assert_eq(atomic_load(&cpu), (l + 1) * CH * LEN);
    cr_assert_eq(atomic_load(&calls), 5 + (l + 1) * 2, "launch %d: fn calls", l);
  }
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* WEFT_OP_GPU_GRAPH on anything but a GPU kernel operator: WEFT_EINVAL. */
Test(graph_gpu, the_flag_on_other_operators_is_refused, .init = setup, .timeout = TU_TIMEOUT(30))
{
  te t = te_new(NULL, 2, 0);
  weft_var *v = te_var(t.eng);
  weft_op_desc d = te_desc(te_count_fn, NULL);
  d.flags = WEFT_OP_GPU_GRAPH;
  cr_assert_eq(push_rw(t.eng, d, NULL, v), WEFT_EINVAL, "a CPU operator");
  d = gpu_desc(te_count_fn, NULL, 0);
  d.flags = WEFT_OP_GPU_GRAPH;
  d.prop = WEFT_PROP_COPY_TO_GPU;
  cr_assert_eq(push_rw(t.eng, d, NULL, v), WEFT_EINVAL, "a copy");
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  cr_assert_eq(push_rw(t.eng, d, NULL, v), WEFT_EINVAL, "a copy, recorded");
  weft_graph *g = end_capture(t.eng);
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* Runs launched back to back, with their device successors outside the run
 * on other streams (released at the run's launch, waiting for its event)
 * and a CPU reader: every node's work once per launch, the run's members in
 * order, their readers after the whole run. A launch begins only after the
 * one before ended, so node k's l-th work sees its fan's step at 4 l + k
 * (members) or 4 (l + 1) (readers). */
typedef struct bnode {
  atomic_int *seq; /* its fan's steps, over all launches */
  int step;        /* a member: its place in the run; a reader: -1 */
  int done;        /* its works so far (its own thread's at a time) */
  atomic_int *bad, *runs;
} bnode;

static void bnode_work(bnode *n)
{
  int s = atomic_load(n->seq);
  if (n->step >= 0) {
    if (s != 4 * n->done + n->step)
      atomic_fetch_add(n->bad, 1);
    atomic_fetch_add(n->seq, 1);
  } else if (s != 4 * (n->done + 1)) {
    atomic_fetch_add(n->bad, 1);
  }
  n->done++;
  atomic_fetch_add(n->runs, 1);
}

static void bnode_item(void *arg)
{
  bnode_work(arg);
}

static int bnode_fn(const weft_run_ctx *rc, void *arg)
{
  return weft_gpu_host_enqueue(rc->stream, bnode_item, arg);
}

static int bnode_cpu_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  bnode_work(arg);
  return 0;
}

Test(graph_gpu, back_to_back_launches_of_runs_and_their_readers, .init = setup,
     .timeout = TU_TIMEOUT(120))
{
  setenv("WEFT_GPU_WORKERS", "3", 1);
  weft_gpu_test_host_jitter(20);
  te t = te_new(NULL, 2, 0);
  enum { FANS = 3, N = 200 };
  atomic_int seq[FANS], bad, runs;
  atomic_init(&bad, 0);
  atomic_init(&runs, 0);
  bnode nodes[FANS][7];
  weft_var *v[FANS], *s[FANS][3];
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  for (int f = 0; f < FANS; f++) {
    atomic_init(&seq[f], 0);
    v[f] = te_var(t.eng);
    for (int i = 0; i < 4; i++) { /* the run: 4 writers of v */
      nodes[f][i] = (bnode){&seq[f], i, 0, &bad, &runs};
      weft_op_desc d = gpu_desc(bnode_fn, &nodes[f][i], 0);
      d.flags = WEFT_OP_GPU_GRAPH;
      cr_assert_eq(push_rw(t.eng, d, NULL, v[f]), 0);
    }
    for (int i = 0; i < 3; i++) { /* its readers: two on the GPU, one on the CPU */
      s[f][i] = te_var(t.eng);
      nodes[f][4 + i] = (bnode){&seq[f], -1, 0, &bad, &runs};
      weft_op_desc d = i < 2 ? gpu_desc(bnode_fn, &nodes[f][4 + i], 0)
                             : te_desc(bnode_cpu_fn, &nodes[f][4 + i]);
      cr_assert_eq(push_rw(t.eng, d, v[f], s[f][i]), 0);
    }
  }
  weft_graph *g = end_capture(t.eng);
  cr_assert_eq(g->nruns, FANS);
  for (int l = 0; l < N; l++) {
    int rc;
    while ((rc = weft_graph_launch(g)) == WEFT_EBUSY)
      tu_sleep_us(10);
    cr_assert_eq(rc, 0, "launch %d", l);
  }
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&runs), N * FANS * 7);
  cr_assert_eq(atomic_load(&bad), 0, "a node's work ran out of order");
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* A graph whose run was recorded outlives its engine: the engine's destroy
 * frees the record (before its executor closes), the graph's destroy the
 * rest (the sanitizer builds see a leak or a use after free). */
Test(graph_gpu, a_recorded_run_outlives_its_engine, .init = setup, .timeout = TU_TIMEOUT(30))
{
  te t = te_new(NULL, 2, 0);
  weft_var *v = te_var(t.eng);
  static wlog log;
  atomic_int calls;
  atomic_init(&calls, 0);
  rnode r[2];
  rnode_init(&r[0], &log, 0, &calls);
  rnode_init(&r[1], &log, 1, &calls);
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  cr_assert_eq(push_rw(t.eng, run_desc(&r[0], 0), NULL, v), 0);
  cr_assert_eq(push_rw(t.eng, run_desc(&r[1], 0), NULL, v), 0);
  weft_graph *g = end_capture(t.eng);
  atomic_store(&log.n, 0);
  cr_assert_eq(weft_graph_launch(g), 0);
  cr_assert_eq(weft_var_wait(t.eng, v), 0);
  cr_assert_eq(atomic_load(&log.n), 2);
  cr_assert_not_null(g->runs[0].cache, "the run was not recorded");
  cr_assert_eq(te_free(&t), 0);
  cr_assert_eq(weft_graph_launch(g), WEFT_ESHUTDOWN);
  cr_assert_eq(weft_graph_destroy(g), 0);
  tu_assert_no_errors();
}
