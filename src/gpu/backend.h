/* SPDX-License-Identifier: MIT */
/*
 * The GPU backend interface (docs/design.md, "The GPU layer"): what the
 * device workers and the completion poller need from a device API, behind a
 * table of function pointers, with two implementations: cuda (the CUDA
 * runtime, built with the `cuda` feature) and host (emulated devices, each
 * stream a FIFO served by a thread, events with CUDA's semantics), plus
 * `none` (no devices).
 *
 * Semantics every backend keeps (tests/gpu/conformance.h checks them):
 *  - Work enqueued on one stream runs in enqueue order.
 *  - event_record captures all work enqueued on the stream so far; recording
 *    again replaces the capture (only the latest record counts for queries).
 *  - stream_wait_event makes work enqueued on the stream after the call wait
 *    for the event's latest record at call time; a later re-record does not
 *    change an earlier wait. A never-recorded event is complete.
 *  - event_query never blocks.
 *  - stream_destroy first runs (drains) every item already enqueued.
 *  - A device error is reported as WEFT_EDEVICE, with one log line naming it
 *    (for cuda, cudaGetErrorName's name).
 *  - Stream capture: between capture_begin and capture_end, kernels, copies
 *    and host functions enqueued on the stream (and the host backend's
 *    injected errors) are recorded, not run; capture_end makes the
 *    recording a graph, and each graph_launch enqueues one replay of it,
 *    ordered on its stream as any item. Launches of one graph run one at a
 *    time, in launch order, across streams too (CUDA's rule for an
 *    executable graph). On a capturing stream, event_record,
 *    stream_wait_event, stream_write_word, graph_launch and stream_sync are
 *    refused (WEFT_EINVAL) and invalidate the capture; so does, on CUDA, any
 *    call the runtime forbids during capture (a synchronous one).
 *
 * Thread safety: every call may come from any thread. A thread weft
 * creates that calls the backend (a device worker, the completion thread,
 * its waiter) calls thread_init first, once. A stream is used by
 * one thread at a time for enqueuing (a device worker owns its stream), and
 * the thread that began a capture ends it (CUDA: captures are begun
 * cudaStreamCaptureModeThreadLocal); events may be queried from one thread
 * (the poller) while another records or waits on them. Calls on one graph
 * (launch, destroy) are made one at a time (CUDA's graphs are not
 * internally synchronised). The backend handle itself is immutable after
 * open.
 */
#ifndef WEFT_GPU_BACKEND_H
#define WEFT_GPU_BACKEND_H
#include "gpu/layer.h" /* layer guard: no include from a lower layer */

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "weft_config.h"

typedef struct weft_gpu_backend weft_gpu_backend;
typedef struct weft_gpu_stream weft_gpu_stream; /* a backend's stream (opaque) */
typedef struct weft_gpu_event weft_gpu_event;   /* a backend's event (opaque) */
typedef struct weft_gpu_graph weft_gpu_graph;   /* a backend's instantiated capture (opaque) */

/* A host word (WEFT_GPU_COMPLETION=hostword): 32 bits of host memory that
 * the device writes from a stream (CUDA: pinned and mapped) and the CPU
 * reads with plain loads, no driver call. host: immutable after
 * word_alloc; the completion thread reads it (acquire), the device or the
 * host backend's stream thread writes it (release); nobody else. */
typedef struct weft_gpu_word {
  _Atomic uint32_t *host; /* what the CPU reads */
  void *dev;              /* what the stream writes (CUDA: the mapped device address) */
  int device;             /* immutable: the device whose streams may write it */
} weft_gpu_word;

typedef enum {
  WEFT_GPU_BACKEND_AUTO = 0, /* WEFT_GPU_BACKEND, else cuda when built with it, else none */
  WEFT_GPU_BACKEND_NONE,     /* zero devices */
  WEFT_GPU_BACKEND_HOST,     /* emulated devices */
  WEFT_GPU_BACKEND_CUDA,     /* the CUDA runtime (zero devices when not built with CUDA) */
} weft_gpu_backend_kind;

typedef enum {
  WEFT_GPU_COPY_H2D = 0, /* host memory to device memory */
  WEFT_GPU_COPY_D2H,     /* device memory to host memory */
  WEFT_GPU_COPY_D2D,     /* device memory to device memory (same device) */
} weft_gpu_copy_kind;

