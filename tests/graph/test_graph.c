/* SPDX-License-Identifier: MIT */
/*
 * Captured graphs (weft_graph_*): replays checked against the sequential
 * run and the naive engine with ordinary pushes and outside waits between
 * launches (differential.h), and every rule of the API: what capture
 * records and refuses, a launch's order with pushes around it, failures
 * and skipping inside a replay, busy graphs, deleted vars, and a graph
 * whose engine went first.
 */
#include <string.h>

#include "../deps/differential.h"

static void setup(void)
{
  te_setup();
}

/* ------------------------------------------------------- differential */

Test(graph, differential_1_thread, .init = setup, .timeout = TU_TIMEOUT(120))
{
  cr_assert_eq(differential_graph(1, false, 0), 3 * DV);
}

/* One worker and random vars: the graph is swept (graph.h), and the
 * sweeper hands what it does not run itself (async operators, prioritized
 * and inline ones) to where those run, whose finishes release the nodes it
 * passed by. */
Test(graph, differential_1_thread_mixed_props, .init = setup, .timeout = TU_TIMEOUT(120))
{
  cr_assert_eq(differential_graph(1, true, 0), 3 * DV);
}

/* Plain operators only (CPU fns, no priority): the graph's blocks are cut
 * short (build.c), on several workers. */
Test(graph, differential_2_threads_plain, .init = setup, .timeout = TU_TIMEOUT(120))
{
  cr_assert_eq(differential_graph(2, false, 0), 3 * DV);
}

Test(graph, differential_2_threads_mixed_props, .init = setup, .timeout = TU_TIMEOUT(120))
{
  cr_assert_eq(differential_graph(2, true, 0), 3 * DV);
}

Test(graph, differential_4_threads_mixed_props, .init = setup, .timeout = TU_TIMEOUT(120))
{
  cr_assert_eq(differential_graph(4, true, 0), 3 * DV);
}

/* ------------------------------------------------------------- helpers */

static weft_graph *capture_end(weft_engine *e)
{
  weft_graph *g = NULL;
  int rc = weft_graph_end_capture(e, &g);
  cr_assert_eq(rc, 0, "end_capture = %d (%s)", rc, weft_strerror(rc));
  cr_assert_not_null(g);
  return g;
}

/* Appends its value to a shared sequence: the order ops ran in. */
typedef struct seq {
  long *log;
  atomic_long n;
} seq;

typedef struct seq_op {
  seq *s;
  long value;
  int status;
} seq_op;

static int seq_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  seq_op *o = arg;
  o->s->log[atomic_fetch_add(&o->s->n, 1)] = o->value;
  return o->status;
}

static int push_seq_prop(weft_engine *e, seq_op *o, weft_var *v, bool write, unsigned flags,
                         weft_prop prop)
{
  weft_op_desc d = te_desc(seq_fn, o);
  d.prop = prop;
  weft_var *vs[1] = {v};
  if (write) {
    d.writes = vs;
    d.num_writes = 1;
  } else {
    d.reads = vs;
    d.num_reads = 1;
  }
  d.flags = flags;
  d.name = "seq";
  return weft_push(e, &d);
}

static int push_seq(weft_engine *e, seq_op *o, weft_var *v, bool write, unsigned flags)
{
  return push_seq_prop(e, o, v, write, flags, WEFT_PROP_NORMAL);
}

/* ---------------------------------------------------------------- order */

/* A launch sits between the pushes around it on the vars it uses: ops
 * pushed before it finish first, ops pushed after start after it. */
