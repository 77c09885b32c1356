/* SPDX-License-Identifier: MIT */
/*
 * Pacing (src/deps/help.c, weft_engine_pace): an operator that pushes
 * operators stops, past WEFT_PACE_OPS pushed and not finished
 * (WEFT_PACE_OPS_ALONE in a pool of one worker), to let the
 * pool catch up (helping), so the blocks it pushed are still in cache when
 * they run; and never waits for operators that wait for it. A user's own
 * thread pushing does the same past WEFT_PACE_OUTSIDE_OPS, sleeping instead
 * of helping (weft_engine_pace_outside). And at max_inflight, a user's
 * thread waits for a place, but not for good for async operators that wait
 * for an operator it has yet to push (push.c, weft_push_admit).
 *
 * What is checked is counts, not time: the most operators pushed and not
 * yet run, seen by the pusher after each push (without pacing it reaches
 * nearly all of them: each operator here takes longer than a push), and
 * that everything runs exactly once.
 */
#include <errno.h>
#include <semaphore.h>
#include <time.h>

#include "common/tunables.h"
#include "engine_util.h"

static void setup(void)
{
  te_setup();
}

enum { NV = 64 };

typedef struct pacer {
  weft_engine *eng;
  weft_var *v[NV];
  weft_var *own;     /* written by the pusher: NULL, or read by every op it pushes */
  long n;            /* ops to push */
  double work_s;     /* each op's own time (a spin on the clock) */
  long nap_from, nnap; /* ops [nap_from, nap_from + nnap) sleep nap_s as well */
  double nap_s;
  atomic_long ran;   /* ops whose fn ran */
  atomic_long *hits; /* [n]: how often op i ran */
  long pushed;       /* pusher only */
  long max_ahead;    /* pusher only: the most pushed and not yet run */
  int rc;            /* pusher only: the first failed push */
  struct pace_arg *args; /* [n]: its ops' arguments */
  long max_all;      /* pusher only: the most pushed and not yet run by all pushers */
} pacer;

/* Ops pushed and run by every pusher of a test (several at once). */
static atomic_long all_pushed, all_ran;

typedef struct pace_arg {
  pacer *p;
  long i;
} pace_arg;

static pace_arg *args;

static int paced_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  pace_arg *a = arg;
  double until = tu_now() + a->p->work_s;
  while (tu_now() < until) {
  }
  if (a->i >= a->p->nap_from && a->i < a->p->nap_from + a->p->nnap)
    tu_sleep_us((long)(a->p->nap_s * 1e6));
  atomic_fetch_add(&a->p->hits[a->i], 1);
  atomic_fetch_add(&all_ran, 1);
  atomic_fetch_add(&a->p->ran, 1);
  return 0;
}

static int pusher_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  pacer *p = arg;
  for (long i = 0; i < p->n; i++) {
    weft_op_desc d = te_desc(paced_fn, &p->args[i]);
    weft_var *w[1] = {p->v[i % NV]};
    weft_var *r[1] = {p->own};
    d.writes = w;
    d.num_writes = 1;
    d.reads = r;
    d.num_reads = p->own ? 1 : 0;
    int err = weft_push(p->eng, &d);
    if (err) {
      p->rc = err;
      return err;
    }
    p->pushed++;
    long ahead = p->pushed - atomic_load(&p->ran);
    if (ahead > p->max_ahead)
      p->max_ahead = ahead;
    long all = atomic_fetch_add(&all_pushed, 1) + 1 - atomic_load(&all_ran);
    if (all > p->max_all)
      p->max_all = all;
  }
  return 0;
}

/* Runs a pusher over n ops on a pool of `threads`; returns the most ops it
 * saw pushed and not yet run. own: the ops also read a var the pusher
 * writes (none can run before it finishes). outside: the test's own thread
 * pushes (a user's thread, outside the pool), and own is written by an op
 * that holds its worker until the pushes are done. */
