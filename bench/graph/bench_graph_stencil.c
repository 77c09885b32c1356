/* SPDX-License-Identifier: MIT */
/*
 * bench_graph_stencil: a 1-D stencil replayed as a captured graph, against
 * pushing the same operators and against one thread running them in order
 * (include/weft/weft.h, "graphs": a replay runs as many operators at once
 * as pushing them does).
 *
 *   bench_graph_stencil [--threads N[,N...]] [--reps R] [--width W] [--steps T]
 *                       [--block B] [--radius K]
 *
 * The array, W blocks of B doubles, is double-buffered: operator (t, i)
 * computes block i of buffer t % 2 from buffer (t - 1) % 2, each point the
 * weighted sum of the 2K + 1 points around it (the array's ends clamped),
 * so it reads blocks i - 1, i and i + 1 of the buffer before (vars: one a
 * block and buffer) and writes block i of its own; T steps. Defaults: W 8,
 * T 100, B 4096, K 4 (a 9-point stencil; about 30 us an operator on the
 * 2-core VM).
 * Modes, each timed from its first call to the end of the last step (the
 * return of weft_wait_all in main, a thread of its own, not a pool worker;
 * the pool has N workers):
 *   serial  main runs the operators' function in order, without weft
 *   push    every operator pushed from main, reading and writing its vars
 *   replay  the same pushes captured once (not timed), launched 8 times
 *           (untimed: a graph's first launches time its operators and
 *           choose how it runs, weft.h), then weft_graph_launch and
 *           weft_wait_all
 *   queued  two steps captured once (2W operators, not timed, warmed as
 *           replay's; an fft's whole cycle of steps, if longer), launched
 *           T / 2 times back to back, each launch passing its nodes their
 *           steps' arguments
 *           (weft_graph_launch_args; each launch queues behind the one
 *           before), then weft_wait_all
 *   waited  the same launches, each followed by weft_wait_all (what a
 *           program whose launches could not queue had to do)
 *   bsp     no scheduler: N threads (main and N - 1 of the program's own),
 *           each running its share of every step's blocks in order, a
 *           spinning barrier after each step (bulk-synchronous, as an MPI
 *           code exchanging halos: the floor a task runtime aims at)
 * (queued and waited need T a multiple of that period; else they are left
 * out.)
 *
 * --pattern (Task Bench's): stencil (above), nearest (blocks i - 2 .. i + 2
 * of the step before), fft (i and i ^ 2^(t mod log2 W), W a power of two),
 * chains (i alone); the patterns but stencil compute each block as the
 * mean of the same sweep over each block it reads, clamped at that block's
 * ends.
 *
 * --metg: for each thread count, the block size is halved from 16384
 * doubles down to 16 (T and W as given), every mode run at each size
 * (--reps R, default 5 there); printed: each mode's task granularity (the
 * median run's time x threads / tasks, in us) and efficiency (the work
 * rate over N times the serial rate at the largest size), then each mode's
 * METG(50%): the smallest granularity measured at which it still reached
 * half of that peak (Task Bench's figure).
 * The modes' repetitions are interleaved. Every repetition's result is
 * compared with the first serial run's, bit for bit (each point is
 * computed by the same code from the same inputs in every mode); a
 * mismatch exits 1. Output: one line per threads and mode: the median time
 * of a run, its min and max, the work rate at the median (GFLOP/s: 2 (2K +
 * 1) - 1 flops a point), and the median's ratio to push's.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_PROG "bench_graph_stencil"
#include "check.h"
#include "weft/weft.h"

enum { MAXK = 8 };

/* Which blocks of the step before an operator reads (Task Bench's
 * patterns): stencil i - 1 .. i + 1 (the points its sweep reaches),
 * nearest i - 2 .. i + 2, fft i and i ^ 2^(t mod log2 W), chains i. */
enum { PAT_STENCIL, PAT_NEAREST, PAT_FFT, PAT_CHAINS, PAT_N };
static const char *pattern_names[PAT_N] = {"stencil", "nearest", "fft", "chains"};

/* The problem: its sizes, its weights, its two buffers. */
typedef struct stencil {
  int width, steps, radius, pattern, log2w;
  size_t block; /* points a block */
  double w[2 * MAXK + 1];
  double *buf[2]; /* [width * block] each */
} stencil;

/* The blocks operator (t, i) reads of step t - 1, ascending, in dep[]
 * (5 at most); returns how many. */