Test(graph, launch_is_ordered_with_pushes_around_it, .init = setup, .timeout = TU_TIMEOUT(60))
{
  for (int threads = 1; threads <= 4; threads *= 2) {
    te t = te_new("threaded", threads, 0);
    weft_var *v = te_var(t.eng);
    long log[64];
    seq s = {log, 0};
    seq_op ops[8];
    for (int i = 0; i < 8; i++)
      ops[i] = (seq_op){&s, i, 0};
    cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
    cr_assert_eq(push_seq(t.eng, &ops[2], v, true, 0), 0);
    cr_assert_eq(push_seq(t.eng, &ops[3], v, false, 0), 0);
    cr_assert_eq(push_seq(t.eng, &ops[4], v, true, 0), 0);
    weft_graph *g = capture_end(t.eng);
    cr_assert_eq(atomic_load(&s.n), 0, "captured ops ran at their push");
    te_gate gate = {0};
    cr_assert_eq(te_push(t.eng, te_gate_fn, &gate, TE_NONE, TE_V(v), 0), 0); /* holds v */
    cr_assert_eq(push_seq(t.eng, &ops[0], v, true, 0), 0);
    cr_assert_eq(push_seq(t.eng, &ops[1], v, false, 0), 0);
    cr_assert_eq(weft_graph_launch(g), 0);
    cr_assert_eq(push_seq(t.eng, &ops[5], v, false, 0), 0);
    cr_assert_eq(push_seq(t.eng, &ops[6], v, true, 0), 0);
    cr_assert(TU_WAIT_UNTIL(atomic_load(&gate.started), TU_DEADLINE_S));
    cr_assert_eq(atomic_load(&s.n), 0, "an op ran while the var was held before the launch");
    atomic_store(&gate.open, 1);
    cr_assert_eq(weft_wait_all(t.eng), 0);
    cr_assert_eq(atomic_load(&gate.timed_out), 0);
    cr_assert_eq(atomic_load(&s.n), 7, "%ld ops ran, expected 7", atomic_load(&s.n));
    for (long i = 0; i < 7; i++)
      cr_assert_eq(log[i], i, "%d threads: position %ld ran op %ld", threads, i, log[i]);
    cr_assert_eq(weft_graph_destroy(g), 0);
    cr_assert_eq(te_free(&t), 0);
  }
  tu_assert_no_errors();
}

/* On one worker a graph of plain operators runs in capture order (graph.h:
 * swept), not in its edge order: 4 interleaved chains (op i writes var
 * i % 4), which the edge order would run chain by chain (0, 4, 8, ...). */