static long run_pacer_napping(int threads, long n, double work_s, bool own, bool outside,
                              long nap_from, long nnap, double nap_s)
{
  te t = te_new("threaded", threads, 0);
  pacer *p = calloc(1, sizeof *p);
  cr_assert_not_null(p);
  args = calloc((size_t)n, sizeof *args);
  p->hits = calloc((size_t)n, sizeof *p->hits);
  cr_assert(args && p->hits);
  p->args = args;
  p->eng = t.eng;
  p->n = n;
  p->work_s = work_s;
  p->nap_from = nap_from;
  p->nnap = nnap;
  p->nap_s = nap_s;
  for (int i = 0; i < NV; i++)
    p->v[i] = te_var(t.eng);
  p->own = own ? te_var(t.eng) : NULL;
  for (long i = 0; i < n; i++)
    args[i] = (pace_arg){p, i};
  te_gate gate = {0};
  if (outside) {
    if (own)
      cr_assert_eq(te_push(t.eng, te_gate_fn, &gate, TE_NONE, TE_V(p->own), 0), 0);
    pusher_fn(NULL, p);
    atomic_store(&gate.open, 1);
    cr_assert_eq(atomic_load(&gate.timed_out), 0, "the gate timed out");
  } else if (own) {
    cr_assert_eq(te_push(t.eng, pusher_fn, p, TE_NONE, TE_V(p->own), 0), 0);
  } else {
    cr_assert_eq(te_push(t.eng, pusher_fn, p, TE_NONE, TE_NONE, 0), 0);
  }
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&gate.timed_out), 0, "the gate timed out: the pushes waited for it");
  cr_assert_eq(p->rc, 0, "a push failed: %d (%s)", p->rc, weft_strerror(p->rc));
  cr_assert_eq(p->pushed, n);
  cr_assert_eq(atomic_load(&p->ran), n, "%ld of %ld ops ran", atomic_load(&p->ran), n);
  for (long i = 0; i < n; i++)
    cr_assert_eq(atomic_load(&p->hits[i]), 1, "op %ld ran %ld times", i,
                 atomic_load(&p->hits[i]));
  long max_ahead = p->max_ahead;
  cr_log_info("%d threads, %ld ops: at most %ld pushed and not run", threads, n, max_ahead);
  free(p->hits);
  free(args);
  free(p);
  cr_assert_eq(te_free(&t), 0);
  return max_ahead;
}

static long run_pacer_from(int threads, long n, double work_s, bool own, bool outside)
{
  return run_pacer_napping(threads, n, work_s, own, outside, 0, 0, 0);
}

static long run_pacer(int threads, long n, double work_s, bool own)
{
  return run_pacer_from(threads, n, work_s, own, false);
}

/* The bound: the pace, the pushes between two checks, and as much again
 * for the checks that went on after a stall (a pusher and its helpers
 * descheduled for WEFT_PACE_STALL_NS on a loaded machine). */
#define PACE_BOUND (2L * WEFT_PACE_OPS + 4L * WEFT_PACE_EVERY)

Test(pace, a_pushing_op_stays_near_the_pace, .init = setup, .timeout = TU_TIMEOUT(120))
{
  long n = 4L * WEFT_PACE_OPS;
  long ahead = run_pacer(2, n, 1e-6, false);
  cr_assert_leq(ahead, PACE_BOUND, "%ld ops pushed and not run (pace %d)", ahead,
                WEFT_PACE_OPS);
}

/* The same bound for a pool of one worker, whose mark is lower. */
#define PACE_BOUND_ALONE (2L * WEFT_PACE_OPS_ALONE + 4L * WEFT_PACE_EVERY)
_Static_assert(PACE_BOUND_ALONE < WEFT_PACE_OPS, "the test tells the two marks apart");

Test(pace, alone_in_its_pool_it_runs_them_itself, .init = setup, .timeout = TU_TIMEOUT(120))
{
  /* One worker: only the pusher can run them, and it does so when it
   * paces (without pacing every op waits for the pusher's end), at the
   * lower mark of a lone worker. */
  long n = 3L * WEFT_PACE_OPS;
  long ahead = run_pacer(1, n, 0, false);
  cr_assert_leq(ahead, PACE_BOUND_ALONE, "%ld ops pushed and not run (pace %d)", ahead,
                WEFT_PACE_OPS_ALONE);
}

Test(pace, ops_that_wait_for_the_pusher_do_not_hold_it, .init = setup,
     .timeout = TU_TIMEOUT(120))
{
  /* Every op reads a var the pusher writes: none runs before the pusher
   * ends, so it must push on past the pace instead of waiting. */
  long n = 3L * WEFT_PACE_OPS;
  for (int threads = 1; threads <= 2; threads++) {
    long ahead = run_pacer(threads, n, 0, true);
    cr_assert_eq(ahead, n, "%ld ops ran before the op they wait for ended", n - ahead);
  }
}

