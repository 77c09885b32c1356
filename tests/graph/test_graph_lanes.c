/* SPDX-License-Identifier: MIT */
/*
 * A graph run in lanes (src/graph/lanes.h): the capture's plan (and its
 * guess for long nodes) and the plan again with measured costs (checked
 * through the graph's internals),
 * and what users see: every edge kept in
 * every launch, whichever way a launch runs (the first launches try lanes
 * and one lane in turn), with lanes that stop and wake each other (ops
 * that take long), an op that waits inside a lane (it helps run the pool's
 * tasks, other lanes among them), failures skipping what follows them, and
 * ordinary pushes on the graph's vars between launches.
 */
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "graph/graph.h"
#include "graph/lanes.h"
#include "../deps/differential.h"
#include "../deps/engine_util.h"

static void setup(void)
{
  te_setup();
}

/* A wavefront: op (i, j) writes cell (i, j) and reads (i - 1, j) and
 * (i, j - 1); it checks that both hold this launch's number, then writes
 * it. */
enum { W = 24 };

typedef struct wave {
  long cell[W][W]; /* plain: ordered by the engine, or TSan says otherwise */
  long launch;     /* written by the test's thread between launches */
  atomic_long bad; /* ops that found a predecessor not run this launch */
  atomic_long ran;
  int slow_every;  /* 0, or ops (i * W + j) % slow_every == 0 spin 200 us */
  int fail_i, fail_j; /* the op that fails (status 21), or -1 */
  weft_engine *eng;
  weft_var *outside; /* the var op (W / 2, W / 2) waits for, or NULL */
} wave;

typedef struct wave_op {
  wave *w;
  int i, j;
} wave_op;

static void spin_ns(long ns)
{
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  do
    clock_gettime(CLOCK_MONOTONIC, &b);
  while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ns);
}

static int wave_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  wave_op *o = arg;
  wave *w = o->w;
  long l = w->launch;
  if ((o->i > 0 && w->cell[o->i - 1][o->j] != l) || (o->j > 0 && w->cell[o->i][o->j - 1] != l))
    atomic_fetch_add(&w->bad, 1);
  if (w->slow_every && (o->i * W + o->j) % w->slow_every == 0)
    spin_ns(200000);
  if (w->outside && o->i == W / 2 && o->j == W / 2 && weft_var_wait(w->eng, w->outside) != 0)
    atomic_fetch_add(&w->bad, 1);
  atomic_fetch_add(&w->ran, 1);
  if (o->i == w->fail_i && o->j == w->fail_j)
    return 21;
  w->cell[o->i][o->j] = l;
  return 0;
}

static int sleep_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  (void)arg;
  struct timespec ts = {0, 2000000};
  nanosleep(&ts, NULL);
  return 0;
}

/* The graph's internals: lanes, or 0. */
static int lanes_of(weft_graph *g)
{
  return ((struct weft_graph *)g)->nlanes;
}

/* Captures the wavefront on vars v; returns the graph. */
static weft_graph *capture_wave(weft_engine *e, wave *w, wave_op ops[W][W], weft_var *v[W][W])
{
  cr_assert_eq(weft_graph_begin_capture(e), 0);
  for (int i = 0; i < W; i++)
    for (int j = 0; j < W; j++) {
      ops[i][j] = (wave_op){w, i, j};
      weft_var *r[2];
      size_t nr = 0;
      if (i > 0)
        r[nr++] = v[i - 1][j];
      if (j > 0)
        r[nr++] = v[i][j - 1];
      cr_assert_eq(te_push(e, wave_fn, &ops[i][j], r, nr, TE_V(v[i][j]), 0), 0);
    }
  weft_graph *g = NULL;
  cr_assert_eq(weft_graph_end_capture(e, &g), 0);
  cr_assert_not_null(g);
  return g;
}

/* Runs the wavefront on threads workers, checking every launch (each
 * check an assertion); kind of trouble: 0 none, 1 slow ops, 2 an op
 * waiting inside a lane, 3 a failure. Returns the launches it checked,
 * enough to run both ways and then the pick. */