static int deps(const stencil *s, int t, int i, int *dep)
{
  int n = 0;
  switch (s->pattern) {
  case PAT_FFT: {
    int j = i ^ (1 << (t % s->log2w));
    dep[n++] = j < i ? j : i;
    dep[n++] = j < i ? i : j;
    return n;
  }
  case PAT_CHAINS:
    dep[n++] = i;
    return n;
  default: {
    int r = s->pattern == PAT_NEAREST ? 2 : 1;
    for (int j = i - r; j <= i + r; j++)
      if (j >= 0 && j < s->width)
        dep[n++] = j;
    return n;
  }
  }
}

/* The flops of a run: 2 (2K + 1) - 1 a point for the stencil, 2 (2K + 1)
 * + 1 a point and block read for the others. */
static double run_flops(const stencil *s)
{
  double per = 2.0 * (2 * s->radius + 1) - 1;
  if (s->pattern == PAT_STENCIL)
    return (double)s->width * (double)s->block * s->steps * per;
  double reads = 0;
  int dep[5];
  for (int t = 0; t < s->steps; t++)
    for (int i = 0; i < s->width; i++)
      reads += deps(s, t, i, dep);
  return reads * (double)s->block * (per + 2);
}

/* Steps of a period of the pattern's dependences and of the two buffers:
 * a graph of that many steps, relaunched, runs the whole (queued). */
static int period(const stencil *s)
{
  if (s->pattern != PAT_FFT || s->log2w < 2)
    return 2;
  return s->log2w % 2 ? 2 * s->log2w : s->log2w; /* lcm(2, log2 W) */
}

/* One operator's argument. */
typedef struct task {
  stencil *s;
  int t, i;
} task;

/* Points [a, b) of out from in, radius k (a constant where it is inlined:
 * the weights' loop unrolled, the points' vectorised). */
static inline __attribute__((always_inline)) void sweep(const double *restrict in,
                                                        double *restrict out, const double *w,
                                                        long a, long b, const long k)
{
  for (long x = a; x < b; x++) {
    double acc = 0;
    for (long j = -k; j <= k; j++)
      acc += w[j + k] * in[x + j];
    out[x] = acc;
  }
}

/* Block i of step t (buffer t % 2) from step t - 1's buffer: the points
 * away from the array's ends by sweep, the few at its ends clamped. Every
 * mode runs this code, so that every point's sum is the same, bit for
 * bit. */
/* Any pattern but stencil: block i of step t, the mean of the 2K + 1-point
 * sweep of each block it reads (each sweep clamped at its own block's
 * ends, so it reads those blocks alone). */
static void update_deps(const stencil *s, int t, int i)
{
  const double *in = s->buf[(t + 1) % 2];
  double *out = s->buf[t % 2] + (size_t)i * s->block;
  int dep[5];
  int nd = deps(s, t, i, dep);
  const long bl = (long)s->block, k = s->radius;
  const double share = 1.0 / nd;
  for (long x = 0; x < bl; x++)
    out[x] = 0;
  for (int q = 0; q < nd; q++) {
    const double *src = in + (size_t)dep[q] * s->block;
    for (long x = 0; x < bl; x++) {
      double acc = 0;
      for (long j = -k; j <= k; j++) {
        long y = x + j < 0 ? 0 : x + j >= bl ? bl - 1 : x + j;
        acc += s->w[j + k] * src[y];
      }
      out[x] += share * acc;
    }
  }
}

static void update_block(const stencil *s, int t, int i)
{
  if (s->pattern != PAT_STENCIL) {
    update_deps(s, t, i);
    return;
  }
  const double *in = s->buf[(t + 1) % 2];
  double *out = s->buf[t % 2];
  const long n = (long)s->width * (long)s->block, k = s->radius;
  const long lo = (long)i * (long)s->block, hi = lo + (long)s->block;
  long a = lo < k ? k : lo, b = hi > n - k ? n - k : hi;
  switch (k) {
  case 1: sweep(in, out, s->w, a, b, 1); break;
  case 2: sweep(in, out, s->w, a, b, 2); break;
  case 4: sweep(in, out, s->w, a, b, 4); break;
  case 8: sweep(in, out, s->w, a, b, 8); break;
  default: sweep(in, out, s->w, a, b, k); break;
  }
  for (long x = lo; x < hi; x++) {
    if (x >= a && x < b)
      continue;
    double acc = 0;
    for (long j = -k; j <= k; j++) {
      long y = x + j < 0 ? 0 : x + j >= n ? n - 1 : x + j;
      acc += s->w[j + k] * in[y];
    }
    out[x] = acc;
  }
}

