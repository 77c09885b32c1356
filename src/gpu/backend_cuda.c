/* SPDX-License-Identifier: MIT */
/*
 * The cuda backend: the CUDA runtime API (cudart_static, so the library has
 * no load-time dependency on the driver). Streams are created
 * cudaStreamNonBlocking, events cudaEventDisableTiming |
 * cudaEventBlockingSync (event_sync then sleeps in the driver instead of
 * spinning; records, queries and stream waits cost the same). Every call
 * makes its object's device current on the calling thread first
 * (cudaGetDevice, a read of the runtime's thread state, and cudaSetDevice
 * only when another device is current), and every failure is logged with
 * cudaGetErrorName and mapped to a WEFT_E* code.
 *
 * Host words: pinned, mapped host memory (cudaHostAllocMapped |
 * cudaHostAllocPortable), written from a stream by cuStreamWriteValue32
 * (default flags: a memory fence before the write), reached through
 * cudaGetDriverEntryPointByVersion so that nothing links libcuda; where
 * the driver offers no stream memory operations, by a one-thread kernel
 * (word_kernel.cu) that fences system-wide, then writes.
 *
 * Capture: cudaStreamBeginCapture (cudaStreamCaptureModeThreadLocal: only
 * the capturing thread is kept from calls unsafe during a capture), then
 * cudaStreamEndCapture and cudaGraphInstantiateWithFlags, the graph's
 * upload to the device on the capturing stream, and cudaGraphLaunch, all
 * runtime API. The calls backend.h refuses on a capturing stream are
 * refused here before CUDA sees them (a flag of the stream), so that both
 * backends answer alike; CUDA's own refusals (a synchronous call during the
 * capture) come back from cudaStreamEndCapture. The capturing thread is in
 * cudaStreamCaptureModeThreadLocal from capture_begin to capture_end, so
 * those refusals stand whatever its mode was before (restored at the end).
 *
 * Captures elsewhere in the process: while any thread captures in
 * cudaStreamCaptureModeGlobal (PyTorch's torch.cuda.graph does by
 * default), CUDA refuses the "potentially unsafe" calls (cudaEventQuery,
 * cudaEventSynchronize, cudaStreamSynchronize, cudaHostAlloc, ...) of
 * every other thread in global mode, the default, and invalidates that
 * capture. So weft's own threads (device workers, the completion thread,
 * its waiter) are put in cudaStreamCaptureModeRelaxed for good
 * (thread_init), and the calls that create, destroy or wait, which come
 * from other threads too (the application's, the pool's that submit), are
 * made in relaxed mode for their own duration (relax_begin). A query or an
 * event_sync refused all the same counts as pending, not as a device
 * error (said once per process).
 *
 * Lazy module loading (CUDA_MODULE_LOADING=LAZY, the default since CUDA
 * 12.2): a kernel's first launch loads it, which may synchronise the
 * context, i.e. wait for the kernels already running there. The host
 * word's kernel is loaded at each device's first stream of the backend
 * (cudaFuncGetAttributes), before weft enqueued anything on that device,
 * so that its first launch never waits behind the operators' kernels.
 *
 * Open: cudaGetDeviceCount; no driver, or no device, is zero devices. A
 * driver older than this runtime (cudaErrorInsufficientDriver, with
 * cudaDriverGetVersion above 0) is zero devices too, and one line (once
 * per process) names the CUDA version the driver supports and the one the
 * runtime needs.
 */
#include <cuda.h> /* types only: the driver's entry points come at run time */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/tunables.h"
#include "gpu/backend.h"
#include "gpu/cuda_word.h"
#include "weft/weft.h"

/* The backend: the interface's part, and where weft's kernels are loaded. */
typedef struct weft_cuda_backend {
  weft_gpu_backend base;     /* first: the interface's view */
  pthread_mutex_t load_lock; /* serialises the loads (load_kernels) */
  /* [base.num_devices] (NULL without devices): weft's kernels were loaded
   * on that device (the load was tried). Set once, under load_lock; read
   * first without it. atomic, relaxed: what it stands for is the driver's
   * state, which the driver orders itself; the lock keeps two loads of one
   * device from running at once. */
  _Atomic int *loaded;
} weft_cuda_backend;

typedef struct weft_cuda_stream {
  int device;          /* immutable */
  cudaStream_t stream; /* immutable; the handle operators receive */
  /* The thread that began the capture: written by capture_begin before
   * capturing is set, read by the capture's end (stream_destroy,
   * capture_end), to restore that thread's capture mode only there. */
  pthread_t capturer;
  /* Set by capture_begin, cleared by capture_end (or destroy): written by
   * the capturing thread only. relaxed: a stream_sync from another thread
   * reads it only to refuse, and nothing is published through it. */
  _Atomic bool capturing;
  /* While capturing: NULL, or the first call refused (what capture_end
   * names). Set by a relaxed CAS from NULL (the first one wins), read and
   * cleared by capture_end (the capturing thread). */
  _Atomic(const char *) refused;
} weft_cuda_stream;

