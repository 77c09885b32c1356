/* SPDX-License-Identifier: MIT */
/*
 * A graph's gate keeping its vars between launches (src/graph/keep.h).
 *
 * Checked through the gate's state (internals) and through what users see:
 * a second launch with nothing in between registers nothing (the gate is
 * KEPT, then RUN); an operator pushed between two launches runs between
 * them, at once (the gate lets go of its var: PART), and one pushed during a
 * launch runs after it (WANTED: the end releases everything); reads beside
 * a kept read are granted at once and take nothing back; weft_var_wait,
 * weft_var_delete, two graphs sharing a var, the graph's destroy and its
 * engine's destroy each find a kept var free. A stress test mixes launches
 * with outside pushers on the graph's vars under the overlap guards.
 */
#include <sched.h>

#include "graph/graph.h"
#include "graph/keep.h"
#include "../deps/engine_util.h"

static void setup(void)
{
  te_setup();
}

static weft_graph *capture_end(weft_engine *e)
{
  weft_graph *g = NULL;
  int rc = weft_graph_end_capture(e, &g);
  cr_assert_eq(rc, 0, "end_capture = %d (%s)", rc, weft_strerror(rc));
  cr_assert_not_null(g);
  return g;
}

/* The kept gate's state, or -1 when the graph keeps none. Between
 * launches (after a wait) only the tests' own thread touches it. */
static int hold_of(weft_graph *g)
{
  weft_gate *gate = g->kept;
  return gate ? (int)atomic_load(&gate->hold) : -1;
}

/* Appends its value to a shared log: the order ops ran in. */
typedef struct klog {
  long log[256];
  atomic_long n;
} klog;

typedef struct kop {
  klog *l;
  long value;
} kop;

static int log_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  kop *o = arg;
  long at = atomic_fetch_add(&o->l->n, 1);
  if (at < 256)
    o->l->log[at] = o->value;
  return 0;
}

static int push_log(weft_engine *e, kop *o, weft_var *v, bool write)
{
  return write ? te_push(e, log_fn, o, TE_NONE, TE_V(v), 0)
               : te_push(e, log_fn, o, TE_V(v), TE_NONE, 0);
}

/* A graph of one op that logs value (writing or only reading v), and
 * another that writes w. */
static weft_graph *capture_logger(weft_engine *e, kop *o, weft_var *v, bool write, weft_var *w,
                                  atomic_int *count)
{
  cr_assert_eq(weft_graph_begin_capture(e), 0);
  cr_assert_eq(push_log(e, o, v, write), 0);
  if (w)
    cr_assert_eq(te_push(e, te_count_fn, count, TE_NONE, TE_V(w), 0), 0);
  return capture_end(e);
}

/* Launches g and waits for it: its gate must keep every var after. */
static void launch_kept(weft_engine *e, weft_graph *g)
{
  cr_assert_eq(weft_graph_launch(g), 0);
  cr_assert_eq(weft_wait_all(e), 0);
  cr_assert_eq(hold_of(g), WEFT_HOLD_KEPT, "the gate keeps its vars after a launch");
}

/* ------------------------------------------------------------ the states */

Test(graph_keep, a_second_launch_registers_nothing, .init = setup, .timeout = TU_TIMEOUT(60))
{
  for (int threads = 1; threads <= 2; threads++) {
    te t = te_new("threaded", threads, 0);
    weft_var *v = te_var(t.eng), *w = te_var(t.eng);
    klog l = {.n = 0};
    kop o = {&l, 1};
    atomic_int count = 0;
    weft_graph *g = capture_logger(t.eng, &o, v, true, w, &count);
    cr_assert_eq(hold_of(g), -1, "a graph never launched keeps nothing");
    for (int r = 1; r <= 20; r++) {
      launch_kept(t.eng, g);
      cr_assert_eq(atomic_load(&count), r);
    }
    cr_assert_eq(atomic_load(&l.n), 20);
    cr_assert_eq(weft_graph_destroy(g), 0);
    cr_assert_eq(te_free(&t), 0);
  }
  tu_assert_no_errors();
}

