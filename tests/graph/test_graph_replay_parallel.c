/* SPDX-License-Identifier: MIT */
/*
 * A replayed graph runs as many operators at once as the graph allows:
 * never fewer than pushing the same operators does (weft.h, "Where they
 * run"). Graphs whose parallelism crosses any split of them into lanes at
 * every step: a 1-D stencil (each op reads its neighbours' last values,
 * double-buffered), a wider one ("nearest": two neighbours each side) and
 * FFT-like butterflies of width 2 and 8 (each op reads its own and its
 * partner's last values). Every op checks that it ran after the ops its
 * reads depend on, and before the ops that overwrite what it read (each
 * value holds the round and step that wrote it).
 *
 * What is measured is concurrency, never time: each op counts the ops
 * running at its entry and while it spins (about 30 us), and an op that saw
 * another one running counts as overlapped. The push and the replay run
 * the same ops in turn in one process, on one pool of 2 workers, so that a
 * machine busy with other work slows both alike; the test asks the replay
 * for a third of the push's overlapped ops, a margin no scheduling noise
 * closes the other way (a replay that runs one op at a time overlaps none).
 *
 * White-box (the graph's lane_force): run in lanes, an op that waits for
 * the ops of its own step captured before it (which the graph lets run
 * beside it) must see them run: a lane tells the others of each op they
 * wait for as soon as it has run it, so no lane waits for an op that ran
 * while its own op waits for that lane.
 */
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/lane_plan.h"
#include "../deps/engine_util.h"

static void setup(void)
{
  te_setup();
}

enum { MAXW = 8, MAXR = 2 * 2 + 1, NOPS = 400, OP_NS = 30000 };

typedef enum { STENCIL, BUTTERFLY } shape_kind;

typedef struct shape {
  const char *name;
  shape_kind kind;
  int width;  /* ops a step */
  int radius; /* STENCIL: the neighbours read each side */
} shape;

static const shape shapes[] = {
    {"stencil (3 reads)", STENCIL, 8, 1},
    {"nearest (5 reads)", STENCIL, 8, 2},
    {"butterfly, width 2", BUTTERFLY, 2, 0},
    {"butterfly, width 8", BUTTERFLY, 8, 0},
};

/* One run of the ops (a push or a launch): what they saw. */
typedef struct sim {
  const shape *sh;
  int steps;
  long round;               /* written by the test's thread between runs */
  long val[2][MAXW];        /* plain: the engine orders every access */
  atomic_long bad;
  /* Counting: each op spins OP_NS and counts the ops running meanwhile. */
  bool count;
  atomic_int running;       /* ops in their fn now */
  atomic_long entered, overlapped;
  /* Else: each op waits for its step's ops captured before it, and
   * records the round in which it finished. */
  atomic_long *done_round;
  atomic_bool gave_up;      /* an op's wait for its step ran past its deadline */
} sim;

typedef struct cell {
  sim *s;
  int t, i;
} cell;

static double now_s(void)
{
  return tu_now();
}

/* The vars op (t, i) reads: *n of them into in[] (indices into val[(t - 1) % 2]). */
static int inputs(const shape *sh, int t, int i, int in[MAXR])
{
  int n = 0;
  if (t == 0)
    return 0;
  if (sh->kind == STENCIL) {
    for (int j = i - sh->radius; j <= i + sh->radius; j++)
      if (j >= 0 && j < sh->width)
        in[n++] = j;
  } else {
    int lg = 0;
    while ((1 << lg) < sh->width)
      lg++;
    in[n++] = i;
    in[n++] = i ^ (1 << ((t - 1) % lg));
  }
  return n;
}

/* A step's value: the round and the step that wrote it. */
static long stamp(const sim *s, int t)
{
  return s->round * s->steps + t;
}