typedef struct weft_cuda_event {
  int device;        /* immutable */
  cudaEvent_t event; /* immutable */
} weft_cuda_event;

typedef struct weft_cuda_graph {
  int device;           /* immutable */
  cudaGraphExec_t exec; /* immutable */
} weft_cuda_graph;

#define CB(b) ((weft_cuda_backend *)(void *)(b))
#define CS(s) ((weft_cuda_stream *)(void *)(s))
#define CE(e) ((weft_cuda_event *)(void *)(e))
#define CG(g) ((weft_cuda_graph *)(void *)(g))

/* Whether CUDA's error says the capture broke its rules (the caller's
 * doing, WEFT_EINVAL), rather than the device failing. */
static bool capture_misuse(cudaError_t err)
{
  switch (err) {
  case cudaErrorStreamCaptureUnsupported:
  case cudaErrorStreamCaptureInvalidated:
  case cudaErrorStreamCaptureMerge:
  case cudaErrorStreamCaptureUnmatched:
  case cudaErrorStreamCaptureUnjoined:
  case cudaErrorStreamCaptureIsolation:
  case cudaErrorStreamCaptureImplicit:
  case cudaErrorStreamCaptureWrongThread:
    return true;
  default:
    return false;
  }
}

/* Logs a failed call and maps it: allocation failures to WEFT_ENOMEM, a
 * broken rule of stream capture to WEFT_EINVAL, the rest to WEFT_EDEVICE. */
static int fail(const char *what, int device, cudaError_t err)
{
  weft_log("cuda device %d: %s failed: %s (%d): %s", device, what, cudaGetErrorName(err),
           (int)err, cudaGetErrorString(err));
  if (err == cudaErrorMemoryAllocation)
    return WEFT_ENOMEM;
  return capture_misuse(err) ? WEFT_EINVAL : WEFT_EDEVICE;
}

/* Whether s captures; if so, call is refused: the capture is invalid from
 * now on, and the first refused call is what capture_end names. */
static bool refuse_if_capturing(weft_cuda_stream *s, const char *call)
{
  /* relaxed: see the fields. */
  if (!atomic_load_explicit(&s->capturing, memory_order_relaxed))
    return false;
  const char *none = NULL;
  atomic_compare_exchange_strong_explicit(&s->refused, &none, call, memory_order_relaxed,
                                          memory_order_relaxed);
  return true;
}

/* ------------------------------------------------------------ capture modes */

/* The calling thread's stream capture interaction mode as weft keeps it
 * (cudaThreadExchangeStreamCaptureMode; the top of this file). All the
 * thread's own. */
static _Thread_local bool relaxed_for_good; /* thread_init made it relaxed */
static _Thread_local int captures_begun;    /* captures it began (capture_begin), not ended */
static _Thread_local bool mode_saved;       /* mode_before_captures holds its earlier mode */
static _Thread_local enum cudaStreamCaptureMode mode_before_captures;

/* Whether a query's or a wait's refusal came from another thread's capture
 * (then it counts as pending, logged once per process: atomic, relaxed, a
 * flag that orders nothing). */
static _Atomic bool capture_refusal_said;

static void capture_refused(const char *what, int device, cudaError_t err)
{
  (void)cudaGetLastError(); /* not the application's error */
  if (atomic_exchange_explicit(&capture_refusal_said, true, memory_order_relaxed))
    return;
  weft_log("cuda device %d: %s was refused while a stream capture runs elsewhere in the "
           "process: %s (%d): the event counts as pending and is asked again (said once)",
           device, what, cudaGetErrorName(err), (int)err);
}

/* One call of weft's own in relaxed capture mode: on a thread not relaxed
 * for good, the mode is swapped for the call's duration (relax_begin, then
 * relax_end). Not inside a capture the thread began: there CUDA's rules for
 * that capture stand (a synchronous call invalidates it: backend.h). A swap
 * that fails leaves the call to the thread's own mode (the call then fails
 * and says why, if the capture refuses it). */
typedef struct relax_scope {
  enum cudaStreamCaptureMode mode; /* the thread's mode to restore */
  bool swapped;
} relax_scope;

static relax_scope relax_begin(void)
{
  relax_scope r = {cudaStreamCaptureModeRelaxed, false};
  if (relaxed_for_good || captures_begun)
    return r;
  if (cudaThreadExchangeStreamCaptureMode(&r.mode) == cudaSuccess)
    r.swapped = true;
  else
    (void)cudaGetLastError();
  return r;
}

static void relax_end(relax_scope r)
{
  if (r.swapped)
    (void)cudaThreadExchangeStreamCaptureMode(&r.mode);
}