/* Pushed between two launches: runs at once, between them; pushed while a
 * launch runs: after it, and the launch's end lets go of everything. */
Test(graph_keep, pushes_between_and_during_launches, .init = setup, .timeout = TU_TIMEOUT(60))
{
  for (int threads = 1; threads <= 4; threads *= 2) {
    te t = te_new("threaded", threads, 0);
    weft_var *v = te_var(t.eng), *w = te_var(t.eng);
    klog l = {.n = 0};
    kop g_op = {&l, 100}, x = {&l, 1}, y = {&l, 2}, z = {&l, 3};
    te_gate hold = {0};
    cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
    cr_assert_eq(push_log(t.eng, &g_op, v, true), 0);
    cr_assert_eq(te_push(t.eng, te_gate_fn, &hold, TE_NONE, TE_V(w), 0), 0);
    weft_graph *g = capture_end(t.eng);

    atomic_store(&hold.open, 1); /* the first launch runs through */
    launch_kept(t.eng, g);
    cr_assert_eq(push_log(t.eng, &x, v, true), 0); /* between launches */
    cr_assert(TU_WAIT_UNTIL(atomic_load(&l.n) == 2, TU_DEADLINE_S),
              "%d threads: a push on a kept var waited for the next launch", threads);
    cr_assert_eq(weft_wait_all(t.eng), 0);
    cr_assert_eq(hold_of(g), WEFT_HOLD_PART, "v was let go of, w is still kept");

    atomic_store(&hold.open, 0);
    atomic_store(&hold.started, 0);
    cr_assert_eq(weft_graph_launch(g), 0); /* registers on v again */
    cr_assert(TU_WAIT_UNTIL(atomic_load(&hold.started), TU_DEADLINE_S));
    cr_assert_eq(push_log(t.eng, &y, v, false), 0); /* during the launch */
    cr_assert_eq(hold_of(g), WEFT_HOLD_RUN | WEFT_HOLD_WANTED);
    atomic_store(&hold.open, 1);
    cr_assert_eq(weft_wait_all(t.eng), 0);
    cr_assert_eq(hold.timed_out, 0);
    cr_assert_eq(hold_of(g), -1, "a wanted launch's end keeps nothing");
    cr_assert_eq(push_log(t.eng, &z, w, true), 0); /* w is free at once */
    cr_assert(TU_WAIT_UNTIL(atomic_load(&l.n) == 5, TU_DEADLINE_S));
    cr_assert_eq(weft_wait_all(t.eng), 0);
    long want[5] = {100, 1, 100, 2, 3};
    for (int i = 0; i < 5; i++)
      cr_assert_eq(l.log[i], want[i], "%d threads: position %d ran %ld, expected %ld", threads,
                   i, l.log[i], want[i]);

    launch_kept(t.eng, g); /* a fresh gate keeps them again */
    cr_assert_eq(weft_graph_destroy(g), 0);
    cr_assert_eq(te_free(&t), 0);
  }
  tu_assert_no_errors();
}

/* A kept gate that lost a var stays PART until its launch's registration
 * holds the locks of all its vars (keep.h, weft_keep_run_locked). Made RUN
 * earlier (as the launcher's first step once did), an operator pushed
 * before the registration (h: writes v, which the gate lost, and reads w,
 * which it kept) would queue behind the gate on w (a yield during a launch
 * waits for its end) and ahead of it on v, where the gate then queues
 * behind h: each waits for the other. Here the launcher's first step runs
 * by itself, h is pushed, and the launch goes on: h takes w from the gate
 * and runs before the launch, and nothing waits forever. */
