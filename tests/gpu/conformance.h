/* SPDX-License-Identifier: MIT */
/*
 * The backend conformance suite (src/gpu/backend.h's semantics), written once
 * against the interface. A suite file defines, before including this:
 *   GT_SUITE                the Criterion suite name
 * and after including it (prototypes below), for its backend:
 *   gt_open(jitter_us)      an open backend with >= 1 device (or skips the test)
 *   gt_enqueue(native, fn, arg)  host work on a stream (weft_gpu_host_enqueue,
 *                           cudaLaunchHostFunc)
 *   gt_dev_alloc / gt_dev_free   device memory
 *   gt_gate_alloc / gt_gate_free  a gt_gate where both the test thread and
 *                           the stream's work can reach it (host memory;
 *                           cuda: pinned, mapped into the device)
 *   gt_gate_enqueue(native, gate)  a gate on a stream (below)
 * then expands GT_CONFORMANCE_TESTS().
 *
 * "Work" is host functions run by the stream, so every backend can be checked
 * the same way. A gate is a work item that blocks its stream until the test
 * opens it: it makes "not yet" states deterministic (no timing assumptions).
 * A gate blocks its own stream and nothing else: on CUDA it is a kernel
 * polling the gate's word, not a host function, because CUDA may run the
 * host functions of independent streams one at a time on one thread (the
 * runtime's documentation says they "may be serialized"), so a blocked host
 * function would hold up the other streams' items too.
 * Nothing asserts on time; TU_WAIT_UNTIL deadlines turn hangs into failures.
 */
#ifndef WEFT_TESTS_GPU_CONFORMANCE_H
#define WEFT_TESTS_GPU_CONFORMANCE_H

#include <pthread.h>

#include "../common/testutil.h"
#include "gpu/backend.h"

static weft_gpu_backend *gt_open(unsigned jitter_us);
static int gt_enqueue(void *native, void (*fn)(void *arg), void *arg);
static void *gt_dev_alloc(size_t bytes);
static void gt_dev_free(void *p);
typedef struct gt_gate gt_gate;
static gt_gate *gt_gate_alloc(void);
static void gt_gate_free(gt_gate *g);
static int gt_gate_enqueue(void *native, gt_gate *g);

/* ------------------------------------------------------------ helpers */

static weft_gpu_stream *gt_stream(weft_gpu_backend *b, int device)
{
  weft_gpu_stream *s = NULL;
  int rc = weft_gpu_stream_create(b, device, &s);
  cr_assert_eq(rc, 0, "stream_create(%d) = %d (%s)", device, rc, weft_strerror(rc));
  cr_assert_not_null(s);
  return s;
}

static weft_gpu_event *gt_event(weft_gpu_backend *b, int device)
{
  weft_gpu_event *e = NULL;
  int rc = weft_gpu_event_create(b, device, &e);
  cr_assert_eq(rc, 0, "event_create(%d) = %d (%s)", device, rc, weft_strerror(rc));
  cr_assert_not_null(e);
  return e;
}

static void gt_ok(int rc, const char *what)
{
  cr_assert_eq(rc, 0, "%s = %d (%s)", what, rc, weft_strerror(rc));
}

static void gt_put(weft_gpu_backend *b, weft_gpu_stream *s, void (*fn)(void *), void *arg)
{
  gt_ok(gt_enqueue(weft_gpu_stream_native(b, s), fn, arg), "enqueue");
}

struct gt_gate {
  atomic_int open;      /* the test opens it (release); the gate's acquire load pairs */
  atomic_int timed_out; /* set by a gate that gave up waiting; read once its stream drained */
};

/* A closed gate on stream s: s runs nothing after it until gt_gate_open. */
static gt_gate *gt_gate_put(weft_gpu_backend *b, weft_gpu_stream *s)
{
  gt_gate *g = gt_gate_alloc();
  cr_assert_not_null(g, "no memory for a gate");
  atomic_store_explicit(&g->open, 0, memory_order_relaxed);
  atomic_store_explicit(&g->timed_out, 0, memory_order_relaxed);
  gt_ok(gt_gate_enqueue(weft_gpu_stream_native(b, s), g), "enqueue a gate");
  return g;
}

static void gt_gate_open(gt_gate *g)
{
  atomic_store_explicit(&g->open, 1, memory_order_release);
}

/* After the gate's stream drained (synced or destroyed): it was opened in
 * time, and its memory goes back. */
static void gt_gate_done(gt_gate *g)
{
  cr_assert_eq(atomic_load_explicit(&g->timed_out, memory_order_relaxed), 0,
               "a gate was never opened");
  gt_gate_free(g);
}

/* Polls an event until it is no longer pending; returns the final result. */
static int gt_query_settled(weft_gpu_backend *b, weft_gpu_event *e)
{
  int rc = WEFT_GPU_EVENT_PENDING;
  bool ok = TU_WAIT_UNTIL((rc = weft_gpu_event_query(b, e)) != WEFT_GPU_EVENT_PENDING,
                          TU_DEADLINE_S);
  cr_assert(ok, "event still pending after %.0f s", TU_DEADLINE_S);
  return rc;
}

/* A sequence item: checks it runs at its place in its stream's order. The
 * counters are plain ints, written only by their stream's thread. */
typedef struct gt_seq {
  int *counter;
  int index;
} gt_seq;

static void gt_seq_fn(void *arg)
{
  gt_seq *q = arg;
  TU_CHECK(*q->counter == q->index, "item %d ran when %d items had run", q->index, *q->counter);
  *q->counter += 1;
}

/* Sets a flag (plain int: the ordering under test must publish it). */
static void gt_set_fn(void *arg)
{
  *(int *)arg = 1;
}

/* Copies one int to another: a later check reads what the stream saw. */
typedef struct gt_observe {
  const int *from;
  int *to;
} gt_observe;

static void gt_observe_fn(void *arg)
{
  gt_observe *o = arg;
  *o->to = *o->from;
}

/* Sets an atomic flag (for polling from the test thread). */
static void gt_flag_fn(void *arg)
{
  atomic_store_explicit((atomic_int *)arg, 1, memory_order_release);
}

/* ------------------------------------------------------------ tests */