/* A capture this thread begins runs with the thread in
 * cudaStreamCaptureModeThreadLocal: CUDA refuses the calls unsafe during
 * it made on this thread (the fns recorded: capture.c), as it did before
 * weft's threads were relaxed, and ignores other threads' captures. The
 * first capture saves the thread's mode, the end of the last restores it. */
static void thread_capture_begins(void)
{
  if (captures_begun++ > 0)
    return;
  mode_before_captures = cudaStreamCaptureModeThreadLocal;
  mode_saved = cudaThreadExchangeStreamCaptureMode(&mode_before_captures) == cudaSuccess;
  if (!mode_saved)
    (void)cudaGetLastError(); /* the capture goes on in the thread's own mode */
}

static void thread_capture_ends(void)
{
  if (captures_begun <= 0 || --captures_begun > 0 || !mode_saved)
    return;
  mode_saved = false;
  (void)cudaThreadExchangeStreamCaptureMode(&mode_before_captures);
}

static int cuda_thread_init(weft_gpu_backend *b)
{
  (void)b;
  enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaError_t err = cudaThreadExchangeStreamCaptureMode(&mode);
  if (err != cudaSuccess)
    return fail("cudaThreadExchangeStreamCaptureMode (relaxed, for a thread of weft's)", -1, err);
  relaxed_for_good = true;
  return 0;
}

/* ------------------------------------------------------------ devices */

static int set_device(int device)
{
  int cur;
  if (cudaGetDevice(&cur) == cudaSuccess && cur == device)
    return 0; /* already current: no cudaSetDevice on the launch path */
  cudaError_t err = cudaSetDevice(device);
  return err == cudaSuccess ? 0 : fail("cudaSetDevice", device, err);
}

/* cuStreamWriteValue32 from the driver, or NULL (then word_kernel.cu), and
 * cuGetErrorName (NULL: the driver has none). Looked up once (pthread_once,
 * at the first open with a device, which orders it before every use:
 * streams come from an open backend). */
typedef CUresult (*write_value32_fn)(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                     unsigned int flags);
typedef CUresult (*get_error_name_fn)(CUresult error, const char **name);
static write_value32_fn write_value32;
static get_error_name_fn get_error_name;
/* Testing: force the kernel path (weft_gpu_cuda_test_word_kernel). atomic,
 * relaxed: a test's setting, read at each write. */
static _Atomic int force_kernel;
/* Testing: word writes the kernel enqueued (atomic, relaxed: a count). */
static _Atomic long kernel_writes;
static pthread_once_t driver_entry_points_once = PTHREAD_ONCE_INIT;

void weft_gpu_cuda_test_word_kernel(int on)
{
  atomic_store_explicit(&force_kernel, on, memory_order_relaxed);
}

long weft_gpu_cuda_test_word_kernel_writes(void)
{
  return atomic_load_explicit(&kernel_writes, memory_order_relaxed);
}

/* The driver's name of r (cuGetErrorName), or its number in buf. */
static const char *driver_error_name(CUresult r, char *buf, size_t cap)
{
  const char *name = NULL;
  if (get_error_name && get_error_name(r, &name) == CUDA_SUCCESS && name)
    return name;
  snprintf(buf, cap, "CUresult %d", (int)r);
  return buf;
}

static void cuda_close(weft_gpu_backend *b)
{
  weft_cuda_backend *cb = CB(b);
  pthread_mutex_destroy(&cb->load_lock);
  weft_free(cb->loaded);
  weft_free(cb);
}

/* Loads weft's kernels (word_kernel.cu) on device, current on this thread,
 * once per backend and device: at its first stream, before weft enqueued
 * anything there (the top of this file). A failure (no image of the kernel
 * for this GPU, say) is logged where the kernel writes the host words (no
 * cuStreamWriteValue32): those writes then fail as the load did. */
static void load_kernels(weft_cuda_backend *cb, int device)
{
  /* relaxed: see the field. */
  if (atomic_load_explicit(&cb->loaded[device], memory_order_relaxed))
    return;
  pthread_mutex_lock(&cb->load_lock);
  if (!atomic_load_explicit(&cb->loaded[device], memory_order_relaxed)) {
    cudaError_t err = weft_cuda_word_kernel_load();
    if (err != cudaSuccess) {
      (void)cudaGetLastError(); /* not the application's error */
      if (!write_value32)
        weft_log("cuda device %d: the host word's kernel could not be loaded: %s (%d): %s; "
                 "its writes will fail likewise",
                 device, cudaGetErrorName(err), (int)err, cudaGetErrorString(err));
    }
    atomic_store_explicit(&cb->loaded[device], 1, memory_order_relaxed);
  }
  pthread_mutex_unlock(&cb->load_lock);
}

