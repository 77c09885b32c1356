/* SPDX-License-Identifier: MIT */
/*
 * bench_graph_edges: a graph made with weft_graph_add / weft_graph_edge
 * and launched once, against pushing the same operators with vars, and
 * against relaunching it (include/weft/weft.h, "graphs").
 *
 *   bench_graph_edges [--threads N[,N...]] [--reps R] [--shape S[,S...]] [--mode M[,M...]]
 *                     [--alone] [--phases]
 *
 * Shapes, the harness's graph_dag, graph_grid and graph_tree (bench/harness/harness.h:
 * the graphs the peers' rows run, from the same seed); the operators are
 * empty fns here: what is measured is the scheduling:
 *   layered  a random layered DAG of 65,536 nodes, 256 layers of 256, each
 *            node with 1-4 out-edges to random nodes of the next layer
 *   grid     a 256 x 256 grid, each block after its left and upper ones
 *   tree     a binary tree of 2^18 nodes, each after its parent
 * Modes, each timed from its first call to weft_wait_all's return in main
 * (a thread of its own, not a pool worker; the pool has N workers):
 *   push     one var per node (made beforehand, not timed); each node
 *            pushed in a topological order, writing its var and reading
 *            its predecessors'
 *   capture  the same pushes captured (weft_graph_begin_capture ..
 *            end_capture), then one launch (the cost of a captured graph
 *            launched once, for comparison)
 *   once     weft_graph_create, weft_graph_add of every node (no vars) in
 *            the same order, weft_graph_edge of every edge, one launch
 *   once_rev the same with the nodes added in the reverse order (every
 *            edge backward: the launch orders the nodes first)
 *   relaunch weft_graph_launch of the graph "once" made, launched
 *            RELAUNCH_WARM times before (untimed: its second launch builds
 *            it again the full way, and the first launches of a graph that
 *            may run in lanes try both ways, weft.h)
 *   cap_relaunch  the same of the graph "capture" made (what a replay
 *            costs a captured graph: its vars, held between launches)
 * A graph's destroy is not in its mode's time: it is timed on its own and
 * printed as destroy_ns (per node).
 * The modes' repetitions are interleaved (push, capture, once, ... then
 * again), each mode warmed up once first. Output: one line per shape,
 * threads and mode: the median ns per node of the repetitions, with their
 * min and max, and the ratio of the median to push's (push runs for it even when --mode leaves it out, unless --alone:
 * the modes given only, for a profile). --phases: for once and once_rev,
 * what the adds, the edges, weft_graph_launch (which resolves the graph)
 * and weft_wait_all took, per node, averaged over the repetitions, in wall
 * time and in the main thread's CPU time (steadier on a loaded machine).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "harness.h"
#define BENCH_PROG "bench_graph_edges"
#include "check.h"
#include "weft/weft.h"

static int64_t now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The calling thread's minor page faults so far (fresh memory's first
 * touch, which dominates a build's cost where the allocator hands out
 * memory it did not keep). */
static long faults(void)
{
  struct rusage ru;
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_minflt;
}

/* The calling thread's CPU time, ns (its page faults included; not the
 * time other processes took its core: steadier on a loaded machine). */
static int64_t cpu_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int empty_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  (void)arg;
  return 0;
}

/* A shape: n nodes in a topological order, and the edges (pred, succ), by
 * successor: node i's predecessors are pred[pred0[i] .. pred0[i + 1]). */
typedef struct shape {
  const char *name;
  int n;
  int *pred0, *pred;
  size_t nedges;
} shape;

static void shape_alloc(shape *s, int n, size_t maxedges)
{
  s->n = n;
  s->pred0 = calloc((size_t)n + 1, sizeof *s->pred0);
  s->pred = malloc(sizeof *s->pred * maxedges);
  if (!s->pred0 || !s->pred) {
    fprintf(stderr, "bench_graph_edges: out of memory\n");
    exit(1);
  }
}