Test(graph_keep, a_gate_that_lost_a_var_runs_only_under_its_locks, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  te t = te_new("threaded", 2, 0);
  weft_var *v = te_var(t.eng), *w = te_var(t.eng);
  klog l = {.n = 0};
  kop g_op = {&l, 100}, h = {&l, 2};
  atomic_int count = 0;
  te_gate p = {0};
  weft_graph *g = capture_logger(t.eng, &g_op, v, true, w, &count);
  launch_kept(t.eng, g);
  /* p takes v from the kept gate and holds it until opened. */
  cr_assert_eq(te_push(t.eng, te_gate_fn, &p, TE_NONE, TE_V(v), 0), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&p.started), TU_DEADLINE_S), "p waited for a kept var");
  cr_assert_eq(hold_of(g), WEFT_HOLD_PART, "v was let go of, w is still kept");
  /* The launcher's first step (no launch runs: the test is the only
   * launcher): the gate stays PART. */
  cr_assert_not(weft_keep_resume(g->kept), "a gate that lost v resumed as if it held all");
  cr_assert_eq(hold_of(g), WEFT_HOLD_PART, "the gate ran before its registration held its locks");
  cr_assert_eq(te_push(t.eng, log_fn, &h, TE_V(w), TE_V(v), 0), 0);
  cr_assert_eq(hold_of(g), WEFT_HOLD_PART, "h's read of w: the gate let go of it");
  cr_assert_eq(weft_graph_launch(g), 0);
  atomic_store(&p.open, 1);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(p.timed_out, 0);
  cr_assert_eq(atomic_load(&l.n), 3);
  long want[3] = {100, 2, 100};
  for (int i = 0; i < 3; i++)
    cr_assert_eq(l.log[i], want[i], "position %d ran %ld, expected %ld", i, l.log[i], want[i]);
  cr_assert_eq(atomic_load(&count), 2);
  cr_assert_eq(hold_of(g), WEFT_HOLD_KEPT, "the launch registered again and keeps both");
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* Under max_inflight, a launch takes its place before its kept gate
 * resumes: a gate turned RUN while its launcher waited for a place kept w
 * from the operator that held the place (it waits behind a launch that
 * runs), and the launcher waited for that place. One thread launches a
 * graph over v and w, another pushes ops on u and on w, with one place. */
typedef struct cap_run {
  weft_graph *g;
  weft_engine *eng;
  weft_var *u, *w;
  atomic_int *count;
  long n;
  atomic_long done; /* launches made, or pairs pushed */
} cap_run;

static void *cap_launcher(void *arg)
{
  cap_run *c = arg;
  while (atomic_load(&c->done) < c->n) {
    int rc = weft_graph_launch(c->g);
    TU_CHECK(rc == 0 || rc == WEFT_EBUSY, "launch = %d", rc);
    if (rc == 0)
      atomic_fetch_add(&c->done, 1);
  }
  return NULL;
}

static void *cap_pusher(void *arg)
{
  cap_run *c = arg;
  for (; atomic_load(&c->done) < c->n; atomic_fetch_add(&c->done, 1)) {
    TU_CHECK(te_push(c->eng, te_count_fn, c->count, TE_NONE, TE_V(c->u), 0) == 0, "push u");
    TU_CHECK(te_push(c->eng, te_count_fn, c->count, TE_NONE, TE_V(c->w), 0) == 0, "push w");
  }
  return NULL;
}