static int cuda_stream_create(weft_gpu_backend *b, int device, weft_gpu_stream **out)
{
  weft_cuda_stream *s = weft_calloc(1, sizeof *s);
  if (!s)
    return WEFT_ENOMEM;
  relax_scope relax = relax_begin();
  int rc = set_device(device);
  if (!rc) {
    cudaError_t err = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking);
    if (err != cudaSuccess)
      rc = fail("cudaStreamCreateWithFlags", device, err);
  }
  if (!rc)
    load_kernels(CB(b), device);
  relax_end(relax);
  if (rc) {
    weft_free(s);
    return rc;
  }
  s->device = device;
  atomic_init(&s->capturing, false);
  atomic_init(&s->refused, NULL);
  *out = (weft_gpu_stream *)(void *)s;
  return 0;
}

/* Ends s's capture (it captures) and returns the graph in *graph (NULL when
 * CUDA invalidated the capture: then the error, not logged, and the
 * runtime's last error cleared, since it is not the application's). The
 * stream no longer captures afterwards. */
static cudaError_t end_capture(weft_cuda_stream *s, cudaGraph_t *graph)
{
  *graph = NULL;
  cudaError_t err = cudaStreamEndCapture(s->stream, graph);
  /* The capture ended (whatever its outcome) on the thread that began it:
   * that thread's capture mode comes back. */
  if (err != cudaErrorStreamCaptureWrongThread && pthread_equal(s->capturer, pthread_self()))
    thread_capture_ends();
  /* relaxed: see the fields. */
  atomic_store_explicit(&s->capturing, false, memory_order_relaxed);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    if (*graph) {
      (void)cudaGraphDestroy(*graph);
      *graph = NULL;
    }
  }
  return err;
}

static int cuda_stream_destroy(weft_gpu_backend *b, weft_gpu_stream *st)
{
  (void)b;
  weft_cuda_stream *s = CS(st);
  int rc = set_device(s->device);
  /* relaxed: see the fields. */
  if (!rc && atomic_load_explicit(&s->capturing, memory_order_relaxed)) {
    /* A capture still open is discarded (this must be the capturing
     * thread: cudaStreamCaptureModeThreadLocal). */
    cudaGraph_t graph = NULL;
    cudaError_t err = end_capture(s, &graph);
    if (graph)
      (void)cudaGraphDestroy(graph);
    if (err != cudaSuccess && err != cudaErrorStreamCaptureInvalidated)
      rc = fail("cudaStreamEndCapture (destroying a capturing stream)", s->device, err);
  }
  if (!rc) {
    relax_scope relax = relax_begin();
    /* Drain first: the stream's work runs before destroy returns. */
    cudaError_t err = cudaStreamSynchronize(s->stream);
    if (err != cudaSuccess)
      rc = fail("cudaStreamSynchronize", s->device, err);
    err = cudaStreamDestroy(s->stream);
    if (err != cudaSuccess && !rc)
      rc = fail("cudaStreamDestroy", s->device, err);
    relax_end(relax);
  }
  weft_free(s);
  return rc;
}

static void *cuda_stream_native(weft_gpu_backend *b, weft_gpu_stream *s)
{
  (void)b;
  return (void *)CS(s)->stream;
}

static int cuda_stream_sync(weft_gpu_backend *b, weft_gpu_stream *st)
{
  (void)b;
  weft_cuda_stream *s = CS(st);
  if (refuse_if_capturing(s, "stream_sync"))
    return WEFT_EINVAL;
  int rc = set_device(s->device);
  if (rc)
    return rc;
  relax_scope relax = relax_begin();
  cudaError_t err = cudaStreamSynchronize(s->stream);
  relax_end(relax);
  return err == cudaSuccess ? 0 : fail("cudaStreamSynchronize", s->device, err);
}

static int cuda_event_create(weft_gpu_backend *b, int device, weft_gpu_event **out)
{
  (void)b;
  weft_cuda_event *e = weft_calloc(1, sizeof *e);
  if (!e)
    return WEFT_ENOMEM;
  relax_scope relax = relax_begin();
  int rc = set_device(device);
  if (!rc) {
    cudaError_t err = cudaEventCreateWithFlags(&e->event, cudaEventDisableTiming | cudaEventBlockingSync);
    if (err != cudaSuccess)
      rc = fail("cudaEventCreateWithFlags", device, err);
  }
  relax_end(relax);
  if (rc) {
    weft_free(e);
    return rc;
  }
  e->device = device;
  *out = (weft_gpu_event *)(void *)e;
  return 0;
}

static int cuda_event_destroy(weft_gpu_backend *b, weft_gpu_event *ev)
{
  (void)b;
  weft_cuda_event *e = CE(ev);
  relax_scope relax = relax_begin();
  int rc = set_device(e->device);
  if (!rc) {
    /* CUDA releases a pending event's resources once the device is done. */
    cudaError_t err = cudaEventDestroy(e->event);
    if (err != cudaSuccess)
      rc = fail("cudaEventDestroy", e->device, err);
  }
  relax_end(relax);
  weft_free(e);
  return rc;
}

