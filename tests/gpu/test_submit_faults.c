/* SPDX-License-Identifier: MIT */
/*
 * A GPU operator whose submit fails completes with the true cause: on
 * the host backend, the first operator of a device starts the device (its
 * streams, stream threads, worker threads and the poller) and takes an op
 * state (an event) from the device's pool; each of those steps is failed in
 * turn through the fault hooks, and the operator's failure, as
 * weft_var_wait and weft_wait_all report it, must be exactly the injected
 * cause: WEFT_ENOMEM for an allocation, WEFT_EAGAIN for a thread start, the
 * backend's own code for a stream or event creation. Never 0, never another
 * code; nothing hangs (the timeouts) and nothing leaks (the ASan build).
 *
 * Each round: a fresh engine, a warm-up CPU operator on another var (so
 * that the push itself needs no new memory), then the fault armed around
 * the push of one GPU operator on a var never used, so that it is ready at
 * once and submitted from inside the push, on this thread.
 * Its fn waits for a gate opened only after the fault is disarmed, so that
 * once submitted, nothing the worker does can hit the fault: an operator
 * whose fn ran must succeed, one whose fn did not must fail with the cause.
 */
#include <stdatomic.h>
#include <string.h>

#include "../deps/engine_util.h"
#include "common/alloc.h"
#include "gpu/backend.h"
#include "gpu/gpu.h"

static void setup(void)
{
  te_clear_env();
  setenv("WEFT_GPU_BACKEND", "host", 1);
  setenv("WEFT_GPU_HOST_DEVICES", "2", 1);
  weft_gpu_test_host_jitter(0);
  weft_test_fail_alloc_at(0);
  weft_test_fail_thread_at(0);
  weft_gpu_test_fail_create_at(0, 0);
}

static void teardown(void)
{
  weft_test_fail_alloc_at(0);
  weft_test_fail_thread_at(0);
  weft_gpu_test_fail_create_at(0, 0);
}

typedef struct gated {
  atomic_int open;
  atomic_int ran;
} gated;

static int gated_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  gated *g = arg;
  atomic_store(&g->ran, 1);
  TU_CHECK(TU_WAIT_UNTIL(atomic_load(&g->open), TU_DEADLINE_S), "the gate never opened");
  return 0;
}

static int nop_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  (void)arg;
  return 0;
}

/* A gated GPU operator on device that writes *var (g closed, not run). */
static weft_op_desc gated_gpu_desc(gated *g, int device, weft_var **var)
{
  atomic_init(&g->open, 0);
  atomic_init(&g->ran, 0);
  weft_op_desc d = te_desc(gated_fn, g);
  d.ctx.type = WEFT_DEV_GPU;
  d.ctx.id = device;
  d.writes = var;
  d.num_writes = 1;
  return d;
}

/* A CPU operator on var, waited for: the engine's blocks and caches are
 * warm, so the pushes that follow need no new memory. */
static void warm_up(weft_engine *eng, weft_var *var)
{
  weft_op_desc warm = te_desc(nop_fn, NULL);
  warm.writes = &var;
  warm.num_writes = 1;
  cr_assert_eq(weft_push(eng, &warm), 0);
  cr_assert_eq(weft_var_wait(eng, var), 0);
}

typedef enum { FAULT_ALLOC, FAULT_THREAD, FAULT_CREATE } fault_kind;

static void arm(fault_kind kind, long k, int code)
{
  switch (kind) {
  case FAULT_ALLOC:
    weft_test_fail_alloc_at(k);
    break;
  case FAULT_THREAD:
    weft_test_fail_thread_at(k);
    break;
  case FAULT_CREATE:
    weft_gpu_test_fail_create_at(k, code);
    break;
  }
}

/* One round with the k-th fault point of kind failing (and every later one
 * until disarmed). Returns 1: the operator failed in submit with cause; 0:
 * it ran (k lies past the submit's fault points); -1: the push itself
 * failed (with WEFT_ENOMEM, before any submit). */
static int round_at(fault_kind kind, long k, int code, int cause)
{
  te t = te_new(NULL, 2, 0);
  weft_var *w = te_var(t.eng), *v = te_var(t.eng);
  warm_up(t.eng, w);

  gated g;
  weft_op_desc d = gated_gpu_desc(&g, 1, &v);
  arm(kind, k, code);
  int rc = weft_push(t.eng, &d); /* ready at once: submitted in here */
  arm(kind, 0, 0);
  atomic_store(&g.open, 1);
  int result;
  if (rc) {
    cr_assert_eq(kind, FAULT_ALLOC, "fault %d at %ld: push = %d (%s)", (int)kind, k, rc,
                 weft_strerror(rc));
    cr_assert_eq(rc, WEFT_ENOMEM, "allocation %ld failing: push = %d (%s)", k, rc,
                 weft_strerror(rc));
    cr_assert_eq(weft_wait_all(t.eng), 0);
    result = -1;
  } else {
    int vs = weft_var_wait(t.eng, v);
    int all = weft_wait_all(t.eng);
    if (atomic_load(&g.ran)) {
      cr_assert_eq(vs, 0, "fault %d at %ld: the op ran, yet its var failed with %d (%s)",
                   (int)kind, k, vs, weft_strerror(vs));
      cr_assert_eq(all, 0);
      result = 0;
    } else {
      cr_assert_eq(vs, cause,
                   "fault %d at %ld: the op's submit failed, its var reports %d (%s), not %d (%s)",
                   (int)kind, k, vs, weft_strerror(vs), cause, weft_strerror(cause));
      cr_assert_eq(all, cause, "fault %d at %ld: weft_wait_all = %d (%s), not %d (%s)",
                   (int)kind, k, all, weft_strerror(all), cause, weft_strerror(cause));
      result = 1;
    }
  }
  /* The engine works on after the fault: the device starts now. */
  d.fn = nop_fn;
  d.arg = NULL;
  cr_assert_eq(weft_push(t.eng, &d), 0);
  cr_assert_eq(weft_var_wait(t.eng, v), 0);
  cr_assert_eq(te_free(&t), 0);
  return result;
}

