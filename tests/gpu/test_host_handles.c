/* SPDX-License-Identifier: MIT */
/*
 * weft_gpu_host_enqueue's handle check (weft.h: WEFT_EINVAL when the stream
 * "is not a live host-backend stream: e.g. NULL or a cudaStream_t"): a
 * handle that was never a host stream, one whose stream is gone (saved from
 * an operator's weft_run_ctx.stream and used after the engine was
 * destroyed, also once a new stream was made in its place), and one whose
 * stream is destroyed while other threads enqueue on it. Each is refused
 * without the caller's pointer being read; an enqueue that was accepted
 * runs before destroy returns. No timing assumptions: the racing tests
 * check an invariant however the threads interleave.
 */
#include <stdatomic.h>

#include "../common/testutil.h"
#include "common/alloc.h"
#include "gpu/backend.h"
#include "gpu/host.h"

static void setup(void)
{
  tu_clear_weft_env();
  unsetenv("WEFT_ENGINE");
  unsetenv("WEFT_MAX_INFLIGHT");
  unsetenv("WEFT_GPU_HOST_DEVICES");
  unsetenv("WEFT_GPU_WORKERS");
  unsetenv("WEFT_GPU_COPY_WORKERS");
  unsetenv("WEFT_GPU_WATCHDOG_MS");
  setenv("WEFT_GPU_BACKEND", "host", 1);
}

static void ok(int rc, const char *what)
{
  cr_assert_eq(rc, 0, "%s = %d (%s)", what, rc, weft_strerror(rc));
}

static weft_gpu_backend *open_host(void)
{
  weft_gpu_backend_config cfg;
  weft_gpu_backend_config_default(&cfg);
  cfg.kind = WEFT_GPU_BACKEND_HOST;
  cfg.host_devices = 1;
  weft_gpu_backend *b = NULL;
  ok(weft_gpu_backend_open(&b, &cfg), "open(host)");
  return b;
}

static weft_gpu_stream *new_stream(weft_gpu_backend *b)
{
  weft_gpu_stream *s = NULL;
  ok(weft_gpu_stream_create(b, 0, &s), "stream_create");
  return s;
}

static void count_fn(void *arg)
{
  atomic_fetch_add_explicit((atomic_long *)arg, 1, memory_order_relaxed);
}

/* ------------------------------------------------- never a host stream */

/* CUDA's special handles, small integers, odd and unmapped addresses: each
 * would fault if its pointee were read. */
Test(host_handles, foreign_values_refused, .init = setup, .timeout = TU_TIMEOUT(30))
{
  atomic_long ran = 0;
  static const uintptr_t values[] = {
    0x1, /* cudaStreamLegacy */
    0x2, /* cudaStreamPerThread */
    0x3, 0x8, 0x1000, 0xdeadbeef, (uintptr_t)0xfffffffffffff000ull,
  };
  for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
    void *h = (void *)values[i];
    cr_assert_eq(weft_gpu_host_enqueue(h, count_fn, &ran), WEFT_EINVAL, "handle %p", h);
    cr_assert_eq(weft_gpu_host_test_inject_error(h), WEFT_EINVAL, "handle %p", h);
  }
  /* Also with live streams about (their slots exist). */
  weft_gpu_backend *b = open_host();
  weft_gpu_stream *s = new_stream(b);
  for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
    cr_assert_eq(weft_gpu_host_enqueue((void *)values[i], count_fn, &ran), WEFT_EINVAL,
                 "handle %p with a live stream", (void *)values[i]);
  /* Readable memory holding anything at all is not a stream either. */
  uint64_t junk[64];
  memset(junk, 0xb5, sizeof junk);
  cr_assert_eq(weft_gpu_host_enqueue(junk, count_fn, &ran), WEFT_EINVAL);
  ok(weft_gpu_stream_destroy(b, s), "stream_destroy");
  weft_gpu_backend_close(b);
  cr_assert_eq(atomic_load(&ran), 0, "a refused enqueue ran");
}

/* ---------------------------------------------------- a stream now gone */

/* A destroyed stream's handle is refused, also after new streams were
 * made (which may take its place or its memory); work enqueued through the
 * stale handle never lands on them. */