static int run_wave(int threads, int kind)
{
  te t = te_new("threaded", threads, 0);
  static wave w;
  static wave_op ops[W][W];
  static weft_var *v[W][W];
  memset(&w, 0, sizeof w);
  w.eng = t.eng;
  w.fail_i = w.fail_j = -1;
  if (kind == 1)
    w.slow_every = 37;
  if (kind == 3) {
    w.fail_i = 3;
    w.fail_j = 5;
  }
  for (int i = 0; i < W; i++)
    for (int j = 0; j < W; j++)
      v[i][j] = te_var(t.eng);
  weft_graph *g = capture_wave(t.eng, &w, ops, v);
  cr_assert_geq(lanes_of(g), 2, "%d workers: a %dx%d wavefront should plan lanes", threads, W, W);
  if (kind == 2)
    w.outside = te_var(t.eng);
  int launches = (int)tu_scaled(12, 8); /* both ways, then the pick */
  for (int l = 1; l <= launches; l++) {
    w.launch = l;
    atomic_store(&w.ran, 0);
    if (kind == 2) /* the op inside waits for this one, pushed first */
      cr_assert_eq(te_push(t.eng, sleep_fn, NULL, TE_NONE, TE_V(w.outside), 0), 0);
    cr_assert_eq(weft_graph_launch(g), 0);
    int rc = weft_wait_all(t.eng);
    cr_assert_eq(rc, kind == 3 ? 21 : 0, "%d workers, kind %d, launch %d: wait_all = %d", threads,
                 kind, l, rc);
    cr_assert_eq(atomic_load(&w.bad), 0, "%d workers, kind %d, launch %d: %ld ops ran before a "
                 "predecessor", threads, kind, l, atomic_load(&w.bad));
    long want = W * W;
    if (kind == 3) /* the failed op's quadrant after it is skipped */
      want -= (long)(W - 3) * (W - 5) - 1;
    cr_assert_eq(atomic_load(&w.ran), want, "%d workers, kind %d, launch %d: %ld ops ran, "
                 "expected %ld", threads, kind, l, atomic_load(&w.ran), want);
    for (int i = 0; i < W; i++)
      for (int j = 0; j < W; j++) {
        bool skipped = kind == 3 && i >= 3 && j >= 5;
        cr_assert_eq(w.cell[i][j], skipped ? 0 : l, "%d workers, kind %d, launch %d: cell "
                     "(%d, %d) = %ld", threads, kind, l, i, j, w.cell[i][j]);
      }
    if (kind == 3) /* the failed vars stay failed until a wait reports them */
      for (int i = 3; i < W; i++)
        for (int j = 5; j < W; j++)
          (void)weft_var_wait(t.eng, v[i][j]);
  }
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
  return launches;
}

/* Both ways (lanes, one lane) twice, then the pick (lanes.h). */
enum { WAVE_MIN_LAUNCHES = 2 * WEFT_GRAPH_LANE_PROBES + 1 };

Test(graph_lanes, a_wavefront_keeps_every_edge, .init = setup, .timeout = TU_TIMEOUT(120))
{
  cr_assert_geq(run_wave(2, 0), WAVE_MIN_LAUNCHES);
  cr_assert_geq(run_wave(4, 0), WAVE_MIN_LAUNCHES);
}

/* Slow ops hold their lane while the other lanes catch up and stop: they
 * wait for it, and its done count wakes them. */
Test(graph_lanes, slow_ops_make_lanes_stop_and_wake, .init = setup, .timeout = TU_TIMEOUT(120))
{
  cr_assert_geq(run_wave(2, 1), WAVE_MIN_LAUNCHES);
  cr_assert_geq(run_wave(4, 1), WAVE_MIN_LAUNCHES);
}

/* An op waiting inside a lane helps run the pool's tasks, other lanes'
 * sweepers among them: one run nested there stops as any other. */