/* ------------------------------------------ a user's own thread pushing */

/* As PACE_BOUND, for a thread outside the pool (WEFT_PACE_OUTSIDE_OPS),
 * with room for three false stalls (workers that ran
 * WEFT_PACE_OUTSIDE_STALL_CPU_NS between two finishes): still a quarter of
 * what a pusher without pacing reaches here. */
#define OUTSIDE_BOUND (4L * WEFT_PACE_OUTSIDE_OPS + 4L * WEFT_PACE_EVERY)

Test(pace, a_user_thread_pushing_stays_near_the_pace, .init = setup, .timeout = TU_TIMEOUT(120))
{
  /* Each op takes longer than a push (2 us), so without pacing the test's
   * thread runs nearly all of them ahead (a mutant without it: 95999 of
   * 98304); paced, it sleeps past the pace. Workers waiting for a CPU (the
   * suite runs two programs at a time on two cores) do not count as
   * stalled: a pacer that went by the wall clock alone let up to 55000
   * ahead here in a run in three beside the suite's other programs. */
  long n = 24L * WEFT_PACE_OUTSIDE_OPS;
  for (int threads = 1; threads <= 2; threads++) {
    long ahead = run_pacer_from(threads, n, 2e-6, false, true);
    cr_assert_leq(ahead, OUTSIDE_BOUND, "%d threads: %ld ops pushed and not run (pace %d)",
                  threads, ahead, WEFT_PACE_OUTSIDE_OPS);
  }
}

/* One false stall at most: the pace and the checks after it. */
#define OUTSIDE_BOUND_NAP (2L * WEFT_PACE_OUTSIDE_OPS + 4L * WEFT_PACE_EVERY)

Test(pace, workers_that_do_not_run_are_slow_not_stalled, .init = setup,
     .timeout = TU_TIMEOUT(120))
{
  /* Past the pace, one op on each worker sleeps 30 ms: nothing finishes
   * meanwhile, as when the workers wait for a CPU on a loaded machine, but
   * they run nothing either, so the pusher waits for them rather than
   * push on. A pacer that counts the wall clock (5 ms) pushes on several
   * times over and lets ~20000 ahead. */
  long n = 8L * WEFT_PACE_OUTSIDE_OPS;
  for (int threads = 1; threads <= 2; threads++) {
    long ahead = run_pacer_napping(threads, n, 2e-6, false, true, 3L * WEFT_PACE_OUTSIDE_OPS,
                                   threads, 0.03);
    cr_assert_leq(ahead, OUTSIDE_BOUND_NAP, "%d threads: %ld ops pushed and not run (pace %d)",
                  threads, ahead, WEFT_PACE_OUTSIDE_OPS);
  }
}

Test(pace, ops_that_wait_for_a_user_thread_do_not_hold_it, .init = setup,
     .timeout = TU_TIMEOUT(120))
{
  /* Every op reads a var an op holds until the test's thread has pushed
   * them all: none can run meanwhile, so the pushes must go on past the
   * pace (a pacer that waited for progress would hang until the gate's
   * deadline, which the test reports). */
  long n = 3L * WEFT_PACE_OUTSIDE_OPS;
  for (int threads = 1; threads <= 2; threads++) {
    long ahead = run_pacer_from(threads, n, 0, true, true);
    cr_assert_eq(ahead, n, "%ld ops ran before the op they wait for ended", n - ahead);
  }
}

/* Several users' threads pushing into one engine at once: the pace is per
 * thread (the mark is WEFT_PACE_OUTSIDE_OPS times the threads that own a
 * tally), and another's finishes are progress (help.c), so all of them
 * together stay within as many times a lone one's bound. Before, each paced
 * on one mark for all and on new lows alone, took the others' pushes for a
 * stall and pushed on, in turn: 3 pushers here had up to 37000 each ahead,
 * 56000-90000 in all. */
enum { NPACERS = 3 };

static void *pacer_thread(void *arg)
{
  pusher_fn(NULL, arg);
  return NULL;
}

