/* SPDX-License-Identifier: MIT */
/*
 * The host backend (emulated devices): the conformance suite with per-item
 * jitter, then what only the host backend has: weft_gpu_host_enqueue's
 * input checks, WEFT_GPU_HOST_DEVICES, the injected device error, and the
 * creation fault hooks. Also the backend choice (WEFT_GPU_BACKEND), which
 * every build has.
 */
#define GT_SUITE host
#include "conformance.h"

#include "common/alloc.h"
#include "gpu/host.h"

static void setup(void)
{
  tu_clear_weft_env();
  unsetenv("WEFT_GPU_BACKEND");
  unsetenv("WEFT_GPU_HOST_DEVICES");
}

static weft_gpu_backend *gt_open(unsigned jitter_us)
{
  weft_gpu_backend_config cfg;
  weft_gpu_backend_config_default(&cfg);
  cfg.kind = WEFT_GPU_BACKEND_HOST;
  cfg.host_devices = 2;
  cfg.host_jitter_us = jitter_us;
  weft_gpu_backend *b = NULL;
  int rc = weft_gpu_backend_open(&b, &cfg);
  cr_assert_eq(rc, 0, "open(host) = %d (%s)", rc, weft_strerror(rc));
  cr_assert_str_eq(weft_gpu_backend_name(b), "host");
  cr_assert_eq(weft_gpu_device_count(b), 2);
  return b;
}

static int gt_enqueue(void *native, void (*fn)(void *arg), void *arg)
{
  return weft_gpu_host_enqueue(native, fn, arg);
}

static void *gt_dev_alloc(size_t bytes)
{
  return malloc(bytes);
}

static void gt_dev_free(void *p)
{
  free(p);
}

/* The gate: a host function that waits for the gate's word. */
static void gt_gate_fn(void *arg)
{
  gt_gate *g = arg;
  double deadline = tu_now() + TU_DEADLINE_S;
  while (!atomic_load_explicit(&g->open, memory_order_acquire)) {
    if (tu_now() > deadline) {
      atomic_store_explicit(&g->timed_out, 1, memory_order_relaxed);
      TU_CHECK(false, "a gate was never opened");
      return;
    }
    tu_sleep_us(100);
  }
}

static gt_gate *gt_gate_alloc(void)
{
  return calloc(1, sizeof(gt_gate));
}

static void gt_gate_free(gt_gate *g)
{
  free(g);
}

static int gt_gate_enqueue(void *native, gt_gate *g)
{
  return weft_gpu_host_enqueue(native, gt_gate_fn, g);
}

GT_CONFORMANCE_TESTS(setup)

/* ------------------------------------------------------------ enqueue */

static void nop(void *arg)
{
  (void)arg;
}

Test(host, enqueue_bad_input, .init = setup, .timeout = TU_TIMEOUT(30))
{
  cr_assert_eq(weft_gpu_host_enqueue(NULL, nop, NULL), WEFT_EINVAL);
  uint64_t not_a_stream[32] = {0};
  cr_assert_eq(weft_gpu_host_enqueue(not_a_stream, nop, NULL), WEFT_EINVAL);
  weft_gpu_backend *b = gt_open(0);
  weft_gpu_stream *s = gt_stream(b, 0);
  void *native = weft_gpu_stream_native(b, s);
  cr_assert_eq(weft_gpu_host_enqueue(native, NULL, NULL), WEFT_EINVAL);

  weft_test_fail_alloc_at(1);
  int rc = weft_gpu_host_enqueue(native, nop, NULL);
  weft_test_fail_alloc_at(0);
  cr_assert_eq(rc, WEFT_ENOMEM, "enqueue with allocation failing = %d", rc);
  int x = 0;
  gt_ok(weft_gpu_host_enqueue(native, gt_set_fn, &x), "enqueue after the failure");
  gt_ok(weft_gpu_stream_sync(b, s), "stream_sync");
  cr_assert_eq(x, 1);
  gt_ok(weft_gpu_stream_destroy(b, s), "stream_destroy");
  weft_gpu_backend_close(b);
  tu_assert_no_leaks();
}

/* An item may enqueue more work on its own stream (a callback chain); the
 * chain runs before destroy returns. */
typedef struct chain {
  void *native;
  int left;
  int ran;
} chain;