/* Many items on several streams at once run in enqueue order per stream. */
static void gt_fifo(void)
{
  weft_gpu_backend *b = gt_open(30);
  enum { NS = 3 };
  int n = (int)tu_scaled(2000, 200);
  weft_gpu_stream *s[NS];
  int counter[NS] = {0};
  gt_seq *items = calloc((size_t)(NS * n), sizeof *items);
  cr_assert_not_null(items);
  for (int k = 0; k < NS; k++)
    s[k] = gt_stream(b, 0);
  for (int i = 0; i < n; i++)
    for (int k = 0; k < NS; k++) {
      gt_seq *q = &items[k * n + i];
      q->counter = &counter[k];
      q->index = i;
      gt_put(b, s[k], gt_seq_fn, q);
    }
  for (int k = 0; k < NS; k++) {
    gt_ok(weft_gpu_stream_sync(b, s[k]), "stream_sync");
    cr_assert_eq(counter[k], n, "stream %d ran %d of %d items", k, counter[k], n);
    gt_ok(weft_gpu_stream_destroy(b, s[k]), "stream_destroy");
  }
  tu_assert_no_errors();
  free(items);
  weft_gpu_backend_close(b);
}

/* B waits for an event recorded on A: B's later item observes A's earlier
 * item, even though A is held back by a gate when B's items are enqueued. */
static void gt_cross_stream_wait(void)
{
  weft_gpu_backend *b = gt_open(20);
  weft_gpu_stream *a = gt_stream(b, 0), *c = gt_stream(b, 0);
  weft_gpu_event *e = gt_event(b, 0);
  int rounds = (int)tu_scaled(200, 20);
  int *x = calloc((size_t)rounds, sizeof *x), *seen = calloc((size_t)rounds, sizeof *seen);
  gt_observe *obs = calloc((size_t)rounds, sizeof *obs);
  gt_gate *gate = gt_gate_put(b, a);
  for (int i = 0; i < rounds; i++) {
    gt_put(b, a, gt_set_fn, &x[i]);
    gt_ok(weft_gpu_event_record(b, e, a), "event_record");
    gt_ok(weft_gpu_stream_wait_event(b, c, e), "stream_wait_event");
    obs[i] = (gt_observe){&x[i], &seen[i]};
    gt_put(b, c, gt_observe_fn, &obs[i]);
  }
  gt_gate_open(gate);
  gt_ok(weft_gpu_stream_sync(b, c), "stream_sync(B)");
  for (int i = 0; i < rounds; i++)
    cr_assert_eq(seen[i], 1, "round %d: B's item ran before A's earlier item", i);
  gt_ok(weft_gpu_stream_destroy(b, a), "destroy A");
  gt_ok(weft_gpu_stream_destroy(b, c), "destroy B");
  gt_ok(weft_gpu_event_destroy(b, e), "event_destroy");
  gt_gate_done(gate);
  tu_assert_no_errors();
  free(x);
  free(seen);
  free(obs);
  weft_gpu_backend_close(b);
}

/* A wait snapshots the latest record at call time: after record / wait /
 * more work / re-record, the wait includes only the first record's work.
 * A's later work is stuck behind a gate, so a wait that (wrongly) followed
 * the re-record would hang B until the gate opens. */
static void gt_snapshot(void)
{
  weft_gpu_backend *b = gt_open(0);
  weft_gpu_stream *a = gt_stream(b, 0), *c = gt_stream(b, 0);
  weft_gpu_event *e = gt_event(b, 0);
  int x = 0, z = 0, seen_x = 0, seen_z = 0;
  atomic_int b_done = 0;

  gt_put(b, a, gt_set_fn, &x);
  gt_ok(weft_gpu_event_record(b, e, a), "record 1");
  gt_ok(weft_gpu_stream_wait_event(b, c, e), "wait");
  gt_gate *gate = gt_gate_put(b, a);
  gt_put(b, a, gt_set_fn, &z);
  gt_ok(weft_gpu_event_record(b, e, a), "record 2");

  gt_observe ox = {&x, &seen_x};
  gt_put(b, c, gt_observe_fn, &ox);
  gt_put(b, c, gt_flag_fn, &b_done);
  bool ran = TU_WAIT_UNTIL(atomic_load_explicit(&b_done, memory_order_acquire), TU_DEADLINE_S);
  /* The re-record is pending (gate closed) while the first one completed. */
  int q = weft_gpu_event_query(b, e);
  gt_gate_open(gate);
  cr_assert(ran, "B's wait included work recorded after it (the re-record)");
  cr_assert_eq(seen_x, 1, "B did not observe the work before the first record");
  cr_assert_eq(q, WEFT_GPU_EVENT_PENDING, "query reported %d for the pending re-record", q);

  /* And a wait issued now covers the second record. */
  gt_ok(weft_gpu_stream_wait_event(b, c, e), "second wait");
  gt_observe oz = {&z, &seen_z};
  gt_put(b, c, gt_observe_fn, &oz);
  gt_ok(weft_gpu_stream_sync(b, c), "stream_sync");
  cr_assert_eq(seen_z, 1, "a wait after the re-record did not include it");
  gt_ok(weft_gpu_stream_destroy(b, a), "destroy A");
  gt_ok(weft_gpu_stream_destroy(b, c), "destroy B");
  gt_ok(weft_gpu_event_destroy(b, e), "event_destroy");
  gt_gate_done(gate);
  tu_assert_no_errors();
  weft_gpu_backend_close(b);
}

/* A never-recorded event is complete, and waiting on it blocks nothing. */
static void gt_unrecorded(void)
{
  weft_gpu_backend *b = gt_open(0);
  weft_gpu_stream *s = gt_stream(b, 0);
  weft_gpu_event *e = gt_event(b, 0);
  cr_assert_eq(weft_gpu_event_query(b, e), WEFT_GPU_EVENT_COMPLETE);
  int x = 0;
  gt_ok(weft_gpu_stream_wait_event(b, s, e), "wait on unrecorded");
  gt_put(b, s, gt_set_fn, &x);
  gt_ok(weft_gpu_stream_sync(b, s), "stream_sync");
  cr_assert_eq(x, 1);
  cr_assert_eq(weft_gpu_event_query(b, e), WEFT_GPU_EVENT_COMPLETE);
  gt_ok(weft_gpu_stream_destroy(b, s), "stream_destroy");
  gt_ok(weft_gpu_event_destroy(b, e), "event_destroy");
  weft_gpu_backend_close(b);
}

/* Query is pending while the recorded work is held, complete after; it
 * never blocks (the test thread calls it with the stream stuck). */
