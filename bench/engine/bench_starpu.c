/* SPDX-License-Identifier: MIT */
/*
 * bench_starpu: the op-list workloads (harness.h) on StarPU 1.3, a peer for
 * weft's dependency engine.
 *
 *   bench_starpu --workload chain|indep|dag|wave|pipeline --threads N --reps R [--quick]
 *
 * --threads N: N CPU workers (starpu_conf.ncpus = N, and STARPU_NCPU=N in the
 * environment, which StarPU would otherwise let win), no CUDA/OpenCL/MIC/MPI
 * workers, the "lws" scheduler (locality work stealing: per-worker queues;
 * on this 2-core VM "lws", "eager" (one central queue) and "ws" came out
 * within the run-to-run noise of each other at 1 and 2 threads, none ahead on
 * every workload), no performance models (the codelets have none;
 * STARPU_CALIBRATE=0), STARPU_SILENT=1. StarPU still writes its machine
 * description (bus "sampling", a few small files, once) under $STARPU_HOME or
 * ~/.starpu. Settings already in the environment are kept, except
 * STARPU_NCPU, so STARPU_SCHED=eager etc. can be tried from outside.
 *
 * Each var is a variable data handle (starpu_variable_data_register on its
 * own uint64_t in main memory). One task per op, in list order, from the main
 * thread (not a worker: StarPU's model, the application thread submits), with
 * STARPU_RW on the written var and STARPU_R on each read var; StarPU's
 * implicit data dependencies (sequential consistency, on by default) order
 * them. Three codelets, for 0, 1 and 2 reads; the codelet reads and writes
 * through the buffers StarPU hands it (which are the registered addresses:
 * only main memory exists here). Tasks are created with starpu_task_create
 * and submitted with starpu_task_submit (the cheapest path: no argument
 * packing), the op index in cl_arg.
 *
 * TIMED: from the first starpu_task_submit to starpu_task_wait_for_all's
 * return. NOT timed: registering the handles (once; ~5-15 us a handle here,
 * seconds for wave's 262144) and, around each repetition, releasing them
 * before and acquiring them (STARPU_RW) after: between repetitions the
 * application holds every var, so the reset and the check touch the values
 * the documented way.
 */
#include "harness.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>

static const char RT[] = "starpu";

static uint64_t *buf_ptr(void *buffer) { return (uint64_t *)STARPU_VARIABLE_GET_PTR(buffer); }

static void op0(void *buffers[], void *cl_arg) {
  uint64_t *w = buf_ptr(buffers[0]);
  *w = bench_op_kernel(*w, 0, 0, (uint64_t)(uintptr_t)cl_arg);
}

static void op1(void *buffers[], void *cl_arg) {
  uint64_t *w = buf_ptr(buffers[0]);
  *w = bench_op_kernel(*w, *buf_ptr(buffers[1]), 0, (uint64_t)(uintptr_t)cl_arg);
}

static void op2(void *buffers[], void *cl_arg) {
  uint64_t *w = buf_ptr(buffers[0]);
  *w = bench_op_kernel(*w, *buf_ptr(buffers[1]), *buf_ptr(buffers[2]),
                       (uint64_t)(uintptr_t)cl_arg);
}

static struct starpu_codelet cl[3];

static void codelets_init(void) {
  starpu_cpu_func_t fn[3] = {op0, op1, op2};
  for (int k = 0; k < 3; k++) {
    starpu_codelet_init(&cl[k]);
    cl[k].where = STARPU_CPU;
    cl[k].cpu_funcs[0] = fn[k];
    cl[k].nbuffers = k + 1;
    cl[k].modes[0] = STARPU_RW;
    for (int b = 1; b <= k; b++)
      cl[k].modes[b] = STARPU_R;
    cl[k].model = NULL; /* no performance model: nothing to calibrate */
    cl[k].name = "dep_op";
  }
}

typedef struct ctx {
  starpu_data_handle_t *h;
} ctx;

