/*
 * bench_starpu: the op-list workloads (harness.h) on StarPU 1.3, a peer for
 * weft's dependency engine.
 *
 *   bench_starpu --workload chain|indep|dag|wave --threads N --reps R [--quick]
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

int main(int argc, char **argv) {
  static const char *const supported[] = {"chain", "indep", "dag", "wave", NULL};
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