static void gt_query_pending(void)
{
  weft_gpu_backend *b = gt_open(0);
  weft_gpu_stream *s = gt_stream(b, 0);
  weft_gpu_event *e = gt_event(b, 0);
  int x = 0;
  gt_gate *gate = gt_gate_put(b, s);
  gt_put(b, s, gt_set_fn, &x);
  gt_ok(weft_gpu_event_record(b, e, s), "record");
  for (int i = 0; i < 100; i++) {
    int q = weft_gpu_event_query(b, e);
    if (q != WEFT_GPU_EVENT_PENDING) {
      gt_gate_open(gate);
      cr_assert_fail("query %d = %d with the recorded work held back", i, q);
    }
  }
  gt_gate_open(gate);
  cr_assert_eq(gt_query_settled(b, e), WEFT_GPU_EVENT_COMPLETE);
  cr_assert_eq(x, 1, "complete, but the work before the record is not visible");
  gt_ok(weft_gpu_stream_destroy(b, s), "stream_destroy");
  gt_ok(weft_gpu_event_destroy(b, e), "event_destroy");
  gt_gate_done(gate);
  tu_assert_no_errors();
  weft_gpu_backend_close(b);
}

/* One event recorded, queried and waited on many times, alternating
 * between two streams; each completion shows exactly the work before it. */
static void gt_event_reuse(void)
{
  weft_gpu_backend *b = gt_open(5);
  weft_gpu_stream *s[2] = {gt_stream(b, 0), gt_stream(b, 0)};
  weft_gpu_stream *w = gt_stream(b, 0);
  weft_gpu_event *e = gt_event(b, 0);
  int n = (int)tu_scaled(500, 50);
  int counter[2] = {0, 0};
  gt_seq *items = calloc((size_t)n, sizeof *items);
  int *seen = calloc((size_t)n, sizeof *seen);
  gt_observe *obs = calloc((size_t)n, sizeof *obs);
  for (int i = 0; i < n; i++) {
    int k = i & 1;
    items[i] = (gt_seq){&counter[k], counter[k]};
    /* The expected index is what the counter will be when it runs: the
     * test thread reads counter[k] only after the last completion on k. */
    gt_put(b, s[k], gt_seq_fn, &items[i]);
    gt_ok(weft_gpu_event_record(b, e, s[k]), "record");
    gt_ok(weft_gpu_stream_wait_event(b, w, e), "wait");
    obs[i] = (gt_observe){&counter[k], &seen[i]};
    gt_put(b, w, gt_observe_fn, &obs[i]);
    cr_assert_eq(gt_query_settled(b, e), WEFT_GPU_EVENT_COMPLETE, "round %d", i);
    cr_assert_eq(counter[k], items[i].index + 1, "round %d: completion without its work", i);
    /* Also keeps W's read of counter[k] before the next write to it. */
    gt_ok(weft_gpu_stream_sync(b, w), "stream_sync");
    cr_assert_eq(seen[i], items[i].index + 1, "wait %d did not include its record's work", i);
  }
  for (int k = 0; k < 2; k++)
    gt_ok(weft_gpu_stream_destroy(b, s[k]), "stream_destroy");
  gt_ok(weft_gpu_stream_destroy(b, w), "stream_destroy");
  gt_ok(weft_gpu_event_destroy(b, e), "event_destroy");
  tu_assert_no_errors();
  free(items);
  free(seen);
  free(obs);
  weft_gpu_backend_close(b);
}

/* Destroying a stream with pending work runs that work first; an event
 * recorded there may be destroyed while pending, and then outlives nothing. */
static void gt_destroy_drains(void)
{
  weft_gpu_backend *b = gt_open(10);
  weft_gpu_stream *s = gt_stream(b, 0);
  weft_gpu_event *e = gt_event(b, 0);
  int n = (int)tu_scaled(300, 30);
  int counter = 0;
  gt_seq *items = calloc((size_t)n, sizeof *items);
  for (int i = 0; i < n; i++) {
    items[i] = (gt_seq){&counter, i};
    gt_put(b, s, gt_seq_fn, &items[i]);
    if (i == n / 2)
      gt_ok(weft_gpu_event_record(b, e, s), "record");
  }
  gt_ok(weft_gpu_event_destroy(b, e), "event_destroy (pending)");
  gt_ok(weft_gpu_stream_destroy(b, s), "stream_destroy");
  cr_assert_eq(counter, n, "destroy returned after %d of %d items", counter, n);
  tu_assert_no_errors();
  free(items);
  weft_gpu_backend_close(b);
}

/* Copies host -> device -> device -> host, ordered on one stream. */
static void gt_copy(void)
{
  weft_gpu_backend *b = gt_open(10);
  weft_gpu_stream *s = gt_stream(b, 0);
  enum { N = 4096 };
  int *src = malloc(N * sizeof *src), *dst = calloc(N, sizeof *dst);
  void *d1 = gt_dev_alloc(N * sizeof(int)), *d2 = gt_dev_alloc(N * sizeof(int));
  cr_assert(src && dst && d1 && d2);
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < N; i++)
      src[i] = i * 7 + round;
    gt_ok(weft_gpu_copy_async(b, s, d1, src, N * sizeof(int), WEFT_GPU_COPY_H2D), "H2D");
    gt_ok(weft_gpu_copy_async(b, s, d2, d1, N * sizeof(int), WEFT_GPU_COPY_D2D), "D2D");
    gt_ok(weft_gpu_copy_async(b, s, dst, d2, N * sizeof(int), WEFT_GPU_COPY_D2H), "D2H");
    gt_ok(weft_gpu_stream_sync(b, s), "stream_sync");
    for (int i = 0; i < N; i++)
      cr_assert_eq(dst[i], i * 7 + round, "round %d: dst[%d] = %d", round, i, dst[i]);
  }
  cr_assert_eq(weft_gpu_copy_async(b, s, NULL, src, 4, WEFT_GPU_COPY_H2D), WEFT_EINVAL);
  cr_assert_eq(weft_gpu_copy_async(b, s, dst, src, 4, (weft_gpu_copy_kind)42), WEFT_EINVAL);
  gt_ok(weft_gpu_copy_async(b, s, NULL, NULL, 0, WEFT_GPU_COPY_H2D), "empty copy");
  gt_ok(weft_gpu_stream_destroy(b, s), "stream_destroy");
  gt_dev_free(d1);
  gt_dev_free(d2);
  free(src);
  free(dst);
  weft_gpu_backend_close(b);
}