static int task_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  const task *a = arg;
  update_block(a->s, a->t, a->i);
  return 0;
}

/* Both buffers to the starting values (step -1's in buffer 1). */
static void reset(stencil *s)
{
  size_t n = (size_t)s->width * s->block;
  for (size_t x = 0; x < n; x++) {
    s->buf[1][x] = (double)((x * 2654435761u) % 1000) / 1000.0;
    s->buf[0][x] = 0;
  }
}

/* Pushes (or, capturing, records) every operator. */
static void push_all(weft_engine *eng, stencil *s, task *tasks, weft_var **v)
{
  for (int t = 0; t < s->steps; t++)
    for (int i = 0; i < s->width; i++) {
      weft_var *r[5];
      int dep[5];
      size_t nr = 0;
      for (int q = 0, nd = deps(s, t, i, dep); q < nd; q++)
        r[nr++] = v[((t + 1) % 2) * s->width + dep[q]];
      task *a = &tasks[(size_t)t * (size_t)s->width + (size_t)i];
      *a = (task){s, t, i};
      weft_op_desc d;
      memset(&d, 0, sizeof d);
      d.fn = task_fn;
      d.arg = a;
      d.reads = r;
      d.num_reads = nr;
      d.writes = &v[(t % 2) * s->width + i];
      d.num_writes = 1;
      CHECK(weft_push(eng, &d));
    }
}

