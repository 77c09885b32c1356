/* SPDX-License-Identifier: MIT */
/*
 * Fault-injection sweeps (docs/reliability.md): for every k from 1
 * until the operation stops failing, the k-th allocation (thread start,
 * stream/event creation) from the start of the operation fails, and every
 * one after it until the fault is cleared. Each time:
 *  - the call fails with the documented code (WEFT_ENOMEM for memory,
 *    WEFT_EAGAIN for threads, the injected code for stream/event creation),
 *    or, for GPU operators, the operator fails with it through
 *    weft_var_wait / weft_wait_all;
 *  - no thread is left running that should not be (/proc/self/task);
 *  - the object still works once the fault is cleared, and is destroyed;
 *  - nothing leaks (the ASan build's LeakSanitizer, tu_assert_no_leaks).
 * Each sweep logs how many failure points it exercised (docs/reliability.md states them).
 */
#include <sys/resource.h>
#include <sys/wait.h>

#include "../deps/engine_util.h"
#include "common/alloc.h"
#include "gpu/backend.h"

#define SWEEP_MAX 20000 /* a sweep that still fails here is a bug (a retry loop) */

static void reset_faults(void)
{
  weft_test_fail_alloc_at(0);
  weft_test_fail_thread_at(0);
  weft_gpu_test_fail_create_at(0, 0);
}

static void setup(void)
{
  te_clear_env();
  reset_faults();
}

static void setup_gpu(void)
{
  setup();
  setenv("WEFT_GPU_BACKEND", "host", 1);
  setenv("WEFT_GPU_HOST_DEVICES", "1", 1);
  setenv("WEFT_GPU_WORKERS", "2", 1);
  setenv("WEFT_GPU_COPY_WORKERS", "1", 1);
}

static void teardown(void)
{
  reset_faults();
}

/* ------------------------------------------------------------- helpers */

static atomic_long g_ran;

static int count_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  (void)arg;
  atomic_fetch_add(&g_ran, 1);
  return 0;
}

static int count_task(void *arg)
{
  (void)arg;
  atomic_fetch_add(&g_ran, 1);
  return 0;
}

static weft_pool *pool_n(int threads)
{
  return tu_pool(threads, -1);
}

/* An engine's config on a shared pool (the sweeps create an engine per k). */
static weft_engine_config engine_cfg_on(weft_pool *pool)
{
  weft_engine_config cfg;
  weft_engine_config_default(&cfg);
  cfg.pool = pool;
  return cfg;
}

/* The engine works: a chain of operators on a new var runs, in full. */
static void engine_works(weft_engine *e, const char *what, long k)
{
  weft_var *v = NULL;
  int rc = weft_var_new(e, &v);
  cr_assert_eq(rc, 0, "%s, k=%ld: var_new after the fault = %d (%s)", what, k, rc,
               weft_strerror(rc));
  long before = atomic_load(&g_ran);
  for (int i = 0; i < 20; i++) {
    rc = te_push(e, count_fn, NULL, TE_NONE, TE_V(v), 0);
    cr_assert_eq(rc, 0, "%s, k=%ld: push after the fault = %d (%s)", what, k, rc,
                 weft_strerror(rc));
  }
  rc = weft_var_wait(e, v);
  cr_assert_eq(rc, 0, "%s, k=%ld: var_wait after the fault = %d (%s)", what, k, rc,
               weft_strerror(rc));
  cr_assert_eq(atomic_load(&g_ran), before + 20, "%s, k=%ld: %ld of 20 operators ran", what, k,
               atomic_load(&g_ran) - before);
  cr_assert_eq(weft_var_delete(e, v), 0);
}

/* ---------------------------------------------------------- pool create */