Test(host_handles, destroyed_stream_refused, .init = setup, .timeout = TU_TIMEOUT(30))
{
  weft_gpu_backend *b = open_host();
  atomic_long ran = 0;
  enum { ROUNDS = 8 };
  void *old[ROUNDS];
  for (int r = 0; r < ROUNDS; r++) {
    weft_gpu_stream *s = new_stream(b);
    old[r] = weft_gpu_stream_native(b, s);
    cr_assert_not_null(old[r]);
    ok(weft_gpu_host_enqueue(old[r], count_fn, &ran), "enqueue on a live stream");
    ok(weft_gpu_stream_destroy(b, s), "stream_destroy");
    cr_assert_eq(atomic_load(&ran), r + 1, "destroy returned before the item ran");
    for (int k = 0; k <= r; k++) {
      cr_assert_eq(weft_gpu_host_enqueue(old[k], count_fn, &ran), WEFT_EINVAL,
                   "round %d: the handle of round %d's destroyed stream was accepted", r, k);
      cr_assert_eq(weft_gpu_host_test_inject_error(old[k]), WEFT_EINVAL);
    }
  }
  /* Live streams again: the stale handles still find nothing. */
  weft_gpu_stream *live[4];
  for (int i = 0; i < 4; i++)
    live[i] = new_stream(b);
  for (int k = 0; k < ROUNDS; k++)
    cr_assert_eq(weft_gpu_host_enqueue(old[k], count_fn, &ran), WEFT_EINVAL,
                 "a stale handle was accepted while new streams live");
  for (int i = 0; i < 4; i++) {
    void *h = weft_gpu_stream_native(b, live[i]);
    for (int k = 0; k < ROUNDS; k++)
      cr_assert_neq(h, old[k], "a new stream has a destroyed one's handle");
    ok(weft_gpu_stream_destroy(b, live[i]), "stream_destroy");
  }
  weft_gpu_backend_close(b);
  cr_assert_eq(atomic_load(&ran), ROUNDS, "an item enqueued on a stale handle ran");
  tu_assert_no_leaks();
}

/* The review's reproducer: an operator's rc->stream used after
 * weft_engine_destroy, then again while a new engine's streams live. */
static void *saved;

static int save_stream(const weft_run_ctx *rc, void *arg)
{
  (void)arg;
  saved = rc->stream;
  return 0;
}

static int enqueue_count(const weft_run_ctx *rc, void *arg)
{
  return weft_gpu_host_enqueue(rc->stream, count_fn, arg);
}

static void push_gpu(weft_engine *e, weft_op_fn fn, void *arg)
{
  weft_var *v = NULL;
  ok(weft_var_new(e, &v), "var_new");
  weft_op_desc d;
  memset(&d, 0, sizeof d);
  d.fn = fn;
  d.arg = arg;
  d.writes = &v;
  d.num_writes = 1;
  d.ctx.type = WEFT_DEV_GPU;
  d.ctx.id = 0;
  ok(weft_push(e, &d), "push");
  ok(weft_var_wait(e, v), "var_wait");
  ok(weft_var_delete(e, v), "var_delete");
}

Test(host_handles, stream_used_after_engine_destroy, .init = setup, .timeout = TU_TIMEOUT(60))
{
  atomic_long ran = 0;
  weft_engine *e = NULL;
  ok(weft_engine_create(&e, NULL), "engine_create");
  push_gpu(e, save_stream, NULL);
  cr_assert_not_null(saved, "the GPU operator got no stream");
  ok(weft_engine_destroy(e), "engine_destroy");
  cr_assert_eq(weft_gpu_host_enqueue(saved, count_fn, &ran), WEFT_EINVAL,
               "a stream of a destroyed engine was accepted");

  /* A new engine's streams (possibly in the old one's place). */
  ok(weft_engine_create(&e, NULL), "engine_create");
  push_gpu(e, enqueue_count, &ran);
  cr_assert_eq(atomic_load(&ran), 1);
  cr_assert_eq(weft_gpu_host_enqueue(saved, count_fn, &ran), WEFT_EINVAL,
               "a stream of a destroyed engine was accepted while another engine's live");
  ok(weft_engine_destroy(e), "engine_destroy");
  cr_assert_eq(atomic_load(&ran), 1, "an item enqueued on a stale handle ran");
  tu_assert_no_leaks();
}

/* ----------------------------------------- enqueue racing the destroy */

typedef struct racer {
  void *h;
  atomic_long *ran;
  atomic_int *go;
  long accepted; /* enqueues that returned 0 */
  long refused;  /* ... WEFT_EINVAL */
  long other;    /* anything else */
} racer;

static void *race_main(void *arg)
{
  racer *r = arg;
  while (!atomic_load_explicit(r->go, memory_order_acquire)) {
  }
  /* Until the stream is refused: every call before that must be accepted,
   * and once refused it stays refused. */
  for (;;) {
    int rc = weft_gpu_host_enqueue(r->h, count_fn, r->ran);
    if (rc == 0)
      r->accepted++;
    else if (rc == WEFT_EINVAL) {
      r->refused++;
      break;
    } else {
      r->other++;
      break;
    }
  }
  for (int i = 0; i < 100; i++) {
    int rc = weft_gpu_host_enqueue(r->h, count_fn, r->ran);
    if (rc == WEFT_EINVAL)
      r->refused++;
    else if (rc == 0)
      r->accepted++; /* counted: the invariant below then fails */
    else
      r->other++;
  }
  return NULL;
}