Test(pace, user_threads_pushing_at_once_each_keep_a_pace, .init = setup,
     .timeout = TU_TIMEOUT(120))
{
  long n = 12L * WEFT_PACE_OUTSIDE_OPS;
  te t = te_new("threaded", 2, 0);
  atomic_store(&all_pushed, 0);
  atomic_store(&all_ran, 0);
  pacer *p[NPACERS];
  pthread_t th[NPACERS];
  for (int k = 0; k < NPACERS; k++) {
    p[k] = calloc(1, sizeof *p[k]);
    cr_assert_not_null(p[k]);
    p[k]->args = calloc((size_t)n, sizeof *p[k]->args);
    p[k]->hits = calloc((size_t)n, sizeof *p[k]->hits);
    cr_assert(p[k]->args && p[k]->hits);
    p[k]->eng = t.eng;
    p[k]->n = n;
    p[k]->work_s = 2e-6;
    for (int i = 0; i < NV; i++)
      p[k]->v[i] = te_var(t.eng);
    for (long i = 0; i < n; i++)
      p[k]->args[i] = (pace_arg){p[k], i};
  }
  for (int k = 0; k < NPACERS; k++)
    cr_assert_eq(pthread_create(&th[k], NULL, pacer_thread, p[k]), 0);
  for (int k = 0; k < NPACERS; k++)
    te_join(th[k]);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  long most = 0; /* the most pushed and not run by all of them, at once */
  for (int k = 0; k < NPACERS; k++) {
    cr_assert_eq(p[k]->rc, 0, "pusher %d: a push failed: %d", k, p[k]->rc);
    cr_assert_eq(atomic_load(&p[k]->ran), n, "pusher %d: %ld of %ld ops ran", k,
                 atomic_load(&p[k]->ran), n);
    for (long i = 0; i < n; i++)
      cr_assert_eq(atomic_load(&p[k]->hits[i]), 1, "pusher %d: op %ld ran %ld times", k, i,
                   atomic_load(&p[k]->hits[i]));
    cr_log_info("pusher %d: at most %ld of its own and %ld of all pushed and not run", k,
                p[k]->max_ahead, p[k]->max_all);
    if (p[k]->max_all > most)
      most = p[k]->max_all;
    free(p[k]->args);
    free(p[k]->hits);
    free(p[k]);
  }
  cr_assert_leq(most, OUTSIDE_BOUND * NPACERS, "%d pushers: %ld ops pushed and not run (pace %d a pusher)",
                NPACERS, most, WEFT_PACE_OUTSIDE_OPS);
  cr_assert_eq(te_free(&t), 0);
}

/* A gate that holds its worker until opened: spinning (running all the
 * while) or blocked in sem_timedwait (running not at all). */
typedef struct hold_gate {
  bool spin;
  atomic_int started, open, timed_out;
  sem_t sem; /* posted once when the gate opens */
} hold_gate;

static int hold_gate_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  hold_gate *g = arg;
  atomic_store(&g->started, 1);
  if (g->spin) {
    double deadline = tu_now() + TU_DEADLINE_S;
    while (!atomic_load(&g->open))
      if (tu_now() > deadline) {
        atomic_store(&g->timed_out, 1);
        return 0;
      }
    return 0;
  }
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += (time_t)TU_DEADLINE_S;
  int rc2;
  while ((rc2 = sem_timedwait(&g->sem, &ts)) != 0 && errno == EINTR) {
  }
  if (rc2 != 0)
    atomic_store(&g->timed_out, 1);
  return 0;
}