/* event_query's results besides WEFT_EDEVICE. */
enum { WEFT_GPU_EVENT_COMPLETE = 0, WEFT_GPU_EVENT_PENDING = 1 };

typedef struct weft_gpu_backend_config {
  weft_gpu_backend_kind kind; /* AUTO: WEFT_GPU_BACKEND is read (an explicit kind beats it) */
  int host_devices;           /* host backend, 0: automatic (WEFT_GPU_HOST_DEVICES, default 1) */
  unsigned host_jitter_us;    /* host backend, testing: before each stream item, sleep a
                                 random 0..host_jitter_us microseconds; 0: none */
} weft_gpu_backend_config;

/* Sets every field to automatic (kind AUTO, host_devices 0, no jitter). */
void weft_gpu_backend_config_default(weft_gpu_backend_config *cfg);

/*
 * The table each backend fills. Every int-returning entry returns 0 or a
 * negative WEFT_E* code: WEFT_EINVAL (bad argument, a stream or event of
 * another device), WEFT_ENOMEM, WEFT_EAGAIN (a resource such as a thread
 * could not be created), WEFT_EDEVICE (device failure, logged).
 */
typedef struct weft_gpu_backend_ops {
  const char *name; /* "cuda" | "host" | "none" */
  /* Frees the backend's own state; every stream and event is destroyed. */
  void (*close)(weft_gpu_backend *b);
  int (*stream_create)(weft_gpu_backend *b, int device, weft_gpu_stream **out);
  /* Waits for every item enqueued so far, then frees the stream. A capture
   * still open on s is discarded first (CUDA: by the capturing thread only,
   * as capture_end). */
  int (*stream_destroy)(weft_gpu_backend *b, weft_gpu_stream *s);
  /* What an operator receives in weft_run_ctx.stream: the cudaStream_t for
   * cuda, for host the stream's handle that weft_gpu_host_enqueue takes (not
   * its address: see host.h). */
  void *(*stream_native)(weft_gpu_backend *b, weft_gpu_stream *s);
  /* Blocks until every item enqueued so far ran (teardown, tests). Returns
   * WEFT_EDEVICE if the stream is in error, WEFT_EINVAL (refused) if it
   * captures. */
  int (*stream_sync)(weft_gpu_backend *b, weft_gpu_stream *s);
  int (*event_create)(weft_gpu_backend *b, int device, weft_gpu_event **out);
  /* A recorded event may be destroyed before it completes (its resources go
   * when the device is done with them), as in CUDA. */
  int (*event_destroy)(weft_gpu_backend *b, weft_gpu_event *e);
  int (*event_record)(weft_gpu_backend *b, weft_gpu_event *e, weft_gpu_stream *s);
  /* WEFT_GPU_EVENT_COMPLETE, WEFT_GPU_EVENT_PENDING or WEFT_EDEVICE. A
   * query that a stream capture on another thread refuses (CUDA) is
   * PENDING: it is asked again, the device is not failed. */
  int (*event_query)(weft_gpu_backend *b, weft_gpu_event *e);
  int (*stream_wait_event)(weft_gpu_backend *b, weft_gpu_stream *s, weft_gpu_event *e);
  /* Enqueues a copy of bytes from src to dst; returns once it is enqueued. */
  int (*copy_async)(weft_gpu_backend *b, weft_gpu_stream *s, void *dst, const void *src,
                    size_t bytes, weft_gpu_copy_kind kind);
  /* Makes device the calling thread's current device (a device worker, at
   * its start, so that operators launch on their stream's device). NULL:
   * nothing to do. */
  int (*bind_thread)(weft_gpu_backend *b, int device);
  /* At the start of each thread weft creates that calls the backend (device
   * workers, the completion thread, its waiter), before any other call
   * there. CUDA: the thread's stream capture interaction mode becomes
   * relaxed for good (cudaThreadExchangeStreamCaptureMode), so that a
   * capture in global mode elsewhere in the process (PyTorch's
   * torch.cuda.graph, say) neither refuses the thread's queries, waits and
   * syncs nor is invalidated by them (the cuda backend makes its creations,
   * destroys and syncs on other threads in relaxed mode for their own
   * duration; a capture_begin puts its thread in thread-local mode until
   * capture_end). host: counts the calls (testing). NULL: nothing to do. */
  int (*thread_init)(weft_gpu_backend *b);
  /* Blocks until the work the event's latest record (at call time)
   * captured completed, without spinning (CUDA: events are created with
   * cudaEventBlockingSync, so cudaEventSynchronize sleeps): 0
   * (WEFT_GPU_EVENT_COMPLETE) or WEFT_EDEVICE. A re-record meanwhile does
   * not change what it waits for. CUDA: refused by a stream capture on
   * another thread, it polls the event (event_query) instead. */
  int (*event_sync)(weft_gpu_backend *b, weft_gpu_event *e);
  /* Host words: word_alloc fills w (its word reads 0), word_free frees
   * it (its streams' writes must have completed). */
  int (*word_alloc)(weft_gpu_backend *b, int device, weft_gpu_word *w);
  void (*word_free)(weft_gpu_backend *b, weft_gpu_word *w);
  /* Enqueues a write of value into w after all work enqueued on s so far,
   * with a system-scope fence before it: a CPU that reads value (acquire)
   * sees that work's effects on host memory. On a failed stream the write
   * never happens (CUDA: a sticky error; host: later items are skipped). */
  int (*stream_write_word)(weft_gpu_backend *b, weft_gpu_stream *s, weft_gpu_word *w,
                           uint32_t value);
  /* From now until capture_end, work enqueued on s (kernels, copies, host
   * functions: weft_gpu_host_enqueue, cudaLaunchHostFunc; the host
   * backend's injected errors) is recorded, not run (CUDA:
   * cudaStreamBeginCapture, cudaStreamCaptureModeThreadLocal; a copy from
   * or to pageable host memory may not be capturable there: pinned memory
   * is). WEFT_EINVAL if s is capturing already. */
  int (*capture_begin)(weft_gpu_backend *b, weft_gpu_stream *s);
  /* Ends s's capture (from the thread that began it) and instantiates what
   * was recorded into *out: a graph launchable on any stream of s's device,
   * any number of times; an empty recording gives a graph whose launch does
   * nothing. out NULL: ends and discards the capture (nothing instantiated,
   * nothing runs; an invalidated capture is discarded without a word). An
   * invalidated capture (a refused call, see the semantics above) returns
   * WEFT_EINVAL with one log line naming the cause, and *out = NULL; so do
   * WEFT_ENOMEM and WEFT_EDEVICE (instantiation failed). In every case s is
   * no longer capturing afterwards and works as before, but one: CUDA
   * refuses a capture_end from another thread than the capture's
   * (WEFT_EINVAL, logged), and the capture goes on. WEFT_EINVAL without a
   * log line if s was not capturing. */
  int (*capture_end)(weft_gpu_backend *b, weft_gpu_stream *s, weft_gpu_graph **out);
  /* Enqueues one replay of g on s: after the work enqueued on s before it,
   * before the work enqueued after it (an event recorded on s afterwards
   * covers the whole replay), and after every earlier launch of g, on any
   * stream. WEFT_EINVAL if s is of another device than g (or capturing). */
  int (*graph_launch)(weft_gpu_backend *b, weft_gpu_graph *g, weft_gpu_stream *s);
  /* Frees g; replays already enqueued still run to completion (CUDA frees
   * an executable graph in flight once it completes; the host backend
   * counts references). */
  void (*graph_destroy)(weft_gpu_backend *b, weft_gpu_graph *g);
} weft_gpu_backend_ops;

