/* SPDX-License-Identifier: MIT */
/*
 * The cuda backend: the conformance suite (host functions on CUDA streams,
 * cudaLaunchHostFunc) and kernels (kernels.cu). Built only with CUDA; on a
 * machine without a driver or a GPU every test reports itself skipped.
 */
#define GT_SUITE cuda
#include "conformance.h"

#include <cuda_runtime.h>

#include "cuda_skip.h"

#include "gpu/cuda_word.h"

int weft_test_kernel_add(float *a, float v, int n, cudaStream_t s);
int weft_test_kernel_spin(long long cycles, cudaStream_t s);
int weft_test_kernel_gate(const void *open, void *timed_out, long long timeout_ns, cudaStream_t s);
int weft_test_kernels_load(void);

/* The kernels above loaded on every device before a test's scenario
 * (kernels.cu: lazy module loading would load each at its first launch,
 * which may wait for the kernels running, a gate among them, or fall
 * inside a capture); device 0 is current afterwards. */
static void gt_load_kernels(int devices)
{
  for (int d = devices - 1; d >= 0; d--) {
    cr_assert_eq(cudaSetDevice(d), cudaSuccess, "cudaSetDevice(%d)", d);
    int err = weft_test_kernels_load();
    cr_assert_eq(err, 0, "loading the test kernels on device %d: %s", d,
                 cudaGetErrorName((cudaError_t)err));
  }
}

static void setup(void)
{
  tu_clear_weft_env();
  unsetenv("WEFT_GPU_BACKEND");
}

WEFT_CUDA_SKIP_WITHOUT_DEVICES("gpu/cuda")

static weft_gpu_backend *gt_open(unsigned jitter_us)
{
  (void)jitter_us; /* the device has its own timing */
  weft_gpu_backend_config cfg;
  weft_gpu_backend_config_default(&cfg);
  cfg.kind = WEFT_GPU_BACKEND_CUDA;
  weft_gpu_backend *b = NULL;
  int rc = weft_gpu_backend_open(&b, &cfg);
  cr_assert_eq(rc, 0, "open(cuda) = %d (%s)", rc, weft_strerror(rc));
  cr_assert_str_eq(weft_gpu_backend_name(b), "cuda");
  if (weft_gpu_device_count(b) == 0) {
    weft_gpu_backend_close(b);
    cr_skip_test("no CUDA device (or no driver) on this machine");
  }
  gt_load_kernels(weft_gpu_device_count(b));
  return b;
}

static int gt_enqueue(void *native, void (*fn)(void *arg), void *arg)
{
  cudaError_t err = cudaLaunchHostFunc((cudaStream_t)native, fn, arg);
  return err == cudaSuccess ? 0 : WEFT_EDEVICE;
}

static void *gt_dev_alloc(size_t bytes)
{
  void *p = NULL;
  return cudaMalloc(&p, bytes) == cudaSuccess ? p : NULL;
}

static void gt_dev_free(void *p)
{
  cudaFree(p);
}

/* Pinned host memory mapped into the device: the gate kernel polls it. */
static gt_gate *gt_gate_alloc(void)
{
  void *p = NULL;
  return cudaHostAlloc(&p, sizeof(gt_gate), cudaHostAllocMapped) == cudaSuccess ? p : NULL;
}

static void gt_gate_free(gt_gate *g)
{
  cudaFreeHost(g);
}

/* A kernel that spins until the gate opens (or TU_DEADLINE_S passes): it
 * holds its stream on the device and leaves CUDA's host-function thread
 * free for the other streams (conformance.h). */
static int gt_gate_enqueue(void *native, gt_gate *g)
{
  gt_gate *dg = NULL;
  if (cudaHostGetDevicePointer((void **)&dg, g, 0) != cudaSuccess)
    return WEFT_EDEVICE;
  int err = weft_test_kernel_gate(&dg->open, &dg->timed_out, (long long)(TU_DEADLINE_S * 1e9),
                                  (cudaStream_t)native);
  return err == 0 ? 0 : WEFT_EDEVICE;
}