static void chain_fn(void *arg)
{
  chain *c = arg;
  c->ran++;
  if (--c->left > 0)
    TU_CHECK(weft_gpu_host_enqueue(c->native, chain_fn, c) == 0, "re-enqueue failed");
}

Test(host, items_enqueue_items, .init = setup, .timeout = TU_TIMEOUT(30))
{
  weft_gpu_backend *b = gt_open(0);
  weft_gpu_stream *s = gt_stream(b, 1);
  chain c = {weft_gpu_stream_native(b, s), 100, 0};
  gt_ok(weft_gpu_host_enqueue(c.native, chain_fn, &c), "enqueue");
  gt_ok(weft_gpu_stream_destroy(b, s), "stream_destroy");
  cr_assert_eq(c.ran, 100, "destroy returned after %d of 100 chained items", c.ran);
  tu_assert_no_errors();
  weft_gpu_backend_close(b);
}

/* ------------------------------------------------------------ device error */

Test(host, injected_device_error, .init = setup, .timeout = TU_TIMEOUT(30))
{
  weft_gpu_backend *b = gt_open(0);
  weft_gpu_stream *a = gt_stream(b, 0), *c = gt_stream(b, 0);
  weft_gpu_event *before = gt_event(b, 0), *after = gt_event(b, 0), *onb = gt_event(b, 0);
  int x = 0, y = 0, z = 0, w = 0;
  gt_put(b, a, gt_set_fn, &x);
  gt_ok(weft_gpu_event_record(b, before, a), "record before");
  gt_ok(weft_gpu_host_test_inject_error(weft_gpu_stream_native(b, a)), "inject");
  gt_put(b, a, gt_set_fn, &y);
  gt_ok(weft_gpu_event_record(b, after, a), "record after");
  /* B waits for the failed record: B fails too, its later work is not run. */
  gt_ok(weft_gpu_stream_wait_event(b, c, after), "wait");
  gt_put(b, c, gt_set_fn, &z);
  gt_ok(weft_gpu_event_record(b, onb, c), "record on B");

  tu_capture cap;
  char err[4096];
  tu_capture_begin(&cap);
  int q_before = gt_query_settled(b, before);
  int q_after = gt_query_settled(b, after);
  int q_onb = gt_query_settled(b, onb);
  int sync_a = weft_gpu_stream_sync(b, a);
  tu_capture_end(&cap, err, sizeof err);

  cr_assert_eq(q_before, WEFT_GPU_EVENT_COMPLETE, "record before the error: %d", q_before);
  cr_assert_eq(q_after, WEFT_EDEVICE, "record after the error: %d", q_after);
  cr_assert_eq(q_onb, WEFT_EDEVICE, "record on the waiting stream: %d", q_onb);
  cr_assert_eq(sync_a, WEFT_EDEVICE);
  cr_assert_eq(x, 1, "work before the error did not run");
  cr_assert_eq(y, 0, "work after the error ran");
  cr_assert_eq(weft_gpu_stream_sync(b, c), WEFT_EDEVICE);
  cr_assert_eq(z, 0, "work after a wait on a failed event ran");
  cr_assert(tu_line_has_all(err, "weft: ", "WEFT_EDEVICE", NULL),
            "no \"weft: \" line naming WEFT_EDEVICE; stderr was \"%s\"", err);
  /* Queried again: same answer (the log line came once). */
  cr_assert_eq(weft_gpu_event_query(b, after), WEFT_EDEVICE);

  /* Other streams are unaffected; enqueue still accepted (and skipped) on A. */
  weft_gpu_stream *d = gt_stream(b, 0);
  gt_put(b, d, gt_set_fn, &w);
  gt_ok(weft_gpu_stream_sync(b, d), "sync on a healthy stream");
  cr_assert_eq(w, 1);
  cr_assert_eq(weft_gpu_host_test_inject_error(NULL), WEFT_EINVAL);
  gt_ok(weft_gpu_stream_destroy(b, a), "destroy a failed stream");
  gt_ok(weft_gpu_stream_destroy(b, c), "destroy");
  gt_ok(weft_gpu_stream_destroy(b, d), "destroy");
  gt_ok(weft_gpu_event_destroy(b, before), "event_destroy");
  gt_ok(weft_gpu_event_destroy(b, after), "event_destroy");
  gt_ok(weft_gpu_event_destroy(b, onb), "event_destroy");
  weft_gpu_backend_close(b);
}