Test(fault_sweep, pool_create, .init = setup, .fini = teardown, .timeout = TU_TIMEOUT(120))
{
  int base = tu_thread_baseline();
  weft_pool_config cfg;
  weft_pool_config_default(&cfg);
  cfg.num_threads = 3;
  cfg.affinity = "none";
  long k, points = 0;
  weft_pool *p = NULL;
  for (k = 1; k < SWEEP_MAX; k++) {
    weft_test_fail_alloc_at(k);
    int rc = weft_pool_create(&p, &cfg);
    weft_test_fail_alloc_at(0);
    if (rc == 0)
      break;
    points++;
    cr_assert_eq(rc, WEFT_ENOMEM, "allocation %ld failing: pool_create = %d (%s)", k, rc,
                 weft_strerror(rc));
    cr_assert_null(p, "a failed create left *out set");
    cr_assert_eq(tu_wait_thread_count(base), base, "allocation %ld failing: threads left", k);
  }
  cr_assert_lt(k, SWEEP_MAX);
  cr_assert_gt(points, 0, "pool_create made no allocation through the hook");
  atomic_store(&g_ran, 0);
  for (int i = 0; i < 100; i++)
    cr_assert_eq(weft_pool_submit(p, count_task, NULL), 0);
  cr_assert_eq(weft_pool_destroy(p), 0);
  cr_assert_eq(atomic_load(&g_ran), 100);
  cr_assert_eq(tu_wait_thread_count(base), base);
  cr_log_info("fault sweep: pool_create (3 workers): %ld allocation failure points", points);

  /* Thread starts: each of the 3 fails once. */
  long tpoints = 0;
  for (k = 1; k < 100; k++) {
    weft_test_fail_thread_at(k);
    int rc = weft_pool_create(&p, &cfg);
    weft_test_fail_thread_at(0);
    if (rc == 0)
      break;
    tpoints++;
    cr_assert_eq(rc, WEFT_EAGAIN, "thread start %ld failing: pool_create = %d (%s)", k, rc,
                 weft_strerror(rc));
    cr_assert_eq(tu_wait_thread_count(base), base, "thread start %ld failing: threads left", k);
  }
  cr_assert_eq(tpoints, 3, "3 workers, %ld thread-start failure points", tpoints);
  cr_assert_eq(weft_pool_destroy(p), 0);
  cr_assert_eq(tu_wait_thread_count(base), base);
  cr_log_info("fault sweep: pool_create (3 workers): %ld thread-start failure points", tpoints);
  tu_assert_no_leaks();
}

/* -------------------------------------------------------- engine create */

typedef enum { ENG_OWN_POOL, ENG_SHARED_POOL, ENG_GPU_HOST, ENG_NAIVE } eng_kind;
static const char *const kind_name[] = {"own pool", "shared pool", "host GPU backend", "naive"};

static long engine_create_sweep(eng_kind kind)
{
  setenv("WEFT_NUM_THREADS", "2", 1);
  if (kind == ENG_GPU_HOST) {
    setenv("WEFT_GPU_BACKEND", "host", 1);
    setenv("WEFT_GPU_HOST_DEVICES", "2", 1);
  }
  int base = tu_thread_baseline();
  weft_pool *pool = kind == ENG_SHARED_POOL ? pool_n(2) : NULL;
  int with_pool = tu_thread_count();
  weft_engine_config cfg;
  weft_engine_config_default(&cfg);
  cfg.pool = pool;
  cfg.kind = kind == ENG_NAIVE ? "naive" : "threaded";
  weft_engine *e = NULL;
  long k, points = 0;
  for (k = 1; k < SWEEP_MAX; k++) {
    weft_test_fail_alloc_at(k);
    int rc = weft_engine_create(&e, &cfg);
    weft_test_fail_alloc_at(0);
    if (rc == 0)
      break;
    points++;
    cr_assert_eq(rc, WEFT_ENOMEM, "%s, allocation %ld failing: engine_create = %d (%s)",
                 kind_name[kind], k, rc, weft_strerror(rc));
    cr_assert_null(e);
    cr_assert_eq(tu_wait_thread_count(with_pool), with_pool,
                 "%s, allocation %ld failing: threads left after engine_create failed",
                 kind_name[kind], k);
  }
  cr_assert_lt(k, SWEEP_MAX);
  cr_assert_gt(points, 0);
  cr_assert_eq(weft_gpu_count(e), kind == ENG_GPU_HOST ? 2 : 0);
  engine_works(e, kind_name[kind], k);
  cr_assert_eq(weft_engine_destroy(e), 0);
  if (pool)
    cr_assert_eq(weft_pool_destroy(pool), 0);
  cr_assert_eq(tu_wait_thread_count(base), base);
  cr_log_info("fault sweep: engine_create (%s): %ld allocation failure points", kind_name[kind],
              points);
  tu_assert_no_leaks();
  return points;
}