GT_CONFORMANCE_TESTS(setup)

/* Kernels on two streams: B waits for A's event, so B's copy back sees A's
 * kernels, though A first spins for a while. */
Test(cuda, kernels_cross_stream, .init = setup, .timeout = TU_TIMEOUT(60))
{
  weft_gpu_backend *b = gt_open(0);
  weft_gpu_stream *a = gt_stream(b, 0), *c = gt_stream(b, 0);
  weft_gpu_event *e = gt_event(b, 0);
  enum { N = 1 << 16 };
  float *host = calloc(N, sizeof *host);
  float *dev = gt_dev_alloc(N * sizeof(float));
  cr_assert(host && dev);
  cudaStream_t sa = (cudaStream_t)weft_gpu_stream_native(b, a);
  gt_ok(weft_gpu_copy_async(b, a, dev, host, N * sizeof(float), WEFT_GPU_COPY_H2D), "H2D");
  cr_assert_eq(weft_test_kernel_spin(20 * 1000 * 1000, sa), 0);
  cr_assert_eq(weft_test_kernel_add(dev, 1.0f, N, sa), 0);
  cr_assert_eq(weft_test_kernel_add(dev, 2.0f, N, sa), 0);
  gt_ok(weft_gpu_event_record(b, e, a), "record");
  gt_ok(weft_gpu_stream_wait_event(b, c, e), "wait");
  gt_ok(weft_gpu_copy_async(b, c, host, dev, N * sizeof(float), WEFT_GPU_COPY_D2H), "D2H");
  gt_ok(weft_gpu_stream_sync(b, c), "stream_sync");
  for (int i = 0; i < N; i++)
    cr_assert_eq(host[i], 3.0f, "host[%d] = %f", i, (double)host[i]);
  cr_assert_eq(weft_gpu_event_query(b, e), WEFT_GPU_EVENT_COMPLETE);
  gt_ok(weft_gpu_stream_destroy(b, a), "destroy");
  gt_ok(weft_gpu_stream_destroy(b, c), "destroy");
  gt_ok(weft_gpu_event_destroy(b, e), "event_destroy");
  gt_dev_free(dev);
  free(host);
  weft_gpu_backend_close(b);
}

/* A host stream handle is not accepted by weft_gpu_host_enqueue's check
 * the other way round: a cudaStream_t is not a host stream. */
Test(cuda, host_enqueue_rejects_cuda_streams, .init = setup, .timeout = TU_TIMEOUT(30))
{
  weft_gpu_backend *b = gt_open(0);
  weft_gpu_stream *s = gt_stream(b, 0);
  void *native = weft_gpu_stream_native(b, s);
  cr_assert_eq(weft_gpu_host_enqueue(native, gt_set_fn, NULL), WEFT_EINVAL);
  gt_ok(weft_gpu_stream_destroy(b, s), "destroy");
  weft_gpu_backend_close(b);
}

/* The host word's other writer: the one-thread kernel (word_kernel.cu),
 * which stands in where the driver has no cuStreamWriteValue32, passes the
 * same checks as the driver's stream write (host_word above). Its first
 * write is enqueued behind a running gate kernel: the backend loaded the
 * kernel at the stream's creation, or (lazy module loading) that launch
 * would wait for the gate, which waits for this thread. scripts/device.sh
 * times it with and without CUDA_MODULE_LOADING=EAGER. */
Test(cuda, host_word_by_kernel, .init = setup, .timeout = TU_TIMEOUT(60))
{
  long before = weft_gpu_cuda_test_word_kernel_writes();
  weft_gpu_cuda_test_word_kernel(1);
  gt_host_word();
  weft_gpu_cuda_test_word_kernel(0);
  /* the writes of gt_host_word: 7, then 8..39 */
  cr_assert_geq(weft_gpu_cuda_test_word_kernel_writes() - before, 33,
                "the host-word writes did not take the kernel path");
}

/* A captured kernel replays at each launch: two captured adds, five
 * launches, between a copy in and a copy out. */