Test(graph_keep, a_kept_gate_resumes_after_its_place_under_max_inflight, .init = setup,
     .timeout = TU_TIMEOUT(120))
{
  long n = tu_scaled(3000, 300);
  te t = te_new("threaded", 2, 1);
  weft_var *v = te_var(t.eng), *w = te_var(t.eng), *u = te_var(t.eng);
  atomic_int graph_runs = 0, pushed_runs = 0;
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  cr_assert_eq(te_push(t.eng, te_count_fn, &graph_runs, TE_NONE, TE_V(v), 0), 0);
  cr_assert_eq(te_push(t.eng, te_count_fn, &graph_runs, TE_NONE, TE_V(w), 0), 0);
  weft_graph *g = capture_end(t.eng);
  cap_run l = {g, t.eng, u, w, &graph_runs, n, 0}, p = {g, t.eng, u, w, &pushed_runs, n, 0};
  pthread_t th[2];
  cr_assert_eq(pthread_create(&th[0], NULL, cap_launcher, &l), 0);
  cr_assert_eq(pthread_create(&th[1], NULL, cap_pusher, &p), 0);
  bool finished = TU_WAIT_UNTIL(atomic_load(&l.done) >= n && atomic_load(&p.done) >= n,
                                TU_DEADLINE_S);
  cr_assert(finished, "stuck after %ld launches and %ld pushed pairs of %ld: a kept gate held "
            "a var while its launcher waited for a place", atomic_load(&l.done),
            atomic_load(&p.done), n);
  te_join(th[0]);
  te_join(th[1]);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&graph_runs), 2 * n);
  cr_assert_eq(atomic_load(&pushed_runs), 2 * n);
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* A graph that only reads v: a read pushed beside its kept read runs at
 * once and takes nothing back, and a launch runs beside a read that holds
 * v; a write takes v back. */
Test(graph_keep, reads_beside_a_kept_read, .init = setup, .timeout = TU_TIMEOUT(60))
{
  te t = te_new("threaded", 2, 0);
  weft_var *v = te_var(t.eng), *w = te_var(t.eng);
  klog l = {.n = 0};
  kop g_op = {&l, 100}, x = {&l, 1};
  atomic_int count = 0;
  weft_graph *g = capture_logger(t.eng, &g_op, v, false, w, &count);
  launch_kept(t.eng, g);
  te_gate reader = {0};
  cr_assert_eq(te_push(t.eng, te_gate_fn, &reader, TE_V(v), TE_NONE, 0), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&reader.started), TU_DEADLINE_S),
            "a read beside a kept read waited");
  cr_assert_eq(hold_of(g), WEFT_HOLD_KEPT, "a read took a kept read back");
  cr_assert_eq(weft_graph_launch(g), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&l.n) == 2, TU_DEADLINE_S),
            "the launch's read waited for another read");
  cr_assert_eq(atomic_load(&reader.open), 0);
  atomic_store(&reader.open, 1);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(hold_of(g), WEFT_HOLD_KEPT);
  cr_assert_eq(push_log(t.eng, &x, v, true), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&l.n) == 3, TU_DEADLINE_S), "a write on a kept read waited");
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(hold_of(g), WEFT_HOLD_PART);
  cr_assert_eq(l.log[2], 1);
  cr_assert_eq(atomic_load(&count), 2);
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* ---------------------------------------------------------- the others */

typedef struct cell_op {
  long *cell;
  long value;
} cell_op;

static int cell_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  cell_op *o = arg;
  *o->cell = o->value;
  return 0;
}