/* A captured injected error fails the stream when a replay reaches it, not
 * at the capture: the work recorded before it runs, the work after it does
 * not, and an event recorded after the launch reports WEFT_EDEVICE. */
Test(host, captured_error_fails_at_replay, .init = setup, .timeout = TU_TIMEOUT(30))
{
  weft_gpu_backend *b = gt_open(0);
  weft_gpu_stream *s = gt_stream(b, 0);
  weft_gpu_event *e0 = gt_event(b, 0), *e1 = gt_event(b, 0);
  int x = 0, y = 0;
  gt_ok(weft_gpu_capture_begin(b, s), "capture_begin");
  gt_put(b, s, gt_set_fn, &x);
  gt_ok(weft_gpu_host_test_inject_error(weft_gpu_stream_native(b, s)), "inject (captured)");
  gt_put(b, s, gt_set_fn, &y);
  weft_gpu_graph *g = NULL;
  gt_ok(weft_gpu_capture_end(b, s, &g), "capture_end");
  gt_ok(weft_gpu_event_record(b, e0, s), "record before the launch");
  cr_assert_eq(gt_query_settled(b, e0), WEFT_GPU_EVENT_COMPLETE, "the capture failed the stream");
  gt_ok(weft_gpu_stream_sync(b, s), "stream_sync before the launch");
  cr_assert_eq(x, 0, "captured work ran at the capture");

  tu_capture cap;
  char err[4096];
  tu_capture_begin(&cap);
  gt_ok(weft_gpu_graph_launch(b, g, s), "graph_launch");
  gt_ok(weft_gpu_event_record(b, e1, s), "record after the launch");
  int q = gt_query_settled(b, e1);
  int sync = weft_gpu_stream_sync(b, s);
  tu_capture_end(&cap, err, sizeof err);
  cr_assert_eq(q, WEFT_EDEVICE, "record after the failing replay: %d", q);
  cr_assert_eq(sync, WEFT_EDEVICE);
  cr_assert_eq(x, 1, "the replayed work before the error did not run");
  cr_assert_eq(y, 0, "the replayed work after the error ran");
  cr_assert(tu_line_has_all(err, "weft: ", "device error", NULL),
            "no \"weft: \" line naming the device error; stderr was \"%s\"", err);
  weft_gpu_graph_destroy(b, g);
  gt_ok(weft_gpu_stream_destroy(b, s), "stream_destroy");
  gt_ok(weft_gpu_event_destroy(b, e0), "event_destroy");
  gt_ok(weft_gpu_event_destroy(b, e1), "event_destroy");
  weft_gpu_backend_close(b);
}

/* An item running on a stream (a callback chain) may enqueue on it while
 * it captures: the enqueue is recorded, as any other. */
typedef struct capture_chain {
  void *native;
  int x;              /* set by the item enqueued from the item */
  atomic_int enqueued; /* release: after the enqueue; the test's acquire load pairs */
} capture_chain;

static void capture_from_item(void *arg)
{
  capture_chain *c = arg;
  TU_CHECK(weft_gpu_host_enqueue(c->native, gt_set_fn, &c->x) == 0,
           "enqueue from an item failed");
  atomic_store_explicit(&c->enqueued, 1, memory_order_release);
}

Test(host, items_enqueue_into_a_capture, .init = setup, .timeout = TU_TIMEOUT(30))
{
  weft_gpu_backend *b = gt_open(0);
  weft_gpu_stream *s = gt_stream(b, 0);
  capture_chain c = {.native = weft_gpu_stream_native(b, s)};
  atomic_init(&c.enqueued, 0);
  gt_gate *gate = gt_gate_put(b, s);
  gt_put(b, s, capture_from_item, &c);
  gt_ok(weft_gpu_capture_begin(b, s), "capture_begin");
  gt_gate_open(gate); /* the item enqueues while the stream captures */
  cr_assert(TU_WAIT_UNTIL(atomic_load_explicit(&c.enqueued, memory_order_acquire), TU_DEADLINE_S),
            "the item did not run");
  weft_gpu_graph *g = NULL;
  gt_ok(weft_gpu_capture_end(b, s, &g), "capture_end");
  gt_ok(weft_gpu_stream_sync(b, s), "stream_sync");
  cr_assert_eq(c.x, 0, "the enqueue from the item ran during the capture");
  gt_ok(weft_gpu_graph_launch(b, g, s), "graph_launch");
  gt_ok(weft_gpu_stream_sync(b, s), "stream_sync");
  cr_assert_eq(c.x, 1, "the replay did not run the item's enqueue");
  weft_gpu_graph_destroy(b, g);
  gt_ok(weft_gpu_stream_destroy(b, s), "stream_destroy");
  gt_gate_done(gate);
  tu_assert_no_errors();
  weft_gpu_backend_close(b);
}

