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
 *           replay's), launched T / 2 times back to back, each launch
 *           passing its nodes their steps' arguments
 *           (weft_graph_launch_args; each launch queues behind the one
 *           before), then weft_wait_all
 *   waited  the same launches, each followed by weft_wait_all (what a
 *           program whose launches could not queue had to do)
 * (queued and waited need an even T; with an odd one they are left out.)
 * The modes' repetitions are interleaved. Every repetition's result is
 * compared with the first serial run's, bit for bit (each point is
 * computed by the same code from the same inputs in every mode); a
 * mismatch exits 1. Output: one line per threads and mode: the median time
 * of a run, its min and max, the work rate at the median (GFLOP/s: 2 (2K +
 * 1) - 1 flops a point), and the median's ratio to push's.
 */
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

/* The problem: its sizes, its weights, its two buffers. */
typedef struct stencil {
  int width, steps, radius;
  size_t block; /* points a block */
  double w[2 * MAXK + 1];
  double *buf[2]; /* [width * block] each */
} stencil;

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
static void update_block(const stencil *s, int t, int i)
{
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
      weft_var *r[3];
      size_t nr = 0;
      for (int j = i - 1; j <= i + 1; j++)
        if (j >= 0 && j < s->width)
          r[nr++] = v[((t + 1) % 2) * s->width + j];
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

enum { M_SERIAL, M_PUSH, M_REPLAY, M_QUEUED, M_WAITED, M_MODES };
static const char *mode_names[M_MODES] = {"serial", "push", "replay", "queued", "waited"};

int main(int argc, char **argv)
{
  const char *threads_list = "2";
  int reps = 11;
  stencil s = {8, 100, 4, 4096, {0}, {NULL, NULL}};
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc)
      threads_list = argv[++i];
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--width") && i + 1 < argc)
      s.width = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
      s.steps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--block") && i + 1 < argc)
      s.block = (size_t)atol(argv[++i]);
    else if (!strcmp(argv[i], "--radius") && i + 1 < argc)
      s.radius = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: %s [--threads N[,N...]] [--reps R] [--width W] [--steps T] "
              "[--block B] [--radius K]\n", argv[0]);
      return 2;
    }
  }
  if (reps < 1 || s.width < 1 || s.steps < 1 || s.block < 1 || s.radius < 0 ||
      s.radius > MAXK || (size_t)s.radius > s.block) {
    fprintf(stderr, "bench_graph_stencil: bad sizes\n");
    return 2;
  }
  for (int j = 0; j <= 2 * s.radius; j++)
    s.w[j] = 1.0 / (2 * s.radius + 1) + (j - s.radius) * 1e-3;
  size_t n = (size_t)s.width * s.block;
  s.buf[0] = malloc(sizeof(double) * n);
  s.buf[1] = malloc(sizeof(double) * n);
  double *ref = malloc(sizeof(double) * n);
  task *tasks = malloc(sizeof *tasks * (size_t)s.width * (size_t)s.steps);
  int64_t *t[M_MODES];
  bool ok = s.buf[0] && s.buf[1] && ref && tasks;
  for (int m = 0; m < M_MODES; m++)
    ok = (t[m] = malloc(sizeof *t[m] * (size_t)reps)) && ok;
  /* queued and waited: launch k's arguments, its 2W nodes' tasks (steps
   * 2k and 2k + 1; node j of the two-step graph is step j / W's block j % W) */
  const int nmodes = s.steps % 2 ? M_QUEUED : M_MODES;
  const int launches = s.steps / 2, per = 2 * s.width;
  weft_graph_arg *largs = malloc(sizeof *largs * (size_t)launches * (size_t)per + 1);
  if (!ok || !largs) {
    fprintf(stderr, "bench_graph_stencil: out of memory\n");
    return 1;
  }
  for (int k = 0; k < launches; k++)
    for (int j = 0; j < per; j++)
      largs[(size_t)k * per + j] =
          (weft_graph_arg){(size_t)j, &tasks[(size_t)(2 * k) * (size_t)s.width + (size_t)j]};
  /* The reference: one run in order. */
  reset(&s);
  for (int st = 0; st < s.steps; st++)
    for (int i = 0; i < s.width; i++)
      update_block(&s, st, i);
  memcpy(ref, s.buf[(s.steps - 1) % 2], sizeof(double) * n);
  double flops = (double)n * s.steps * (2.0 * (2 * s.radius + 1) - 1);
  printf("# stencil: %d blocks of %zu doubles, %d steps, radius %d: %.1f MFLOP a run\n", s.width,
         s.block, s.steps, s.radius, flops / 1e6);
  printf("%-8s %3s %-7s %10s %10s %10s %8s %8s\n", "shape", "thr", "mode", "median_ms", "min_ms",
         "max_ms", "GFLOP/s", "vs_push");
  for (const char *p = threads_list; *p;) {
    int threads = atoi(p);
    while (*p && *p != ',')
      p++;
    if (*p == ',')
      p++;
    weft_pool_config pc;
    weft_pool_config_default(&pc);
    pc.num_threads = threads;
    weft_pool *pool;
    CHECK(weft_pool_create(&pool, &pc));
    weft_engine_config ec;
    weft_engine_config_default(&ec);
    ec.pool = pool;
    weft_engine *eng;
    CHECK(weft_engine_create(&eng, &ec));
    weft_var **v = malloc(sizeof *v * 2 * (size_t)s.width);
    for (int k = 0; k < 2 * s.width; k++)
      CHECK(weft_var_new(eng, &v[k]));
    weft_graph *g = NULL;
    CHECK(weft_graph_begin_capture(eng));
    push_all(eng, &s, tasks, v);
    CHECK(weft_graph_end_capture(eng, &g));
    /* Two steps (queued, waited): pushes of steps 0 and 1 captured, the
     * tasks' values then rewritten as push_all leaves them (the same for
     * every step). */
    weft_graph *g2 = NULL;
    if (nmodes == M_MODES) {
      stencil two = s;
      two.steps = 2;
      CHECK(weft_graph_begin_capture(eng));
      push_all(eng, &two, tasks, v);
      CHECK(weft_graph_end_capture(eng, &g2));
      for (int k = 0; k < s.width * s.steps; k++)
        tasks[k] = (task){&s, k / s.width, k % s.width};
    }
    for (int w = 0; w < 8; w++) { /* the first launches, untimed */
      CHECK(weft_graph_launch(g));
      if (g2)
        CHECK(weft_graph_launch(g2));
      CHECK(weft_wait_all(eng));
    }
    for (int r = -1; r < reps; r++) /* -1: each mode warmed up once */
      for (int m = 0; m < nmodes; m++) {
        reset(&s);
        int64_t t0 = bench_mono_ns();
        if (m == M_SERIAL) {
          for (int st = 0; st < s.steps; st++)
            for (int i = 0; i < s.width; i++)
              update_block(&s, st, i);
        } else if (m == M_QUEUED || m == M_WAITED) {
          for (int k = 0; k < launches; k++) {
            CHECK(weft_graph_launch_args(g2, &largs[(size_t)k * per], (size_t)per));
            if (m == M_WAITED)
              CHECK(weft_wait_all(eng));
          }
          CHECK(weft_wait_all(eng));
        } else {
          if (m == M_PUSH)
            push_all(eng, &s, tasks, v);
          else
            CHECK(weft_graph_launch(g));
          CHECK(weft_wait_all(eng));
        }
        int64_t dt = bench_mono_ns() - t0;
        if (memcmp(s.buf[(s.steps - 1) % 2], ref, sizeof(double) * n)) {
          fprintf(stderr, "bench_graph_stencil: %s at %d threads: a wrong result\n",
                  mode_names[m], threads);
          return 1;
        }
        if (r >= 0)
          t[m][r] = dt;
      }
    double med[M_MODES];
    for (int m = 0; m < nmodes; m++) {
      qsort(t[m], (size_t)reps, sizeof *t[m], cmp_i64);
      med[m] = reps % 2 ? (double)t[m][reps / 2] : (t[m][reps / 2 - 1] + t[m][reps / 2]) / 2.0;
    }
    for (int m = 0; m < nmodes; m++)
      printf("%-8s %3d %-7s %10.2f %10.2f %10.2f %8.2f %8.2f\n", "stencil", threads,
             mode_names[m], med[m] / 1e6, t[m][0] / 1e6, t[m][reps - 1] / 1e6, flops / med[m],
             med[m] / med[M_PUSH]);
    CHECK(weft_graph_destroy(g));
    if (g2)
      CHECK(weft_graph_destroy(g2));
    CHECK(weft_engine_destroy(eng));
    CHECK(weft_pool_destroy(pool));
    free(v);
  }
  for (int m = 0; m < M_MODES; m++)
    free(t[m]);
  free(largs);
  free(tasks);
  free(ref);
  free(s.buf[0]);
  free(s.buf[1]);
  return 0;
}