Test(pace, an_op_holding_the_only_worker_does_not_hold_a_user_thread, .init = setup,
     .timeout = TU_TIMEOUT(120))
{
  /* An op holds the only worker until the test's thread has pushed them
   * all, with ready ops queued behind it: nothing finishes, so the pushes
   * must go on. Spinning, once the worker has run
   * WEFT_PACE_OUTSIDE_STALL_CPU_NS; blocked, once
   * WEFT_PACE_OUTSIDE_STALL_MAX_NS pass (a pacer that waited for progress
   * would hang until the gate's deadline, which the test reports). */
  for (int spin = 1; spin >= 0; spin--) {
    te t = te_new("threaded", 1, 0);
    hold_gate gate = {.spin = spin};
    cr_assert_eq(sem_init(&gate.sem, 0, 0), 0);
    weft_var *held = te_var(t.eng);
    cr_assert_eq(te_push(t.eng, hold_gate_fn, &gate, TE_NONE, TE_V(held), 0), 0);
    cr_assert(TU_WAIT_UNTIL(atomic_load(&gate.started), TU_DEADLINE_S));
    weft_var *v[NV];
    for (int i = 0; i < NV; i++)
      v[i] = te_var(t.eng);
    atomic_int ran = 0;
    long n = 3L * WEFT_PACE_OUTSIDE_OPS;
    for (long i = 0; i < n; i++)
      cr_assert_eq(te_push(t.eng, te_count_fn, &ran, TE_NONE, TE_V(v[i % NV]), 0), 0);
    cr_assert_eq(atomic_load(&ran), 0, "%s gate: %d ops ran while it held the only worker",
                 spin ? "a spinning" : "a blocked", atomic_load(&ran));
    atomic_store(&gate.open, 1);
    cr_assert_eq(sem_post(&gate.sem), 0);
    cr_assert_eq(weft_wait_all(t.eng), 0);
    cr_assert_eq(atomic_load(&gate.timed_out), 0, "%s gate timed out: the pushes waited for it",
                 spin ? "a spinning" : "a blocked");
    cr_assert_eq(atomic_load(&ran), n);
    cr_assert_eq(te_free(&t), 0);
    sem_destroy(&gate.sem);
  }
}

/* ---------------------------------------------- pushers pushing pushers */

enum { SUBS = 64, LEAVES = 1024 };

typedef struct nest {
  weft_engine *eng;
  weft_var *v[NV];
  atomic_long ran;
  atomic_long hits[SUBS * LEAVES];
  atomic_int failed;
} nest;

typedef struct nest_arg {
  nest *n;
  long i;
} nest_arg;

static nest_arg nest_args[SUBS * LEAVES];

static int leaf_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  nest_arg *a = arg;
  atomic_fetch_add(&a->n->hits[a->i], 1);
  atomic_fetch_add(&a->n->ran, 1);
  return 0;
}

static int sub_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  nest_arg *a = arg; /* a->i: the sub-pusher's index */
  for (long k = 0; k < LEAVES; k++) {
    long i = a->i * LEAVES + k;
    weft_var *w[1] = {a->n->v[i % NV]};
    weft_op_desc d = te_desc(leaf_fn, &nest_args[i]);
    d.writes = w;
    d.num_writes = 1;
    if (weft_push(a->n->eng, &d))
      atomic_store(&a->n->failed, 1);
  }
  return 0;
}

static nest_arg sub_args[SUBS];

static int root_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  nest *n = arg;
  for (long s = 0; s < SUBS; s++) {
    sub_args[s] = (nest_arg){n, s};
    weft_op_desc d = te_desc(sub_fn, &sub_args[s]);
    if (weft_push(n->eng, &d))
      atomic_store(&n->failed, 1);
  }
  return 0;
}

Test(pace, pushers_pushing_pushers, .init = setup, .timeout = TU_TIMEOUT(120))
{
  /* 64 operators each push 1024 (65536 in all, four times the pace), and
   * the leaves and pushers run in whatever order the pool finds them (a
   * pusher that paces may run another): every leaf runs exactly once. */
  for (int threads = 1; threads <= 2; threads++) {
    te t = te_new("threaded", threads, 0);
    nest *n = calloc(1, sizeof *n);
    cr_assert_not_null(n);
    n->eng = t.eng;
    for (int i = 0; i < NV; i++)
      n->v[i] = te_var(t.eng);
    for (long i = 0; i < SUBS * LEAVES; i++)
      nest_args[i] = (nest_arg){n, i};
    cr_assert_eq(te_push(t.eng, root_fn, n, TE_NONE, TE_NONE, 0), 0);
    cr_assert_eq(weft_wait_all(t.eng), 0);
    cr_assert_eq(atomic_load(&n->failed), 0, "a push failed");
    cr_assert_eq(atomic_load(&n->ran), (long)SUBS * LEAVES);
    for (long i = 0; i < SUBS * LEAVES; i++)
      cr_assert_eq(atomic_load(&n->hits[i]), 1, "leaf %ld ran %ld times", i,
                   atomic_load(&n->hits[i]));
    free(n);
    cr_assert_eq(te_free(&t), 0);
  }
}