Test(fault_sweep, engine_create_own_pool, .init = setup, .fini = teardown,
     .timeout = TU_TIMEOUT(120))
{
  cr_assert_gt(engine_create_sweep(ENG_OWN_POOL), 0, "no failure point exercised");
}

Test(fault_sweep, engine_create_shared_pool, .init = setup, .fini = teardown,
     .timeout = TU_TIMEOUT(120))
{
  cr_assert_gt(engine_create_sweep(ENG_SHARED_POOL), 0, "no failure point exercised");
}

Test(fault_sweep, engine_create_gpu_host, .init = setup, .fini = teardown,
     .timeout = TU_TIMEOUT(120))
{
  cr_assert_gt(engine_create_sweep(ENG_GPU_HOST), 0, "no failure point exercised");
}

Test(fault_sweep, engine_create_naive, .init = setup, .fini = teardown,
     .timeout = TU_TIMEOUT(120))
{
  cr_assert_gt(engine_create_sweep(ENG_NAIVE), 0, "no failure point exercised");
}

/* Thread starts of an engine's own pool. */
Test(fault_sweep, engine_create_threads, .init = setup, .fini = teardown,
     .timeout = TU_TIMEOUT(120))
{
  setenv("WEFT_NUM_THREADS", "3", 1);
  int base = tu_thread_baseline();
  weft_engine *e = NULL;
  long k, points = 0;
  for (k = 1; k < 100; k++) {
    weft_test_fail_thread_at(k);
    int rc = weft_engine_create(&e, NULL);
    weft_test_fail_thread_at(0);
    if (rc == 0)
      break;
    points++;
    cr_assert_eq(rc, WEFT_EAGAIN, "thread start %ld failing: engine_create = %d (%s)", k, rc,
                 weft_strerror(rc));
    cr_assert_eq(tu_wait_thread_count(base), base, "thread start %ld failing: threads left", k);
  }
  cr_assert_eq(points, 3);
  engine_works(e, "engine_create_threads", k);
  cr_assert_eq(weft_engine_destroy(e), 0);
  cr_assert_eq(tu_wait_thread_count(base), base);
  cr_log_info("fault sweep: engine_create (own pool, 3 workers): %ld thread-start failure points",
              points);
  tu_assert_no_leaks();
}

/* --------------------------------------------------- a sequence of pushes */

#define SEQ_VARS 72

typedef struct seq_stats {
  long refused;  /* calls that returned WEFT_ENOMEM */
  long expected; /* operator runs the accepted pushes promise */
  weft_var *kept[SEQ_VARS]; /* vars whose deletion was refused */
  int nkept;
} seq_stats;

static void seq_rc(seq_stats *st, int rc, const char *call, long k)
{
  cr_assert(rc == 0 || rc == WEFT_ENOMEM, "k=%ld: %s = %d (%s)", k, call, rc, weft_strerror(rc));
  st->refused += rc != 0;
}

/* New vars; pushes of one-var operators, of operators with 7 and with 66
 * vars (beyond the inline and the 64-var limits of the operator block), a
 * reusable operator pushed several times, var waits and deletions. Every
 * call either succeeds or returns WEFT_ENOMEM. */