static int cmp_i64(const void *a, const void *b)
{
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* ---------------------------------------------------------------- bsp */

/* A sense-reversing spinning barrier for n threads. */
typedef struct spin_barrier {
  atomic_int left;
  atomic_int sense;
  int n;
} spin_barrier;

static void barrier_wait(spin_barrier *b, int *my_sense)
{
  int s = !*my_sense;
  *my_sense = s;
  if (atomic_fetch_sub(&b->left, 1) == 1) {
    atomic_store(&b->left, b->n);
    atomic_store(&b->sense, s);
  } else {
    while (atomic_load(&b->sense) != s)
      __builtin_ia32_pause();
  }
}

/* The bulk-synchronous run: threads - 1 helpers kept for the whole
 * measure, asleep between runs (start: a pthread barrier, so that they
 * take no CPU from the other modes), spinning between a run's steps. */
typedef struct bsp {
  stencil *s;
  int threads;
  spin_barrier bar;
  pthread_barrier_t start;
  atomic_int quit;
} bsp;

typedef struct bsp_member {
  bsp *b;
  int id, sense;
} bsp_member;

/* Member id's share of one run: its blocks of each step, a barrier after
 * each. */
static void bsp_run(bsp_member *m)
{
  const stencil *s = m->b->s;
  int lo = s->width * m->id / m->b->threads, hi = s->width * (m->id + 1) / m->b->threads;
  for (int t = 0; t < s->steps; t++) {
    for (int i = lo; i < hi; i++)
      update_block(s, t, i);
    barrier_wait(&m->b->bar, &m->sense);
  }
}

static void *bsp_helper(void *arg)
{
  bsp_member *m = arg;
  for (;;) {
    pthread_barrier_wait(&m->b->start); /* a run begins, or the end */
    if (atomic_load(&m->b->quit))
      return NULL;
    bsp_run(m);
  }
}

enum { M_SERIAL, M_PUSH, M_REPLAY, M_QUEUED, M_WAITED, M_BSP, M_MODES };
static const char *mode_names[M_MODES] = {"serial", "push", "replay", "queued", "waited", "bsp"};

/* What every measure shares: the problem (its block size set by the
 * caller, its buffers and reference allocated for it), the operators'
 * arguments, the queued launches' arguments, the samples. */
typedef struct bench {
  stencil s;
  int reps, nmodes, launches, per;
  task *tasks;            /* [width * steps] */
  weft_graph_arg *largs;  /* [launches * per] */
  double *ref;            /* the last step's buffer of a run in order */
  int64_t *t[M_MODES];    /* [reps] */
} bench;

/* (Re)allocates the buffers for s.block and computes the reference. */
static void set_block(bench *b, size_t block)
{
  stencil *s = &b->s;
  s->block = block;
  size_t n = (size_t)s->width * s->block;
  free(s->buf[0]);
  free(s->buf[1]);
  free(b->ref);
  s->buf[0] = malloc(sizeof(double) * n);
  s->buf[1] = malloc(sizeof(double) * n);
  b->ref = malloc(sizeof(double) * n);
  if (!s->buf[0] || !s->buf[1] || !b->ref) {
    fprintf(stderr, "bench_graph_stencil: out of memory\n");
    exit(1);
  }
  reset(s);
  for (int st = 0; st < s->steps; st++)
    for (int i = 0; i < s->width; i++)
      update_block(s, st, i);
  memcpy(b->ref, s->buf[(s->steps - 1) % 2], sizeof(double) * n);
}

/* Every mode at threads threads, reps interleaved (one warm-up each):
 * med[m], the median run's ns (the samples sorted in b->t). */
static void measure(bench *b, int threads, double med[M_MODES])
{
  stencil *s = &b->s;
  size_t n = (size_t)s->width * s->block;
  weft_pool *pool;
  weft_engine *eng;
  BENCH_ENGINE_ON_POOL(threads, pool, eng);
  weft_var **v = malloc(sizeof *v * 2 * (size_t)s->width);
  bsp_member *members = malloc(sizeof *members * (size_t)threads);
  pthread_t *helpers = malloc(sizeof *helpers * (size_t)threads);
  if (!v || !members || !helpers) {
    fprintf(stderr, "bench_graph_stencil: out of memory\n");
    exit(1);
  }
  for (int k = 0; k < 2 * s->width; k++)
    CHECK(weft_var_new(eng, &v[k]));
  weft_graph *g = NULL;
  CHECK(weft_graph_begin_capture(eng));
  push_all(eng, s, b->tasks, v);
  CHECK(weft_graph_end_capture(eng, &g));
  /* A period's steps (queued, waited; period: two, or an fft's cycle):
   * the pushes of steps 0 .. period - 1 captured, the tasks' values then
   * rewritten as push_all leaves them (the same for every step). */
  weft_graph *g2 = NULL;
  if (b->nmodes == M_MODES) {
    stencil two = *s;
    two.steps = period(s);
    CHECK(weft_graph_begin_capture(eng));
    push_all(eng, &two, b->tasks, v);
    CHECK(weft_graph_end_capture(eng, &g2));
    for (int k = 0; k < s->width * s->steps; k++)
      b->tasks[k] = (task){s, k / s->width, k % s->width};
  }
  for (int w = 0; w < 8; w++) { /* the first launches, untimed */
    CHECK(weft_graph_launch(g));
    if (g2)
      CHECK(weft_graph_launch(g2));
    CHECK(weft_wait_all(eng));
  }
  /* bsp's helpers, parked in the barrier between runs */
  bsp bs;
  bs.s = s;
  bs.threads = threads;
  bs.bar.n = threads;
  atomic_init(&bs.bar.left, threads);
  atomic_init(&bs.bar.sense, 0);
  atomic_init(&bs.quit, 0);
  if (pthread_barrier_init(&bs.start, NULL, (unsigned)threads)) {
    fprintf(stderr, "bench_graph_stencil: pthread_barrier_init failed\n");
    exit(1);
  }
  for (int k = 0; k < threads; k++)
    members[k] = (bsp_member){&bs, k, 0};
  for (int k = 1; k < threads; k++)
    if (pthread_create(&helpers[k], NULL, bsp_helper, &members[k])) {
      fprintf(stderr, "bench_graph_stencil: pthread_create failed\n");
      exit(1);
    }
  for (int r = -1; r < b->reps; r++) /* -1: each mode warmed up once */
    for (int m = 0; m < M_MODES; m++) {
      if (m == M_QUEUED || m == M_WAITED) {
        if (b->nmodes != M_MODES)
          continue;
      }
      reset(s);
      int64_t t0 = bench_mono_ns();
      if (m == M_SERIAL) {
        for (int st = 0; st < s->steps; st++)
          for (int i = 0; i < s->width; i++)
            update_block(s, st, i);
      } else if (m == M_BSP) {
        pthread_barrier_wait(&bs.start); /* the helpers start */
        bsp_run(&members[0]);
      } else if (m == M_QUEUED || m == M_WAITED) {
        for (int k = 0; k < b->launches; k++) {
          CHECK(weft_graph_launch_args(g2, &b->largs[(size_t)k * b->per], (size_t)b->per));
          if (m == M_WAITED)
            CHECK(weft_wait_all(eng));
        }
        CHECK(weft_wait_all(eng));
      } else {
        if (m == M_PUSH)
          push_all(eng, s, b->tasks, v);
        else
          CHECK(weft_graph_launch(g));
        CHECK(weft_wait_all(eng));
      }
      int64_t dt = bench_mono_ns() - t0;
      if (memcmp(s->buf[(s->steps - 1) % 2], b->ref, sizeof(double) * n)) {
        fprintf(stderr, "bench_graph_stencil: %s at %d threads, block %zu: a wrong result\n",
                mode_names[m], threads, s->block);
        exit(1);
      }
      if (r >= 0)
        b->t[m][r] = dt;
    }
  atomic_store(&bs.quit, 1);
  pthread_barrier_wait(&bs.start);
  for (int k = 1; k < threads; k++)
    pthread_join(helpers[k], NULL);
  pthread_barrier_destroy(&bs.start);
  const int reps = b->reps;
  for (int m = 0; m < M_MODES; m++) {
    if ((m == M_QUEUED || m == M_WAITED) && b->nmodes != M_MODES) {
      med[m] = -1;
      continue;
    }
    qsort(b->t[m], (size_t)reps, sizeof *b->t[m], cmp_i64);
    med[m] = reps % 2 ? (double)b->t[m][reps / 2] : (b->t[m][reps / 2 - 1] + b->t[m][reps / 2]) / 2.0;
  }
  CHECK(weft_graph_destroy(g));
  if (g2)
    CHECK(weft_graph_destroy(g2));
  CHECK(weft_engine_destroy(eng));
  CHECK(weft_pool_destroy(pool));
  free(v);
  free(members);
  free(helpers);
}

/* --metg at threads threads: each block size, then each mode's METG(50%). */
static void metg(bench *b, int threads)
{
  enum { NB = 11 };
  size_t blocks[NB];
  double gran[NB][M_MODES], eff[NB][M_MODES];
  double peak = 0; /* the serial rate at the largest size, points a ns */
  const stencil *s = &b->s;
  const double tasks = (double)s->width * s->steps;
  for (int k = 0; k < NB; k++) {
    blocks[k] = (size_t)16384 >> k;
    set_block(b, blocks[k]);
    double med[M_MODES];
    measure(b, threads, med);
    double points = (double)s->width * (double)s->block * s->steps;
    if (k == 0)
      peak = points / med[M_SERIAL];
    for (int m = 0; m < M_MODES; m++) {
      gran[k][m] = med[m] < 0 ? -1 : med[m] * threads / tasks / 1e3;
      eff[k][m] = med[m] < 0 ? -1 : points / med[m] / (peak * (m == M_SERIAL ? 1 : threads));
    }
  }
  printf("# METG sweep, %s, %d threads: %d blocks a step, %d steps, radius %d; per mode the "
         "task granularity (us: time x threads / tasks) and efficiency (work rate / %d x "
         "serial's at the largest block)\n", pattern_names[s->pattern], threads, s->width,
         s->steps, s->radius, threads);
  printf("%-7s", "block");
  for (int m = 1; m < M_MODES; m++)
    if (eff[0][m] >= 0)
      printf(" %9s_us %6s", mode_names[m], "eff");
  printf("\n");
  for (int k = 0; k < NB; k++) {
    printf("%-7zu", blocks[k]);
    for (int m = 1; m < M_MODES; m++)
      if (eff[0][m] >= 0)
        printf(" %12.2f %6.2f", gran[k][m], eff[k][m]);
    printf("\n");
  }
  printf("METG(50%%), %s, width %d, %d threads:", pattern_names[s->pattern], s->width, threads);
  for (int m = 1; m < M_MODES; m++) {
    if (eff[0][m] < 0)
      continue;
    double best = -1;
    for (int k = 0; k < NB; k++)
      if (eff[k][m] >= 0.5 && (best < 0 || gran[k][m] < best))
        best = gran[k][m];
    if (best < 0)
      printf(" %s never", mode_names[m]);
    else
      printf(" %s %.2f us", mode_names[m], best);
  }
  printf("\n");
}

int main(int argc, char **argv)
{
  const char *threads_list = "2";
  int reps = -1;
  bool sweep = false;
  bench b = {{8, 100, 4, PAT_STENCIL, 0, 4096, {0}, {NULL, NULL}}, 0, 0, 0, 0, NULL, NULL,
             NULL, {NULL}};
  stencil *s = &b.s;
  size_t block = s->block;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc)
      threads_list = argv[++i];
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--width") && i + 1 < argc)
      s->width = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
      s->steps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--block") && i + 1 < argc)
      block = (size_t)atol(argv[++i]);
    else if (!strcmp(argv[i], "--radius") && i + 1 < argc)
      s->radius = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--metg"))
      sweep = true;
    else if (!strcmp(argv[i], "--pattern") && i + 1 < argc) {
      const char *name = argv[++i];
      s->pattern = PAT_N;
      for (int k = 0; k < PAT_N; k++)
        if (!strcmp(name, pattern_names[k]))
          s->pattern = k;
      if (s->pattern == PAT_N) {
        fprintf(stderr, "bench_graph_stencil: --pattern: stencil, nearest, fft or chains\n");
        return 2;
      }
    } else {
      fprintf(stderr, "usage: %s [--threads N[,N...]] [--reps R] [--width W] [--steps T] "
              "[--block B] [--radius K] [--pattern P] [--metg]\n", argv[0]);
      return 2;
    }
  }
  while (s->width > 1 && (1 << (s->log2w + 1)) <= s->width)
    s->log2w++;
  if (s->pattern == PAT_FFT && (s->width < 2 || (1 << s->log2w) != s->width)) {
    fprintf(stderr, "bench_graph_stencil: fft: --width must be a power of two, 2 or more\n");
    return 2;
  }
  if (reps < 0)
    reps = sweep ? 5 : 11;
  b.reps = reps;
  if (reps < 1 || s->width < 1 || s->steps < 1 || block < 1 || s->radius < 0 ||
      s->radius > MAXK || (size_t)s->radius > (sweep ? 16 : block)) {
    fprintf(stderr, "bench_graph_stencil: bad sizes\n");
    return 2;
  }
  for (int j = 0; j <= 2 * s->radius; j++)
    s->w[j] = 1.0 / (2 * s->radius + 1) + (j - s->radius) * 1e-3;
  b.tasks = malloc(sizeof *b.tasks * (size_t)s->width * (size_t)s->steps);
  bool ok = b.tasks != NULL;
  for (int m = 0; m < M_MODES; m++)
    ok = (b.t[m] = malloc(sizeof *b.t[m] * (size_t)reps)) && ok;
  /* queued and waited: launch k's arguments, its P W nodes' tasks (steps
   * P k .. P k + P - 1, P the period; node j of the P-step graph is step
   * j / W's block j % W) */
  const int per_steps = period(s);
  b.nmodes = s->steps % per_steps ? M_QUEUED : M_MODES;
  b.launches = s->steps / per_steps;
  b.per = per_steps * s->width;
  b.largs = malloc(sizeof *b.largs * (size_t)b.launches * (size_t)b.per + 1);
  if (!ok || !b.largs) {
    fprintf(stderr, "bench_graph_stencil: out of memory\n");
    return 1;
  }
  for (int k = 0; k < b.launches; k++)
    for (int j = 0; j < b.per; j++)
      b.largs[(size_t)k * b.per + j] =
          (weft_graph_arg){(size_t)j,
                           &b.tasks[(size_t)(per_steps * k) * (size_t)s->width + (size_t)j]};
  if (!sweep) {
    set_block(&b, block);
    printf("# %s: %d blocks of %zu doubles, %d steps, radius %d: %.1f MFLOP a run\n",
           pattern_names[s->pattern], s->width, s->block, s->steps, s->radius,
           run_flops(s) / 1e6);
    printf("%-8s %3s %-7s %10s %10s %10s %8s %8s\n", "shape", "thr", "mode", "median_ms",
           "min_ms", "max_ms", "GFLOP/s", "vs_push");
  }
  for (const char *p = threads_list; *p;) {
    int threads = atoi(p);
    while (*p && *p != ',')
      p++;
    if (*p == ',')
      p++;
    if (threads < 1) {
      fprintf(stderr, "bench_graph_stencil: bad thread count\n");
      return 2;
    }
    if (sweep) {
      metg(&b, threads);
      continue;
    }
    double med[M_MODES];
    measure(&b, threads, med);
    double flops = run_flops(s);
    for (int m = 0; m < M_MODES; m++)
      if (med[m] >= 0)
        printf("%-8s %3d %-7s %10.2f %10.2f %10.2f %8.2f %8.2f\n", pattern_names[s->pattern],
               threads,
               mode_names[m], med[m] / 1e6, b.t[m][0] / 1e6, b.t[m][reps - 1] / 1e6,
               flops / med[m], med[m] / med[M_PUSH]);
  }
  for (int m = 0; m < M_MODES; m++)
    free(b.t[m]);
  free(b.largs);
  free(b.tasks);
  free(b.ref);
  free(s->buf[0]);
  free(s->buf[1]);
  return 0;
}