/* Every accepted enqueue ran by the time destroy returned; none ran after
 * (nothing is lost, nothing touches a freed stream). */
Test(host_handles, enqueue_races_destroy, .init = setup, .timeout = TU_TIMEOUT(120))
{
  weft_gpu_backend *b = open_host();
  enum { THREADS = 3 };
  long rounds = tu_scaled(200, 20);
  for (long round = 0; round < rounds; round++) {
    atomic_long ran = 0;
    atomic_int go = 0;
    weft_gpu_stream *s = new_stream(b);
    void *h = weft_gpu_stream_native(b, s);
    racer r[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
      r[i] = (racer){h, &ran, &go, 0, 0, 0};
      cr_assert_eq(pthread_create(&t[i], NULL, race_main, &r[i]), 0);
    }
    atomic_store_explicit(&go, 1, memory_order_release);
    if (round % 2)
      tu_sleep_us(round % 7 * 50); /* vary where destroy lands */
    ok(weft_gpu_stream_destroy(b, s), "stream_destroy");
    long ran_at_destroy = atomic_load(&ran);
    long accepted = 0;
    for (int i = 0; i < THREADS; i++) {
      cr_assert_eq(pthread_join(t[i], NULL), 0);
      cr_assert_eq(r[i].other, 0, "round %ld: an enqueue returned neither 0 nor EINVAL", round);
      cr_assert_eq(r[i].refused, 101, "round %ld: a refused stream was accepted again", round);
      accepted += r[i].accepted;
    }
    cr_assert_eq(ran_at_destroy, accepted,
                 "round %ld: %ld enqueues accepted, %ld items ran before destroy returned", round,
                 accepted, ran_at_destroy);
    cr_assert_eq(atomic_load(&ran), accepted, "round %ld: an item ran after destroy returned",
                 round);
  }
  weft_gpu_backend_close(b);
  tu_assert_no_leaks();
}

/* ------------------------------------------------------------ registry */

/* Streams live in slots of a registry made in chunks (host.h): with the
 * allocation hook armed, a create succeeds while a made slot is free and
 * fails with WEFT_ENOMEM (leaving nothing behind) once a new chunk is
 * needed; destroyed streams' slots are reused, under new handles. */
Test(host_handles, registry_growth_and_reuse, .init = setup, .timeout = TU_TIMEOUT(60))
{
  int base = tu_thread_baseline();
  weft_gpu_backend *b = open_host();
  enum { MAX = 200 };
  weft_gpu_stream *s[MAX];
  void *h[MAX];
  int n = 0, rc = 0;
  atomic_long ran = 0;
  for (; n < MAX; n++) {
    s[n] = NULL;
    weft_test_fail_alloc_at(1);
    rc = weft_gpu_stream_create(b, 0, &s[n]);
    weft_test_fail_alloc_at(0);
    if (rc)
      break;
    h[n] = weft_gpu_stream_native(b, s[n]);
  }
  cr_assert_eq(rc, WEFT_ENOMEM, "stream %d with allocation failing: %d", n, rc);
  cr_assert_null(s[n]);
  cr_assert_lt(n, MAX, "%d streams made without a chunk", n);
  /* One more chunk, and the streams all work. */
  s[n] = new_stream(b);
  h[n] = weft_gpu_stream_native(b, s[n]);
  n++;
  for (int i = 0; i < n; i++)
    ok(weft_gpu_host_enqueue(h[i], count_fn, &ran), "enqueue");
  for (int i = 0; i < n; i++)
    ok(weft_gpu_stream_destroy(b, s[i]), "stream_destroy");
  cr_assert_eq(atomic_load(&ran), n);
  /* The slots are free again: as many streams, none allocating, none with
   * an old handle. */
  for (int i = 0; i < n; i++) {
    weft_gpu_stream *t = NULL;
    weft_test_fail_alloc_at(1);
    rc = weft_gpu_stream_create(b, 0, &t);
    weft_test_fail_alloc_at(0);
    cr_assert_eq(rc, 0, "stream %d of %d, made slots free: %d", i, n, rc);
    void *th = weft_gpu_stream_native(b, t);
    for (int k = 0; k < n; k++)
      cr_assert_neq(th, h[k], "a new stream has a destroyed one's handle");
    s[i] = t;
  }
  for (int i = 0; i < n; i++)
    ok(weft_gpu_stream_destroy(b, s[i]), "stream_destroy");
  for (int k = 0; k < n; k++)
    cr_assert_eq(weft_gpu_host_enqueue(h[k], count_fn, &ran), WEFT_EINVAL);
  weft_gpu_backend_close(b);
  cr_assert_eq(atomic_load(&ran), n);
  cr_assert_eq(tu_wait_thread_count(base), base, "threads left behind");
  tu_assert_no_leaks();
}