static void push_sequence(weft_engine *e, seq_stats *st, long k)
{
  weft_var *vs[SEQ_VARS];
  int n = 0;
  for (int i = 0; i < SEQ_VARS; i++) {
    weft_var *v = NULL;
    int rc = weft_var_new(e, &v);
    seq_rc(st, rc, "var_new", k);
    if (rc == 0)
      vs[n++] = v;
    else
      cr_assert_null(v);
  }
  for (int i = 0; i < 20 && n > 0; i++) {
    int rc = te_push(e, count_fn, NULL, TE_NONE, &vs[i % n], 1, 0);
    seq_rc(st, rc, "push (1 var)", k);
    st->expected += rc == 0;
  }
  if (n >= 7) {
    int rc = te_push(e, count_fn, NULL, vs, 4, vs + 4, 3, 0);
    seq_rc(st, rc, "push (7 vars)", k);
    st->expected += rc == 0;
  }
  if (n >= 67) {
    int rc = te_push(e, count_fn, NULL, vs, 66, vs + 66, 1, 0);
    seq_rc(st, rc, "push (67 vars)", k);
    st->expected += rc == 0;
    rc = te_push(e, count_fn, NULL, TE_NONE, vs, 66, 0);
    seq_rc(st, rc, "push (66 writes)", k);
    st->expected += rc == 0;
  }
  if (n >= 3) {
    weft_op_desc d = te_desc(count_fn, NULL);
    d.reads = vs;
    d.num_reads = 2;
    d.writes = vs + 2;
    d.num_writes = 1;
    weft_op *op = NULL;
    int rc = weft_op_new(e, &d, &op);
    seq_rc(st, rc, "op_new", k);
    if (rc == 0) {
      for (int i = 0; i < 5; i++) {
        int r = weft_op_push(e, op);
        seq_rc(st, r, "op_push", k);
        st->expected += r == 0;
      }
      cr_assert_eq(weft_op_delete(e, op), 0, "k=%ld: op_delete failed", k);
    }
  }
  if (n > 0) {
    int rc = weft_var_wait(e, vs[0]);
    seq_rc(st, rc, "var_wait", k);
  }
  /* A deletion refused with WEFT_ENOMEM leaves the var live: it is
   * deleted again once the fault is cleared (push_sweep). */
  st->nkept = 0;
  for (int i = 0; i < n; i += 2) {
    int rc = weft_var_delete(e, vs[i]);
    seq_rc(st, rc, "var_delete", k);
    if (rc)
      st->kept[st->nkept++] = vs[i];
  }
}

/* Returns the number of failure points exercised. */
static long push_sweep(const char *kind)
{
  int base = tu_thread_baseline();
  weft_pool *pool = pool_n(2);
  weft_engine_config cfg = engine_cfg_on(pool);
  cfg.kind = kind;
  long k, points = 0, late = 0;
  for (k = 1; k < SWEEP_MAX; k++) {
    weft_engine *e = NULL;
    cr_assert_eq(weft_engine_create(&e, &cfg), 0);
    atomic_store(&g_ran, 0);
    seq_stats st = {0};
    weft_test_fail_alloc_at(k);
    push_sequence(e, &st, k);
    weft_test_fail_alloc_at(0);
    int rc = weft_wait_all(e);
    cr_assert(rc == 0 || rc == WEFT_ENOMEM, "%s, k=%ld: wait_all = %d (%s)", kind, k, rc,
              weft_strerror(rc));
    long ran = atomic_load(&g_ran);
    if (rc == 0)
      cr_assert_eq(ran, st.expected, "%s, k=%ld: %ld pushes accepted, %ld operators ran", kind, k,
                   st.expected, ran);
    else /* an accepted operator failed later: it and its dependents were skipped */
      cr_assert_leq(ran, st.expected, "%s, k=%ld: operators ran twice", kind, k);
    late += rc != 0;
    for (int i = 0; i < st.nkept; i++)
      cr_assert_eq(weft_var_delete(e, st.kept[i]), 0,
                   "%s, k=%ld: a var whose deletion was refused is not live", kind, k);
    engine_works(e, kind, k);
    cr_assert_eq(weft_engine_destroy(e), 0);
    if (st.refused == 0 && rc == 0)
      break;
    points++;
  }
  cr_assert_lt(k, SWEEP_MAX);
  cr_assert_gt(points, 0);
  cr_assert_eq(weft_pool_destroy(pool), 0);
  cr_assert_eq(tu_wait_thread_count(base), base);
  cr_log_info("fault sweep: push sequence (%s engine): %ld allocation failure points (%ld of "
              "them reported by wait_all)",
              kind, points, late);
  tu_assert_no_leaks();
  return points;
}

Test(fault_sweep, push_sequence_threaded, .init = setup, .fini = teardown,
     .timeout = TU_TIMEOUT(240))
{
  cr_assert_gt(push_sweep("threaded"), 0, "no failure point exercised");
}

Test(fault_sweep, push_sequence_naive, .init = setup, .fini = teardown,
     .timeout = TU_TIMEOUT(240))
{
  cr_assert_gt(push_sweep("naive"), 0, "no failure point exercised");
}

/* ------------------------------------------------------- graph capture */

/* weft_graph_end_capture of 24 plain operators on 2 workers (a graph run
 * in order, planned into lanes: graph/lanes.h), each allocation failing in
 * turn: ENOMEM and no graph, the capture ended and the engine working;
 * once it succeeds, the graph runs every operator each launch. */