/* Between repetitions the application holds every handle (acquired RW), so
 * bench_dep_time may reset and check the values the documented way; a
 * repetition releases them all, runs, and acquires them again. */
static void acquire_all(ctx *c, size_t n) {
  for (size_t v = 0; v < n; v++) {
    int rc = starpu_data_acquire(c->h[v], STARPU_RW);
    if (rc) {
      bench_fail("starpu_data_acquire: %d", rc);
      return;
    }
  }
}

static void release_all(ctx *c, size_t n) {
  for (size_t v = 0; v < n; v++)
    starpu_data_release(c->h[v]);
}

static uint64_t dep_rep(void *p, const bench_oplist *L, bench_slot *vals) {
  ctx *c = (ctx *)p;
  (void)vals; /* the handles point into it */
  release_all(c, L->nvars);
  const bench_op *ops = L->ops;
  uint64_t t0 = bench_now_ns();
  for (size_t i = 0; i < L->nops; i++) {
    const bench_op *o = &ops[i];
    struct starpu_task *t = starpu_task_create();
    t->cl = &cl[o->nr];
    t->handles[0] = c->h[o->w];
    for (uint32_t k = 0; k < o->nr; k++)
      t->handles[1 + k] = c->h[o->r[k]];
    t->cl_arg = (void *)(uintptr_t)i;
    t->cl_arg_size = 0;
    t->cl_arg_free = 0;
    int rc = starpu_task_submit(t);
    if (rc) {
      bench_fail("starpu_task_submit: %d", rc);
      break;
    }
  }
  int rc = starpu_task_wait_for_all();
  uint64_t t1 = bench_now_ns();
  if (rc)
    bench_fail("starpu_task_wait_for_all: %d", rc);
  acquire_all(c, L->nvars);
  return t1 - t0;
}

/* ------------------------------------------------------------- pipeline */

/* pipeline (harness.h). Handles: a variable per stage (its state: a stage
 * handles one item at a time, in order), a vector per slot (L, P, C x 2, on
 * the static buffers), and for the alloc variants a variable per item (on
 * its bench_pipe_item) and per token slot. Tasks from main, 4 an item:
 *   static:     stage s: RW stage[s], R slot[s-1][k%2], W slot[s][k%2]
 *   alloc, bp:  stage s: RW stage[s], RW item[k]; load and write-back also
 *               RW token[k % T], T = the item count or BENCH_PIPE_TOKENS.
 * The codelet runs the shared stage function on the static slots / the
 * item (main memory only: the buffers StarPU hands it are those). */
static bench_pipe *pipe_P;
static int pipe_variant;

static void pipe_cpu(void *buffers[], void *cl_arg) {
  (void)buffers;
  uintptr_t x = (uintptr_t)cl_arg;
  if (pipe_variant == BENCH_PIPE_STATIC)
    bench_pipe_stage(pipe_P, (int)(x & 3), (size_t)(x >> 2));
  else
    bench_pipe_item_stage(pipe_P, (int)(x & 3), (size_t)(x >> 2));
}

static struct starpu_codelet pipe_cl_static[4], pipe_cl_item[4];

typedef struct pipe_ctx {
  starpu_data_handle_t stage[4], slot[3][2], *item, *tok;
  uint64_t state[4], *tokv;
  bench_pipe *registered; /* the workload the handles are on */
} pipe_ctx;

static void pipe_codelets(void) {
  for (int s = 0; s < 4; s++) {
    struct starpu_codelet *c = &pipe_cl_static[s];
    starpu_codelet_init(c);
    c->where = STARPU_CPU;
    c->cpu_funcs[0] = pipe_cpu;
    c->model = NULL;
    c->name = "pipe_stage";
    int n = 0;
    c->modes[n++] = STARPU_RW;
    if (s > 0)
      c->modes[n++] = STARPU_R;
    if (s < 3)
      c->modes[n++] = STARPU_W;
    c->nbuffers = n;
    c = &pipe_cl_item[s];
    starpu_codelet_init(c);
    c->where = STARPU_CPU;
    c->cpu_funcs[0] = pipe_cpu;
    c->model = NULL;
    c->name = "pipe_item_stage";
    c->modes[0] = STARPU_RW;
    c->modes[1] = STARPU_RW;
    c->modes[2] = STARPU_RW;
    c->nbuffers = (s == 0 || s == 3) ? 3 : 2;
  }
}