static int cuda_event_record(weft_gpu_backend *b, weft_gpu_event *ev, weft_gpu_stream *st)
{
  (void)b;
  weft_cuda_event *e = CE(ev);
  weft_cuda_stream *s = CS(st);
  if (e->device != s->device)
    return WEFT_EINVAL;
  if (refuse_if_capturing(s, "event_record"))
    return WEFT_EINVAL;
  int rc = set_device(s->device);
  if (rc)
    return rc;
  cudaError_t err = cudaEventRecord(e->event, s->stream);
  return err == cudaSuccess ? 0 : fail("cudaEventRecord", s->device, err);
}

static int cuda_event_query(weft_gpu_backend *b, weft_gpu_event *ev)
{
  (void)b;
  weft_cuda_event *e = CE(ev);
  int rc = set_device(e->device);
  if (rc)
    return rc;
  cudaError_t err = cudaEventQuery(e->event);
  if (err == cudaSuccess)
    return WEFT_GPU_EVENT_COMPLETE;
  if (err == cudaErrorNotReady)
    return WEFT_GPU_EVENT_PENDING;
  /* Refused because another thread captures in global mode (not a
   * capture of this thread's own, whose rules stand): no word on the
   * device, ask again. Only a thread in global mode is refused for that: on
   * a relaxed one (weft's own: thread_init) the refusal is the event's own
   * conflict with a capture (recorded inside one by an operator's fn), a
   * fault like any other. */
  if (capture_misuse(err) && !captures_begun && !relaxed_for_good) {
    capture_refused("cudaEventQuery", e->device, err);
    return WEFT_GPU_EVENT_PENDING;
  }
  return fail("cudaEventQuery", e->device, err);
}

static int cuda_stream_wait_event(weft_gpu_backend *b, weft_gpu_stream *st, weft_gpu_event *ev)
{
  (void)b;
  weft_cuda_stream *s = CS(st);
  if (refuse_if_capturing(s, "stream_wait_event"))
    return WEFT_EINVAL;
  int rc = set_device(s->device);
  if (rc)
    return rc;
  cudaError_t err = cudaStreamWaitEvent(s->stream, CE(ev)->event, 0);
  return err == cudaSuccess ? 0 : fail("cudaStreamWaitEvent", s->device, err);
}

static int cuda_copy_async(weft_gpu_backend *b, weft_gpu_stream *st, void *dst, const void *src,
                           size_t bytes, weft_gpu_copy_kind kind)
{
  (void)b;
  weft_cuda_stream *s = CS(st);
  enum cudaMemcpyKind k = kind == WEFT_GPU_COPY_H2D   ? cudaMemcpyHostToDevice
                          : kind == WEFT_GPU_COPY_D2H ? cudaMemcpyDeviceToHost
                                                      : cudaMemcpyDeviceToDevice;
  int rc = set_device(s->device);
  if (rc)
    return rc;
  cudaError_t err = cudaMemcpyAsync(dst, src, bytes, k, s->stream);
  return err == cudaSuccess ? 0 : fail("cudaMemcpyAsync", s->device, err);
}

static int cuda_bind_thread(weft_gpu_backend *b, int device)
{
  (void)b;
  return set_device(device);
}

static int cuda_event_sync(weft_gpu_backend *b, weft_gpu_event *ev)
{
  (void)b;
  weft_cuda_event *e = CE(ev);
  int rc = set_device(e->device);
  if (rc)
    return rc;
  relax_scope relax = relax_begin();
  cudaError_t err = cudaEventSynchronize(e->event);
  if (capture_misuse(err) && !captures_begun && !relaxed_for_good && !relax.swapped) {
    /* Refused because another thread captures in global mode, this
     * thread's mode not relaxed (cuda_event_query): the event is polled
     * instead, until it completes or fails. On a relaxed thread such a
     * refusal is the event's own conflict with a capture: a fault. */
    capture_refused("cudaEventSynchronize", e->device, err);
    const struct timespec poll = {0, WEFT_GPU_CAPTURE_POLL_NS};
    while ((rc = cuda_event_query(b, ev)) == WEFT_GPU_EVENT_PENDING)
      nanosleep(&poll, NULL);
    relax_end(relax);
    return rc; /* WEFT_GPU_EVENT_COMPLETE (0) or WEFT_EDEVICE */
  }
  relax_end(relax);
  return err == cudaSuccess ? 0 : fail("cudaEventSynchronize", e->device, err);
}