/* ------------------------------------ a user's own thread at max_inflight */

/* An async operator A whose signal comes from a CPU operator B pushed after
 * it: with A (and what waits behind it) filling every place under
 * max_inflight, B's push must not wait for a place forever: once no place
 * frees for WEFT_CAP_STALL_NS while an async operator waits for its signal,
 * the user's thread goes over the cap (push.c, weft_push_admit). A
 * watchdog signals A itself when the push has not returned by the deadline,
 * so that a push that waits for good fails the test instead of hanging it. */
typedef struct late_signal {
  _Atomic(weft_done *) token; /* A's, once its async_fn ran; taken by its one signaller */
  atomic_int a_called;        /* A's async_fn calls */
  atomic_int b_ran, b_signalled, c_ran;
  atomic_int pushed;  /* the test's pushes returned */
  atomic_int rescued; /* the watchdog signalled A: B's push waited for good */
} late_signal;

static void waits_for_b(const weft_run_ctx *rc, void *arg, weft_done *done)
{
  (void)rc;
  late_signal *s = arg;
  atomic_fetch_add(&s->a_called, 1);
  atomic_store(&s->token, done);
}

static int signals_a(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  late_signal *s = arg;
  atomic_fetch_add(&s->b_ran, 1);
  /* A's async_fn ran before B's push went over the cap; in any case its
   * token comes (or the watchdog took it). */
  TU_WAIT_UNTIL(atomic_load(&s->token) || atomic_load(&s->rescued), TU_DEADLINE_S);
  weft_done *d = atomic_exchange(&s->token, NULL);
  if (d) {
    atomic_store(&s->b_signalled, 1);
    weft_done_signal(d, 0);
  }
  return 0;
}

static int behind_a(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  atomic_fetch_add(&((late_signal *)arg)->c_ran, 1);
  return 0;
}

static void *late_watchdog(void *arg)
{
  late_signal *s = arg;
  if (!TU_WAIT_UNTIL(atomic_load(&s->pushed), TU_DEADLINE_S)) {
    atomic_store(&s->rescued, 1);
    weft_done *d = atomic_exchange(&s->token, NULL);
    if (d)
      weft_done_signal(d, 0);
  }
  return NULL;
}

enum late_shape {
  LATE_ALONE,  /* max_inflight 1: A alone fills it */
  LATE_BEHIND, /* max_inflight 2: A, and C (reads A's var) waiting behind it */
  LATE_GRAPH,  /* max_inflight 1: a launch of a graph whose one node is A */
};

static const char *late_name[] = {"A alone", "A and an op behind it", "A in a graph"};

/* Returns how many times B ran (the body checks it: once). */
static long late_signal_case(int threads, enum late_shape shape)
{
  te t = te_new("threaded", threads, shape == LATE_BEHIND ? 2 : 1);
  late_signal s;
  memset(&s, 0, sizeof s);
  weft_var *va = te_var(t.eng), *vb = te_var(t.eng), *vc = te_var(t.eng);
  weft_op_desc a = te_adesc(waits_for_b, &s);
  weft_var *aw[1] = {va};
  a.writes = aw;
  a.num_writes = 1;
  weft_graph *g = NULL;
  if (shape == LATE_GRAPH) {
    cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
    cr_assert_eq(weft_push(t.eng, &a), 0);
    cr_assert_eq(weft_graph_end_capture(t.eng, &g), 0);
    cr_assert_eq(weft_graph_launch(g), 0);
  } else {
    cr_assert_eq(weft_push(t.eng, &a), 0);
  }
  if (shape == LATE_BEHIND)
    cr_assert_eq(te_push(t.eng, behind_a, &s, TE_V(va), TE_V(vc), 0), 0);
  pthread_t dog;
  cr_assert_eq(pthread_create(&dog, NULL, late_watchdog, &s), 0);
  int rc = te_push(t.eng, signals_a, &s, TE_NONE, TE_V(vb), 0);
  atomic_store(&s.pushed, 1);
  te_join(dog);
  cr_assert_eq(rc, 0, "%s, %d threads: B's push = %d", late_name[shape], threads, rc);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&s.rescued), 0,
               "%s, %d threads: B's push waited at max_inflight for A, which waits for B, "
               "until the watchdog signalled A",
               late_name[shape], threads);
  cr_assert_eq(atomic_load(&s.a_called), 1);
  cr_assert_eq(atomic_load(&s.b_signalled), 1);
  cr_assert_eq(atomic_load(&s.c_ran), shape == LATE_BEHIND ? 1 : 0);
  if (g)
    cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
  return atomic_load(&s.b_ran);
}