/* Sweeps k = 1, 2, ... until the operator runs; returns how many rounds
 * failed in submit (with the cause: checked by round_at). */
static int sweep(fault_kind kind, int code, int cause)
{
  int failed_in_submit = 0;
  for (long k = 1;; k++) {
    cr_assert_lt(k, 1000, "fault %d: the operator still fails at point %ld", (int)kind, k);
    int r = round_at(kind, k, code, cause);
    if (r == 0)
      break;
    failed_in_submit += r > 0;
  }
  return failed_in_submit;
}

Test(gpu_submit_faults, allocation_failures_complete_with_enomem, .init = setup,
     .fini = teardown, .timeout = TU_TIMEOUT(120))
{
  /* The device start (worker arrays, streams, stream threads' state) and
   * the op state (its slot array, the state, its event): several points. */
  int n = sweep(FAULT_ALLOC, 0, WEFT_ENOMEM);
  cr_log_info("%d allocation points in a first GPU submit", n);
  cr_assert_geq(n, 5, "only %d allocation points failed the submit", n);
  tu_assert_no_errors();
}

Test(gpu_submit_faults, thread_start_failures_complete_with_eagain, .init = setup,
     .fini = teardown, .timeout = TU_TIMEOUT(120))
{
  /* Default 2 compute workers and 1 copy worker; the host backend gives
   * each stream a thread: 2 x (stream + worker) + (2 streams + worker) +
   * the completion thread, and its waiter but in the event mode. */
  const char *mode = getenv("WEFT_GPU_COMPLETION");
  int expected = mode && !strcmp(mode, "event") ? 8 : 9;
  int n = sweep(FAULT_THREAD, 0, WEFT_EAGAIN);
  cr_assert_eq(n, expected, "%d thread starts failed the submit, expected %d", n, expected);
  tu_assert_no_errors();
}

Test(gpu_submit_faults, backend_creation_failures_complete_with_the_backends_code, .init = setup,
     .fini = teardown, .timeout = TU_TIMEOUT(120))
{
  /* 4 streams and then the op's event; the backend's code passes through
   * unchanged, whichever it is. */
  cr_assert_eq(sweep(FAULT_CREATE, WEFT_EDEVICE, WEFT_EDEVICE), 5);
  cr_assert_eq(sweep(FAULT_CREATE, WEFT_ENODEV, WEFT_ENODEV), 5);
  tu_assert_no_errors();
}

/* A device already running: only the op state is new. The first operator
 * holds its state (its fn waits), so the second needs one more. */
Test(gpu_submit_faults, a_state_allocation_failure_on_a_running_device, .init = setup,
     .fini = teardown, .timeout = TU_TIMEOUT(60))
{
  int failed = 0;
  for (long k = 1;; k++) {
    cr_assert_lt(k, 1000);
    te t = te_new(NULL, 2, 0);
    weft_var *v = te_var(t.eng), *u = te_var(t.eng), *w = te_var(t.eng);
    gated first;
    weft_op_desc d = gated_gpu_desc(&first, 0, &v);
    cr_assert_eq(weft_push(t.eng, &d), 0);
    cr_assert(TU_WAIT_UNTIL(atomic_load(&first.ran), TU_DEADLINE_S));
    warm_up(t.eng, u); /* the push needs no new memory */

    gated second;
    d = gated_gpu_desc(&second, 0, &w); /* w never used before: ready at once */
    weft_test_fail_alloc_at(k);
    int rc = weft_push(t.eng, &d);
    weft_test_fail_alloc_at(0);
    atomic_store(&second.open, 1);
    atomic_store(&first.open, 1);
    bool done = false;
    if (rc) {
      cr_assert_eq(rc, WEFT_ENOMEM, "allocation %ld failing: push = %d", k, rc);
    } else {
      int us = weft_var_wait(t.eng, w);
      if (atomic_load(&second.ran)) {
        cr_assert_eq(us, 0);
        done = true;
      } else {
        cr_assert_eq(us, WEFT_ENOMEM, "allocation %ld failing: the op's var reports %d (%s)", k,
                     us, weft_strerror(us));
        failed++;
      }
    }
    cr_assert_eq(weft_var_wait(t.eng, v), 0);
    int all = weft_wait_all(t.eng);
    cr_assert_eq(all, rc || done ? 0 : WEFT_ENOMEM, "allocation %ld failing: wait_all = %d (%s)",
                 k, all, weft_strerror(all));
    cr_assert_eq(te_free(&t), 0);
    if (done)
      break;
  }
  cr_assert_geq(failed, 2, "only %d allocation points failed the second submit", failed);
  tu_assert_no_errors();
}