static int cuda_word_alloc(weft_gpu_backend *b, int device, weft_gpu_word *w)
{
  (void)b;
  int rc = set_device(device);
  if (rc)
    return rc;
  void *host = NULL, *dev = NULL;
  relax_scope relax = relax_begin();
  cudaError_t err = cudaHostAlloc(&host, 64, cudaHostAllocMapped | cudaHostAllocPortable);
  if (err != cudaSuccess) {
    relax_end(relax);
    return fail("cudaHostAlloc (a host word)", device, err);
  }
  err = cudaHostGetDevicePointer(&dev, host, 0);
  if (err != cudaSuccess) {
    cudaFreeHost(host);
    relax_end(relax);
    return fail("cudaHostGetDevicePointer (a host word)", device, err);
  }
  relax_end(relax);
  w->host = host;
  atomic_init(w->host, 0);
  w->dev = dev;
  w->device = device;
  return 0;
}

static void cuda_word_free(weft_gpu_backend *b, weft_gpu_word *w)
{
  (void)b;
  relax_scope relax = relax_begin();
  cudaError_t err = cudaFreeHost((void *)w->host);
  relax_end(relax);
  if (err != cudaSuccess)
    fail("cudaFreeHost (a host word)", w->device, err);
}

static int cuda_stream_write_word(weft_gpu_backend *b, weft_gpu_stream *st, weft_gpu_word *w,
                                  uint32_t value)
{
  (void)b;
  weft_cuda_stream *s = CS(st);
  if (w->device != s->device)
    return WEFT_EINVAL;
  if (refuse_if_capturing(s, "stream_write_word"))
    return WEFT_EINVAL;
  int rc = set_device(s->device);
  if (rc)
    return rc;
  if (write_value32 && !atomic_load_explicit(&force_kernel, memory_order_relaxed)) {
    CUresult r = write_value32((CUstream)s->stream, (CUdeviceptr)(uintptr_t)w->dev, value, 0);
    if (r == CUDA_SUCCESS)
      return 0;
    char num[32];
    weft_log("cuda device %d: cuStreamWriteValue32 failed: %s (%d)", s->device,
             driver_error_name(r, num, sizeof num), (int)r);
    return r == CUDA_ERROR_OUT_OF_MEMORY ? WEFT_ENOMEM : WEFT_EDEVICE;
  }
  cudaError_t err = weft_cuda_word_kernel_launch(s->stream, w->dev, value);
  if (err != cudaSuccess) {
    (void)cudaGetLastError(); /* said here: not the application's error */
    return fail("the host word's kernel launch", s->device, err);
  }
  atomic_fetch_add_explicit(&kernel_writes, 1, memory_order_relaxed); /* relaxed: a count */
  return 0;
}

static int cuda_capture_begin(weft_gpu_backend *b, weft_gpu_stream *st)
{
  (void)b;
  weft_cuda_stream *s = CS(st);
  /* relaxed: see the fields. */
  if (atomic_load_explicit(&s->capturing, memory_order_relaxed))
    return WEFT_EINVAL;
  int rc = set_device(s->device);
  if (rc)
    return rc;
  thread_capture_begins();
  cudaError_t err = cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal);
  if (err != cudaSuccess) {
    thread_capture_ends();
    return fail("cudaStreamBeginCapture", s->device, err);
  }
  s->capturer = pthread_self();
  atomic_store_explicit(&s->refused, NULL, memory_order_relaxed);
  atomic_store_explicit(&s->capturing, true, memory_order_relaxed);
  return 0;
}