static int op_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  cell *c = arg;
  sim *s = c->s;
  int in[MAXR], n = inputs(s->sh, c->t, c->i, in);
  for (int k = 0; k < n; k++)
    if (s->val[(c->t - 1) % 2][in[k]] != stamp(s, c->t - 1))
      atomic_fetch_add(&s->bad, 1);
  if (s->count) {
    bool saw = atomic_fetch_add(&s->running, 1) > 0;
    double end = now_s() + OP_NS * 1e-9;
    while (now_s() < end)
      saw |= atomic_load_explicit(&s->running, memory_order_relaxed) > 1;
    atomic_fetch_sub(&s->running, 1);
    atomic_fetch_add(&s->entered, 1);
    if (saw)
      atomic_fetch_add(&s->overlapped, 1);
    s->val[c->t % 2][c->i] = stamp(s, c->t);
    return 0;
  }
  /* The ops of this step captured before this one: they depend on the
   * step before only, so the graph lets them run beside this one. */
  double deadline = now_s() + 5.0 * WEFT_TEST_TIMEOUT_MULT;
  for (int j = 0; j < c->i && !atomic_load(&s->gave_up); j++)
    while (atomic_load(&s->done_round[c->t * MAXW + j]) != s->round)
      if (now_s() > deadline) {
        atomic_store(&s->gave_up, true);
        break;
      } else {
        sched_yield();
      }
  s->val[c->t % 2][c->i] = stamp(s, c->t);
  atomic_store(&s->done_round[c->t * MAXW + c->i], s->round);
  return 0;
}

/* Pushes (or, capturing, records) every op of s on vars v. */
static void push_all(weft_engine *e, sim *s, cell *cells, weft_var *v[2][MAXW])
{
  for (int t = 0; t < s->steps; t++)
    for (int i = 0; i < s->sh->width; i++) {
      int in[MAXR], n = inputs(s->sh, t, i, in);
      weft_var *r[MAXR];
      for (int k = 0; k < n; k++)
        r[k] = v[(t - 1) % 2][in[k]];
      cell *c = &cells[t * MAXW + i];
      *c = (cell){s, t, i};
      cr_assert_eq(te_push(e, op_fn, c, r, (size_t)n, TE_V(v[t % 2][i]), 0), 0);
    }
}

/* Runs sh pushed and replayed in turn on 2 workers until the pushes have
 * overlapped enough ops to judge by (or a bound on the rounds): at least
 * min_rounds of each. *push and *replay: the ops that overlapped another
 * in each; returns the ops each ran. */
/* The vars of s's shape (double-buffered) in v, and its operators captured
 * into a graph. */
static weft_graph *capture_stencil(weft_engine *e, sim *s, cell *cells, weft_var *v[2][MAXW])
{
  for (int b = 0; b < 2; b++)
    for (int i = 0; i < s->sh->width; i++)
      v[b][i] = te_var(e);
  cr_assert_eq(weft_graph_begin_capture(e), 0);
  push_all(e, s, cells, v);
  weft_graph *g = NULL;
  cr_assert_eq(weft_graph_end_capture(e, &g), 0);
  return g;
}

static long push_against_replay(const shape *sh, long *push, long *replay)
{
  te t = te_new("threaded", 2, 0);
  static sim s;
  static cell cells[NOPS / 2 * MAXW];
  memset(&s, 0, sizeof s);
  s.sh = sh;
  s.steps = NOPS / sh->width;
  s.count = true;
  weft_var *v[2][MAXW];
  weft_graph *g = capture_stencil(t.eng, &s, cells, v);
  const long enough = NOPS / 4; /* overlapped push ops */
  const int min_rounds = 6, max_rounds = 60;
  long ran[2] = {0, 0}, over[2] = {0, 0};
  for (int r = 0; r < max_rounds && (r < min_rounds || over[0] < enough); r++)
    for (int mode = 0; mode < 2; mode++) { /* push, then replay */
      s.round = 2 * r + mode + 1;
      atomic_store(&s.entered, 0);
      atomic_store(&s.overlapped, 0);
      if (mode == 0)
        push_all(t.eng, &s, cells, v);
      else
        cr_assert_eq(weft_graph_launch(g), 0);
      cr_assert_eq(weft_wait_all(t.eng), 0);
      cr_assert_eq(atomic_load(&s.bad), 0, "%s, %s %d: %ld ops ran out of order", sh->name,
                   mode ? "launch" : "push", r, atomic_load(&s.bad));
      cr_assert_eq(atomic_load(&s.entered), (long)s.steps * sh->width);
      ran[mode] += atomic_load(&s.entered);
      over[mode] += atomic_load(&s.overlapped);
    }
  cr_log_info("%s: overlapped ops, pushed %ld of %ld, replayed %ld of %ld", sh->name, over[0],
              ran[0], over[1], ran[1]);
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
  *push = over[0];
  *replay = over[1];
  return ran[0];
}