/* Registers the handles on P's buffers (once: P lives through every
 * repetition of the workload). */
static void pipe_register(pipe_ctx *c, bench_pipe *P) {
  for (int s = 0; s < 4; s++)
    starpu_variable_data_register(&c->stage[s], STARPU_MAIN_RAM, (uintptr_t)&c->state[s],
                                  sizeof(uint64_t));
  for (int s = 0; s < 3; s++)
    for (int b = 0; b < 2; b++)
      starpu_vector_data_register(&c->slot[s][b], STARPU_MAIN_RAM, (uintptr_t)P->slot[s][b],
                                  (uint32_t)P->words, sizeof(uint64_t));
  c->item = (starpu_data_handle_t *)calloc(P->items, sizeof *c->item);
  c->tok = (starpu_data_handle_t *)calloc(P->items, sizeof *c->tok);
  c->tokv = (uint64_t *)calloc(P->items, sizeof *c->tokv);
  if (!c->item || !c->tok || !c->tokv) {
    fprintf(stderr, "bench_starpu: out of memory\n");
    exit(1);
  }
  for (size_t k = 0; k < P->items; k++) {
    starpu_variable_data_register(&c->item[k], STARPU_MAIN_RAM, (uintptr_t)&P->item[k],
                                  sizeof(bench_pipe_item));
    starpu_variable_data_register(&c->tok[k], STARPU_MAIN_RAM, (uintptr_t)&c->tokv[k],
                                  sizeof(uint64_t));
  }
  c->registered = P;
}

static void pipe_unregister(void *ctx, bench_pipe *P) {
  pipe_ctx *c = (pipe_ctx *)ctx;
  if (c->registered != P)
    return;
  for (int s = 0; s < 4; s++)
    starpu_data_unregister(c->stage[s]);
  for (int s = 0; s < 3; s++)
    for (int b = 0; b < 2; b++)
      starpu_data_unregister(c->slot[s][b]);
  for (size_t k = 0; k < P->items; k++) {
    starpu_data_unregister(c->item[k]);
    starpu_data_unregister(c->tok[k]);
  }
  free(c->item);
  free(c->tok);
  free(c->tokv);
  c->registered = NULL;
}

static uint64_t pipe_rep(void *ctx, bench_pipe *P, int variant) {
  pipe_ctx *c = (pipe_ctx *)ctx;
  if (c->registered != P)
    pipe_register(c, P); /* not timed */
  pipe_P = P;
  pipe_variant = variant;
  const size_t T = variant == BENCH_PIPE_BP ? BENCH_PIPE_TOKENS : P->items;
  uint64_t t0 = bench_now_ns();
  for (size_t k = 0; k < P->items; k++)
    for (int s = 0; s < 4; s++) {
      struct starpu_task *t = starpu_task_create();
      int n = 0, b = (int)(k & 1);
      t->handles[n++] = c->stage[s];
      if (variant == BENCH_PIPE_STATIC) {
        t->cl = &pipe_cl_static[s];
        if (s > 0)
          t->handles[n++] = c->slot[s - 1][b];
        if (s < 3)
          t->handles[n++] = c->slot[s][b];
      } else {
        t->cl = &pipe_cl_item[s];
        t->handles[n++] = c->item[k];
        if (s == 0 || s == 3)
          t->handles[n++] = c->tok[k % T];
      }
      t->cl_arg = (void *)(uintptr_t)((k << 2) | (size_t)s);
      t->cl_arg_size = 0;
      t->cl_arg_free = 0;
      int rc = starpu_task_submit(t);
      if (rc) {
        bench_fail("starpu_task_submit: %d", rc);
        k = P->items;
        break;
      }
    }
  int rc = starpu_task_wait_for_all();
  uint64_t t1 = bench_now_ns();
  if (rc)
    bench_fail("starpu_task_wait_for_all: %d", rc);
  return t1 - t0;
}