static int cuda_capture_end(weft_gpu_backend *b, weft_gpu_stream *st, weft_gpu_graph **out)
{
  (void)b;
  weft_cuda_stream *s = CS(st);
  if (out)
    *out = NULL;
  /* relaxed: see the fields. */
  if (!atomic_load_explicit(&s->capturing, memory_order_relaxed))
    return WEFT_EINVAL;
  /* The capture ends first, whatever comes next (a stream call: no device
   * to make current for it). */
  const char *refused = atomic_exchange_explicit(&s->refused, NULL, memory_order_relaxed);
  cudaGraph_t graph = NULL;
  cudaError_t err = end_capture(s, &graph);
  if (err == cudaErrorStreamCaptureWrongThread) {
    /* Not the capturing thread (backend.h forbids it): nothing ended, the
     * capture goes on. */
    atomic_store_explicit(&s->refused, refused, memory_order_relaxed);
    atomic_store_explicit(&s->capturing, true, memory_order_relaxed);
    weft_log("cuda device %d: capture_end on stream %p from another thread than the "
             "capture's: %s (WEFT_EINVAL)",
             s->device, (void *)s->stream, cudaGetErrorName(err));
    return WEFT_EINVAL;
  }
  if (err != cudaSuccess) {
    if (!capture_misuse(err))
      return fail("cudaStreamEndCapture", s->device, err);
    if (!out)
      return 0; /* a discard: an invalidated capture is discarded too */
    weft_log("cuda device %d: the capture on stream %p was invalidated: %s (%s) (WEFT_EINVAL)",
             s->device, (void *)s->stream, cudaGetErrorName(err),
             refused ? refused : "a call unsupported during capture");
    return WEFT_EINVAL;
  }
  if (!out || refused) {
    (void)cudaGraphDestroy(graph);
    if (out)
      weft_log("cuda device %d: the capture on stream %p was invalidated: %s is not "
               "capturable (WEFT_EINVAL)",
               s->device, (void *)s->stream, refused);
    return out ? WEFT_EINVAL : 0;
  }

  weft_cuda_graph *g = weft_calloc(1, sizeof *g);
  int rc = g ? set_device(s->device) : WEFT_ENOMEM;
  if (rc) {
    weft_free(g);
    (void)cudaGraphDestroy(graph);
    return rc;
  }
  /* The capture is over: instantiating and uploading are weft's own calls. */
  relax_scope relax = relax_begin();
  /* An empty capture gets one empty node: a graph with a node launches
   * (and orders) as any other, whatever the driver makes of a graph with
   * none. */
  size_t nodes = 0;
  err = cudaGraphGetNodes(graph, NULL, &nodes);
  if (err == cudaSuccess && nodes == 0) {
    cudaGraphNode_t empty;
    err = cudaGraphAddEmptyNode(&empty, graph, NULL, 0);
    if (err != cudaSuccess)
      rc = fail("cudaGraphAddEmptyNode (an empty capture)", s->device, err);
  } else if (err != cudaSuccess) {
    rc = fail("cudaGraphGetNodes", s->device, err);
  }
  if (!rc) {
    err = cudaGraphInstantiateWithFlags(&g->exec, graph, 0);
    if (err != cudaSuccess)
      rc = fail("cudaGraphInstantiateWithFlags", s->device, err);
  }
  (void)cudaGraphDestroy(graph); /* the executable graph is a copy */
  if (!rc) {
    /* The upload now, on the capturing stream, so that the first launch
     * costs what the others do. */
    err = cudaGraphUpload(g->exec, s->stream);
    if (err != cudaSuccess) {
      rc = fail("cudaGraphUpload", s->device, err);
      (void)cudaGraphExecDestroy(g->exec);
    }
  }
  relax_end(relax);
  if (rc) {
    weft_free(g);
    return rc;
  }
  g->device = s->device;
  *out = (weft_gpu_graph *)(void *)g;
  return 0;
}

static int cuda_graph_launch(weft_gpu_backend *b, weft_gpu_graph *gr, weft_gpu_stream *st)
{
  (void)b;
  weft_cuda_graph *g = CG(gr);
  weft_cuda_stream *s = CS(st);
  if (g->device != s->device)
    return WEFT_EINVAL;
  if (refuse_if_capturing(s, "graph_launch"))
    return WEFT_EINVAL;
  int rc = set_device(s->device);
  if (rc)
    return rc;
  cudaError_t err = cudaGraphLaunch(g->exec, s->stream);
  return err == cudaSuccess ? 0 : fail("cudaGraphLaunch", s->device, err);
}

static void cuda_graph_destroy(weft_gpu_backend *b, weft_gpu_graph *gr)
{
  (void)b;
  weft_cuda_graph *g = CG(gr);
  /* A graph in flight is freed once its launches completed (CUDA). */
  if (set_device(g->device) == 0) {
    relax_scope relax = relax_begin();
    cudaError_t err = cudaGraphExecDestroy(g->exec);
    relax_end(relax);
    if (err != cudaSuccess)
      fail("cudaGraphExecDestroy", g->device, err);
  }
  weft_free(g);
}

static const weft_gpu_backend_ops cuda_ops = {
  .bind_thread = cuda_bind_thread,
  .thread_init = cuda_thread_init,
  .name = "cuda",
  .close = cuda_close,
  .stream_create = cuda_stream_create,
  .stream_destroy = cuda_stream_destroy,
  .stream_native = cuda_stream_native,
  .stream_sync = cuda_stream_sync,
  .event_create = cuda_event_create,
  .event_destroy = cuda_event_destroy,
  .event_record = cuda_event_record,
  .event_query = cuda_event_query,
  .stream_wait_event = cuda_stream_wait_event,
  .copy_async = cuda_copy_async,
  .event_sync = cuda_event_sync,
  .word_alloc = cuda_word_alloc,
  .word_free = cuda_word_free,
  .stream_write_word = cuda_stream_write_word,
  .capture_begin = cuda_capture_begin,
  .capture_end = cuda_capture_end,
  .graph_launch = cuda_graph_launch,
  .graph_destroy = cuda_graph_destroy,
};

/* One of the driver's functions, by version (12.0's ABI), so that nothing
 * links libcuda; NULL (and the runtime's error cleared) when the driver
 * lacks it. */