Test(fault_sweep, graph_capture, .init = setup, .fini = teardown, .timeout = TU_TIMEOUT(240))
{
  int base = tu_thread_baseline();
  weft_pool *pool = pool_n(2);
  weft_engine_config cfg = engine_cfg_on(pool);
  long k, points = 0;
  for (k = 1; k < SWEEP_MAX; k++) {
    weft_engine *e = NULL;
    cr_assert_eq(weft_engine_create(&e, &cfg), 0);
    weft_var *v[4];
    for (int i = 0; i < 4; i++)
      cr_assert_eq(weft_var_new(e, &v[i]), 0);
    cr_assert_eq(weft_graph_begin_capture(e), 0);
    for (int i = 0; i < 24; i++) /* four chains side by side, a read across now and then */
      cr_assert_eq(i % 5 == 4 ? te_push(e, count_fn, NULL, TE_V(v[(i + 1) % 4]), TE_V(v[i % 4]), 0)
                              : te_push(e, count_fn, NULL, TE_NONE, TE_V(v[i % 4]), 0),
                   0);
    weft_graph *g = NULL;
    weft_test_fail_alloc_at(k);
    int rc = weft_graph_end_capture(e, &g);
    weft_test_fail_alloc_at(0);
    atomic_store(&g_ran, 0);
    if (rc == 0) {
      cr_assert_not_null(g);
      for (int l = 1; l <= 3; l++) {
        cr_assert_eq(weft_graph_launch(g), 0);
        cr_assert_eq(weft_wait_all(e), 0);
        cr_assert_eq(atomic_load(&g_ran), 24 * l, "k=%ld: launch %d ran %ld operators", k, l,
                     atomic_load(&g_ran) - 24 * (l - 1));
      }
      cr_assert_eq(weft_graph_destroy(g), 0);
    } else {
      points++;
      cr_assert_eq(rc, WEFT_ENOMEM, "allocation %ld failing: end_capture = %d (%s)", k, rc,
                   weft_strerror(rc));
      cr_assert_null(g, "a failed capture left a graph");
      cr_assert_eq(atomic_load(&g_ran), 0, "k=%ld: a captured operator ran", k);
      cr_assert_eq(weft_graph_begin_capture(e), 0, "k=%ld: the failed capture did not end", k);
      weft_graph *empty = NULL;
      cr_assert_eq(weft_graph_end_capture(e, &empty), 0);
      cr_assert_eq(weft_graph_destroy(empty), 0);
    }
    engine_works(e, "graph capture", k);
    cr_assert_eq(weft_engine_destroy(e), 0);
    if (rc == 0)
      break;
  }
  cr_assert_lt(k, SWEEP_MAX);
  cr_assert_gt(points, 0, "end_capture made no allocation through the hook");
  cr_assert_eq(weft_pool_destroy(pool), 0);
  cr_assert_eq(tu_wait_thread_count(base), base);
  cr_log_info("fault sweep: graph capture (24 operators, 2 workers): %ld allocation failure "
              "points", points);
  tu_assert_no_leaks();
}

/* ------------------------------------------------------ GPU worker start */

typedef struct gpu_job {
  atomic_int done;   /* set by the stream item */
  atomic_int *gate;  /* NULL, or the item waits until *gate != 0 */
  atomic_int *calls; /* fn calls */
} gpu_job;

static void gpu_item(void *arg)
{
  gpu_job *j = arg;
  if (j->gate)
    TU_WAIT_UNTIL(atomic_load(j->gate) != 0, TU_DEADLINE_S);
  atomic_store(&j->done, 1);
}

static int gpu_fn(const weft_run_ctx *rc, void *arg)
{
  gpu_job *j = arg;
  if (j->calls)
    atomic_fetch_add(j->calls, 1);
  return weft_gpu_host_enqueue(rc->stream, gpu_item, j);
}

static int gpu_push(weft_engine *e, gpu_job *j, weft_var *w)
{
  weft_op_desc d = te_desc(gpu_fn, j);
  d.ctx.type = WEFT_DEV_GPU;
  d.ctx.id = 0;
  d.writes = &w;
  d.num_writes = 1;
  return weft_push(e, &d);
}