/* Bad arguments: devices out of range, NULLs, an event of another device. */
static void gt_bad_args(void)
{
  weft_gpu_backend *b = gt_open(0);
  int n = weft_gpu_device_count(b);
  weft_gpu_stream *s = NULL;
  weft_gpu_event *e = NULL;
  cr_assert_eq(weft_gpu_stream_create(b, -1, &s), WEFT_ENODEV);
  cr_assert_null(s);
  cr_assert_eq(weft_gpu_stream_create(b, n, &s), WEFT_ENODEV);
  cr_assert_eq(weft_gpu_event_create(b, n, &e), WEFT_ENODEV);
  cr_assert_null(e);
  cr_assert_eq(weft_gpu_stream_create(b, 0, NULL), WEFT_EINVAL);
  cr_assert_eq(weft_gpu_stream_create(NULL, 0, &s), WEFT_EINVAL);
  s = gt_stream(b, 0);
  e = gt_event(b, 0);
  cr_assert_eq(weft_gpu_event_record(b, NULL, s), WEFT_EINVAL);
  cr_assert_eq(weft_gpu_event_record(b, e, NULL), WEFT_EINVAL);
  cr_assert_eq(weft_gpu_stream_wait_event(b, s, NULL), WEFT_EINVAL);
  cr_assert_eq(weft_gpu_event_query(b, NULL), WEFT_EINVAL);
  cr_assert_null(weft_gpu_stream_native(b, NULL));
  cr_assert_not_null(weft_gpu_stream_native(b, s));
  if (n >= 2) {
    weft_gpu_stream *s1 = gt_stream(b, 1);
    cr_assert_eq(weft_gpu_event_record(b, e, s1), WEFT_EINVAL, "event of device 0 on device 1");
    /* Waiting across devices is allowed, as in CUDA. */
    gt_ok(weft_gpu_event_record(b, e, s), "record");
    gt_ok(weft_gpu_stream_wait_event(b, s1, e), "cross-device wait");
    gt_ok(weft_gpu_stream_sync(b, s1), "stream_sync");
    gt_ok(weft_gpu_stream_destroy(b, s1), "stream_destroy");
  }
  gt_ok(weft_gpu_stream_destroy(b, s), "stream_destroy");
  gt_ok(weft_gpu_event_destroy(b, e), "event_destroy");
  weft_gpu_backend_close(b);
}


/* A host word reads 0 when allocated; a write enqueued behind held work
 * does not land before it, and once the word shows the value, the work
 * before the write is visible; later writes overwrite it in order. */
static void gt_host_word(void)
{
  weft_gpu_backend *b = gt_open(0);
  weft_gpu_stream *s = gt_stream(b, 0);
  weft_gpu_word w;
  gt_ok(weft_gpu_word_alloc(b, 0, &w), "word_alloc");
  cr_assert_not_null(w.host);
  cr_assert_eq(atomic_load_explicit(w.host, memory_order_acquire), 0u, "a new word is not 0");
  int x = 0;
  gt_gate *gate = gt_gate_put(b, s);
  gt_put(b, s, gt_set_fn, &x);
  gt_ok(weft_gpu_stream_write_word(b, s, &w, 7), "write_word 7");
  for (int i = 0; i < 100; i++) {
    uint32_t v = atomic_load_explicit(w.host, memory_order_acquire);
    if (v != 0) {
      gt_gate_open(gate);
      cr_assert_fail("read %d: the word is %u with the work before its write held back", i, v);
    }
  }
  gt_gate_open(gate);
  /* acquire: pairs with the stream's fenced write; x's store is visible. */
  cr_assert(TU_WAIT_UNTIL(atomic_load_explicit(w.host, memory_order_acquire) == 7, TU_DEADLINE_S),
            "the word never showed 7");
  cr_assert_eq(x, 1, "the word showed 7 before the work enqueued before its write was visible");
  for (uint32_t v = 8; v < 40; v++)
    gt_ok(weft_gpu_stream_write_word(b, s, &w, v), "write_word");
  cr_assert(TU_WAIT_UNTIL(atomic_load_explicit(w.host, memory_order_acquire) == 39, TU_DEADLINE_S),
            "the last write did not win");
  cr_assert_eq(weft_gpu_stream_write_word(b, s, NULL, 1), WEFT_EINVAL);
  gt_ok(weft_gpu_stream_destroy(b, s), "stream_destroy");
  weft_gpu_word_free(b, &w);
  cr_assert_null(w.host, "word_free leaves the handle empty");
  weft_gpu_word_free(b, &w); /* a second free does nothing */
  cr_assert_eq(weft_gpu_word_alloc(b, weft_gpu_device_count(b), &w), WEFT_ENODEV);
  cr_assert_null(w.host);
  gt_gate_done(gate);
  tu_assert_no_errors();
  weft_gpu_backend_close(b);
}

typedef struct gt_syncer {
  weft_gpu_backend *b;
  weft_gpu_event *e;
  atomic_int done; /* release: after rc; the test's acquire load pairs */
  int rc;
} gt_syncer;

static void *gt_sync_main(void *arg)
{
  gt_syncer *y = arg;
  y->rc = weft_gpu_event_sync(y->b, y->e);
  atomic_store_explicit(&y->done, 1, memory_order_release);
  return NULL;
}

/* event_sync blocks until the recorded work completed (held back by a
 * gate meanwhile), then returns 0 with the work visible; a never-recorded
 * event returns at once. */
static void gt_event_sync(void)
{
  weft_gpu_backend *b = gt_open(0);
  weft_gpu_stream *s = gt_stream(b, 0);
  weft_gpu_event *e = gt_event(b, 0);
  gt_ok(weft_gpu_event_sync(b, e), "event_sync on a never-recorded event");
  int x = 0;
  gt_gate *gate = gt_gate_put(b, s);
  gt_put(b, s, gt_set_fn, &x);
  gt_ok(weft_gpu_event_record(b, e, s), "record");
  gt_syncer y = {.b = b, .e = e};
  atomic_init(&y.done, 0);
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, gt_sync_main, &y), 0);
  for (int i = 0; i < 100; i++) {
    if (atomic_load_explicit(&y.done, memory_order_acquire)) {
      gt_gate_open(gate);
      pthread_join(t, NULL);
      cr_assert_fail("event_sync returned %d with the recorded work held back", y.rc);
    }
    tu_sleep_us(100);
  }
  gt_gate_open(gate);
  pthread_join(t, NULL);
  cr_assert_eq(y.rc, 0, "event_sync = %d", y.rc);
  cr_assert_eq(x, 1, "event_sync returned before the recorded work was visible");
  cr_assert_eq(weft_gpu_event_sync(NULL, e), WEFT_EINVAL);
  gt_ok(weft_gpu_stream_destroy(b, s), "stream_destroy");
  gt_ok(weft_gpu_event_destroy(b, e), "event_destroy");
  gt_gate_done(gate);
  tu_assert_no_errors();
  weft_gpu_backend_close(b);
}

/* ------------------------------------------------------------ capture */