Test(graph, one_worker_replays_in_capture_order, .init = setup, .timeout = TU_TIMEOUT(60))
{
  te t = te_new("threaded", 1, 0);
  weft_var *v[4];
  for (int k = 0; k < 4; k++)
    v[k] = te_var(t.eng);
  long log[32];
  seq s = {log, 0};
  seq_op ops[32];
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  for (int i = 0; i < 32; i++) {
    ops[i] = (seq_op){&s, i, 0};
    cr_assert_eq(push_seq(t.eng, &ops[i], v[i % 4], true, 0), 0);
  }
  weft_graph *g = capture_end(t.eng);
  for (int r = 0; r < 3; r++) {
    atomic_store(&s.n, 0);
    cr_assert_eq(weft_graph_launch(g), 0);
    cr_assert_eq(weft_wait_all(t.eng), 0);
    cr_assert_eq(atomic_load(&s.n), 32, "launch %d: %ld ops ran", r, atomic_load(&s.n));
    for (long i = 0; i < 32; i++)
      cr_assert_eq(log[i], i, "launch %d: position %ld ran op %ld", r, i, log[i]);
  }
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* Many launches of a graph of independent ops (many roots: released
 * through the heap fan-out), each op once per launch. */
Test(graph, many_roots_run_once_per_launch, .init = setup, .timeout = TU_TIMEOUT(60))
{
  enum { N = 1000 };
  int reps = (int)tu_scaled(20, 4);
  te t = te_new("threaded", 4, 0);
  static weft_var *vars[N];
  static atomic_int runs[N];
  for (int i = 0; i < N; i++) {
    vars[i] = te_var(t.eng);
    atomic_init(&runs[i], 0);
  }
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  for (int i = 0; i < N; i++)
    cr_assert_eq(te_push(t.eng, te_count_fn, &runs[i], TE_NONE, TE_V(vars[i]), 0), 0);
  weft_graph *g = capture_end(t.eng);
  for (int r = 0; r < reps; r++) {
    cr_assert_eq(weft_graph_launch(g), 0);
    cr_assert_eq(weft_wait_all(t.eng), 0);
    for (int i = 0; i < N; i++)
      cr_assert_eq(atomic_load(&runs[i]), r + 1, "op %d ran %d times after %d launches", i,
                   atomic_load(&runs[i]), r + 1);
  }
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* A graph launched from inside an operator (the engine's own work): the
 * operator's weft_wait_all caller waits for the launch too. */
typedef struct inner_launch {
  weft_graph *g;
  int rc;
} inner_launch;

static int inner_launch_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  inner_launch *l = arg;
  l->rc = weft_graph_launch(l->g);
  return 0;
}

Test(graph, launch_from_inside_an_operator, .init = setup, .timeout = TU_TIMEOUT(60))
{
  te t = te_new("threaded", 2, 0);
  weft_var *v = te_var(t.eng), *w = te_var(t.eng);
  atomic_int runs;
  atomic_init(&runs, 0);
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  for (int i = 0; i < 10; i++)
    cr_assert_eq(te_push(t.eng, te_count_fn, &runs, TE_NONE, TE_V(v), 0), 0);
  weft_graph *g = capture_end(t.eng);
  inner_launch l = {g, -1};
  cr_assert_eq(te_push(t.eng, inner_launch_fn, &l, TE_NONE, TE_V(w), 0), 0);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(l.rc, 0, "launch inside an operator = %d", l.rc);
  cr_assert_eq(atomic_load(&runs), 10);
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* ------------------------------------------------------------ failures */

/* A failing op of the graph fails the var it writes; the ops after it on
 * that var are skipped (not a NOSKIP one), every launch, and weft_wait_all
 * and weft_var_wait report it, as for pushed ops. On 2 workers; and on 1
 * (graph.h): the graph runs in order; and, with the op on the other var
 * prioritized and pushed second (one worker's edge order then jumps about
 * the capture), it is swept with counts. */
Test(graph, failures_skip_and_are_reported_each_launch, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  const char *kinds[] = {"threaded", "naive", "threaded", "threaded"};
  for (int kd = 0; kd < 4; kd++) {
    bool swept = kd >= 2;
    weft_prop other_prop = kd == 3 ? WEFT_PROP_PRIORITIZED : WEFT_PROP_NORMAL;
    te t = te_new(kinds[kd], swept ? 1 : 2, 0);
    weft_var *a = te_var(t.eng), *b = te_var(t.eng), *c = te_var(t.eng);
    long log[64];
    seq s = {log, 0};
    seq_op fail = {&s, 1, D_FAIL}, skipped = {&s, 2, 0}, noskip = {&s, 3, 0},
           other = {&s, 4, 0}, after = {&s, 5, 0};
    cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
    cr_assert_eq(push_seq(t.eng, &fail, a, true, 0), 0);
    if (swept)
      cr_assert_eq(push_seq_prop(t.eng, &other, b, true, 0, other_prop), 0);
    cr_assert_eq(push_seq(t.eng, &skipped, a, false, 0), 0);
    cr_assert_eq(push_seq(t.eng, &noskip, a, false, WEFT_OP_NOSKIP), 0);
    if (!swept)
      cr_assert_eq(push_seq(t.eng, &other, b, true, 0), 0);
    weft_graph *g = capture_end(t.eng);
    for (int r = 0; r < 3; r++) {
      atomic_store(&s.n, 0);
      cr_assert_eq(weft_graph_launch(g), 0, "%s launch %d", kinds[kd], r);
      cr_assert_eq(push_seq(t.eng, &after, c, true, 0), 0); /* another var: runs */
      cr_assert_eq(weft_var_wait(t.eng, b), 0);
      int wa = weft_wait_all(t.eng);
      cr_assert_eq(wa, D_FAIL, "%s launch %d: wait_all = %d, expected the failure %d",
                   kinds[kd], r, wa, D_FAIL);
      long n = atomic_load(&s.n);
      bool saw[6] = {false};
      for (long i = 0; i < n; i++)
        saw[log[i]] = true;
      cr_assert(saw[1] && !saw[2] && saw[3] && saw[4] && saw[5],
                "%s launch %d: ran fail %d skipped %d noskip %d other %d after %d", kinds[kd], r,
                saw[1], saw[2], saw[3], saw[4], saw[5]);
      cr_assert_eq(n, 4);
    }
    /* weft_var_wait reports the failed var (and clears it) */
    cr_assert_eq(weft_graph_launch(g), 0);
    cr_assert_eq(weft_var_wait(t.eng, a), D_FAIL);
    cr_assert_eq(weft_var_wait(t.eng, a), 0);
    cr_assert_eq(weft_wait_all(t.eng), D_FAIL); /* the launch's failure, once */
    cr_assert_eq(weft_wait_all(t.eng), 0);
    cr_assert_eq(weft_graph_destroy(g), 0);
    cr_assert_eq(te_free(&t), 0);
  }
  tu_assert_no_errors();
}

/* A var failed before the launch: the graph's ops that use it are skipped,
 * and one that writes it with success makes it fine again. */
Test(graph, a_var_failed_before_the_launch, .init = setup, .timeout = TU_TIMEOUT(60))
{
  te t = te_new("threaded", 2, 0);
  weft_var *a = te_var(t.eng);
  long log[8];
  seq s = {log, 0};
  seq_op pre = {&s, 0, D_FAIL}, reader = {&s, 1, 0}, fixer = {&s, 2, 0};
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  cr_assert_eq(push_seq(t.eng, &reader, a, false, 0), 0);
  cr_assert_eq(push_seq(t.eng, &fixer, a, true, WEFT_OP_NOSKIP), 0);
  weft_graph *g = capture_end(t.eng);
  cr_assert_eq(push_seq(t.eng, &pre, a, true, 0), 0);
  cr_assert_eq(weft_graph_launch(g), 0);
  cr_assert_eq(weft_var_wait(t.eng, a), 0, "the NOSKIP writer made the var fine again");
  cr_assert_eq(weft_wait_all(t.eng), D_FAIL);
  cr_assert_eq(atomic_load(&s.n), 2);
  cr_assert(log[0] == 0 && log[1] == 2, "ran %ld then %ld: the reader must be skipped", log[0],
            log[1]);
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* ------------------------------------------------------- busy, deleted */

static int gate_fn_then_wait_other(const weft_run_ctx *rc, void *arg);

typedef struct wait_inside {
  weft_engine *eng;
  weft_var *other; /* a var of the graph this op does not use */
  weft_var *own;
  int rc_other, rc_own;
} wait_inside;

static int gate_fn_then_wait_other(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  wait_inside *w = arg;
  w->rc_other = weft_var_wait(w->eng, w->other);
  w->rc_own = weft_var_wait(w->eng, w->own);
  return 0;
}

/* A launch while one runs is queued (destroy refused meanwhile), and both
 * run; a wait inside a node on a var of its own graph is refused. */
Test(graph, relaunch_queues_while_running_and_waits_inside_would_deadlock, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  te t = te_new("threaded", 2, 0);
  weft_var *a = te_var(t.eng), *b = te_var(t.eng);
  te_gate gate = {0};
  wait_inside w = {t.eng, b, a, -1, -1};
  atomic_int runs;
  atomic_init(&runs, 0);
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  cr_assert_eq(te_push(t.eng, te_gate_fn, &gate, TE_NONE, TE_V(a), 0), 0);
  cr_assert_eq(te_push(t.eng, gate_fn_then_wait_other, &w, TE_NONE, TE_V(a), 0), 0);
  cr_assert_eq(te_push(t.eng, te_count_fn, &runs, TE_NONE, TE_V(b), 0), 0);
  weft_graph *g = capture_end(t.eng);
  for (int r = 0; r < 3; r++) {
    memset(&gate, 0, sizeof gate);
    cr_assert_eq(weft_graph_launch(g), 0);
    cr_assert(TU_WAIT_UNTIL(atomic_load(&gate.started), TU_DEADLINE_S));
    cr_assert_eq(weft_graph_launch(g), 0, "a second launch while the first runs: queued");
    cr_assert_eq(weft_graph_destroy(g), WEFT_EBUSY, "destroy while a launch runs");
    atomic_store(&gate.open, 1);
    cr_assert_eq(weft_wait_all(t.eng), 0);
    cr_assert_eq(atomic_load(&gate.timed_out), 0);
    cr_assert_eq(w.rc_other, WEFT_EDEADLK, "var_wait inside the graph on its own var b = %d",
                 w.rc_other);
    cr_assert_eq(w.rc_own, WEFT_EDEADLK);
    cr_assert_eq(atomic_load(&runs), 2 * (r + 1), "both launches ran");
  }
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

Test(graph, launch_with_a_deleted_var_fails_and_runs_nothing, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  const char *kinds[] = {"threaded", "naive"};
  for (int kd = 0; kd < 2; kd++) {
    te t = te_new(kinds[kd], 2, 0);
    weft_var *a = te_var(t.eng), *b = te_var(t.eng);
    atomic_int runs;
    atomic_init(&runs, 0);
    cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
    cr_assert_eq(te_push(t.eng, te_count_fn, &runs, TE_NONE, TE_V(a), 0), 0);
    weft_op_desc d = te_desc(te_count_fn, &runs);
    weft_var *bs[1] = {b};
    d.reads = bs;
    d.num_reads = 1;
    d.name = "reads_b";
    cr_assert_eq(weft_push(t.eng, &d), 0);
    weft_graph *g = capture_end(t.eng);
    cr_assert_eq(weft_graph_launch(g), 0);
    cr_assert_eq(weft_wait_all(t.eng), 0);
    cr_assert_eq(atomic_load(&runs), 2);
    cr_assert_eq(weft_var_delete(t.eng, b), 0);
    tu_logbuf lb = TU_LOGBUF_INIT;
    weft_set_log_callback(tu_log_cb, &lb);
    int rc = weft_graph_launch(g);
    weft_set_log_callback(NULL, NULL);
    cr_assert_eq(rc, WEFT_EINVAL, "%s: launch with a deleted var = %d", kinds[kd], rc);
    cr_assert(strstr(lb.text, "reads_b") != NULL, "the message names the operator: %s",
                lb.text);
    cr_assert_eq(weft_wait_all(t.eng), 0);
    cr_assert_eq(atomic_load(&runs), 2, "%s: %d ops ran in a refused launch", kinds[kd],
                 atomic_load(&runs) - 2);
    cr_assert_eq(weft_graph_launch(g), WEFT_EINVAL, "refused again, not busy");
    cr_assert_eq(weft_graph_destroy(g), 0);
    cr_assert_eq(te_free(&t), 0);
  }
  tu_assert_no_errors();
}

/* ------------------------------------------------------ capture's rules */

static int noop_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  (void)arg;
  return 0;
}

typedef struct begin_inside {
  weft_engine *eng;
  int rc;
} begin_inside;

static int begin_inside_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  begin_inside *b = arg;
  b->rc = weft_graph_begin_capture(b->eng);
  return 0;
}

Test(graph, capture_rules, .init = setup, .timeout = TU_TIMEOUT(60))
{
  te t = te_new("threaded", 2, 0);
  te t2 = te_new("threaded", 1, 0);
  weft_var *a = te_var(t.eng), *dead = te_var(t.eng), *other = te_var(t2.eng);
  cr_assert_eq(weft_var_delete(t.eng, dead), 0);
  weft_graph *g = NULL;
  cr_assert_eq(weft_graph_begin_capture(NULL), WEFT_EINVAL);
  cr_assert_eq(weft_graph_end_capture(t.eng, &g), WEFT_EINVAL, "end without a capture");
  cr_assert_eq(weft_graph_launch(NULL), WEFT_EINVAL);
  cr_assert_eq(weft_graph_destroy(NULL), WEFT_EINVAL);
  begin_inside bi = {t.eng, 0};
  cr_assert_eq(te_push(t.eng, begin_inside_fn, &bi, TE_NONE, TE_V(a), 0), 0);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(bi.rc, WEFT_EINVAL, "begin_capture inside an operator = %d", bi.rc);

  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  cr_assert_eq(weft_graph_begin_capture(t.eng), WEFT_EBUSY, "a second capture on the thread");
  cr_assert_eq(weft_graph_begin_capture(t2.eng), WEFT_EBUSY, "one capture per thread");
  atomic_int runs;
  atomic_init(&runs, 0);
  cr_assert_eq(te_push(t.eng, te_count_fn, &runs, TE_NONE, TE_V(a), 0), 0);
  cr_assert_eq(te_push(t.eng, te_count_fn, &runs, TE_NONE, TE_V(dead), 0), WEFT_EINVAL);
  weft_op_desc bad = te_desc(noop_fn, NULL);
  bad.fn = NULL; /* neither fn nor async_fn */
  cr_assert_eq(weft_push(t.eng, &bad), WEFT_EINVAL);
  cr_assert_eq(weft_var_wait(t.eng, a), WEFT_EBUSY);
  cr_assert_eq(weft_var_delete(t.eng, a), WEFT_EBUSY);
  cr_assert_eq(weft_wait_all(t.eng), WEFT_EBUSY);
  cr_assert_eq(weft_engine_destroy(t.eng), WEFT_EBUSY);
  /* another engine is not captured */
  cr_assert_eq(te_push(t2.eng, te_count_fn, &runs, TE_NONE, TE_V(other), 0), 0);
  cr_assert_eq(weft_wait_all(t2.eng), 0);
  cr_assert_eq(atomic_load(&runs), 1, "only the other engine's op ran");
  /* a reusable op's push is recorded too */
  weft_op *rop = NULL;
  weft_op_desc rd = te_desc(te_count_fn, &runs);
  weft_var *as[1] = {a};
  rd.writes = as;
  rd.num_writes = 1;
  cr_assert_eq(weft_op_new(t.eng, &rd, &rop), 0);
  cr_assert_eq(weft_op_push(t.eng, rop), 0);
  cr_assert_eq(weft_op_delete(t.eng, rop), 0); /* the graph keeps its copy */
  weft_graph *none = g;
  cr_assert_eq(weft_graph_end_capture(t2.eng, &none), WEFT_EINVAL, "end on another engine");
  cr_assert_null(none, "a failed end_capture leaves *out NULL");
  g = capture_end(t.eng);
  cr_assert_eq(weft_graph_end_capture(t.eng, &none), WEFT_EINVAL, "ended already");
  cr_assert_eq(atomic_load(&runs), 1, "captured pushes ran");
  for (int r = 0; r < 3; r++) {
    int rc = weft_graph_launch(g);
    cr_assert_eq(rc, 0, "launch %d = %d (%s)", r, rc, weft_strerror(rc));
    cr_assert_eq(weft_wait_all(t.eng), 0);
  }
  cr_assert_eq(atomic_load(&runs), 1 + 3 * 2);
  cr_assert_eq(weft_graph_destroy(g), 0);
  /* an empty capture: a graph whose launch does nothing */
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  weft_graph *empty = capture_end(t.eng);
  cr_assert_eq(weft_graph_launch(empty), 0);
  cr_assert_eq(weft_graph_destroy(empty), 0);
  cr_assert_eq(te_free(&t2), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* The engine destroyed before its graph: launch refuses, destroy frees. */
Test(graph, engine_destroyed_first, .init = setup, .timeout = TU_TIMEOUT(60))
{
  te t = te_new("threaded", 2, 0);
  weft_var *a = te_var(t.eng);
  atomic_int runs;
  atomic_init(&runs, 0);
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  cr_assert_eq(te_push(t.eng, te_count_fn, &runs, TE_NONE, TE_V(a), 0), 0);
  weft_graph *g = capture_end(t.eng), *g2 = NULL;
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  g2 = capture_end(t.eng);
  cr_assert_eq(weft_graph_launch(g), 0);
  cr_assert_eq(te_free(&t), 0); /* waits for the launch */
  cr_assert_eq(atomic_load(&runs), 1);
  cr_assert_eq(weft_graph_launch(g), WEFT_ESHUTDOWN);
  cr_assert_eq(weft_graph_launch(g2), WEFT_ESHUTDOWN);
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(weft_graph_destroy(g2), 0);
  tu_assert_no_errors();
}

/* With max_inflight a launch takes one place, and a capped pusher still
 * gets through around it. */
Test(graph, max_inflight_counts_a_launch_once, .init = setup, .timeout = TU_TIMEOUT(60))
{
  te t = te_new("threaded", 2, 2);
  weft_var *v[64];
  atomic_int runs;
  atomic_init(&runs, 0);
  for (int i = 0; i < 64; i++)
    v[i] = te_var(t.eng);
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  for (int i = 0; i < 64; i++)
    cr_assert_eq(te_push(t.eng, te_count_fn, &runs, TE_NONE, TE_V(v[i]), 0), 0);
  weft_graph *g = capture_end(t.eng);
  for (int r = 0; r < 10; r++) {
    while (weft_graph_launch(g) == WEFT_EBUSY)
      sched_yield();
    cr_assert_eq(te_push(t.eng, te_count_fn, &runs, TE_NONE, TE_V(v[r]), 0), 0);
  }
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&runs), 10 * 64 + 10);
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* An operator that runs on the capturing thread meanwhile (here: an inline
 * successor of a weft_done_signal the thread makes) is not the capture's:
 * its pushes run. And a worker of the engine's pool cannot capture (it runs
 * others' tasks while it waits). */
typedef struct inline_pusher {
  weft_engine *eng;
  weft_var *w;
  atomic_int pushed_ran;
  _Atomic(weft_done *) token;
  int push_rc;
} inline_pusher;

static void token_async(const weft_run_ctx *rc, void *arg, weft_done *done)
{
  (void)rc;
  atomic_store(&((inline_pusher *)arg)->token, done); /* signalled by the test's thread */
}

static int pushing_inline(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  inline_pusher *p = arg;
  p->push_rc = te_push(p->eng, te_count_fn, &p->pushed_ran, TE_NONE, TE_V(p->w), 0);
  return 0;
}

typedef struct begin_worker {
  weft_engine *eng;
  atomic_int rc; /* 1 until the task stored its result */
} begin_worker;

static int begin_on_worker(void *arg)
{
  begin_worker *b = arg;
  atomic_store(&b->rc, weft_graph_begin_capture(b->eng));
  return 0;
}

/* Tasks the pool's workers have finished (each counted once its function
 * has returned). */
static long pool_tasks_run(weft_pool *pool)
{
  weft_worker_stats st[8];
  int n = weft_pool_stats(pool, st, 8);
  long sum = 0;
  for (int i = 0; i < n; i++)
    sum += (long)st[i].tasks_run;
  return sum;
}

Test(graph, operators_run_by_the_capturing_thread_are_not_captured, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  te t = te_new("threaded", 2, 0);
  weft_var *x = te_var(t.eng), *w = te_var(t.eng);
  inline_pusher p = {t.eng, w, 0, NULL, -1};
  long tasks_before = pool_tasks_run(t.pool);
  weft_op_desc a = te_adesc(token_async, &p);
  a.writes = &x;
  a.num_writes = 1;
  cr_assert_eq(weft_push(t.eng, &a), 0);
  weft_op_desc b = te_desc(pushing_inline, &p);
  b.reads = &x;
  b.num_reads = 1;
  b.prop = WEFT_PROP_ASYNC; /* runs inline on the thread that makes it ready */
  cr_assert_eq(weft_push(t.eng, &b), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&p.token) != NULL, TU_DEADLINE_S));
  /* a's async_fn has returned too (its task is over): the signal below is
   * then the second of a's two ends, so a completes on this thread and b
   * runs here. Without the wait, a worker still inside a's task could end
   * it second, and b would run there, pushing while this thread reads
   * push_rc. */
  cr_assert(TU_WAIT_UNTIL(pool_tasks_run(t.pool) > tasks_before, TU_DEADLINE_S));
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  weft_done_signal(atomic_load(&p.token), 0); /* b runs here, inside the capture */
  weft_graph *g = capture_end(t.eng);
  cr_assert_eq(p.push_rc, 0);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&p.pushed_ran), 1, "the inline operator's push was captured");
  cr_assert_eq(weft_graph_launch(g), 0); /* an empty graph */
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&p.pushed_ran), 1);
  cr_assert_eq(weft_graph_destroy(g), 0);

  begin_worker bw = {t.eng, 1};
  cr_assert_eq(weft_pool_submit(t.pool, begin_on_worker, &bw), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&bw.rc) != 1, TU_DEADLINE_S));
  cr_assert_eq(atomic_load(&bw.rc), WEFT_EINVAL, "begin_capture on a worker = %d",
               atomic_load(&bw.rc));
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* ----------------------------------------------- waits that loop back */

