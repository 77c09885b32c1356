/*
 * Bug B1 on CUDA (b1.h; issue 38, point 6): a long kernel reads a buffer
 * in pinned, mapped host memory while a kernel on another stream of the
 * same device traps; the CPU writer of the buffer must not run while the
 * reading kernel can still read. A trap is a sticky error of the context:
 * it aborts every kernel of the process on that device, so each test runs
 * in a process of its own (Criterion's) and the readers' events report the
 * error too. Built only with CUDA; on a machine without a driver or a GPU
 * the executable reports itself skipped (exit 77), as test_cuda.c does.
 * The suite takes WEFT_GPU_COMPLETION from the environment (scripts/
 * device.sh gpu runs it once per completion mode).
 */
#include "b1.h"
#include "gpu/backend.h"

#include <cuda_runtime.h>

#include "cuda_skip.h"

/* A reader's time unless the trap stops it: long enough that a kernel the
 * trap did not stop is seen in the report, short enough that the suite
 * still ends in the 20 s scripts/device.sh gives it (4 readers in a row on
 * one stream: 8 s). */
#define CUDA_READ_NS 2000000000LL

static void setup(void)
{
  te_clear_env();
}

WEFT_CUDA_SKIP_WITHOUT_DEVICES("gpu/cuda_faults")

/* Pinned host memory mapped into the device: the host sees the kernels'
 * records as they are made and the kernels see the writer's overwrite. */
static void *cuda_alloc(size_t bytes)
{
  void *p = NULL;
  cudaError_t err = cudaHostAlloc(&p, bytes, cudaHostAllocMapped);
  if (err != cudaSuccess) {
    cr_log_warn("cudaHostAlloc(%zu, mapped): %s", bytes, cudaGetErrorName(err));
    return NULL;
  }
  memset(p, 0, bytes);
  return p;
}

/* After the trap every CUDA call of the process reports the sticky error:
 * cudaFreeHost cannot free, and the process ends next. */
static void cuda_free(void *p)
{
  (void)cudaFreeHost(p);
}

static void *device_view(void *host)
{
  void *d = NULL;
  return cudaHostGetDevicePointer(&d, host, 0) == cudaSuccess ? d : NULL;
}

static int cuda_read(void *stream, b1_reader *r)
{
  b1_reader *d = device_view(r);
  return d ? weft_test_b1_read(d, CUDA_READ_NS, stream) : -1;
}

static int cuda_trap(void *stream, b1_trap *t)
{
  b1_trap *d = device_view(t);
  return d ? weft_test_b1_trap(d, stream) : -1;
}

static const b1_backend cuda_backend = {
    .name = "cuda",
    .log_needle = "cudaError", /* backend_cuda.c names the error (cudaGetErrorName) */
    .alloc = cuda_alloc,
    .free = cuda_free,
    .read = cuda_read,
    .trap = cuda_trap,
};

/* The host test's twin (test_engine_gpu.c, "Bug B1"): one reader, the trap
 * on the second compute worker's stream. */
Test(cuda_faults, b1_one_reader, .init = setup, .timeout = TU_TIMEOUT(60))
{
  b1_result r = b1_run(&cuda_backend, 1, B1_SPREAD);
  cr_assert_eq(r.early, 0, "%d buffers released early", r.early);
  cr_assert_eq(r.readers, 1, "%d of 1 writers ran once", r.readers);
  cr_assert_eq(r.wait_all_rc, WEFT_EDEVICE, "weft_wait_all = %d", r.wait_all_rc);
}

/* Four kernels reading at once, on four streams; the trap on a fifth. */
Test(cuda_faults, b1_four_readers_a_stream_each, .init = setup, .timeout = TU_TIMEOUT(60))
{
  b1_result r = b1_run(&cuda_backend, 4, B1_SPREAD);
  cr_assert_eq(r.early, 0, "%d buffers released early", r.early);
  cr_assert_eq(r.readers, 4, "%d of 4 writers ran once", r.readers);
  cr_assert_eq(r.wait_all_rc, WEFT_EDEVICE, "weft_wait_all = %d", r.wait_all_rc);
}

/* Four readers queued on one stream (the first reading, three behind it);
 * the trap on the other. */
Test(cuda_faults, b1_four_readers_on_one_stream, .init = setup, .timeout = TU_TIMEOUT(60))
{
  b1_result r = b1_run(&cuda_backend, 4, B1_ONE_STREAM);
  cr_assert_eq(r.early, 0, "%d buffers released early", r.early);
  cr_assert_eq(r.readers, 4, "%d of 4 writers ran once", r.readers);
  cr_assert_eq(r.wait_all_rc, WEFT_EDEVICE, "weft_wait_all = %d", r.wait_all_rc);
}