/* The creation fault hook counts capture_end's instantiation (and not a
 * discard); its failure ends the capture as a real one does. Allocation
 * failures reach capture_end and graph_launch too. */
Test(host, capture_fault_hooks, .init = setup, .timeout = TU_TIMEOUT(30))
{
  weft_gpu_backend *b = gt_open(0);
  weft_gpu_stream *s = gt_stream(b, 0);
  weft_gpu_event *e = gt_event(b, 0);
  int x = 0, y = 0;
  weft_gpu_test_fail_create_at(1, WEFT_ENOMEM);
  gt_ok(weft_gpu_capture_begin(b, s), "capture_begin");
  gt_ok(weft_gpu_capture_end(b, s, NULL), "a discard is no creation");
  gt_ok(weft_gpu_capture_begin(b, s), "capture_begin");
  gt_put(b, s, gt_set_fn, &x);
  weft_gpu_graph *g = (weft_gpu_graph *)&g;
  cr_assert_eq(weft_gpu_capture_end(b, s, &g), WEFT_ENOMEM);
  cr_assert_null(g);
  cr_assert_eq(weft_gpu_test_create_calls(), 1);
  weft_gpu_test_fail_create_at(0, 0);
  /* No longer capturing: a record is accepted, and a new capture begins. */
  gt_ok(weft_gpu_event_record(b, e, s), "record after the failed capture_end");
  gt_ok(weft_gpu_capture_begin(b, s), "capture_begin");
  gt_put(b, s, gt_set_fn, &y);

  weft_test_fail_alloc_at(1);
  int rc = weft_gpu_capture_end(b, s, &g);
  weft_test_fail_alloc_at(0);
  cr_assert_eq(rc, WEFT_ENOMEM, "capture_end with allocation failing: %d", rc);
  cr_assert_null(g);
  gt_ok(weft_gpu_stream_sync(b, s), "stream_sync (not capturing)");
  cr_assert_eq(x + y, 0, "the work of a failed capture ran");

  gt_ok(weft_gpu_capture_begin(b, s), "capture_begin");
  gt_put(b, s, gt_set_fn, &x);
  gt_ok(weft_gpu_capture_end(b, s, &g), "capture_end");
  weft_test_fail_alloc_at(1);
  rc = weft_gpu_graph_launch(b, g, s);
  weft_test_fail_alloc_at(0);
  cr_assert_eq(rc, WEFT_ENOMEM, "graph_launch with allocation failing: %d", rc);
  gt_ok(weft_gpu_stream_sync(b, s), "stream_sync");
  cr_assert_eq(x, 0, "a failed launch ran");
  gt_ok(weft_gpu_graph_launch(b, g, s), "graph_launch");
  gt_ok(weft_gpu_stream_sync(b, s), "stream_sync");
  cr_assert_eq(x, 1);
  weft_gpu_graph_destroy(b, g);
  gt_ok(weft_gpu_stream_destroy(b, s), "stream_destroy");
  gt_ok(weft_gpu_event_destroy(b, e), "event_destroy");
  weft_gpu_backend_close(b);
  tu_assert_no_leaks();
}

/* ------------------------------------------------------------ faults */

/* A failed stream never writes a host word (as a CUDA context after a
 * sticky error), and event_sync on its later record says WEFT_EDEVICE. */