/* A replay log: each item appends its id. Written by the items (one
 * stream's thread at a time: a graph's launches run one at a time, and
 * each test orders its plain items), read by the test after a sync or a
 * completed event. */
enum { GT_LOG_MAX = 4096 };
typedef struct gt_log {
  int ids[GT_LOG_MAX];
  int n;
} gt_log;

typedef struct gt_log_item {
  gt_log *log;
  int id;
} gt_log_item;

static void gt_log_fn(void *arg)
{
  gt_log_item *it = arg;
  TU_CHECK(it->log->n < GT_LOG_MAX, "the log is full");
  if (it->log->n < GT_LOG_MAX)
    it->log->ids[it->log->n++] = it->id;
}

static gt_log *gt_log_new(void)
{
  gt_log *l = calloc(1, sizeof *l);
  cr_assert_not_null(l);
  return l;
}

/* Checks that log holds want[0..n) and nothing else. */
static void gt_log_expect(const gt_log *l, const int *want, int n, const char *what)
{
  cr_assert_eq(l->n, n, "%s: %d items ran, expected %d", what, l->n, n);
  for (int i = 0; i < n; i++)
    cr_assert_eq(l->ids[i], want[i], "%s: item %d is %d, expected %d", what, i, l->ids[i],
                 want[i]);
}

/* Captures on s the items ids 0..k-1 of log (items[] lives as long as the
 * graph) and returns the graph. */
static weft_gpu_graph *gt_capture_log(weft_gpu_backend *b, weft_gpu_stream *s, gt_log *l,
                                      gt_log_item *items, int k)
{
  gt_ok(weft_gpu_capture_begin(b, s), "capture_begin");
  for (int i = 0; i < k; i++) {
    items[i] = (gt_log_item){l, i};
    gt_put(b, s, gt_log_fn, &items[i]);
  }
  weft_gpu_graph *g = NULL;
  gt_ok(weft_gpu_capture_end(b, s, &g), "capture_end");
  cr_assert_not_null(g, "capture_end returned no graph");
  return g;
}

/* Captured work does not run, at the capture nor at its end; each launch
 * replays it once, in its order, between the plain items enqueued around
 * the launch. With jitter on the host backend. */
static void gt_capture_replay(void)
{
  weft_gpu_backend *b = gt_open(20);
  weft_gpu_stream *s = gt_stream(b, 0);
  enum { K = 5, N = 10 };
  gt_log *l = gt_log_new();
  gt_log_item items[K], before = {l, 100}, after[N];
  int want[1 + N * (K + 1)], nw = 0;
  gt_put(b, s, gt_log_fn, &before);
  want[nw++] = 100;
  weft_gpu_graph *g = gt_capture_log(b, s, l, items, K);
  gt_ok(weft_gpu_stream_sync(b, s), "stream_sync after the capture");
  gt_log_expect(l, want, nw, "after the capture");
  for (int i = 0; i < N; i++) {
    gt_ok(weft_gpu_graph_launch(b, g, s), "graph_launch");
    after[i] = (gt_log_item){l, 200 + i};
    gt_put(b, s, gt_log_fn, &after[i]);
    for (int j = 0; j < K; j++)
      want[nw++] = j;
    want[nw++] = 200 + i;
  }
  gt_ok(weft_gpu_stream_sync(b, s), "stream_sync");
  gt_log_expect(l, want, nw, "after the launches");
  weft_gpu_graph_destroy(b, g);
  gt_ok(weft_gpu_stream_destroy(b, s), "stream_destroy");
  tu_assert_no_errors();
  free(l);
  weft_gpu_backend_close(b);
}

/* A captured device-to-device copy copies afresh at each replay. */
static void gt_capture_copy(void)
{
  weft_gpu_backend *b = gt_open(10);
  weft_gpu_stream *s = gt_stream(b, 0);
  enum { N = 1024 };
  int *src = malloc(N * sizeof *src), *dst = calloc(N, sizeof *dst);
  void *d1 = gt_dev_alloc(N * sizeof(int)), *d2 = gt_dev_alloc(N * sizeof(int));
  cr_assert(src && dst && d1 && d2);
  gt_ok(weft_gpu_capture_begin(b, s), "capture_begin");
  gt_ok(weft_gpu_copy_async(b, s, d2, d1, N * sizeof(int), WEFT_GPU_COPY_D2D), "captured D2D");
  weft_gpu_graph *g = NULL;
  gt_ok(weft_gpu_capture_end(b, s, &g), "capture_end");
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < N; i++)
      src[i] = i * 3 + round;
    gt_ok(weft_gpu_copy_async(b, s, d1, src, N * sizeof(int), WEFT_GPU_COPY_H2D), "H2D");
    gt_ok(weft_gpu_graph_launch(b, g, s), "graph_launch");
    gt_ok(weft_gpu_copy_async(b, s, dst, d2, N * sizeof(int), WEFT_GPU_COPY_D2H), "D2H");
    gt_ok(weft_gpu_stream_sync(b, s), "stream_sync");
    for (int i = 0; i < N; i++)
      cr_assert_eq(dst[i], i * 3 + round, "round %d: dst[%d] = %d", round, i, dst[i]);
  }
  weft_gpu_graph_destroy(b, g);
  gt_ok(weft_gpu_stream_destroy(b, s), "stream_destroy");
  gt_dev_free(d1);
  gt_dev_free(d2);
  free(src);
  free(dst);
  weft_gpu_backend_close(b);
}

/* An event recorded after a launch completes only after the replay: a gate
 * before the launch holds the replay back, and the event stays pending. */
static void gt_capture_event_after_launch(void)
{
  weft_gpu_backend *b = gt_open(0);
  weft_gpu_stream *s = gt_stream(b, 0);
  weft_gpu_event *e = gt_event(b, 0);
  enum { K = 4 };
  gt_log *l = gt_log_new();
  gt_log_item items[K];
  weft_gpu_graph *g = gt_capture_log(b, s, l, items, K);
  gt_gate *gate = gt_gate_put(b, s);
  gt_ok(weft_gpu_graph_launch(b, g, s), "graph_launch");
  gt_ok(weft_gpu_event_record(b, e, s), "record");
  for (int i = 0; i < 100; i++) {
    int q = weft_gpu_event_query(b, e);
    if (q != WEFT_GPU_EVENT_PENDING) {
      gt_gate_open(gate);
      cr_assert_fail("query %d = %d with the replay held back", i, q);
    }
  }
  gt_gate_open(gate);
  cr_assert_eq(gt_query_settled(b, e), WEFT_GPU_EVENT_COMPLETE);
  int want[K] = {0, 1, 2, 3};
  gt_log_expect(l, want, K, "complete");
  weft_gpu_graph_destroy(b, g);
  gt_ok(weft_gpu_stream_destroy(b, s), "stream_destroy");
  gt_ok(weft_gpu_event_destroy(b, e), "event_destroy");
  gt_gate_done(gate);
  tu_assert_no_errors();
  free(l);
  weft_gpu_backend_close(b);
}