Test(graph_replay_parallel, a_replay_runs_as_many_ops_at_once_as_pushing_them, .init = setup,
     .timeout = TU_TIMEOUT(180))
{
  if (weft_pool_default_threads() < 2)
    cr_skip_test("one CPU for this process: two ops never run at once");
  long push_total = 0;
  for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
    /* On a busy machine the two workers share the CPUs with others, and
     * how often two ops overlap swings from round to round, pushed or
     * replayed alike: a shape gets up to 3 tries. A replay that runs its
     * ops one at a time fails all three. */
    long push = 0, replay = 0, ran = 0;
    for (int attempt = 0; attempt < 3; attempt++) {
      ran = push_against_replay(&shapes[k], &push, &replay);
      if (push < NOPS / 4 || 3 * replay >= push)
        break;
    }
    push_total += push;
    if (push < NOPS / 4)
      continue; /* the pushes barely overlapped: nothing to judge by */
    cr_assert_geq(3 * replay, push,
                  "%s: replayed, %ld of %ld ops overlapped another; pushed, %ld of %ld "
                  "(the last of 3 tries)",
                  shapes[k].name, replay, ran, push, ran);
  }
  if (push_total < NOPS / 4)
    cr_skip_test("the pool's 2 workers hardly ever ran at once (%ld overlapped ops pushed): "
                 "the machine gave it one CPU", push_total);
}

Test(graph_replay_parallel, a_lane_never_waits_for_an_op_that_has_run, .init = setup,
     .timeout = TU_TIMEOUT(120))
{
  for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
    const shape *sh = &shapes[k];
    te t = te_new("threaded", 2, 0);
    static sim s;
    static cell cells[NOPS / 2 * MAXW];
    static atomic_long done_round[NOPS / 2 * MAXW];
    memset(&s, 0, sizeof s);
    for (size_t i = 0; i < sizeof done_round / sizeof done_round[0]; i++)
      atomic_store(&done_round[i], 0);
    s.sh = sh;
    s.steps = NOPS / sh->width;
    s.done_round = done_round;
    weft_var *v[2][MAXW];
    weft_graph *g = capture_stencil(t.eng, &s, cells, v);
    /* The lanes of ops of OP_NS (those of the capture's plan, unless
     * these pay much more: lane_plan.h), every launch in them. */
    for (int i = 0; i < g->nnodes; i++)
      g->node_ns[i] = OP_NS;
    weft_lanes_replan(g, 2);
    cr_assert_geq(g->nlanes, 2, "%s: no lanes on 2 workers", sh->name);
    g->lane_force = 1;
    int launches = (int)tu_scaled(6, 3);
    for (int l = 1; l <= launches; l++) {
      s.round = l;
      cr_assert_eq(weft_graph_launch(g), 0);
      cr_assert_eq(weft_wait_all(t.eng), 0);
      cr_assert_not(atomic_load(&s.gave_up),
                    "%s, launch %d: an op waited in vain for an op of its step captured before "
                    "it (it ran in another lane, which waited for this one)", sh->name, l);
      cr_assert_eq(atomic_load(&s.bad), 0, "%s, launch %d: %ld ops ran out of order", sh->name,
                   l, atomic_load(&s.bad));
      cr_assert_gt(g->nlanes, 1, "%s, launch %d: the lanes are gone", sh->name, l);
    }
    cr_assert_eq(weft_graph_destroy(g), 0);
    cr_assert_eq(te_free(&t), 0);
    tu_assert_no_errors();
  }
}