Test(host, a_failed_stream_writes_no_word, .init = setup, .timeout = TU_TIMEOUT(30))
{
  weft_gpu_backend *b = gt_open(0);
  weft_gpu_stream *s = gt_stream(b, 0);
  weft_gpu_event *e = gt_event(b, 0);
  weft_gpu_word w;
  gt_ok(weft_gpu_word_alloc(b, 0, &w), "word_alloc");
  gt_ok(weft_gpu_stream_write_word(b, s, &w, 1), "write 1");
  tu_capture cap;
  char err[4096];
  tu_capture_begin(&cap);
  gt_ok(weft_gpu_host_test_inject_error(weft_gpu_stream_native(b, s)), "inject");
  gt_ok(weft_gpu_stream_write_word(b, s, &w, 2), "write 2 (enqueued; never runs)");
  gt_ok(weft_gpu_event_record(b, e, s), "record");
  cr_assert_eq(weft_gpu_event_sync(b, e), WEFT_EDEVICE);
  cr_assert_eq(weft_gpu_stream_sync(b, s), WEFT_EDEVICE);
  tu_capture_end(&cap, err, sizeof err);
  cr_assert_eq(atomic_load_explicit(w.host, memory_order_acquire), 1u,
               "a failed stream wrote its word");
  gt_ok(weft_gpu_stream_destroy(b, s), "stream_destroy");
  gt_ok(weft_gpu_event_destroy(b, e), "event_destroy");
  weft_gpu_word_free(b, &w);
  weft_gpu_backend_close(b);
}

Test(host, creation_fault_hook, .init = setup, .timeout = TU_TIMEOUT(30))
{
  int base = tu_thread_baseline();
  weft_gpu_backend *b = gt_open(0);
  weft_gpu_stream *s = NULL, *s2 = NULL;
  weft_gpu_event *e = NULL;

  weft_gpu_test_fail_create_at(1, WEFT_EAGAIN);
  cr_assert_eq(weft_gpu_stream_create(b, 0, &s), WEFT_EAGAIN);
  cr_assert_null(s);
  weft_gpu_test_fail_create_at(2, WEFT_ENOMEM);
  e = gt_event(b, 0); /* the first creation goes through */
  cr_assert_eq(weft_gpu_stream_create(b, 0, &s), WEFT_ENOMEM);
  cr_assert_null(s);
  weft_gpu_event *e2 = NULL;
  cr_assert_eq(weft_gpu_event_create(b, 0, &e2), WEFT_ENOMEM, "every creation after n fails");
  cr_assert_null(e2);
  cr_assert_eq(weft_gpu_test_create_calls(), 3);
  weft_gpu_test_fail_create_at(0, 0);
  s = gt_stream(b, 0);

  /* The thread and allocation hooks reach the host backend's own creation. */
  weft_test_fail_thread_at(1);
  int rc = weft_gpu_stream_create(b, 0, &s2);
  weft_test_fail_thread_at(0);
  cr_assert_eq(rc, WEFT_EAGAIN, "stream thread failing: %d", rc);
  cr_assert_null(s2);
  weft_test_fail_alloc_at(1);
  rc = weft_gpu_stream_create(b, 0, &s2);
  int rc_ev = weft_gpu_event_create(b, 0, &e2);
  int rc_rec = weft_gpu_event_record(b, e, s);
  int rc_wait = weft_gpu_stream_wait_event(b, s, e);
  weft_test_fail_alloc_at(0);
  /* A stream takes a slot of the registry (host.h), allocating only when
   * every slot made so far is taken (test_host_handles.c fails that one). */
  cr_assert(rc == WEFT_ENOMEM || rc == 0, "stream_create with allocation failing: %d", rc);
  cr_assert_eq(rc_ev, WEFT_ENOMEM);
  cr_assert_eq(rc_rec, WEFT_ENOMEM);
  cr_assert_eq(rc_wait, WEFT_ENOMEM);
  if (rc)
    cr_assert_null(s2);
  else
    gt_ok(weft_gpu_stream_destroy(b, s2), "stream_destroy");
  cr_assert_null(e2);
  /* Everything still works afterwards. */
  gt_ok(weft_gpu_event_record(b, e, s), "record");
  cr_assert_eq(gt_query_settled(b, e), WEFT_GPU_EVENT_COMPLETE);
  gt_ok(weft_gpu_stream_destroy(b, s), "stream_destroy");
  gt_ok(weft_gpu_event_destroy(b, e), "event_destroy");
  weft_gpu_backend_close(b);
  cr_assert_eq(tu_wait_thread_count(base), base, "threads left behind");
  tu_assert_no_leaks();
}