/* weft_var_wait and weft_var_delete on a kept var: each finds it free. */
Test(graph_keep, var_wait_and_delete_on_kept_vars, .init = setup, .timeout = TU_TIMEOUT(60))
{
  for (int threads = 1; threads <= 2; threads++) {
    te t = te_new("threaded", threads, 0);
    weft_var *v = te_var(t.eng), *w = te_var(t.eng);
    long cell = 0;
    cell_op o = {&cell, 7};
    atomic_int count = 0;
    cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
    cr_assert_eq(te_push(t.eng, cell_fn, &o, TE_NONE, TE_V(v), 0), 0);
    cr_assert_eq(te_push(t.eng, te_count_fn, &count, TE_NONE, TE_V(w), 0), 0);
    weft_graph *g = capture_end(t.eng);
    for (int r = 0; r < 10; r++) {
      o.value = 7 + r; /* read by the next launch's op: the wait below orders it */
      /* The last wait, for v alone, is a wait for the last launch (weft.h):
       * a launch is never refused after it, even while that launch's end
       * is still under way on another thread (graph.h, ENDING). */
      cr_assert_eq(weft_graph_launch(g), 0, "%d threads, launch %d", threads, r);
      cr_assert_eq(weft_var_wait(t.eng, v), 0); /* during the launch or after it */
      cr_assert_eq(cell, 7 + r, "%d threads, launch %d: the wait came back before the launch",
                   threads, r);
    }
    cr_assert_eq(weft_var_delete(t.eng, w), 0);
    cr_assert_eq(weft_wait_all(t.eng), 0);
    cr_assert_eq(atomic_load(&count), 10);
    cr_assert_eq(weft_graph_launch(g), WEFT_EINVAL, "a launch with a deleted var");
    cr_assert_eq(hold_of(g), -1, "a failed launch keeps nothing");
    cr_assert_eq(weft_graph_launch(g), WEFT_EINVAL);
    cr_assert_eq(atomic_load(&count), 10);
    atomic_int after = 0;
    cr_assert_eq(te_push(t.eng, te_count_fn, &after, TE_NONE, TE_V(v), 0), 0);
    cr_assert(TU_WAIT_UNTIL(atomic_load(&after) == 1, TU_DEADLINE_S),
              "v stayed held after the failed launch");
    cr_assert_eq(weft_wait_all(t.eng), 0);
    cr_assert_eq(weft_graph_destroy(g), 0);
    cr_assert_eq(te_free(&t), 0);
  }
  tu_assert_no_errors();
}

/* A wait on a var a graph writes is a wait for its launch (weft.h): right
 * after it, the graph can be launched again and destroyed, never
 * WEFT_EBUSY. The wait is pushed once the launch's ops have run, so it
 * often meets the gate after the launch's end made it keep the vars:
 * then a yield lets the gate go of v at once, and the wait may return
 * while that end is still under way on the thread that ran the last op
 * (graph.h, ENDING). With a 3 ms sleep planted in that end after
 * weft_keep_end, the code before ENDING fails this test at once. */
Test(graph_keep, relaunch_and_destroy_after_var_wait, .init = setup, .timeout = TU_TIMEOUT(60))
{
  for (int threads = 1; threads <= 2; threads++) {
    te t = te_new("threaded", threads, 0);
    weft_var *v = te_var(t.eng), *w = te_var(t.eng);
    for (int round = 0; round < 20; round++) {
      atomic_int first = 0, last = 0;
      cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
      cr_assert_eq(te_push(t.eng, te_count_fn, &first, TE_NONE, TE_V(w), 0), 0);
      cr_assert_eq(te_push(t.eng, te_count_fn, &last, TE_V(w), TE_V(v), 0), 0);
      weft_graph *g = capture_end(t.eng);
      for (int r = 0; r < 5; r++) {
        cr_assert_eq(weft_graph_launch(g), 0, "%d threads, round %d, launch %d", threads, round,
                     r);
        cr_assert(TU_WAIT_UNTIL(atomic_load(&last) == r + 1, TU_DEADLINE_S));
        cr_assert_eq(weft_var_wait(t.eng, v), 0);
        cr_assert_eq(atomic_load(&first), r + 1);
      }
      cr_assert_eq(weft_graph_destroy(g), 0, "%d threads, round %d: destroy after the wait",
                   threads, round);
    }
    cr_assert_eq(te_free(&t), 0);
  }
  tu_assert_no_errors();
}

/* Two graphs that write one var, launched in turn without a wait: each
 * launch takes the var from the other's gate, in launch order. */