typedef enum { FAULT_ALLOC, FAULT_THREAD, FAULT_CREATE } fault_kind;
static const char *const fault_name[] = {"allocation", "thread start", "stream/event creation"};

static void fault_at(fault_kind f, long k, int code)
{
  if (f == FAULT_ALLOC)
    weft_test_fail_alloc_at(k);
  else if (f == FAULT_THREAD)
    weft_test_fail_thread_at(k);
  else
    weft_gpu_test_fail_create_at(k, code);
}

/* Threads a started device adds: 2 compute + 1 copy workers, their 4
 * streams' threads, the poller. */
static int gpu_threads(weft_pool *pool)
{
  weft_engine_config cfg;
  weft_engine_config_default(&cfg);
  cfg.pool = pool;
  weft_engine *e = NULL;
  cr_assert_eq(weft_engine_create(&e, &cfg), 0);
  int before = tu_thread_count();
  gpu_job j = {0, NULL, NULL};
  weft_var *v = te_var(e);
  cr_assert_eq(gpu_push(e, &j, v), 0);
  cr_assert_eq(weft_var_wait(e, v), 0);
  int n = tu_thread_count() - before;
  cr_assert_eq(weft_engine_destroy(e), 0);
  return n;
}

/* The first GPU operator of an engine, with fault f at k: the operator
 * fails with want (or the push with WEFT_ENOMEM), its CPU dependent is
 * skipped with the same status; the device's threads either all run or
 * none does; a later operator runs. */
static long gpu_start_sweep(fault_kind f, int code)
{
  int base0 = tu_thread_baseline();
  weft_pool *pool = pool_n(2);
  int base = tu_wait_thread_count(base0 + 2);
  int full = gpu_threads(pool);
  cr_assert_gt(full, 0);
  cr_assert_eq(tu_wait_thread_count(base), base);
  weft_engine_config cfg;
  weft_engine_config_default(&cfg);
  cfg.pool = pool;
  int want = f == FAULT_ALLOC ? WEFT_ENOMEM : f == FAULT_THREAD ? WEFT_EAGAIN : code;
  long k, points = 0;
  for (k = 1; k < SWEEP_MAX; k++) {
    weft_engine *e = NULL;
    cr_assert_eq(weft_engine_create(&e, &cfg), 0);
    weft_var *v = te_var(e), *u = te_var(e);
    gpu_job j = {0, NULL, NULL};
    atomic_store(&g_ran, 0);
    fault_at(f, k, code);
    int prc = gpu_push(e, &j, v);
    int crc = prc == 0 ? te_push(e, count_fn, NULL, &v, 1, &u, 1, 0) : -1;
    int vrc = prc == 0 ? weft_var_wait(e, v) : 0;
    fault_at(f, 0, 0);
    bool failed = prc != 0 || vrc != 0;
    if (prc)
      cr_assert_eq(prc, WEFT_ENOMEM, "%s %ld failing: GPU push = %d (%s)", fault_name[f], k, prc,
                   weft_strerror(prc));
    if (vrc) {
      bool ok = vrc == want || (f == FAULT_ALLOC && vrc == WEFT_EAGAIN);
      cr_assert(ok, "%s %ld failing: the GPU operator failed with %d (%s), expected %s",
                fault_name[f], k, vrc, weft_strerror(vrc), weft_strerror(want));
    }
    if (prc == 0 && vrc == 0)
      cr_assert_eq(atomic_load(&j.done), 1, "k=%ld: the operator succeeded, its work did not run",
                   k);
    if (crc == 0) {
      int urc = weft_var_wait(e, u);
      cr_assert(urc == 0 || urc == vrc || (vrc && urc == WEFT_ENOMEM),
                "%s %ld failing: CPU dependent = %d, its GPU input failed with %d",
                fault_name[f], k, urc, vrc);
      if (vrc)
        cr_assert_eq(urc, vrc, "%s %ld: the dependent of a failed operator was not failed",
                     fault_name[f], k);
    }
    int wrc = weft_wait_all(e);
    cr_assert(wrc == 0 || wrc == want || wrc == WEFT_ENOMEM, "k=%ld: wait_all = %d (%s)", k, wrc,
              weft_strerror(wrc));
    /* All of the device's threads, or none. */
    int n = tu_thread_count();
    if (n != base + full)
      n = tu_wait_thread_count(base);
    cr_assert(n == base || n == base + full,
              "%s %ld failing: %d threads run (%d without the device, %d with it)",
              fault_name[f], k, n, base, base + full);
    /* Works once the fault is cleared. */
    gpu_job j2 = {0, NULL, NULL};
    cr_assert_eq(gpu_push(e, &j2, v), 0);
    int rc2 = weft_var_wait(e, v);
    cr_assert_eq(rc2, 0, "%s %ld: a GPU operator after the fault = %d (%s)", fault_name[f], k,
                 rc2, weft_strerror(rc2));
    cr_assert_eq(atomic_load(&j2.done), 1);
    engine_works(e, "GPU start", k);
    cr_assert_eq(weft_engine_destroy(e), 0);
    cr_assert_eq(tu_wait_thread_count(base), base, "%s %ld: threads left after destroy",
                 fault_name[f], k);
    if (!failed)
      break;
    points++;
  }
  cr_assert_lt(k, SWEEP_MAX);
  cr_assert_gt(points, 0);
  cr_assert_eq(weft_pool_destroy(pool), 0);
  cr_assert_eq(tu_wait_thread_count(base0), base0);
  cr_log_info("fault sweep: GPU worker start (host backend, 2+1 workers): %ld %s failure points",
              points, fault_name[f]);
  tu_assert_no_leaks();
  return points;
}