Test(host, open_allocation_failure, .init = setup, .timeout = TU_TIMEOUT(30))
{
  weft_gpu_backend *b = NULL;
  weft_test_fail_alloc_at(1);
  weft_gpu_backend_config cfg;
  weft_gpu_backend_config_default(&cfg);
  cfg.kind = WEFT_GPU_BACKEND_HOST;
  int rc = weft_gpu_backend_open(&b, &cfg);
  weft_test_fail_alloc_at(0);
  cr_assert_eq(rc, WEFT_ENOMEM);
  cr_assert_null(b);
}

/* ------------------------------------------------------------ choice, env */

typedef struct open_ctx {
  weft_gpu_backend_config cfg;
  int devices; /* out */
  char name[16];
} open_ctx;

static int open_with(void *arg)
{
  open_ctx *c = arg;
  weft_gpu_backend *b = NULL;
  int rc = weft_gpu_backend_open(&b, &c->cfg);
  if (rc == 0) {
    c->devices = weft_gpu_device_count(b);
    snprintf(c->name, sizeof c->name, "%s", weft_gpu_backend_name(b));
    weft_gpu_backend_close(b);
  }
  return rc;
}

static open_ctx ctx_auto(void)
{
  open_ctx c;
  memset(&c, 0, sizeof c);
  weft_gpu_backend_config_default(&c.cfg);
  c.devices = -1;
  return c;
}

Test(backend, config_default, .init = setup, .timeout = TU_TIMEOUT(10))
{
  weft_gpu_backend_config cfg;
  memset(&cfg, 0x5a, sizeof cfg);
  weft_gpu_backend_config_default(&cfg);
  cr_assert_eq(cfg.kind, WEFT_GPU_BACKEND_AUTO);
  cr_assert_eq(cfg.host_devices, 0);
  cr_assert_eq(cfg.host_jitter_us, 0u);
  cr_assert_eq(weft_gpu_backend_open(NULL, &cfg), WEFT_EINVAL);
}

Test(backend, default_choice, .init = setup, .timeout = TU_TIMEOUT(10))
{
  open_ctx c = ctx_auto();
  gt_ok(open_with(&c), "open(defaults)");
  cr_assert_str_eq(c.name, WEFT_HAVE_CUDA ? "cuda" : "none");
  if (!WEFT_HAVE_CUDA)
    cr_assert_eq(c.devices, 0, "no devices by default without CUDA, got %d", c.devices);
  /* cfg NULL: the same. */
  weft_gpu_backend *b = NULL;
  gt_ok(weft_gpu_backend_open(&b, NULL), "open(NULL)");
  cr_assert_str_eq(weft_gpu_backend_name(b), c.name);
  weft_gpu_backend_close(b);
}

Test(backend, env_choice, .init = setup, .timeout = TU_TIMEOUT(10))
{
  open_ctx c = ctx_auto();
  setenv("WEFT_GPU_BACKEND", "host", 1);
  gt_ok(open_with(&c), "WEFT_GPU_BACKEND=host");
  cr_assert_str_eq(c.name, "host");
  cr_assert_eq(c.devices, 1);

  c = ctx_auto();
  setenv("WEFT_GPU_BACKEND", "none", 1);
  gt_ok(open_with(&c), "WEFT_GPU_BACKEND=none");
  cr_assert_eq(c.devices, 0, "none: %d devices", c.devices);

  /* Empty counts as unset. */
  c = ctx_auto();
  setenv("WEFT_GPU_BACKEND", "", 1);
  gt_ok(open_with(&c), "WEFT_GPU_BACKEND=\"\"");
  cr_assert_str_eq(c.name, WEFT_HAVE_CUDA ? "cuda" : "host");

  /* An explicit kind beats the environment (which is then not read). */
  c = ctx_auto();
  setenv("WEFT_GPU_BACKEND", "bogus", 1);
  c.cfg.kind = WEFT_GPU_BACKEND_HOST;
  gt_ok(open_with(&c), "explicit host with WEFT_GPU_BACKEND=bogus");
  cr_assert_str_eq(c.name, "host");
  c = ctx_auto();
  setenv("WEFT_GPU_BACKEND", "host", 1);
  c.cfg.kind = WEFT_GPU_BACKEND_NONE;
  gt_ok(open_with(&c), "explicit none");
  cr_assert_eq(c.devices, 0);

  c = ctx_auto();
  c.cfg.kind = (weft_gpu_backend_kind)77;
  cr_assert_eq(open_with(&c), WEFT_EINVAL);
}