/* A graph replays on another stream of its device too; launches of one
 * graph run one at a time, in launch order: the second stream's launch
 * waits for the first stream's, held back by a gate. */
static void gt_capture_other_stream(void)
{
  weft_gpu_backend *b = gt_open(10);
  weft_gpu_stream *s = gt_stream(b, 0), *t = gt_stream(b, 0);
  weft_gpu_event *e = gt_event(b, 0);
  enum { K = 3 };
  gt_log *l = gt_log_new();
  gt_log_item items[K];
  weft_gpu_graph *g = gt_capture_log(b, s, l, items, K);
  gt_ok(weft_gpu_graph_launch(b, g, t), "graph_launch on a second stream");
  gt_ok(weft_gpu_stream_sync(b, t), "stream_sync");
  int want1[K] = {0, 1, 2};
  gt_log_expect(l, want1, K, "replayed on the second stream");

  gt_gate *gate = gt_gate_put(b, s);
  gt_ok(weft_gpu_graph_launch(b, g, s), "graph_launch behind the gate");
  gt_ok(weft_gpu_graph_launch(b, g, t), "graph_launch on the second stream");
  gt_ok(weft_gpu_event_record(b, e, t), "record");
  for (int i = 0; i < 100; i++) {
    int q = weft_gpu_event_query(b, e);
    if (q != WEFT_GPU_EVENT_PENDING) {
      gt_gate_open(gate);
      cr_assert_fail("query %d = %d: the second stream's launch ran before the first's", i, q);
    }
  }
  gt_gate_open(gate);
  cr_assert_eq(gt_query_settled(b, e), WEFT_GPU_EVENT_COMPLETE);
  gt_ok(weft_gpu_stream_sync(b, s), "stream_sync");
  /* The first launch's replay, then the second's, one after the other (the
   * log has a single writer at a time only if they do not overlap). */
  int want2[3 * K] = {0, 1, 2, 0, 1, 2, 0, 1, 2};
  gt_log_expect(l, want2, 3 * K, "launches on two streams");
  weft_gpu_graph_destroy(b, g);
  gt_ok(weft_gpu_stream_destroy(b, s), "stream_destroy");
  gt_ok(weft_gpu_stream_destroy(b, t), "stream_destroy");
  gt_ok(weft_gpu_event_destroy(b, e), "event_destroy");
  gt_gate_done(gate);
  tu_assert_no_errors();
  free(l);
  weft_gpu_backend_close(b);
}

/* capture_end with out NULL discards: nothing of it runs, and the stream
 * works as before (and captures again). */
static void gt_capture_discard(void)
{
  weft_gpu_backend *b = gt_open(0);
  weft_gpu_stream *s = gt_stream(b, 0);
  int x = 0, y = 0;
  gt_ok(weft_gpu_capture_begin(b, s), "capture_begin");
  gt_put(b, s, gt_set_fn, &x);
  gt_ok(weft_gpu_capture_end(b, s, NULL), "capture_end (discard)");
  gt_put(b, s, gt_set_fn, &y);
  gt_ok(weft_gpu_stream_sync(b, s), "stream_sync");
  cr_assert_eq(x, 0, "discarded work ran");
  cr_assert_eq(y, 1, "work after the discard did not run");
  gt_log *l = gt_log_new();
  gt_log_item items[2];
  weft_gpu_graph *g = gt_capture_log(b, s, l, items, 2);
  gt_ok(weft_gpu_graph_launch(b, g, s), "graph_launch");
  gt_ok(weft_gpu_stream_sync(b, s), "stream_sync");
  int want[2] = {0, 1};
  gt_log_expect(l, want, 2, "a capture after a discard");
  cr_assert_eq(x, 0, "discarded work ran");
  weft_gpu_graph_destroy(b, g);
  gt_ok(weft_gpu_stream_destroy(b, s), "stream_destroy");
  tu_assert_no_errors();
  free(l);
  weft_gpu_backend_close(b);
}

/* An empty capture gives a graph whose launches do nothing, in order. */
static void gt_capture_empty(void)
{
  weft_gpu_backend *b = gt_open(0);
  weft_gpu_stream *s = gt_stream(b, 0);
  weft_gpu_event *e = gt_event(b, 0);
  gt_ok(weft_gpu_capture_begin(b, s), "capture_begin");
  weft_gpu_graph *g = NULL;
  gt_ok(weft_gpu_capture_end(b, s, &g), "capture_end (empty)");
  cr_assert_not_null(g, "an empty capture gave no graph");
  int x = 0;
  gt_gate *gate = gt_gate_put(b, s);
  for (int i = 0; i < 3; i++)
    gt_ok(weft_gpu_graph_launch(b, g, s), "graph_launch (empty)");
  gt_ok(weft_gpu_event_record(b, e, s), "record");
  int q = weft_gpu_event_query(b, e);
  gt_gate_open(gate);
  cr_assert_eq(q, WEFT_GPU_EVENT_PENDING, "query = %d behind the gate", q);
  cr_assert_eq(gt_query_settled(b, e), WEFT_GPU_EVENT_COMPLETE);
  gt_put(b, s, gt_set_fn, &x);
  gt_ok(weft_gpu_stream_sync(b, s), "stream_sync");
  cr_assert_eq(x, 1);
  weft_gpu_graph_destroy(b, g);
  gt_ok(weft_gpu_stream_destroy(b, s), "stream_destroy");
  gt_ok(weft_gpu_event_destroy(b, e), "event_destroy");
  gt_gate_done(gate);
  tu_assert_no_errors();
  weft_gpu_backend_close(b);
}

/* A graph destroyed right after its launches, still pending behind a gate:
 * the replays run all the same. */