/* The common part of every backend: the implementations embed it first. */
struct weft_gpu_backend {
  const weft_gpu_backend_ops *ops; /* immutable after open */
  int num_devices;                 /* immutable after open; 0 means no devices */
};

/*
 * Opens the backend cfg names (cfg NULL: all automatic). Reads
 * WEFT_GPU_BACKEND (when cfg->kind is AUTO) and, for the host backend,
 * WEFT_GPU_HOST_DEVICES (when cfg->host_devices is 0); a malformed value
 * returns WEFT_EINVAL with one "weft: " line naming the variable and the
 * value. No driver or no device is not an error: the backend then has zero
 * devices. Other results: WEFT_ENOMEM, WEFT_EDEVICE (a driver failure other
 * than "no driver / no device", logged).
 */
int weft_gpu_backend_open(weft_gpu_backend **out, const weft_gpu_backend_config *cfg);
/* Frees the backend (NULL: nothing). Streams and events must be gone. */
void weft_gpu_backend_close(weft_gpu_backend *b);

static inline int weft_gpu_device_count(const weft_gpu_backend *b)
{
  return b ? b->num_devices : 0;
}
static inline const char *weft_gpu_backend_name(const weft_gpu_backend *b)
{
  return b->ops->name;
}

/* The entry points: argument checks, the creation fault hook, then the
 * backend's function. device: 0 <= device < device count, else WEFT_ENODEV. */