Test(backend, none_has_no_devices, .init = setup, .timeout = TU_TIMEOUT(10))
{
  setenv("WEFT_GPU_BACKEND", "none", 1);
  weft_gpu_backend *b = NULL;
  gt_ok(weft_gpu_backend_open(&b, NULL), "open");
  cr_assert_eq(weft_gpu_device_count(b), 0);
  cr_assert_str_eq(weft_gpu_backend_name(b), "none");
  weft_gpu_stream *s = NULL;
  weft_gpu_event *e = NULL;
  cr_assert_eq(weft_gpu_stream_create(b, 0, &s), WEFT_ENODEV);
  cr_assert_eq(weft_gpu_event_create(b, 0, &e), WEFT_ENODEV);
  /* No capture either (no stream reaches it: any non-NULL pointer will do). */
  int dummy = 0;
  weft_gpu_stream *fake = (weft_gpu_stream *)(void *)&dummy;
  weft_gpu_graph *g = (weft_gpu_graph *)(void *)&dummy;
  cr_assert_eq(weft_gpu_capture_begin(b, fake), WEFT_ENODEV);
  cr_assert_eq(weft_gpu_capture_end(b, fake, &g), WEFT_ENODEV);
  cr_assert_null(g);
  cr_assert_eq(weft_gpu_graph_launch(b, (weft_gpu_graph *)(void *)&dummy, fake), WEFT_ENODEV);
  weft_gpu_graph_destroy(b, (weft_gpu_graph *)(void *)&dummy); /* nothing */
  weft_gpu_backend_close(b);
}

/* On a machine without a driver or a GPU (or a build without CUDA), cuda
 * opens with zero devices and no error; with GPUs, with their count. */
Test(backend, cuda_without_devices_is_not_an_error, .init = setup, .timeout = TU_TIMEOUT(30))
{
  setenv("WEFT_GPU_BACKEND", "cuda", 1);
  tu_capture cap;
  char err[4096];
  weft_gpu_backend *b = NULL;
  tu_capture_begin(&cap);
  int rc = weft_gpu_backend_open(&b, NULL);
  tu_capture_end(&cap, err, sizeof err);
  cr_assert_eq(rc, 0, "open(cuda) = %d (%s); stderr \"%s\"", rc, weft_strerror(rc), err);
  int n = weft_gpu_device_count(b);
  cr_assert_geq(n, 0);
  if (n == 0)
    cr_assert_str_eq(err, "", "no devices is not worth a message; got \"%s\"", err);
  weft_gpu_stream *s = NULL;
  cr_assert_eq(weft_gpu_stream_create(b, n, &s), WEFT_ENODEV);
  weft_gpu_backend_close(b);
  cr_log_info("cuda backend: %d device(s)", n);
}

static const char *bad_backends[] = {"bogus", "HOST", "host ", " cuda", "cuda,host", "0"};

Test(backend, malformed_backend_env, .init = setup, .timeout = TU_TIMEOUT(30))
{
  int base = tu_thread_baseline();
  for (size_t i = 0; i < sizeof bad_backends / sizeof bad_backends[0]; i++) {
    open_ctx c = ctx_auto();
    setenv("WEFT_GPU_BACKEND", bad_backends[i], 1);
    cr_assert_eq(tu_expect_env_einval("WEFT_GPU_BACKEND", bad_backends[i],
                                      "weft_gpu_backend_open", open_with, &c, base),
                 WEFT_EINVAL);
  }
}

static const char *bad_devices[] = {"0", "-1", "abc", "3x", " 2", "65", "99999999999999999999"};