Test(cap, an_async_op_waiting_for_a_later_push_does_not_hold_it, .init = setup,
     .timeout = TU_TIMEOUT(120))
{
  for (int threads = 1; threads <= 2; threads++)
    for (int shape = LATE_ALONE; shape <= LATE_GRAPH; shape++)
      cr_assert_eq(late_signal_case(threads, (enum late_shape)shape), 1,
                   "%s, %d threads: B did not run once", late_name[shape], threads);
}

/* The ordinary case: no async operator waits for a signal (CPU operators,
 * and async ones that signal inside their async_fn), so the cap holds
 * exactly, also while nothing finishes for longer than WEFT_CAP_STALL_NS
 * (two operators in a row sleep three times that, holding the workers).
 * What is checked: the most operators pushed and not finished, seen by the
 * pusher after each push (an operator counts itself finished at the end of
 * its fn, before the engine does, so this never exceeds what the engine
 * holds). */
typedef struct capped {
  atomic_long finished;
  long nap_every; /* ops i with i % nap_every >= nap_every - 2 sleep nap_us */
  long nap_us;
} capped;

typedef struct capped_arg {
  capped *c;
  long i;
} capped_arg;

static void capped_nap(capped_arg *a)
{
  if (a->i % a->c->nap_every >= a->c->nap_every - 2)
    tu_sleep_us(a->c->nap_us);
}

static int capped_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  capped_arg *a = arg;
  capped_nap(a);
  atomic_fetch_add(&a->c->finished, 1);
  return 0;
}

static void capped_async(const weft_run_ctx *rc, void *arg, weft_done *done)
{
  (void)rc;
  capped_arg *a = arg;
  capped_nap(a);
  atomic_fetch_add(&a->c->finished, 1);
  weft_done_signal(done, 0);
}

Test(cap, the_cap_bounds_the_ops_in_flight, .init = setup, .timeout = TU_TIMEOUT(120))
{
  enum { K = 3 };
  long n = tu_scaled(3000, 600);
  for (int threads = 1; threads <= 2; threads++) {
    te t = te_new("threaded", threads, K);
    capped c = {.nap_every = n / 3, .nap_us = 3 * WEFT_CAP_STALL_NS / 1000};
    atomic_init(&c.finished, 0);
    capped_arg *args_ = calloc((size_t)n, sizeof *args_);
    cr_assert_not_null(args_);
    weft_var *v[NV];
    for (int i = 0; i < NV; i++)
      v[i] = te_var(t.eng);
    long most = 0;
    uint64_t rs = 7;
    for (long i = 0; i < n; i++) {
      args_[i] = (capped_arg){&c, i};
      uint64_t x = tu_rand(&rs);
      weft_op_desc d =
          x % 4 == 0 ? te_adesc(capped_async, &args_[i]) : te_desc(capped_fn, &args_[i]);
      weft_var *r[1] = {v[(x >> 8) % NV]}, *w[1] = {v[(x >> 16) % NV]};
      d.reads = r;
      d.num_reads = (x >> 24) % 2;
      d.writes = w;
      d.num_writes = 1;
      cr_assert_eq(weft_push(t.eng, &d), 0);
      long in_flight = (i + 1) - atomic_load(&c.finished);
      if (in_flight > most)
        most = in_flight;
    }
    cr_assert_eq(weft_wait_all(t.eng), 0);
    cr_assert_eq(atomic_load(&c.finished), n);
    cr_log_info("%d threads, max_inflight %d: at most %ld ops in flight", threads, K, most);
    cr_assert_leq(most, K, "%d threads: %ld ops pushed and not finished, max_inflight %d",
                  threads, most, K);
    free(args_);
    cr_assert_eq(te_free(&t), 0);
  }
  tu_assert_no_errors();
}