Test(graph_keep, two_graphs_share_a_var, .init = setup, .timeout = TU_TIMEOUT(60))
{
  for (int threads = 1; threads <= 4; threads *= 2) {
    te t = te_new("threaded", threads, 0);
    weft_var *v = te_var(t.eng), *a = te_var(t.eng), *b = te_var(t.eng);
    klog l = {.n = 0};
    kop o1 = {&l, 1}, o2 = {&l, 2};
    atomic_int c1 = 0, c2 = 0;
    weft_graph *g1 = capture_logger(t.eng, &o1, v, true, a, &c1);
    weft_graph *g2 = capture_logger(t.eng, &o2, v, true, b, &c2);
    enum { ROUNDS = 60 };
    for (int r = 0; r < ROUNDS; r++) {
      weft_graph *g = r % 2 ? g2 : g1;
      int rc;
      while ((rc = weft_graph_launch(g)) == WEFT_EBUSY)
        sched_yield();
      cr_assert_eq(rc, 0);
    }
    cr_assert_eq(weft_wait_all(t.eng), 0);
    cr_assert_eq(atomic_load(&l.n), ROUNDS);
    for (int r = 0; r < ROUNDS; r++)
      cr_assert_eq(l.log[r], 1 + r % 2, "%d threads: launch %d ran graph %ld", threads, r,
                   l.log[r]);
    cr_assert_eq(atomic_load(&c1), ROUNDS / 2);
    cr_assert_eq(atomic_load(&c2), ROUNDS / 2);
    cr_assert_eq(weft_graph_destroy(g1), 0);
    cr_assert_eq(weft_graph_destroy(g2), 0);
    cr_assert_eq(te_free(&t), 0);
  }
  tu_assert_no_errors();
}

/* The graph's destroy lets go of its kept vars; an engine destroyed with a
 * graph that keeps vars lets the graph go too. */
Test(graph_keep, destroys_let_go_of_kept_vars, .init = setup, .timeout = TU_TIMEOUT(60))
{
  te t = te_new("threaded", 2, 0);
  weft_var *v = te_var(t.eng), *w = te_var(t.eng);
  klog l = {.n = 0};
  kop o = {&l, 100}, x = {&l, 1};
  atomic_int count = 0;
  weft_graph *g = capture_logger(t.eng, &o, v, true, w, &count);
  launch_kept(t.eng, g);
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(push_log(t.eng, &x, v, true), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&l.n) == 2, TU_DEADLINE_S), "v stayed held");
  g = capture_logger(t.eng, &o, v, true, w, &count);
  cr_assert_eq(weft_graph_launch(g), 0);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(te_free(&t), 0, "an engine whose graph keeps vars");
  cr_assert_eq(weft_graph_launch(g), WEFT_ESHUTDOWN);
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(atomic_load(&count), 2);
  tu_assert_no_errors();
}

/* ---------------------------------------------------------------- stress */

enum { SV = 6, SGOPS = 12 };

typedef struct sctx {
  te_guard guard[SV];
  atomic_long writes[SV]; /* writes each var saw */
} sctx;

typedef struct sop {
  sctx *c;
  int r, w; /* the var it reads (or -1) and the one it writes */
  atomic_int ran;
} sop;

static int stress_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  sop *o = arg;
  int nr = o->r >= 0;
  te_guard_enter(o->c->guard, &o->r, nr, &o->w, 1);
  atomic_fetch_add(&o->c->writes[o->w], 1);
  sched_yield(); /* widen the window an overlap would need */
  te_guard_leave(o->c->guard, &o->r, nr, &o->w, 1);
  atomic_fetch_add(&o->ran, 1);
  return 0;
}

static void push_sop(weft_engine *e, weft_var **vars, sop *o)
{
  weft_op_desc d = te_desc(stress_fn, o);
  weft_var *r[1], *w[1] = {vars[o->w]};
  if (o->r >= 0) {
    r[0] = vars[o->r];
    d.reads = r;
    d.num_reads = 1;
  }
  d.writes = w;
  d.num_writes = 1;
  int rc = weft_push(e, &d);
  TU_CHECK(rc == 0, "push = %d", rc);
}

typedef struct pusher {
  weft_engine *eng;
  weft_var **vars;
  sop *ops;
  long n;
  uint64_t seed;
} pusher;

static void *pusher_main(void *arg)
{
  pusher *p = arg;
  for (long i = 0; i < p->n; i++) {
    push_sop(p->eng, p->vars, &p->ops[i]);
    if (tu_rand(&p->seed) % 8 == 0)
      sched_yield();
  }
  return NULL;
}