Test(backend, host_devices_env, .init = setup, .timeout = TU_TIMEOUT(30))
{
  int base = tu_thread_baseline();
  setenv("WEFT_GPU_BACKEND", "host", 1);
  open_ctx c = ctx_auto();
  setenv("WEFT_GPU_HOST_DEVICES", "3", 1);
  gt_ok(open_with(&c), "WEFT_GPU_HOST_DEVICES=3");
  cr_assert_eq(c.devices, 3);
  c = ctx_auto();
  setenv("WEFT_GPU_HOST_DEVICES", "64", 1);
  gt_ok(open_with(&c), "WEFT_GPU_HOST_DEVICES=64");
  cr_assert_eq(c.devices, 64);

  for (size_t i = 0; i < sizeof bad_devices / sizeof bad_devices[0]; i++) {
    c = ctx_auto();
    setenv("WEFT_GPU_HOST_DEVICES", bad_devices[i], 1);
    tu_expect_env_einval("WEFT_GPU_HOST_DEVICES", bad_devices[i], "weft_gpu_backend_open",
                         open_with, &c, base);
  }

  /* An explicit count beats the environment. */
  c = ctx_auto();
  c.cfg.host_devices = 2;
  gt_ok(open_with(&c), "explicit host_devices with a malformed environment");
  cr_assert_eq(c.devices, 2);
  /* Other backends do not read it. */
  c = ctx_auto();
  c.cfg.kind = WEFT_GPU_BACKEND_NONE;
  gt_ok(open_with(&c), "none with a malformed WEFT_GPU_HOST_DEVICES");
  /* Out-of-range explicit values. */
  c = ctx_auto();
  c.cfg.host_devices = -1;
  cr_assert_eq(open_with(&c), WEFT_EINVAL);
  c = ctx_auto();
  c.cfg.host_devices = 65;
  cr_assert_eq(open_with(&c), WEFT_EINVAL);
}

/* ------------------------------------------------------------ threads */

/* Whether every thread named name is asleep (state S in /proc), and how many
 * there are. */
static bool threads_named_sleep(const char *name, int *count)
{
  DIR *d = opendir("/proc/self/task");
  if (!d)
    return false;
  bool all = true;
  int n = 0;
  struct dirent *ent;
  while ((ent = readdir(d)) != NULL) {
    if (ent->d_name[0] == '.')
      continue;
    char path[300], comm[64] = {0}, stat[512] = {0};
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", ent->d_name);
    FILE *f = fopen(path, "r");
    if (!f)
      continue;
    bool match = fgets(comm, sizeof comm, f) && (comm[strcspn(comm, "\n")] = '\0', 1) &&
                 strcmp(comm, name) == 0;
    fclose(f);
    if (!match)
      continue;
    n++;
    snprintf(path, sizeof path, "/proc/self/task/%s/stat", ent->d_name);
    f = fopen(path, "r");
    if (!f)
      continue;
    if (fgets(stat, sizeof stat, f)) {
      const char *p = strrchr(stat, ')'); /* "pid (comm) S ..." */
      if (!p || p[1] != ' ' || p[2] != 'S')
        all = false;
    }
    fclose(f);
  }
  closedir(d);
  *count = n;
  return all;
}

/* Each stream has one thread (named weft-hgpu<device>), which sleeps while
 * its FIFO is empty (a spinning thread never shows state S) and is gone
 * after destroy. */
Test(host, idle_stream_threads_sleep, .init = setup, .timeout = TU_TIMEOUT(60))
{
  int base = tu_thread_baseline();
  weft_gpu_backend *b = gt_open(0);
  enum { NS = 3 };
  weft_gpu_stream *s[NS];
  int x[NS] = {0};
  for (int k = 0; k < NS; k++) {
    s[k] = gt_stream(b, 1);
    gt_put(b, s[k], gt_set_fn, &x[k]);
  }
  for (int k = 0; k < NS; k++)
    gt_ok(weft_gpu_stream_sync(b, s[k]), "stream_sync");
  cr_assert_eq(tu_thread_count(), base + NS);
  int n = 0;
  bool asleep = TU_WAIT_UNTIL(threads_named_sleep("weft-hgpu1", &n) && n == NS, TU_DEADLINE_S);
  cr_assert(asleep, "idle stream threads never all slept (%d found)", n);
  for (int k = 0; k < NS; k++)
    gt_ok(weft_gpu_stream_destroy(b, s[k]), "stream_destroy");
  weft_gpu_backend_close(b);
  cr_assert_eq(tu_wait_thread_count(base), base, "stream threads left after destroy");
}
