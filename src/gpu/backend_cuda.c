/*
 * The cuda backend: the CUDA runtime API (cudart_static, so the library has
 * no load-time dependency on the driver). Streams are created
 * cudaStreamNonBlocking, events cudaEventDisableTiming. Every call sets its
 * object's device on the calling thread first (cudaSetDevice is per
 * thread), and every failure is logged with cudaGetErrorName and mapped to
 * a WEFT_E* code.
 */
#include <cuda_runtime.h>

#include "common/alloc.h"
#include "common/error.h"
#include "gpu/backend.h"
#include "weft/weft.h"

typedef struct weft_cuda_stream {
  int device;          /* immutable */
  cudaStream_t stream; /* immutable; the handle operators receive */
} weft_cuda_stream;

typedef struct weft_cuda_event {
  int device;        /* immutable */
  cudaEvent_t event; /* immutable */
} weft_cuda_event;

#define CS(s) ((weft_cuda_stream *)(void *)(s))
#define CE(e) ((weft_cuda_event *)(void *)(e))

/* Logs a failed call and maps it: allocation failures to WEFT_ENOMEM, the
 * rest to WEFT_EDEVICE. */
static int fail(const char *what, int device, cudaError_t err)
{
  weft_log("cuda device %d: %s failed: %s (%d): %s", device, what, cudaGetErrorName(err),
           (int)err, cudaGetErrorString(err));
  return err == cudaErrorMemoryAllocation ? WEFT_ENOMEM : WEFT_EDEVICE;
}

static int set_device(int device)
{
  cudaError_t err = cudaSetDevice(device);
  return err == cudaSuccess ? 0 : fail("cudaSetDevice", device, err);
}

static void cuda_close(weft_gpu_backend *b)
{
  weft_free(b);
}

static int cuda_stream_create(weft_gpu_backend *b, int device, weft_gpu_stream **out)
{
  (void)b;
  weft_cuda_stream *s = weft_calloc(1, sizeof *s);
  if (!s)
    return WEFT_ENOMEM;
  int rc = set_device(device);
  if (!rc) {
    cudaError_t err = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking);
    if (err != cudaSuccess)
      rc = fail("cudaStreamCreateWithFlags", device, err);
  }
  if (rc) {
    weft_free(s);
    return rc;
  }
  s->device = device;
  *out = (weft_gpu_stream *)(void *)s;
  return 0;
}

static int cuda_stream_destroy(weft_gpu_backend *b, weft_gpu_stream *st)
{
  (void)b;
  weft_cuda_stream *s = CS(st);
  int rc = set_device(s->device);
  if (!rc) {
    /* Drain first: the stream's work runs before destroy returns. */
    cudaError_t err = cudaStreamSynchronize(s->stream);
    if (err != cudaSuccess)
      rc = fail("cudaStreamSynchronize", s->device, err);
    err = cudaStreamDestroy(s->stream);
    if (err != cudaSuccess && !rc)
      rc = fail("cudaStreamDestroy", s->device, err);
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
  int rc = set_device(s->device);
  if (rc)
    return rc;
  cudaError_t err = cudaStreamSynchronize(s->stream);
  return err == cudaSuccess ? 0 : fail("cudaStreamSynchronize", s->device, err);
}

static int cuda_event_create(weft_gpu_backend *b, int device, weft_gpu_event **out)
{
  (void)b;
  weft_cuda_event *e = weft_calloc(1, sizeof *e);
  if (!e)
    return WEFT_ENOMEM;
  int rc = set_device(device);
  if (!rc) {
    cudaError_t err = cudaEventCreateWithFlags(&e->event, cudaEventDisableTiming);
    if (err != cudaSuccess)
      rc = fail("cudaEventCreateWithFlags", device, err);
  }
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
  int rc = set_device(e->device);
  if (!rc) {
    /* CUDA releases a pending event's resources once the device is done. */
    cudaError_t err = cudaEventDestroy(e->event);
    if (err != cudaSuccess)
      rc = fail("cudaEventDestroy", e->device, err);
  }
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
  return fail("cudaEventQuery", e->device, err);
}

static int cuda_stream_wait_event(weft_gpu_backend *b, weft_gpu_stream *st, weft_gpu_event *ev)
{
  (void)b;
  weft_cuda_stream *s = CS(st);
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

static const weft_gpu_backend_ops cuda_ops = {
  .bind_thread = cuda_bind_thread,
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
};

int weft_gpu_cuda_open(weft_gpu_backend **out)
{
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  switch (err) {
  case cudaSuccess:
    break;
  case cudaErrorInsufficientDriver: /* 35: no (new enough) driver */
  case cudaErrorStubLibrary:        /* 34: the driver stub, not a driver */
  case cudaErrorNoDevice:           /* 100 */
    count = 0;
    (void)cudaGetLastError(); /* do not leave the error for the application */
    break;
  default:
    return fail("cudaGetDeviceCount", -1, err);
  }
  weft_gpu_backend *b = weft_calloc(1, sizeof *b);
  if (!b)
    return WEFT_ENOMEM;
  b->ops = &cuda_ops;
  b->num_devices = count > 0 ? count : 0;
  *out = b;
  return 0;
}