/* Launches of a graph over SV vars, while two threads push ops on the same
 * vars: no overlap a var's rules forbid, every op exactly as often as it
 * was launched or pushed, every write counted. */
Test(graph_keep, stress_launches_with_outside_pushers, .init = setup, .timeout = TU_TIMEOUT(180))
{
  int launches = (int)tu_scaled(150, 30);
  long per = tu_scaled(1500, 300);
  /* On 2 and 4 workers the graph may run in lanes (lanes.h): once as the
   * launches choose, once with every launch in lanes. */
  static const int run_threads[] = {1, 2, 2, 4, 4};
  for (int run = 0; run < 5; run++) {
    int threads = run_threads[run];
    bool lanes = run == 2 || run == 4;
    te t = te_new("threaded", threads, 0);
    weft_var *vars[SV];
    for (int i = 0; i < SV; i++)
      vars[i] = te_var(t.eng);
    sctx *c = calloc(1, sizeof *c);
    sop *gops = calloc(SGOPS, sizeof *gops);
    sop *pops = calloc(2 * (size_t)per, sizeof *pops);
    cr_assert(c && gops && pops);
    uint64_t seed = 0x5eed + (uint64_t)threads;
    cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
    for (int i = 0; i < SGOPS; i++) {
      gops[i] = (sop){.c = c, .r = i % 3 ? (i + 2) % SV : -1, .w = i % SV};
      push_sop(t.eng, vars, &gops[i]);
    }
    weft_graph *g = capture_end(t.eng);
    if (lanes) {
      cr_assert_geq(g->nlanes, 2, "%d threads: the graph has no lanes", threads);
      g->lane_force = 1;
    }
    for (long i = 0; i < 2 * per; i++) {
      /* Most on vars 0..2 (the graph's busiest), some reads elsewhere. */
      int w = (int)(tu_rand(&seed) % 3);
      int r = tu_rand(&seed) % 2 ? (int)(3 + tu_rand(&seed) % 3) : -1;
      pops[i] = (sop){.c = c, .r = r, .w = w};
    }
    pusher p[2] = {{t.eng, vars, pops, per, 1}, {t.eng, vars, pops + per, per, 2}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
      cr_assert_eq(pthread_create(&th[i], NULL, pusher_main, &p[i]), 0);
    for (int r = 0; r < launches; r++) {
      int rc;
      while ((rc = weft_graph_launch(g)) == WEFT_EBUSY)
        sched_yield();
      TU_CHECK(rc == 0, "launch %d = %d", r, rc);
      if (r % 16 == 5)
        TU_CHECK(weft_var_wait(t.eng, vars[r % SV]) == 0, "var_wait");
    }
    for (int i = 0; i < 2; i++)
      te_join(th[i]);
    cr_assert_eq(weft_wait_all(t.eng), 0);
    for (int i = 0; i < SGOPS; i++)
      cr_assert_eq(atomic_load(&gops[i].ran), launches, "%d threads: graph op %d ran %d times",
                   threads, i, atomic_load(&gops[i].ran));
    long want[SV] = {0};
    for (int i = 0; i < SGOPS; i++)
      want[gops[i].w] += launches;
    for (long i = 0; i < 2 * per; i++) {
      cr_assert_eq(atomic_load(&pops[i].ran), 1, "%d threads: pushed op %ld ran %d times",
                   threads, i, atomic_load(&pops[i].ran));
      want[pops[i].w]++;
    }
    for (int v = 0; v < SV; v++)
      cr_assert_eq(atomic_load(&c->writes[v]), want[v], "%d threads: var %d: %ld writes, expected %ld",
                   threads, v, atomic_load(&c->writes[v]), want[v]);
    cr_assert_eq(weft_graph_destroy(g), 0);
    cr_assert_eq(te_free(&t), 0);
    free(c);
    free(gops);
    free(pops);
  }
  tu_assert_no_errors();
}