Test(cuda, capture_kernels_replay, .init = setup, .timeout = TU_TIMEOUT(60))
{
  weft_gpu_backend *b = gt_open(0);
  weft_gpu_stream *s = gt_stream(b, 0);
  enum { N = 1 << 14, LAUNCHES = 5 };
  float *host = calloc(N, sizeof *host);
  float *dev = gt_dev_alloc(N * sizeof(float));
  cr_assert(host && dev);
  cudaStream_t ss = (cudaStream_t)weft_gpu_stream_native(b, s);
  gt_ok(weft_gpu_copy_async(b, s, dev, host, N * sizeof(float), WEFT_GPU_COPY_H2D), "H2D");
  gt_ok(weft_gpu_capture_begin(b, s), "capture_begin");
  cr_assert_eq(weft_test_kernel_add(dev, 1.0f, N, ss), 0);
  cr_assert_eq(weft_test_kernel_add(dev, 2.0f, N, ss), 0);
  weft_gpu_graph *g = NULL;
  gt_ok(weft_gpu_capture_end(b, s, &g), "capture_end");
  for (int i = 0; i < LAUNCHES; i++)
    gt_ok(weft_gpu_graph_launch(b, g, s), "graph_launch");
  gt_ok(weft_gpu_copy_async(b, s, host, dev, N * sizeof(float), WEFT_GPU_COPY_D2H), "D2H");
  gt_ok(weft_gpu_stream_sync(b, s), "stream_sync");
  for (int i = 0; i < N; i++)
    cr_assert_eq(host[i], 3.0f * LAUNCHES, "host[%d] = %f", i, (double)host[i]);
  weft_gpu_graph_destroy(b, g);
  gt_ok(weft_gpu_stream_destroy(b, s), "stream_destroy");
  gt_dev_free(dev);
  free(host);
  weft_gpu_backend_close(b);
}

/* CUDA's own refusal: a synchronous call on the capturing stream (here
 * cudaStreamSynchronize, made by "an operator") invalidates the capture;
 * capture_end reports it (WEFT_EINVAL, a log line), runs nothing of it,
 * and the stream works as before. */
Test(cuda, capture_invalidated_by_cuda, .init = setup, .timeout = TU_TIMEOUT(60))
{
  weft_gpu_backend *b = gt_open(0);
  weft_gpu_stream *s = gt_stream(b, 0);
  cudaStream_t ss = (cudaStream_t)weft_gpu_stream_native(b, s);
  int x = 0, y = 0;
  gt_ok(weft_gpu_capture_begin(b, s), "capture_begin");
  gt_put(b, s, gt_set_fn, &x);
  cudaError_t sync = cudaStreamSynchronize(ss);
  (void)cudaGetLastError(); /* the operator's error, not the next call's */
  cr_assert_neq(sync, cudaSuccess, "cudaStreamSynchronize on a capturing stream succeeded");
  weft_gpu_graph *g = (weft_gpu_graph *)&g;
  tu_capture cap;
  char err[4096];
  tu_capture_begin(&cap);
  int rc = weft_gpu_capture_end(b, s, &g);
  tu_capture_end(&cap, err, sizeof err);
  cr_assert_eq(rc, WEFT_EINVAL, "capture_end of an invalidated capture = %d", rc);
  cr_assert_null(g);
  cr_assert(tu_line_has_all(err, "weft: ", "invalidated", "cudaError"),
            "no \"weft: \" line naming the invalidated capture; stderr was \"%s\"", err);
  gt_put(b, s, gt_set_fn, &y);
  gt_ok(weft_gpu_stream_sync(b, s), "stream_sync");
  cr_assert_eq(x, 0, "work of the invalidated capture ran");
  cr_assert_eq(y, 1, "the stream does not work after the invalidated capture");
  gt_ok(weft_gpu_stream_destroy(b, s), "stream_destroy");
  weft_gpu_backend_close(b);
}

/* ------------------------------------------------ replayed graphs of kernels */

typedef struct add_op {
  float *dev;
  float v;
  int n;
  atomic_int calls;
} add_op;