/*
 * An operator X writes a, launches a graph that reads a (and, through a
 * chain of two operators, writes b), then waits on b: the launch waits for
 * X, X for the launch. The wait returns WEFT_EDEADLK at once (weft.h), as
 * it does for pushed operators, whether X is a pushed operator or a node of
 * another graph's launch. A launch that does not read a is waited for.
 * X reports on a flag with a deadline: a hang fails the test, not the
 * suite.
 */
typedef struct gl_x {
  weft_engine *eng;
  weft_graph *g;      /* launched by X */
  weft_var *wait_on;  /* what X waits on after the launch */
  int launch_rc, rc;
  atomic_int waited, returned;
  atomic_int runs, runs_after; /* the launched graph's operators: run, run after X returned */
} gl_x;

static int gl_x_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  gl_x *x = arg;
  x->launch_rc = weft_graph_launch(x->g);
  x->rc = weft_var_wait(x->eng, x->wait_on);
  atomic_store(&x->waited, 1);
  atomic_store(&x->returned, 1);
  return 0;
}

static int gl_node_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  gl_x *x = arg;
  if (atomic_load(&x->returned))
    atomic_fetch_add(&x->runs_after, 1);
  atomic_fetch_add(&x->runs, 1);
  return 0;
}

/* X a pushed operator (node false) or a graph's node; loops: the launched
 * graph reads X's var a (else it uses other vars only). */