int weft_gpu_stream_create(weft_gpu_backend *b, int device, weft_gpu_stream **out);
int weft_gpu_stream_destroy(weft_gpu_backend *b, weft_gpu_stream *s);
void *weft_gpu_stream_native(weft_gpu_backend *b, weft_gpu_stream *s);
int weft_gpu_stream_sync(weft_gpu_backend *b, weft_gpu_stream *s);
int weft_gpu_bind_thread(weft_gpu_backend *b, int device);
/* The backend's thread_init (0 when it has none, WEFT_EINVAL for NULL b). */
int weft_gpu_thread_init(weft_gpu_backend *b);
int weft_gpu_event_create(weft_gpu_backend *b, int device, weft_gpu_event **out);
int weft_gpu_event_destroy(weft_gpu_backend *b, weft_gpu_event *e);
int weft_gpu_event_record(weft_gpu_backend *b, weft_gpu_event *e, weft_gpu_stream *s);
int weft_gpu_event_query(weft_gpu_backend *b, weft_gpu_event *e);
int weft_gpu_stream_wait_event(weft_gpu_backend *b, weft_gpu_stream *s, weft_gpu_event *e);
int weft_gpu_copy_async(weft_gpu_backend *b, weft_gpu_stream *s, void *dst, const void *src,
                        size_t bytes, weft_gpu_copy_kind kind);
int weft_gpu_event_sync(weft_gpu_backend *b, weft_gpu_event *e);
/* w's device: 0 <= device < device count, else WEFT_ENODEV (w is then
 * zeroed). */
int weft_gpu_word_alloc(weft_gpu_backend *b, int device, weft_gpu_word *w);
void weft_gpu_word_free(weft_gpu_backend *b, weft_gpu_word *w);
int weft_gpu_stream_write_word(weft_gpu_backend *b, weft_gpu_stream *s, weft_gpu_word *w,
                               uint32_t value);
/* Stream capture (the ops above). A backend without it (none) returns
 * WEFT_ENODEV. capture_end sets *out (when out is not NULL) to NULL on
 * every error; with out, an instantiation counts as a creation for the
 * fault hook below, whose injected failure ends and discards the capture
 * (the stream is no longer capturing) and is returned. graph_destroy of
 * NULL does nothing. */
int weft_gpu_capture_begin(weft_gpu_backend *b, weft_gpu_stream *s);
int weft_gpu_capture_end(weft_gpu_backend *b, weft_gpu_stream *s, weft_gpu_graph **out);
int weft_gpu_graph_launch(weft_gpu_backend *b, weft_gpu_graph *g, weft_gpu_stream *s);
void weft_gpu_graph_destroy(weft_gpu_backend *b, weft_gpu_graph *g);

/*
 * Testing hook (not part of the public API): from now on the n-th stream,
 * event or graph creation (counted together, through any backend; a graph
 * is created by capture_end with out) fails with code, and every one after
 * it until reset; n = 0 turns it off. Returns nothing;
 * weft_gpu_test_create_calls counts the creations since the last call.
 */
void weft_gpu_test_fail_create_at(long n, int code);
long weft_gpu_test_create_calls(void);

/* The backends' constructors (backend.c chooses). Each returns 0 or a
 * WEFT_E* code and on failure leaves nothing allocated. */
int weft_gpu_none_open(weft_gpu_backend **out);
int weft_gpu_host_open(weft_gpu_backend **out, int devices, unsigned jitter_us);
#if WEFT_HAVE_CUDA
int weft_gpu_cuda_open(weft_gpu_backend **out);
#endif

#endif /* WEFT_GPU_BACKEND_H */