Test(graph_lanes, an_op_waiting_inside_a_lane, .init = setup, .timeout = TU_TIMEOUT(120))
{
  cr_assert_geq(run_wave(2, 2), WAVE_MIN_LAUNCHES);
  cr_assert_geq(run_wave(4, 2), WAVE_MIN_LAUNCHES);
}

Test(graph_lanes, a_failure_skips_what_follows_it, .init = setup, .timeout = TU_TIMEOUT(120))
{
  cr_assert_geq(run_wave(4, 3), WAVE_MIN_LAUNCHES);
}

/* Independent ops: lanes with no wait between them, each its own share;
 * a chain: one lane (nothing to gain). */
Test(graph_lanes, the_plan, .init = setup, .timeout = TU_TIMEOUT(60))
{
  te t = te_new("threaded", 4, 0);
  enum { N = 400 };
  static atomic_int runs[N];
  weft_var *vs[8];
  for (int k = 0; k < 8; k++)
    vs[k] = te_var(t.eng);
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  for (int i = 0; i < N; i++)
    cr_assert_eq(te_push(t.eng, te_count_fn, &runs[i], TE_NONE, TE_V(vs[i % 8]), 0), 0);
  weft_graph *indep = NULL;
  cr_assert_eq(weft_graph_end_capture(t.eng, &indep), 0);
  struct weft_graph *gi = (struct weft_graph *)indep;
  cr_assert_eq(gi->nlanes, 4, "8 independent chains on 4 workers: %d lanes", gi->nlanes);
  for (int p = 0; p < gi->nlanes; p++) {
    cr_assert_eq(gi->lanes[p].n, N / 4, "lane %d: %d nodes", p, gi->lanes[p].n);
    cr_assert_eq(gi->lanes[p].wait0[gi->lanes[p].n], gi->lanes[p].wait0[0],
                 "lane %d waits for another", p);
  }
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  for (int i = 0; i < N; i++)
    cr_assert_eq(te_push(t.eng, te_count_fn, &runs[i], TE_NONE, TE_V(vs[0]), 0), 0);
  weft_graph *chain = NULL;
  cr_assert_eq(weft_graph_end_capture(t.eng, &chain), 0);
  struct weft_graph *gc = (struct weft_graph *)chain;
  cr_assert_eq(gc->nlanes, 0, "a chain: %d lanes", gc->nlanes);
  cr_assert(gc->in_order, "a chain of plain ops on 4 workers runs in order");
  for (int l = 1; l <= 6; l++) {
    cr_assert_eq(weft_graph_launch(indep), 0);
    cr_assert_eq(weft_graph_launch(chain), 0);
    cr_assert_eq(weft_wait_all(t.eng), 0);
    for (int i = 0; i < N; i++)
      cr_assert_eq(atomic_load(&runs[i]), 2 * l, "op %d ran %d times in %d launches of each", i,
                   atomic_load(&runs[i]), l);
  }
  cr_assert_eq(weft_graph_destroy(indep), 0);
  cr_assert_eq(weft_graph_destroy(chain), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* Measured costs. The first launch of a graph that may run in lanes times
 * every node, and the second plans the lanes again with those times
 * (lanes.h). A timing is wall-clock time, so what a test may rely on is
 * only that an op that spins 1 ms reads at least that (a short op
 * descheduled on a loaded machine reads long too): each test below checks
 * the timing through a launch, and the plan made from given costs by
 * calling weft_lanes_replan itself, between launches, with node_ns set. */
static int heavy_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  atomic_fetch_add((atomic_int *)arg, 1);
  spin_ns(1000000);
  return 0;
}

/* Heavy ops (lanes[p].node[k] % K == 0) in each of g's lanes. */
static void heavy_per_lane(const struct weft_graph *g, int K, int *heavy)
{
  for (int p = 0; p < K; p++)
    heavy[p] = 0;
  for (int p = 0; p < g->nlanes; p++)
    for (int k = 0; k < g->lanes[p].n; k++)
      heavy[p] += g->lanes[p].node[k] % K == 0;
}

/* Every fourth of 64 independent ops spins 1 ms: the plan of equal costs
 * deals them round-robin into one lane of 4; the first launch times them
 * (>= 1 ms each), and a plan made from such costs gives each lane its
 * share. */
Test(graph_lanes, measured_costs_balance_the_lanes, .init = setup, .timeout = TU_TIMEOUT(60))
{
  enum { N = 64, K = 4 };
  te t = te_new("threaded", K, 0);
  static atomic_int runs[N];
  weft_var *v[N];
  for (int i = 0; i < N; i++)
    v[i] = te_var(t.eng);
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  for (int i = 0; i < N; i++)
    cr_assert_eq(te_push(t.eng, i % K ? te_count_fn : heavy_fn, &runs[i], TE_NONE, TE_V(v[i]), 0),
                 0);
  weft_graph *g = NULL;
  cr_assert_eq(weft_graph_end_capture(t.eng, &g), 0);
  struct weft_graph *gg = (struct weft_graph *)g;
  cr_assert(weft_lanes_able(gg) && gg->node_ns);
  cr_assert_eq(gg->nlanes, K);
  int heavy[K];
  heavy_per_lane(gg, K, heavy);
  cr_assert_eq(heavy[0], N / K, "equal costs: lane 0 holds %d of the %d heavy ops", heavy[0],
               N / K);
  /* The first launch times every node (in lanes: it has them). */
  cr_assert_eq(weft_graph_launch(g), 0);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  for (int i = 0; i < N; i += K)
    cr_assert_geq(gg->node_ns[i], 1000000u, "heavy op %d timed %u ns", i, gg->node_ns[i]);
  /* The plan from such costs: each lane gets N / K / K heavy ops. */
  for (int i = 0; i < N; i++)
    gg->node_ns[i] = i % K ? 100 : 1000000;
  weft_lanes_replan(gg, K);
  cr_assert_eq(gg->nlanes, K, "measured: %d lanes", gg->nlanes);
  heavy_per_lane(gg, K, heavy);
  for (int p = 0; p < K; p++)
    cr_assert_eq(heavy[p], N / K / K, "measured costs: lane %d holds %d of the %d heavy ops", p,
                 heavy[p], N / K);
  /* And the launches that follow (the second plans again from its own
   * timing: whatever it finds, every op runs once a launch). */
  for (int l = 2; l <= 3; l++) {
    cr_assert_eq(weft_graph_launch(g), 0);
    cr_assert_eq(weft_wait_all(t.eng), 0);
  }
  for (int i = 0; i < N; i++)
    cr_assert_eq(atomic_load(&runs[i]), 3, "op %d ran %d times in 3 launches", i,
                 atomic_load(&runs[i]));
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* Two long ops (heavy_fn) beside a chain of 8 short ones, 4 workers:
 * equal costs find no lanes worth having; the first launch times the
 * nodes in one lane (>= 1 ms for the long ones), and the plan from such
 * costs runs the two in lanes of their own. With the pool profiled
 * (WEFT_PROFILE) its sweeper runs no node bare, and must time them all
 * the same. Returns the lanes of that plan. */
static int find_lanes(bool profiled)
{
  char path[] = "/tmp/weft_lanes_profile_XXXXXX";
  if (profiled) {
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    setenv("WEFT_PROFILE", path, 1);
  }
  te t = te_new("threaded", 4, 0);
  static atomic_int runs[10];
  for (int i = 0; i < 10; i++)
    atomic_store(&runs[i], 0);
  weft_var *a = te_var(t.eng), *b = te_var(t.eng), *c = te_var(t.eng);
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  cr_assert_eq(te_push(t.eng, heavy_fn, &runs[0], TE_NONE, TE_V(a), 0), 0);
  cr_assert_eq(te_push(t.eng, heavy_fn, &runs[1], TE_NONE, TE_V(b), 0), 0);
  for (int i = 2; i < 10; i++)
    cr_assert_eq(te_push(t.eng, te_count_fn, &runs[i], TE_NONE, TE_V(c), 0), 0);
  weft_graph *g = NULL;
  cr_assert_eq(weft_graph_end_capture(t.eng, &g), 0);
  struct weft_graph *gg = (struct weft_graph *)g;
  cr_assert(gg->in_order && weft_lanes_able(gg) && gg->node_ns);
  cr_assert_eq(gg->nlanes, 0, "equal costs: %d lanes", gg->nlanes);
  cr_assert_eq(weft_graph_launch(g), 0);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  for (int i = 0; i < 2; i++)
    cr_assert_geq(gg->node_ns[i], 1000000u, "%slong op %d timed %u ns",
                  profiled ? "profiled: " : "", i, gg->node_ns[i]);
  for (int i = 0; i < 10; i++)
    gg->node_ns[i] = i < 2 ? 1000000 : 100;
  weft_lanes_replan(gg, 4);
  int lanes = gg->nlanes;
  for (int p = 0; p < gg->nlanes; p++) /* the long ones in lanes of their own */
    for (int k = 0; k < gg->lanes[p].n; k++)
      if (gg->lanes[p].node[k] < 2)
        for (int x = 0; x < gg->lanes[p].n; x++)
          cr_assert(x == k || gg->lanes[p].node[x] >= 2, "both long ops in lane %d", p);
  for (int l = 2; l <= 3; l++) {
    cr_assert_eq(weft_graph_launch(g), 0);
    cr_assert_eq(weft_wait_all(t.eng), 0);
  }
  for (int i = 0; i < 10; i++)
    cr_assert_eq(atomic_load(&runs[i]), 3, "op %d ran %d times in 3 launches", i,
                 atomic_load(&runs[i]));
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
  if (profiled) {
    unsetenv("WEFT_PROFILE");
    unlink(path);
  }
  tu_assert_no_errors();
  return lanes;
}

/* Timing the nodes and planning again cost about n x 2 x workers steps
 * and two clock reads a node: when that exceeds 1/64 of a period's
 * launches (a launch's time x 256), the periods between two timings double
 * (0, 1, 3, ...), and a cheap one brings them back to 0 (tunables.h,
 * WEFT_GRAPH_LANE_REPLAN_SHARE). White-box: between launches the test sets
 * the launches' times (lane_best, lane_base) and moves the launch count to
 * a period's start. */
static void launch_and_wait(weft_engine *e, weft_graph *g)
{
  cr_assert_eq(weft_graph_launch(g), 0);
  cr_assert_eq(weft_wait_all(e), 0);
  /* The nodes are counter increments, but a sanitizer build on a busy
   * machine can time them past WEFT_GRAPH_RELEASE_NS: a plan would then
   * release the graph along its edges, and the next launch build it again,
   * which resets the replan state this test follows. */
  g->released = false;
}

Test(graph_lanes, dear_replans_are_spaced_out, .init = setup, .timeout = TU_TIMEOUT(60))
{
  te t = te_new("threaded", 2, 0);
  static atomic_int runs[16];
  weft_var *v[4];
  for (int i = 0; i < 4; i++)
    v[i] = te_var(t.eng);
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  for (int i = 0; i < 16; i++)
    cr_assert_eq(te_push(t.eng, te_count_fn, &runs[i], TE_NONE, TE_V(v[i % 4]), 0), 0);
  weft_graph *g = NULL;
  cr_assert_eq(weft_graph_end_capture(t.eng, &g), 0);
  cr_assert(weft_lanes_able(g) && g->node_ns);
  launch_and_wait(t.eng, g); /* a period's first launch: times the nodes */
  cr_assert(g->lane_measure, "the first launch did not time its nodes");
  g->lane_best[0] = g->lane_best[1] = 1; /* as if it took 1 ns: any plan is dear */
  launch_and_wait(t.eng, g);           /* plans again */
  cr_assert_eq(g->replan_gap, 1u, "a dear plan: gap %u", g->replan_gap);
  g->lane_launches = 0;
  launch_and_wait(t.eng, g); /* the next period's first launch: skipped */
  cr_assert_not(g->lane_measure, "timed the nodes in a period it should skip");
  launch_and_wait(t.eng, g);
  cr_assert_eq(g->replan_gap, 1u, "no timing, no plan: the gap stays");
  g->lane_launches = 0;
  launch_and_wait(t.eng, g); /* the period after: timed again */
  cr_assert(g->lane_measure, "the skipped periods did not end");
  g->lane_best[0] = g->lane_best[1] = 1;
  launch_and_wait(t.eng, g);
  cr_assert_eq(g->replan_gap, 3u, "dear again: gap %u", g->replan_gap);
  for (int p = 0; p < 3; p++) { /* 3 periods skipped */
    g->lane_launches = 0;
    launch_and_wait(t.eng, g);
    cr_assert_not(g->lane_measure, "timed the nodes in skipped period %d", p);
  }
  g->lane_launches = 0;
  launch_and_wait(t.eng, g);
  cr_assert(g->lane_measure);
  /* launches that take long: the plan is cheap */
  g->lane_base = g->lane_best[0] = g->lane_best[1] = INT64_MAX / 4;
  launch_and_wait(t.eng, g);
  cr_assert_eq(g->replan_gap, 0u, "a cheap plan: gap %u", g->replan_gap);
  int launches = 11;
  for (int i = 0; i < 16; i++)
    cr_assert_eq(atomic_load(&runs[i]), launches, "op %d ran %d times in %d launches", i,
                 atomic_load(&runs[i]), launches);
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* A 1-D stencil, 8 ops a step (each reads its neighbours' last values,
 * double-buffered), 2 workers: with nodes of 10 ns its lanes would wait
 * for more than they run, so equal costs find none, but the capture's
 * guess with long nodes does (lane_plan.h: its first launch runs in
 * them); the first plan from measured costs replaces the guess, lanes or
 * none, where a plan it does not beat by enough would stay. */
static weft_graph *capture_stencil(te *t, weft_var *v[2][8], atomic_int *runs)
{
  cr_assert_eq(weft_graph_begin_capture(t->eng), 0);
  for (int s = 0; s < 20; s++)
    for (int i = 0; i < 8; i++) {
      weft_var *r[3];
      size_t nr = 0;
      for (int j = i - 1; s > 0 && j <= i + 1; j++)
        if (j >= 0 && j < 8)
          r[nr++] = v[(s + 1) % 2][j];
      cr_assert_eq(te_push(t->eng, te_count_fn, &runs[s * 8 + i], r, nr, TE_V(v[s % 2][i]), 0),
                   0);
    }
  weft_graph *g = NULL;
  cr_assert_eq(weft_graph_end_capture(t->eng, &g), 0);
  return g;
}

Test(graph_lanes, the_capture_guesses_lanes_for_long_nodes, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  te t = te_new("threaded", 2, 0);
  static atomic_int runs[160];
  weft_var *v[2][8];
  for (int b = 0; b < 2; b++)
    for (int i = 0; i < 8; i++)
      v[b][i] = te_var(t.eng);
  for (int k = 0; k < 2; k++) { /* measured short, then long */
    weft_graph *g = capture_stencil(&t, v, runs);
    cr_assert(weft_lanes_able(g) && g->node_ns);
    cr_assert_eq(g->nlanes, 2, "the capture's guess: %d lanes", g->nlanes);
    cr_assert(g->lane_guess);
    for (int i = 0; i < g->nnodes; i++)
      g->node_ns[i] = k ? 30000 : 10;
    weft_lanes_replan(g, 2);
    cr_assert_not(g->lane_guess);
    if (k)
      cr_assert_eq(g->nlanes, 2, "measured long: %d lanes", g->nlanes);
    else
      cr_assert_eq(g->nlanes, 0, "measured short, the guess stayed: %d lanes", g->nlanes);
    cr_assert_eq(weft_graph_launch(g), 0);
    cr_assert_eq(weft_wait_all(t.eng), 0);
    cr_assert_eq(weft_graph_destroy(g), 0);
  }
  for (int i = 0; i < 160; i++)
    cr_assert_eq(atomic_load(&runs[i]), 2, "op %d ran %d times in 2 launches", i,
                 atomic_load(&runs[i]));
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

Test(graph_lanes, measured_costs_find_lanes_equal_costs_missed, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  cr_assert_geq(find_lanes(false), 2, "measured costs: no lanes");
  cr_assert_geq(find_lanes(true), 2, "measured costs, profiled: no lanes");
}

/* The random-DAG differential test (differential.h: graph launches with
 * ordinary pushes between them and outside waits on the graph's vars,
 * against the naive engine), every launch in lanes where the plan has
 * them. */
static int forced_graphs, forced_with_lanes;

static void force_lanes(weft_graph *g)
{
  g->lane_force = 1;
  forced_graphs++;
  forced_with_lanes += g->nlanes >= 2;
}

/* Returns the values compared with the naive engine's; *graphs: the graphs
 * captured (each seed's, on the naive engine too), *with_lanes: those that
 * had lanes. */
static long differential_in_lanes(int threads, int *graphs, int *with_lanes)
{
  dg_graph_hook = force_lanes;
  forced_graphs = forced_with_lanes = 0;
  long compared = differential_graph(threads, false, 0);
  dg_graph_hook = NULL;
  *graphs = forced_graphs;
  *with_lanes = forced_with_lanes;
  return compared;
}

Test(graph_lanes, differential_2_threads, .init = setup, .timeout = TU_TIMEOUT(120))
{
  int graphs, with_lanes;
  cr_assert_eq(differential_in_lanes(2, &graphs, &with_lanes), 3 * DV);
  cr_assert_eq(graphs, 6);
  cr_assert_geq(with_lanes, 1, "no graph of the 3 seeds had lanes");
}

Test(graph_lanes, differential_4_threads, .init = setup, .timeout = TU_TIMEOUT(120))
{
  int graphs, with_lanes;
  cr_assert_eq(differential_in_lanes(4, &graphs, &with_lanes), 3 * DV);
  cr_assert_eq(graphs, 6);
  cr_assert_geq(with_lanes, 1, "no graph of the 3 seeds had lanes");
}

/* Ordinary pushes on the graph's vars between and during launches stay
 * ordered with them: each launch adds one to every cell of a row of
 * counters, and an outside op doubles them; the result tells the order. */
typedef struct counter_op {
  long *c;
  int dbl;
} counter_op;

static int counter_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  counter_op *o = arg;
  *o->c = o->dbl ? *o->c * 2 : *o->c + 1;
  return 0;
}

Test(graph_lanes, pushes_between_launches_stay_in_order, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  enum { N = 64 };
  te t = te_new("threaded", 4, 0);
  static long c[N];
  static counter_op inc[N], dbl[N];
  weft_var *v[N];
  for (int i = 0; i < N; i++) {
    v[i] = te_var(t.eng);
    c[i] = 0;
    inc[i] = (counter_op){&c[i], 0};
    dbl[i] = (counter_op){&c[i], 1};
  }
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  for (int i = 0; i < N; i++)
    cr_assert_eq(te_push(t.eng, counter_fn, &inc[i], TE_NONE, TE_V(v[i]), 0), 0);
  weft_graph *g = NULL;
  cr_assert_eq(weft_graph_end_capture(t.eng, &g), 0);
  cr_assert_geq(lanes_of(g), 2);
  long want = 0;
  for (int l = 0; l < 10; l++) {
    while (weft_graph_launch(g) == WEFT_EBUSY)
      sched_yield();
    for (int i = 0; i < N; i++)
      cr_assert_eq(te_push(t.eng, counter_fn, &dbl[i], TE_NONE, TE_V(v[i]), 0), 0);
    want = (want + 1) * 2;
  }
  cr_assert_eq(weft_wait_all(t.eng), 0);
  for (int i = 0; i < N; i++)
    cr_assert_eq(c[i], want, "counter %d = %ld, expected %ld", i, c[i], want);
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}