static void bench_pipeline(const bench_args *a) {
  pipe_codelets();
  pipe_ctx c;
  memset(&c, 0, sizeof c);
  char extra[200];
  snprintf(extra, sizeof extra,
           ",\"push\":\"main thread, starpu_task_submit, implicit deps on stage/slot/item/"
           "token handles\",\"tokens_bp\":%u",
           BENCH_PIPE_TOKENS);
  bench_pipe_run(RT, a, pipe_rep, &c, 1, extra, pipe_unregister);
}

int main(int argc, char **argv) {
  static const char *const supported[] = {"chain", "indep", "dag", "wave", "pipeline", NULL};
  bench_args a;
  bench_parse_args(argc, argv, RT, supported, &a);

  char ncpu[16];
  snprintf(ncpu, sizeof ncpu, "%d", a.threads);
  setenv("STARPU_NCPU", ncpu, 1);
  setenv("STARPU_NCUDA", "0", 0);
  setenv("STARPU_NOPENCL", "0", 0);
  setenv("STARPU_NMIC", "0", 0);
  setenv("STARPU_NMPI_MS", "0", 0);
  setenv("STARPU_SILENT", "1", 0);
  setenv("STARPU_CALIBRATE", "0", 0);
  setenv("STARPU_SCHED", "lws", 0);

  struct starpu_conf conf;
  starpu_conf_init(&conf);
  conf.ncpus = a.threads;
  conf.ncuda = 0;
  conf.nopencl = 0;
  conf.nmic = 0;
  conf.nmpi_ms = 0;
  conf.calibrate = 0;
  conf.bus_calibrate = 0;
  int rc = starpu_init(&conf);
  if (rc) {
    fprintf(stderr, "bench_starpu: starpu_init: %d (%s)\n", rc, strerror(-rc));
    return 1;
  }
  if ((int)starpu_cpu_worker_get_count() != a.threads)
    bench_fail("StarPU has %u CPU workers, asked for %d", starpu_cpu_worker_get_count(),
               a.threads);
  codelets_init();
  if (!strcmp(a.workload, "pipeline")) {
    bench_pipeline(&a);
    starpu_shutdown();
    return bench_exit_code();
  }

  bench_oplist L;
  bench_oplist_make(&L, a.workload, a.quick);
  bench_slot *vals = bench_vars_alloc(L.nvars);
  ctx c;
  c.h = (starpu_data_handle_t *)calloc(L.nvars, sizeof *c.h);
  if (!c.h) {
    fprintf(stderr, "bench_starpu: out of memory\n");
    return 1;
  }
  for (size_t v = 0; v < L.nvars; v++)
    starpu_variable_data_register(&c.h[v], STARPU_MAIN_RAM, (uintptr_t)&vals[v].v,
                                  sizeof(uint64_t));
  acquire_all(&c, L.nvars);
  bench_series s;
  bench_series_init(&s, a.reps);
  bench_dep_time(RT, &a, &L, vals, dep_rep, &c, &s);
  release_all(&c, L.nvars);
  for (size_t v = 0; v < L.nvars; v++)
    starpu_data_unregister(c.h[v]);
  char extra[256];
  const char *sched = getenv("STARPU_SCHED");
  snprintf(extra, sizeof extra,
           ",\"push\":\"main thread, starpu_task_submit, implicit deps (RW/R)\","
           "\"sched\":\"%s\"",
           sched ? sched : "?");
  bench_dep_emit(RT, &a, &L, &s, extra);
  bench_series_free(&s);
  free(c.h);
  bench_vars_free(vals);
  bench_oplist_free(&L);
  starpu_shutdown();
  return bench_exit_code();
}