static int gl_run(bool node, bool loops, int threads, int max_inflight)
{
  te t = te_new("threaded", threads, max_inflight);
  weft_engine *E = t.eng;
  weft_var *a = te_var(E), *b = te_var(E), *c = te_var(E), *d = te_var(E);
  gl_x *x = calloc(1, sizeof *x); /* leaked on a hang: operators may still read it */
  cr_assert_not_null(x);
  x->eng = E;
  x->rc = x->launch_rc = 12345;
  x->wait_on = b;
  cr_assert_eq(weft_graph_begin_capture(E), 0);
  cr_assert_eq(te_push(E, gl_node_fn, x, TE_V(loops ? a : d), TE_V(c), 0), 0);
  cr_assert_eq(te_push(E, gl_node_fn, x, TE_V(c), TE_V(b), 0), 0);
  x->g = capture_end(E);
  weft_graph *outer = NULL;
  if (node) {
    cr_assert_eq(weft_graph_begin_capture(E), 0);
    cr_assert_eq(te_push(E, gl_x_fn, x, TE_NONE, TE_V(a), 0), 0);
    outer = capture_end(E);
    cr_assert_eq(weft_graph_launch(outer), 0);
  } else {
    cr_assert_eq(te_push(E, gl_x_fn, x, TE_NONE, TE_V(a), 0), 0);
  }
  const char *what = node ? "a graph's node" : "an operator";
  cr_assert(TU_WAIT_UNTIL(atomic_load(&x->waited), TU_DEADLINE_S),
            "%s (%d threads, max_inflight %d): its wait on what its launch writes hung", what,
            threads, max_inflight);
  cr_assert_eq(weft_wait_all(E), 0);
  tu_assert_no_errors();
  cr_assert_eq(x->launch_rc, 0, "%s: launch = %d", what, x->launch_rc);
  int want = loops ? WEFT_EDEADLK : 0;
  cr_assert_eq(x->rc, want,
               "%s (%d threads, max_inflight %d), launch %s a: wait = %d (%s), want %d", what,
               threads, max_inflight, loops ? "reads" : "does not read", x->rc,
               weft_strerror(x->rc), want);
  cr_assert_eq(atomic_load(&x->runs), 2);
  cr_assert_eq(atomic_load(&x->runs_after), loops ? 2 : 0,
               "%s: %d of the launch's 2 operators ran after X returned", what,
               atomic_load(&x->runs_after));
  if (outer)
    cr_assert_eq(weft_graph_destroy(outer), 0);
  cr_assert_eq(weft_graph_destroy(x->g), 0);
  free(x);
  return te_free(&t);
}