/* One of the harness's graph shapes (bench/harness/harness.h: the same graphs the
 * peers' rows run, from the same seed), as a shape: its nodes are in a
 * topological order already (layer by layer, row by row, parents first). */
static shape from_harness(const char *workload, const char *name)
{
  bench_gshape G;
  bench_gshape_make(&G, workload);
  shape s = {name, 0, NULL, NULL, 0};
  shape_alloc(&s, (int)G.n, G.nedges ? G.nedges : 1);
  for (size_t i = 0; i <= G.n; i++)
    s.pred0[i] = (int)G.pred0[i];
  for (size_t k = 0; k < G.nedges; k++)
    s.pred[k] = (int)G.pred[k];
  s.nedges = G.nedges;
  bench_gshape_free(&G);
  return s;
}

static int cmp_i64(const void *a, const void *b)
{
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* The pushes of s, each node writing its var and reading its
 * predecessors'. */
static void push_all(weft_engine *eng, const shape *s, weft_var **vars, weft_var **reads)
{
  weft_op_desc d;
  memset(&d, 0, sizeof d);
  d.fn = empty_fn;
  d.num_writes = 1;
  for (int i = 0; i < s->n; i++) {
    int np = s->pred0[i + 1] - s->pred0[i];
    for (int k = 0; k < np; k++)
      reads[k] = vars[s->pred[s->pred0[i] + k]];
    d.reads = reads;
    d.num_reads = (size_t)np;
    d.writes = &vars[i];
    CHECK(weft_push(eng, &d));
  }
}

/* The phases of the last "once" repetitions (--phases): the adds, the
 * edges, weft_graph_launch (the graph's resolve, and its start), and
 * weft_wait_all, ns, summed. */
static int64_t phases_of[8][3][4]; /* by mode: wall, CPU, faults; by phase */
static int64_t (*phase)[4] = phases_of[0]; /* the mode's now running */

/* A graph of s's nodes (no vars) and edges; rev: nodes added in the
 * reverse order. */
static weft_graph *make_graph(weft_engine *eng, const shape *s, bool rev)
{
  weft_graph *g;
  int64_t t0 = now_ns(), c0 = cpu_ns(), f0 = faults();
  CHECK(weft_graph_create(eng, &g));
  weft_op_desc d;
  memset(&d, 0, sizeof d);
  d.fn = empty_fn;
  for (int i = 0; i < s->n; i++)
    CHECK(weft_graph_add(g, &d, NULL));
  int64_t t1 = now_ns(), c1 = cpu_ns(), f1 = faults();
  phase[0][0] += t1 - t0;
  phase[1][0] += c1 - c0;
  phase[2][0] += f1 - f0;
  int n = s->n;
  for (int i = 0; i < n; i++)
    for (int k = s->pred0[i]; k < s->pred0[i + 1]; k++) {
      int p = s->pred[k];
      CHECK(rev ? weft_graph_edge(g, (size_t)(n - 1 - p), (size_t)(n - 1 - i))
                : weft_graph_edge(g, (size_t)p, (size_t)i));
    }
  phase[0][1] += now_ns() - t1;
  phase[1][1] += cpu_ns() - c1;
  phase[2][1] += faults() - f1;
  return g;
}

enum { RELAUNCH_WARM = 8 };
enum { M_PUSH, M_CAPTURE, M_ONCE, M_ONCE_REV, M_RELAUNCH, M_CAP_RELAUNCH, M_MODES };
static const char *mode_names[M_MODES] = {"push",     "capture",  "once",
                                          "once_rev", "relaunch", "cap_relaunch"};
_Static_assert(M_MODES <= 8, "phases_of holds every mode");

/* One repetition of mode on s: ns; *destroy: its graph's destroy, ns (0:
 * none). */
static int64_t run_mode(weft_engine *eng, const shape *s, int mode, weft_var **vars,
                        weft_var **reads, int64_t *destroy)
{
  *destroy = 0;
  weft_graph *g = NULL;
  int64_t t0, t1;
  switch (mode) {
  case M_PUSH:
    t0 = now_ns();
    push_all(eng, s, vars, reads);
    CHECK(weft_wait_all(eng));
    t1 = now_ns();
    return t1 - t0;
  case M_CAPTURE:
    t0 = now_ns();
    CHECK(weft_graph_begin_capture(eng));
    push_all(eng, s, vars, reads);
    CHECK(weft_graph_end_capture(eng, &g));
    CHECK(weft_graph_launch(g));
    CHECK(weft_wait_all(eng));
    t1 = now_ns();
    break;
  case M_ONCE:
  case M_ONCE_REV:
    t0 = now_ns();
    g = make_graph(eng, s, mode == M_ONCE_REV);
    int64_t tl = now_ns(), cl = cpu_ns(), fl = faults();
    CHECK(weft_graph_launch(g));
    int64_t tw = now_ns(), cw = cpu_ns(), fw = faults();
    CHECK(weft_wait_all(eng));
    t1 = now_ns();
    phase[0][2] += tw - tl;
    phase[0][3] += t1 - tw;
    phase[1][2] += cw - cl;
    phase[1][3] += cpu_ns() - cw;
    phase[2][2] += fw - fl;
    phase[2][3] += faults() - fw;
    break;
  case M_CAP_RELAUNCH:
    CHECK(weft_graph_begin_capture(eng));
    push_all(eng, s, vars, reads);
    CHECK(weft_graph_end_capture(eng, &g));
    for (int k = 0; k < RELAUNCH_WARM; k++) {
      CHECK(weft_graph_launch(g));
      CHECK(weft_wait_all(eng));
    }
    t0 = now_ns();
    CHECK(weft_graph_launch(g));
    CHECK(weft_wait_all(eng));
    t1 = now_ns();
    break;
  default: /* M_RELAUNCH */
    g = make_graph(eng, s, false);
    for (int k = 0; k < RELAUNCH_WARM; k++) {
      CHECK(weft_graph_launch(g));
      CHECK(weft_wait_all(eng));
    }
    t0 = now_ns();
    CHECK(weft_graph_launch(g));
    CHECK(weft_wait_all(eng));
    t1 = now_ns();
    break;
  }
  int64_t d0 = now_ns();
  CHECK(weft_graph_destroy(g));
  *destroy = now_ns() - d0;
  return t1 - t0;
}

static bool listed(const char *list, const char *name)
{
  if (!list)
    return true;
  size_t len = strlen(name);
  for (const char *p = list; *p;) {
    const char *comma = strchr(p, ',');
    size_t k = comma ? (size_t)(comma - p) : strlen(p);
    if (k == len && !strncmp(p, name, len))
      return true;
    p += k + (comma ? 1 : 0);
  }
  return false;
}

int main(int argc, char **argv)
{
  const char *threads_list = "1,2", *shapes = NULL, *modes = NULL;
  int reps = 7;
  bool alone = false, phases = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc)
      threads_list = argv[++i];
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--shape") && i + 1 < argc)
      shapes = argv[++i];
    else if (!strcmp(argv[i], "--mode") && i + 1 < argc)
      modes = argv[++i];
    else if (!strcmp(argv[i], "--alone"))
      alone = true;
    else if (!strcmp(argv[i], "--phases"))
      phases = true;
    else {
      fprintf(stderr, "usage: %s [--threads N[,N...]] [--reps R] [--shape S[,S...]] "
                      "[--mode M[,M...]] [--alone] [--phases]\n", argv[0]);
      return 2;
    }
  }
  if (reps < 1)
    reps = 1;
  shape all[3] = {from_harness("graph_dag", "layered"), from_harness("graph_grid", "grid"),
                  from_harness("graph_tree", "tree")};
  printf("%-8s %3s %-12s %10s %10s %10s %7s %10s\n", "shape", "thr", "mode", "median_ns",
         "min_ns", "max_ns", "x_push", "destroy_ns");
  for (const char *tp = threads_list; *tp;) {
    int threads = atoi(tp);
    const char *comma = strchr(tp, ',');
    tp = comma ? comma + 1 : tp + strlen(tp);
    weft_pool *pool;
    weft_engine *eng;
    BENCH_ENGINE_ON_POOL(threads, pool, eng);
    for (int si = 0; si < 3; si++) {
      const shape *s = &all[si];
      if (!listed(shapes, s->name))
        continue;
      weft_var **vars = malloc(sizeof *vars * (size_t)s->n);
      weft_var *reads[8];
      for (int i = 0; i < s->n; i++)
        CHECK(weft_var_new(eng, &vars[i]));
      /* The modes' repetitions interleaved (one of each in turn), so that
       * what the machine does meanwhile weighs on them alike. */
      bool on[M_MODES];
      int64_t *t[M_MODES], dsum[M_MODES] = {0}, destroy = 0;
      for (int mode = 0; mode < M_MODES; mode++) {
        on[mode] = (mode == M_PUSH && !alone) || listed(modes, mode_names[mode]);
        t[mode] = malloc(sizeof *t[mode] * (size_t)reps);
        phase = phases_of[mode];
        if (on[mode])
          run_mode(eng, s, mode, vars, reads, &destroy); /* warm-up */
      }
      memset(phases_of, 0, sizeof phases_of);
      for (int r = 0; r < reps; r++)
        for (int mode = 0; mode < M_MODES; mode++) {
          if (!on[mode])
            continue;
          phase = phases_of[mode];
          t[mode][r] = run_mode(eng, s, mode, vars, reads, &destroy);
          dsum[mode] += destroy;
        }
      double push_median = 0;
      for (int mode = 0; mode < M_MODES; mode++) {
        if (!on[mode])
          continue;
        qsort(t[mode], (size_t)reps, sizeof *t[mode], cmp_i64);
        double med = (double)t[mode][reps / 2] / s->n;
        if (mode == M_PUSH)
          push_median = med;
        if (mode == M_PUSH && !listed(modes, "push"))
          continue;
        printf("%-8s %3d %-12s %10.1f %10.1f %10.1f %7.2f %10.1f\n", s->name, threads,
               mode_names[mode], med, (double)t[mode][0] / s->n,
               (double)t[mode][reps - 1] / s->n, med / push_median,
               (double)dsum[mode] / reps / s->n);
        const int64_t(*ph)[4] = (const int64_t(*)[4])phases_of[mode];
        if (phases && (mode == M_ONCE || mode == M_ONCE_REV)) {
          for (int k = 0; k < 2; k++)
            printf("%-8s %3d %-12s %s: adds %.1f, edges %.1f (%.1f an edge), launch %.1f, "
                   "wait %.1f ns a node, averages\n", s->name, threads, mode_names[mode],
                   k ? "main's CPU" : "wall", (double)ph[k][0] / reps / s->n,
                   (double)ph[k][1] / reps / s->n, (double)ph[k][1] / reps / (double)s->nedges,
                   (double)ph[k][2] / reps / s->n, (double)ph[k][3] / reps / s->n);
          printf("%-8s %3d %-12s main's page faults: adds %.0f, edges %.0f, launch %.0f, wait "
                 "%.0f a repetition\n", s->name, threads, mode_names[mode],
                 (double)ph[2][0] / reps, (double)ph[2][1] / reps, (double)ph[2][2] / reps,
                 (double)ph[2][3] / reps);
        }
        fflush(stdout);
      }
      for (int mode = 0; mode < M_MODES; mode++)
        free(t[mode]);
      for (int i = 0; i < s->n; i++)
        CHECK(weft_var_delete(eng, vars[i]));
      free(vars);
    }
    CHECK(weft_engine_destroy(eng));
    CHECK(weft_pool_destroy(pool));
  }
  for (int si = 0; si < 3; si++) {
    free(all[si].pred0);
    free(all[si].pred);
  }
  return 0;
}