static void *driver_entry_point(const char *symbol, cudaError_t *err)
{
  void *fn = NULL;
  enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  *err = cudaGetDriverEntryPointByVersion(symbol, &fn, 12000, cudaEnableDefault, &q);
  if (*err != cudaSuccess || q != cudaDriverEntryPointSuccess || !fn) {
    (void)cudaGetLastError(); /* not the application's error */
    return NULL;
  }
  return fn;
}

/* The driver's stream write (NULL when the driver lacks it: the kernel then
 * writes) and its error names (for the stream write's failures). */
static void find_driver_entry_points(void)
{
  cudaError_t err;
  void *fn = driver_entry_point("cuStreamWriteValue32", &err);
  if (!fn)
    weft_log("cuda: no cuStreamWriteValue32 in the driver (%s): host words are written "
             "by a one-thread kernel",
             err != cudaSuccess ? cudaGetErrorName(err) : "symbol not found");
  /* POSIX (dlsym's rule): a function's address travels as void *. */
  memcpy(&write_value32, &fn, sizeof write_value32);
  fn = driver_entry_point("cuGetErrorName", &err);
  memcpy(&get_error_name, &fn, sizeof get_error_name);
}

/* The driver versions for CUDA's major releases (each minor release of a
 * major one runs on its first driver: minor version compatibility), for the
 * message below; 0 where this file does not know it. */
static int driver_branch_for(int cuda_major)
{
  switch (cuda_major) {
  case 12:
    return 525;
  case 13:
    return 580;
  default:
    return 0;
  }
}

static pthread_once_t driver_message_once = PTHREAD_ONCE_INIT;

/* cudaErrorInsufficientDriver: no driver at all (cudaDriverGetVersion says
 * 0: a machine without a GPU, nothing to say), or one older than this
 * runtime, whose devices would otherwise look like no GPU at all: said by
 * name. */
static void say_driver_too_old(void)
{
  int drv = 0, rt = CUDART_VERSION;
  if (cudaDriverGetVersion(&drv) != cudaSuccess) {
    (void)cudaGetLastError();
    drv = 0;
  }
  if (drv <= 0)
    return;
  (void)cudaRuntimeGetVersion(&rt);
  char branch[64] = "";
  if (driver_branch_for(rt / 1000))
    snprintf(branch, sizeof branch, " (NVIDIA driver %d or newer)", driver_branch_for(rt / 1000));
  weft_log("cuda: the NVIDIA driver is too old for this library's CUDA runtime: the driver "
           "supports CUDA %d.%d (cudaDriverGetVersion %d), the runtime is CUDA %d.%d and needs "
           "a driver for CUDA %d.0 or newer%s; no CUDA device is used "
           "(cudaErrorInsufficientDriver)",
           drv / 1000, drv % 1000 / 10, drv, rt / 1000, rt % 1000 / 10, rt / 1000, branch);
}

static void say_stub_library(void)
{
  weft_log("cuda: the CUDA driver library that was loaded is the toolkit's stub, not a driver "
           "(cudaErrorStubLibrary: a stubs directory on LD_LIBRARY_PATH?); no CUDA device is "
           "used");
}

int weft_gpu_cuda_open(weft_gpu_backend **out)
{
  int count = 0;
  relax_scope relax = relax_begin(); /* an open may come while another thread captures */
  cudaError_t err = cudaGetDeviceCount(&count);
  relax_end(relax);
  switch (err) {
  case cudaSuccess:
    break;
  case cudaErrorInsufficientDriver: /* 35: no driver, or one too old */
  case cudaErrorStubLibrary:        /* 34: the driver stub, not a driver */
  case cudaErrorNoDevice:           /* 100 */
    count = 0;
    (void)cudaGetLastError(); /* do not leave the error for the application */
    if (err == cudaErrorInsufficientDriver)
      pthread_once(&driver_message_once, say_driver_too_old);
    else if (err == cudaErrorStubLibrary)
      pthread_once(&driver_message_once, say_stub_library);
    break;
  default:
    return fail("cudaGetDeviceCount", -1, err);
  }
  weft_cuda_backend *cb = weft_calloc(1, sizeof *cb);
  if (!cb)
    return WEFT_ENOMEM;
  cb->base.ops = &cuda_ops;
  cb->base.num_devices = count > 0 ? count : 0;
  if (cb->base.num_devices) {
    cb->loaded = weft_calloc((size_t)cb->base.num_devices, sizeof *cb->loaded);
    if (!cb->loaded) {
      weft_free(cb);
      return WEFT_ENOMEM;
    }
    for (int i = 0; i < cb->base.num_devices; i++)
      atomic_init(&cb->loaded[i], 0);
    pthread_once(&driver_entry_points_once, find_driver_entry_points);
  }
  pthread_mutex_init(&cb->load_lock, NULL);
  *out = &cb->base;
  return 0;
}