static void gt_capture_destroy_pending(void)
{
  weft_gpu_backend *b = gt_open(0);
  weft_gpu_stream *s = gt_stream(b, 0);
  enum { K = 3 };
  gt_log *l = gt_log_new();
  gt_log_item items[K];
  weft_gpu_graph *g = gt_capture_log(b, s, l, items, K);
  gt_gate *gate = gt_gate_put(b, s);
  gt_ok(weft_gpu_graph_launch(b, g, s), "graph_launch");
  gt_ok(weft_gpu_graph_launch(b, g, s), "graph_launch");
  weft_gpu_graph_destroy(b, g);
  gt_gate_open(gate);
  gt_ok(weft_gpu_stream_sync(b, s), "stream_sync");
  int want[2 * K] = {0, 1, 2, 0, 1, 2};
  gt_log_expect(l, want, 2 * K, "replays of a destroyed graph");
  gt_ok(weft_gpu_stream_destroy(b, s), "stream_destroy");
  gt_gate_done(gate);
  tu_assert_no_errors();
  free(l);
  weft_gpu_backend_close(b);
}

/* Destroying a capturing stream discards the capture. */
static void gt_capture_destroy_capturing(void)
{
  weft_gpu_backend *b = gt_open(0);
  weft_gpu_stream *s = gt_stream(b, 0);
  int x = 0;
  gt_ok(weft_gpu_capture_begin(b, s), "capture_begin");
  gt_put(b, s, gt_set_fn, &x);
  gt_ok(weft_gpu_stream_destroy(b, s), "stream_destroy (capturing)");
  cr_assert_eq(x, 0, "captured work ran");
  weft_gpu_backend_close(b);
}

/* Bad arguments: NULLs, a capture begun twice or ended without one, a
 * graph launched on another device's stream. */
static void gt_capture_bad_args(void)
{
  weft_gpu_backend *b = gt_open(0);
  weft_gpu_stream *s = gt_stream(b, 0);
  weft_gpu_graph *g = (weft_gpu_graph *)&g; /* not NULL: the error paths clear it */
  cr_assert_eq(weft_gpu_capture_begin(NULL, s), WEFT_EINVAL);
  cr_assert_eq(weft_gpu_capture_begin(b, NULL), WEFT_EINVAL);
  cr_assert_eq(weft_gpu_capture_end(NULL, s, &g), WEFT_EINVAL);
  cr_assert_null(g);
  g = (weft_gpu_graph *)&g;
  cr_assert_eq(weft_gpu_capture_end(b, NULL, &g), WEFT_EINVAL);
  cr_assert_null(g);
  g = (weft_gpu_graph *)&g;
  cr_assert_eq(weft_gpu_capture_end(b, s, &g), WEFT_EINVAL, "capture_end without a capture");
  cr_assert_null(g);
  cr_assert_eq(weft_gpu_capture_end(b, s, NULL), WEFT_EINVAL, "discard without a capture");

  int x = 0;
  gt_ok(weft_gpu_capture_begin(b, s), "capture_begin");
  cr_assert_eq(weft_gpu_capture_begin(b, s), WEFT_EINVAL, "capture_begin while capturing");
  gt_put(b, s, gt_set_fn, &x); /* the first capture goes on */
  gt_ok(weft_gpu_capture_end(b, s, &g), "capture_end");
  cr_assert_not_null(g);
  cr_assert_eq(weft_gpu_graph_launch(NULL, g, s), WEFT_EINVAL);
  cr_assert_eq(weft_gpu_graph_launch(b, NULL, s), WEFT_EINVAL);
  cr_assert_eq(weft_gpu_graph_launch(b, g, NULL), WEFT_EINVAL);
  if (weft_gpu_device_count(b) >= 2) {
    weft_gpu_stream *s1 = gt_stream(b, 1);
    cr_assert_eq(weft_gpu_graph_launch(b, g, s1), WEFT_EINVAL, "graph of device 0 on device 1");
    gt_ok(weft_gpu_stream_sync(b, s1), "stream_sync");
    gt_ok(weft_gpu_stream_destroy(b, s1), "stream_destroy");
  }
  gt_ok(weft_gpu_stream_sync(b, s), "stream_sync");
  cr_assert_eq(x, 0, "a refused launch ran");
  gt_ok(weft_gpu_graph_launch(b, g, s), "graph_launch");
  gt_ok(weft_gpu_stream_sync(b, s), "stream_sync");
  cr_assert_eq(x, 1);
  weft_gpu_graph_destroy(b, NULL); /* nothing */
  weft_gpu_graph_destroy(NULL, g); /* nothing */
  weft_gpu_graph_destroy(b, g);
  gt_ok(weft_gpu_stream_destroy(b, s), "stream_destroy");
  tu_assert_no_errors();
  weft_gpu_backend_close(b);
}

/* The refused calls (backend.h): each fails with WEFT_EINVAL on a capturing
 * stream and invalidates the capture, which capture_end reports (one log
 * line naming the call) and discards; the stream then works as before, and
 * what the refused call would have done was not done. A discard of an
 * invalidated capture says nothing. */