Test(fault_sweep, gpu_start_alloc, .init = setup_gpu, .fini = teardown,
     .timeout = TU_TIMEOUT(240))
{
  cr_assert_gt(gpu_start_sweep(FAULT_ALLOC, 0), 0, "no failure point exercised");
}

Test(fault_sweep, gpu_start_thread, .init = setup_gpu, .fini = teardown,
     .timeout = TU_TIMEOUT(120))
{
  /* 3 workers, 4 streams' threads, the poller. */
  cr_assert_geq(gpu_start_sweep(FAULT_THREAD, 0), 8);
}

Test(fault_sweep, gpu_start_create, .init = setup_gpu, .fini = teardown,
     .timeout = TU_TIMEOUT(120))
{
  /* 4 streams, then the first operator's event. */
  cr_assert_geq(gpu_start_sweep(FAULT_CREATE, WEFT_EDEVICE), 5);
}

/* Event-pool growth: operators held in flight (their stream items wait on
 * a gate) each need an event of their own, so the pool grows; creation k
 * fails with WEFT_ENOMEM. Each operator either ran or failed with it. */
Test(fault_sweep, gpu_event_pool_growth, .init = setup_gpu, .fini = teardown,
     .timeout = TU_TIMEOUT(240))
{
  enum { M = 8 };
  int base = tu_thread_baseline();
  weft_pool *pool = pool_n(2);
  weft_engine_config cfg = engine_cfg_on(pool);
  long k, points = 0;
  for (k = 1; k < SWEEP_MAX; k++) {
    weft_engine *e = NULL;
    cr_assert_eq(weft_engine_create(&e, &cfg), 0);
    weft_var *vs[M];
    for (int i = 0; i < M; i++)
      vs[i] = te_var(e);
    /* Start the device (its first event too) before the fault. */
    gpu_job warm = {0, NULL, NULL};
    cr_assert_eq(gpu_push(e, &warm, vs[0]), 0);
    cr_assert_eq(weft_var_wait(e, vs[0]), 0);
    atomic_int gate = 0, calls = 0;
    gpu_job js[M];
    weft_gpu_test_fail_create_at(k, WEFT_ENOMEM);
    for (int i = 0; i < M; i++) {
      js[i] = (gpu_job){0, &gate, &calls};
      cr_assert_eq(gpu_push(e, &js[i], vs[i]), 0);
    }
    /* Every operator reached its worker (launched) or failed its creation,
     * before the gate opens: each creation at or after k fails. */
    cr_assert(TU_WAIT_UNTIL(
                  atomic_load(&calls) + (weft_gpu_test_create_calls() >= k
                                             ? weft_gpu_test_create_calls() - k + 1
                                             : 0) >= M,
                  TU_DEADLINE_S),
              "k=%ld: operators neither launched nor failed", k);
    weft_gpu_test_fail_create_at(0, 0);
    atomic_store(&gate, 1);
    int nfail = 0;
    for (int i = 0; i < M; i++) {
      int rc = weft_var_wait(e, vs[i]);
      cr_assert(rc == 0 || rc == WEFT_ENOMEM, "k=%ld: operator %d = %d (%s)", k, i, rc,
                weft_strerror(rc));
      if (rc == 0)
        cr_assert_eq(atomic_load(&js[i].done), 1, "k=%ld: operator %d's work did not run", k, i);
      else
        cr_assert_eq(atomic_load(&js[i].done), 0, "k=%ld: failed operator %d ran", k, i);
      nfail += rc != 0;
    }
    cr_assert_eq(weft_wait_all(e), nfail ? WEFT_ENOMEM : 0);
    /* The pool grows again once the fault is cleared. */
    atomic_store(&gate, 0);
    for (int i = 0; i < M; i++) {
      js[i] = (gpu_job){0, &gate, NULL};
      cr_assert_eq(gpu_push(e, &js[i], vs[i]), 0);
    }
    atomic_store(&gate, 1);
    for (int i = 0; i < M; i++)
      cr_assert_eq(weft_var_wait(e, vs[i]), 0, "k=%ld: operator %d after the fault failed", k, i);
    cr_assert_eq(weft_engine_destroy(e), 0);
    if (nfail == 0)
      break;
    points++;
  }
  cr_assert_lt(k, SWEEP_MAX);
  cr_assert_gt(points, 0, "no operator needed a new event: the pool never grew");
  cr_assert_eq(weft_pool_destroy(pool), 0);
  cr_assert_eq(tu_wait_thread_count(base), base);
  cr_log_info("fault sweep: GPU event-pool growth (%d operators in flight): %ld creation failure "
              "points",
              M, points);
  tu_assert_no_leaks();
}