static int add_fn(const weft_run_ctx *rc, void *arg)
{
  add_op *a = arg;
  atomic_fetch_add(&a->calls, 1);
  return weft_test_kernel_add(a->dev, a->v, a->n, (cudaStream_t)rc->stream) ? -1 : 0;
}

/* A graph of kernels through the engine: a run of WEFT_OP_GPU_GRAPH adds
 * (recorded once by stream capture, replayed as one CUDA graph), then two
 * plain adds on the same var (each waiting on the device), launched L times
 * and checked on the host. In each completion mode (scripts/device.sh runs
 * this suite once). */
Test(cuda, engine_graph_run_of_kernels, .init = setup, .timeout = TU_TIMEOUT(60))
{
  weft_engine *eng = NULL;
  cr_assert_eq(weft_engine_create(&eng, NULL), 0);
  if (weft_gpu_count(eng) == 0) {
    weft_engine_destroy(eng);
    cr_skip_test("no CUDA device (or no driver) on this machine");
  }
  enum { N = 1 << 16, R = 8, P = 2, L = 50 };
  gt_load_kernels(weft_gpu_count(eng)); /* before weft's capture of the run */
  float *dev = gt_dev_alloc(N * sizeof(float));
  float *host = calloc(N, sizeof *host);
  cr_assert(dev && host);
  /* On the legacy stream, which weft's non-blocking streams do not wait
   * for: done before any of their work. */
  cr_assert_eq(cudaMemset(dev, 0, N * sizeof(float)), cudaSuccess);
  cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess);
  weft_var *v = NULL;
  cr_assert_eq(weft_var_new(eng, &v), 0);
  add_op ops[R + P];
  cr_assert_eq(weft_graph_begin_capture(eng), 0);
  for (int i = 0; i < R + P; i++) {
    ops[i].dev = dev;
    ops[i].v = 1.0f;
    ops[i].n = N;
    atomic_init(&ops[i].calls, 0);
    weft_op_desc d = {.fn = add_fn, .arg = &ops[i], .ctx = {WEFT_DEV_GPU, 0}};
    d.writes = &v;
    d.num_writes = 1;
    d.flags = i < R ? WEFT_OP_GPU_GRAPH : 0;
    cr_assert_eq(weft_push(eng, &d), 0);
  }
  weft_graph *g = NULL;
  cr_assert_eq(weft_graph_end_capture(eng, &g), 0);
  for (int l = 0; l < L; l++) {
    cr_assert_eq(weft_graph_launch(g), 0);
    cr_assert_eq(weft_var_wait(eng, v), 0, "launch %d", l);
  }
  cr_assert_eq(cudaMemcpy(host, dev, N * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  for (int i = 0; i < N; i++)
    cr_assert_eq(host[i], (float)(L * (R + P)), "host[%d] = %f", i, (double)host[i]);
  for (int i = 0; i < R; i++)
    cr_assert_eq(atomic_load(&ops[i].calls), 1, "run member %d: fn called %d times (recorded once)",
                 i, atomic_load(&ops[i].calls));
  for (int i = R; i < R + P; i++)
    cr_assert_eq(atomic_load(&ops[i].calls), L);
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(weft_var_delete(eng, v), 0);
  cr_assert_eq(weft_engine_destroy(eng), 0);
  gt_dev_free(dev);
  free(host);
}

/* ------------------------------------- a global-mode capture elsewhere */

/* A thread of the application's that captures its own stream in
 * cudaStreamCaptureModeGlobal (what PyTorch's torch.cuda.graph does by
 * default) and holds the capture open until the test asks it to end. While
 * it is open, CUDA refuses the "potentially unsafe" calls (event queries
 * and syncs, stream syncs, pinned allocations) of every other thread in
 * global mode, the default, and such a call invalidates this capture. */
typedef struct holder {
  float *dev; /* immutable: what its captured kernel adds to (never run) */
  /* 0 starting, 1 capturing (or failed to: begin says), 2 asked to end.
   * The holder stores 1 (release: publishes begin), the test stores 2
   * (release); each loads the other's with acquire. */
  atomic_int state;
  /* Written by the holder; the test reads begin after state 1, the rest
   * after the join. */
  cudaError_t begin;                   /* the capture's start (each step up to it) */
  cudaError_t query;                   /* cudaStreamIsCapturing just before the end */
  enum cudaStreamCaptureStatus status; /* what it said */
  cudaError_t end;                     /* cudaStreamEndCapture */
} holder;

enum { HOLDER_N = 256 };

static void *holder_main(void *arg)
{
  holder *h = arg;
  cudaStream_t s = NULL;
  cudaError_t err = cudaSetDevice(0);
  if (err == cudaSuccess)
    err = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (err == cudaSuccess)
    err = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  if (err == cudaSuccess)
    err = (cudaError_t)weft_test_kernel_add(h->dev, 1.0f, HOLDER_N, s);
  h->begin = err;
  atomic_store_explicit(&h->state, 1, memory_order_release);
  if (err == cudaSuccess) {
    /* Held until the test is done with weft (its deadline: the test's
     * own, so that a hang shows as the test's failure, not as this). */
    (void)TU_WAIT_UNTIL(atomic_load_explicit(&h->state, memory_order_acquire) == 2,
                        4 * TU_DEADLINE_S);
    h->query = cudaStreamIsCapturing(s, &h->status);
    cudaGraph_t g = NULL;
    h->end = cudaStreamEndCapture(s, &g);
    if (g)
      (void)cudaGraphDestroy(g);
  }
  if (s)
    (void)cudaStreamDestroy(s);
  (void)cudaGetLastError();
  return NULL;
}

typedef struct adds {
  add_op op[24];
  int n;
} adds;

/* Pushes a.n adds of 1 to a->op[0].dev on v (a chain: each writes v), then
 * waits for v: its result. */
static int push_adds(weft_engine *eng, weft_var *v, adds *a, float *dev, int n, int len)
{
  cr_assert_leq(n, 24);
  a->n = n;
  for (int i = 0; i < n; i++) {
    a->op[i].dev = dev;
    a->op[i].v = 1.0f;
    a->op[i].n = len;
    atomic_init(&a->op[i].calls, 0);
    weft_op_desc d = {.fn = add_fn, .arg = &a->op[i], .ctx = {WEFT_DEV_GPU, 0}};
    d.writes = &v;
    d.num_writes = 1;
    int rc = weft_push(eng, &d);
    if (rc)
      return rc;
  }
  return weft_var_wait(eng, v);
}

/* GPU operators (kernels through the engine) all succeed while another
 * thread of the process holds a global-mode capture open: weft's own
 * threads are in relaxed capture mode (the device workers, the completion
 * thread, its waiter), and its creations, destroys and syncs on the other
 * threads are made in relaxed mode, so CUDA refuses none of their calls and
 * none of them invalidates that capture (its end succeeds). In the three
 * completion modes: the hostword engine is started (streams, host words,
 * kernels loaded) before the capture begins, the event and blocking ones
 * are created, started and destroyed while it is open. */
Test(cuda, gpu_operators_run_while_another_thread_captures_in_global_mode, .init = setup,
     .timeout = TU_TIMEOUT(180))
{
  enum { N = 1 << 16, K = 20 };
  static const char *const modes[3] = {"hostword", "event", "blocking"};
  setenv("WEFT_GPU_COMPLETION", modes[0], 1);
  weft_engine *eng = NULL;
  cr_assert_eq(weft_engine_create(&eng, NULL), 0);
  if (weft_gpu_count(eng) == 0) {
    weft_engine_destroy(eng);
    cr_skip_test("no CUDA device (or no driver) on this machine");
  }
  gt_load_kernels(weft_gpu_count(eng));
  float *dev = gt_dev_alloc(N * sizeof(float)), *hdev = gt_dev_alloc(HOLDER_N * sizeof(float));
  float *host = calloc(N, sizeof *host), *hhost = calloc(HOLDER_N, sizeof *hhost);
  cr_assert(dev && hdev && host && hhost);
  cr_assert_eq(cudaMemset(dev, 0, N * sizeof(float)), cudaSuccess);
  cr_assert_eq(cudaMemset(hdev, 0, HOLDER_N * sizeof(float)), cudaSuccess);
  cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess);
  weft_var *v = NULL;
  cr_assert_eq(weft_var_new(eng, &v), 0);
  adds warm;
  cr_assert_eq(push_adds(eng, v, &warm, dev, 1, N), 0, "the warm-up add failed");

  holder h = {.dev = hdev};
  atomic_init(&h.state, 0);
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, holder_main, &h), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load_explicit(&h.state, memory_order_acquire) >= 1,
                          TU_DEADLINE_S),
            "the capturing thread did not start");
  if (h.begin != cudaSuccess) {
    pthread_join(t, NULL);
    cr_assert_fail("the global-mode capture could not begin: %s", cudaGetErrorName(h.begin));
  }

  tu_capture cap;
  char err[8192];
  tu_capture_begin(&cap);
  int rc[3] = {0, 0, 0}, created[3] = {0, 0, 0}, destroyed[3] = {0, 0, 0};
  adds run[3];
  memset(run, 0, sizeof run);
  for (int m = 0; m < 3; m++) {
    if (m > 0) {
      setenv("WEFT_GPU_COMPLETION", modes[m], 1);
      created[m] = weft_engine_create(&eng, NULL);
      if (created[m] == 0)
        created[m] = weft_var_new(eng, &v);
      if (created[m])
        break;
    }
    rc[m] = push_adds(eng, v, &run[m], dev, K, N);
    (void)weft_var_delete(eng, v);
    destroyed[m] = weft_engine_destroy(eng);
    eng = NULL;
  }
  atomic_store_explicit(&h.state, 2, memory_order_release);
  pthread_join(t, NULL);
  tu_capture_end(&cap, err, sizeof err);

  for (int m = 0; m < 3; m++) {
    cr_assert_eq(created[m], 0, "%s: creating the engine during the capture = %d (%s)", modes[m],
                 created[m], weft_strerror(created[m]));
    cr_assert_eq(rc[m], 0, "%s: the adds during the capture = %d (%s); stderr: %s", modes[m],
                 rc[m], weft_strerror(rc[m]), err);
    cr_assert_eq(destroyed[m], 0, "%s: weft_engine_destroy during the capture = %d (%s)",
                 modes[m], destroyed[m], weft_strerror(destroyed[m]));
    for (int i = 0; i < K; i++)
      cr_assert_eq(atomic_load(&run[m].op[i].calls), 1, "%s: add %d ran %d times", modes[m], i,
                   atomic_load(&run[m].op[i].calls));
  }
  cr_assert_eq(h.query, cudaSuccess, "cudaStreamIsCapturing: %s", cudaGetErrorName(h.query));
  cr_assert_eq(h.status, cudaStreamCaptureStatusActive,
               "the other thread's capture was %s by the time it ended (a call of weft's "
               "invalidated it)",
               h.status == cudaStreamCaptureStatusInvalidated ? "invalidated" : "not active");
  cr_assert_eq(h.end, cudaSuccess, "the other thread's capture ended with %s (a call of weft's "
               "invalidated it)", cudaGetErrorName(h.end));
  cr_assert_null(strstr(err, "refused"), "weft said a call was refused: %s", err);
  cr_assert_null(strstr(err, "failed"), "weft logged a failure: %s", err);

  cr_assert_eq(cudaMemcpy(host, dev, N * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  cr_assert_eq(cudaMemcpy(hhost, hdev, HOLDER_N * sizeof(float), cudaMemcpyDeviceToHost),
               cudaSuccess);
  for (int i = 0; i < N; i++)
    cr_assert_eq(host[i], (float)(1 + 3 * K), "host[%d] = %f", i, (double)host[i]);
  for (int i = 0; i < HOLDER_N; i++)
    cr_assert_eq(hhost[i], 0.0f, "the captured kernel ran (hdev[%d] = %f)", i, (double)hhost[i]);
  gt_dev_free(dev);
  gt_dev_free(hdev);
  free(host);
  free(hhost);
}