static void gt_capture_invalidated(void)
{
  weft_gpu_backend *b = gt_open(0);
  weft_gpu_stream *s = gt_stream(b, 0), *t = gt_stream(b, 0);
  weft_gpu_event *e = gt_event(b, 0);
  weft_gpu_word w;
  gt_ok(weft_gpu_word_alloc(b, 0, &w), "word_alloc");
  gt_ok(weft_gpu_capture_begin(b, t), "capture_begin");
  weft_gpu_graph *ok = NULL;
  gt_ok(weft_gpu_capture_end(b, t, &ok), "capture_end (an empty graph)");
  enum { CALLS = 5 };
  static const char *const names[CALLS] = {"event_record", "stream_wait_event",
                                           "stream_write_word", "graph_launch", "stream_sync"};
  int x[CALLS] = {0}, y = 0;
  for (int c = 0; c < CALLS; c++) {
    gt_ok(weft_gpu_capture_begin(b, s), "capture_begin");
    gt_put(b, s, gt_set_fn, &x[c]);
    int rc = c == 0   ? weft_gpu_event_record(b, e, s)
             : c == 1 ? weft_gpu_stream_wait_event(b, s, e)
             : c == 2 ? weft_gpu_stream_write_word(b, s, &w, 5)
             : c == 3 ? weft_gpu_graph_launch(b, ok, s)
                      : weft_gpu_stream_sync(b, s);
    cr_assert_eq(rc, WEFT_EINVAL, "%s on a capturing stream = %d", names[c], rc);
    weft_gpu_graph *g = (weft_gpu_graph *)&g;
    tu_capture cap;
    char err[4096];
    tu_capture_begin(&cap);
    rc = weft_gpu_capture_end(b, s, &g);
    tu_capture_end(&cap, err, sizeof err);
    cr_assert_eq(rc, WEFT_EINVAL, "capture_end after %s = %d", names[c], rc);
    cr_assert_null(g);
    cr_assert(tu_line_has_all(err, "weft: ", "invalidated", names[c]),
              "no \"weft: \" line naming the invalidated capture and %s; stderr was \"%s\"",
              names[c], err);
  }
  /* A discard of an invalidated capture: 0, no word. */
  gt_ok(weft_gpu_capture_begin(b, s), "capture_begin");
  cr_assert_eq(weft_gpu_event_record(b, e, s), WEFT_EINVAL);
  tu_capture cap;
  char err[4096];
  tu_capture_begin(&cap);
  int rc = weft_gpu_capture_end(b, s, NULL);
  tu_capture_end(&cap, err, sizeof err);
  cr_assert_eq(rc, 0, "discarding an invalidated capture = %d", rc);
  cr_assert_str_eq(err, "", "a discard logged \"%s\"", err);

  /* The stream works; the event was never recorded, the word never written. */
  cr_assert_eq(weft_gpu_event_query(b, e), WEFT_GPU_EVENT_COMPLETE);
  gt_put(b, s, gt_set_fn, &y);
  gt_ok(weft_gpu_event_record(b, e, s), "record");
  cr_assert_eq(gt_query_settled(b, e), WEFT_GPU_EVENT_COMPLETE);
  gt_ok(weft_gpu_stream_sync(b, s), "stream_sync");
  cr_assert_eq(y, 1, "work after the invalidated captures did not run");
  for (int c = 0; c < CALLS; c++)
    cr_assert_eq(x[c], 0, "work of the capture invalidated by %s ran", names[c]);
  cr_assert_eq(atomic_load_explicit(w.host, memory_order_acquire), 0u, "a refused write ran");
  weft_gpu_graph_destroy(b, ok);
  gt_ok(weft_gpu_stream_destroy(b, s), "stream_destroy");
  gt_ok(weft_gpu_stream_destroy(b, t), "stream_destroy");
  gt_ok(weft_gpu_event_destroy(b, e), "event_destroy");
  weft_gpu_word_free(b, &w);
  tu_assert_no_errors();
  weft_gpu_backend_close(b);
}

#define GT_TIMEOUT TU_TIMEOUT(60)

/* GT_SUITE goes through one more macro so that it is expanded before Test
 * pastes and stringifies it. */
#define GT_CONFORMANCE_TESTS(init_fn) GT_CONFORMANCE_TESTS_(GT_SUITE, init_fn)
#define GT_CONFORMANCE_TESTS_(GT_SUITE, init_fn)                                             \
  Test(GT_SUITE, fifo_order, .init = init_fn, .timeout = GT_TIMEOUT) { gt_fifo(); }          \
  Test(GT_SUITE, cross_stream_wait, .init = init_fn, .timeout = GT_TIMEOUT)                  \
  {                                                                                          \
    gt_cross_stream_wait();                                                                  \
  }                                                                                          \
  Test(GT_SUITE, wait_snapshots_latest_record, .init = init_fn, .timeout = GT_TIMEOUT)       \
  {                                                                                          \
    gt_snapshot();                                                                           \
  }                                                                                          \
  Test(GT_SUITE, unrecorded_event_is_complete, .init = init_fn, .timeout = GT_TIMEOUT)       \
  {                                                                                          \
    gt_unrecorded();                                                                         \
  }                                                                                          \
  Test(GT_SUITE, query_pending_then_complete, .init = init_fn, .timeout = GT_TIMEOUT)        \
  {                                                                                          \
    gt_query_pending();                                                                      \
  }                                                                                          \
  Test(GT_SUITE, event_reuse, .init = init_fn, .timeout = GT_TIMEOUT) { gt_event_reuse(); }  \
  Test(GT_SUITE, destroy_drains, .init = init_fn, .timeout = GT_TIMEOUT)                     \
  {                                                                                          \
    gt_destroy_drains();                                                                     \
  }                                                                                          \
  Test(GT_SUITE, copy_async, .init = init_fn, .timeout = GT_TIMEOUT) { gt_copy(); }          \
  Test(GT_SUITE, bad_args, .init = init_fn, .timeout = GT_TIMEOUT) { gt_bad_args(); }        \
  Test(GT_SUITE, host_word, .init = init_fn, .timeout = GT_TIMEOUT) { gt_host_word(); }      \
  Test(GT_SUITE, event_sync, .init = init_fn, .timeout = GT_TIMEOUT) { gt_event_sync(); }    \
  Test(GT_SUITE, capture_replay, .init = init_fn, .timeout = GT_TIMEOUT)                     \
  {                                                                                          \
    gt_capture_replay();                                                                     \
  }                                                                                          \
  Test(GT_SUITE, capture_copy, .init = init_fn, .timeout = GT_TIMEOUT)                       \
  {                                                                                          \
    gt_capture_copy();                                                                       \
  }                                                                                          \
  Test(GT_SUITE, capture_event_after_launch, .init = init_fn, .timeout = GT_TIMEOUT)         \
  {                                                                                          \
    gt_capture_event_after_launch();                                                         \
  }                                                                                          \
  Test(GT_SUITE, capture_other_stream, .init = init_fn, .timeout = GT_TIMEOUT)               \
  {                                                                                          \
    gt_capture_other_stream();                                                               \
  }                                                                                          \
  Test(GT_SUITE, capture_discard, .init = init_fn, .timeout = GT_TIMEOUT)                    \
  {                                                                                          \
    gt_capture_discard();                                                                    \
  }                                                                                          \
  Test(GT_SUITE, capture_empty, .init = init_fn, .timeout = GT_TIMEOUT)                      \
  {                                                                                          \
    gt_capture_empty();                                                                      \
  }                                                                                          \
  Test(GT_SUITE, capture_destroy_pending, .init = init_fn, .timeout = GT_TIMEOUT)            \
  {                                                                                          \
    gt_capture_destroy_pending();                                                            \
  }                                                                                          \
  Test(GT_SUITE, capture_destroy_capturing, .init = init_fn, .timeout = GT_TIMEOUT)          \
  {                                                                                          \
    gt_capture_destroy_capturing();                                                          \
  }                                                                                          \
  Test(GT_SUITE, capture_bad_args, .init = init_fn, .timeout = GT_TIMEOUT)                   \
  {                                                                                          \
    gt_capture_bad_args();                                                                   \
  }                                                                                          \
  Test(GT_SUITE, capture_invalidated, .init = init_fn, .timeout = GT_TIMEOUT)                \
  {                                                                                          \
    gt_capture_invalidated();                                                                \
  }

#endif /* WEFT_TESTS_GPU_CONFORMANCE_H */