/* --------------------------------------------------------- RLIMIT_NPROC */

static void *idle_thread(void *arg)
{
  return arg;
}

/* In a child: 0 pass, 77 not enforced, else the failing check's line. */
static int nproc_child(void)
{
  struct rlimit old;
  if (getrlimit(RLIMIT_NPROC, &old))
    return __LINE__;
  struct rlimit low = {1, old.rlim_max};
  if (setrlimit(RLIMIT_NPROC, &low))
    return __LINE__;
  pthread_t t;
  if (pthread_create(&t, NULL, idle_thread, NULL) == 0) {
    pthread_join(t, NULL);
    return 77; /* not enforced for this user */
  }
  int base = tu_thread_count();
  weft_pool_config cfg;
  weft_pool_config_default(&cfg);
  cfg.num_threads = 3;
  cfg.affinity = "none";
  weft_pool *p = NULL;
  if (weft_pool_create(&p, &cfg) != WEFT_EAGAIN || p)
    return __LINE__;
  setenv("WEFT_NUM_THREADS", "2", 1);
  weft_engine *e = NULL;
  if (weft_engine_create(&e, NULL) != WEFT_EAGAIN || e)
    return __LINE__;
  if (tu_wait_thread_count(base) != base)
    return __LINE__;
  /* Raised again (the hard limit is unchanged): everything works. */
  if (setrlimit(RLIMIT_NPROC, &old))
    return __LINE__;
  if (weft_pool_create(&p, &cfg) != 0)
    return __LINE__;
  atomic_store(&g_ran, 0);
  for (int i = 0; i < 50; i++)
    if (weft_pool_submit(p, count_task, NULL))
      return __LINE__;
  if (weft_pool_destroy(p) || atomic_load(&g_ran) != 50)
    return __LINE__;
  if (tu_wait_thread_count(base) != base)
    return __LINE__;
  return 0;
}

Test(fault_sweep, rlimit_nproc, .init = setup, .fini = teardown, .timeout = TU_TIMEOUT(60))
{
  fflush(NULL);
  pid_t pid = fork();
  cr_assert(pid >= 0, "fork failed");
  if (pid == 0) {
    alarm(30);
    _exit(nproc_child());
  }
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status), "the child died (signal %d)",
            WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  int code = WEXITSTATUS(status);
  if (code == 77)
    cr_skip_test("RLIMIT_NPROC is not enforced here (uid %d: root, or CAP_SYS_RESOURCE / "
                 "CAP_SYS_ADMIN): a thread started past a limit of 1",
                 (int)getuid());
  cr_assert_eq(code, 0, "the child's check at line %d failed", code);
}