Test(graph, a_wait_on_what_a_launch_behind_the_caller_writes_is_edeadlk, .init = setup,
     .timeout = TU_TIMEOUT(120))
{
  for (int threads = 1; threads <= 2; threads++)
    for (int cap = 0; cap <= 2; cap += 2)
      cr_assert_eq(gl_run(false, true, threads, cap), 0);
}

Test(graph, a_node_waiting_on_what_its_launch_behind_it_writes_is_edeadlk, .init = setup,
     .timeout = TU_TIMEOUT(120))
{
  for (int threads = 1; threads <= 2; threads++)
    for (int cap = 0; cap <= 2; cap += 2)
      cr_assert_eq(gl_run(true, true, threads, cap), 0);
}

Test(graph, a_wait_on_what_an_independent_launch_writes_is_waited_for, .init = setup,
     .timeout = TU_TIMEOUT(120))
{
  for (int threads = 1; threads <= 2; threads++)
    for (int cap = 0; cap <= 2; cap += 2) {
      cr_assert_eq(gl_run(false, false, threads, cap), 0);
      cr_assert_eq(gl_run(true, false, threads, cap), 0);
    }
}

/* --------------------------------------------------------- fairness */

/* A replayed chain runs on one worker, each node keeping the next (the
 * short path of src/graph/run.c): an operator pushed from another thread while
 * it runs must not wait for the whole chain (WEFT_KEEP_RUN_MAX). */
static int chain_fair_link(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  atomic_fetch_add(&((te_chain_mark *)arg)->links, 1);
  return 0;
}

Test(graph, a_replayed_chain_lets_outside_pushes_in, .init = setup, .timeout = TU_TIMEOUT(60))
{
  enum { N = 1000 * 1000 };
  te t = te_new(NULL, 1, 0);
  weft_var *a = te_var(t.eng), *b = te_var(t.eng);
  te_chain_mark c = {0, -1};
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  for (int i = 0; i < N; i++)
    cr_assert_eq(te_push(t.eng, chain_fair_link, &c, TE_NONE, TE_V(a), 0), 0);
  weft_graph *g = capture_end(t.eng);
  cr_assert_eq(weft_graph_launch(g), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&c.links) > 1000, TU_DEADLINE_S), "the launch did not start");
  cr_assert_eq(te_push(t.eng, te_mark_fn, &c, TE_NONE, TE_V(b), 0), 0);
  cr_assert_eq(weft_var_wait(t.eng, b), 0);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&c.links), N, "the launch ran %ld of %d nodes", atomic_load(&c.links), N);
  cr_assert_lt(atomic_load(&c.links_at), N,
               "the outside push ran only once the replayed chain of %d had ended", N);
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}
