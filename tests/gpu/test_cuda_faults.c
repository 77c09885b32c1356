/* SPDX-License-Identifier: MIT */
/*
 * Early release after a device error, on CUDA (early_release.h): a long
 * kernel reads a buffer in pinned, mapped host memory while a kernel on
 * another stream of the same device traps; the CPU writer of the buffer
 * must not run while the reading kernel can still read. A trap is a sticky error of the context:
 * it aborts every kernel of the process on that device, so each test runs
 * in a process of its own (Criterion's) and the readers' events report the
 * error too. The watchdog's scenarios (watchdog.h) hold the same reading
 * kernel on its host-mapped stop flag past WEFT_GPU_WATCHDOG_MS instead.
 * Built only with CUDA; on a machine without a driver or a GPU the
 * executable reports itself skipped (exit 77), as test_cuda.c does. The
 * suite takes WEFT_GPU_COMPLETION from the environment (scripts/device.sh
 * gpu runs it once per completion mode).
 */
#include "early_release.h"
#include "gpu/backend.h"

#include <cuda_runtime.h>

#include "cuda_skip.h"
#include "watchdog.h"

/* A reader's time unless the trap stops it: long enough that a kernel the
 * trap did not stop is seen in the report, short enough that the suite
 * still ends in the 20 s scripts/device.sh gives it (4 readers in a row on
 * one stream: 8 s). */
#define CUDA_READ_NS 2000000000LL
/* A held reader's time unless the test stops it (watchdog.h): as long as
 * the test's own waits, so that a test that never stops it still ends. */
#define CUDA_HOLD_NS ((long long)(TU_DEADLINE_S * 1e9))

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

static int cuda_read(void *stream, er_reader *r)
{
  er_reader *d = device_view(r);
  return d ? weft_test_er_read(d, CUDA_READ_NS, stream) : -1;
}

static int cuda_hold(void *stream, er_reader *r)
{
  er_reader *d = device_view(r);
  return d ? weft_test_er_read(d, CUDA_HOLD_NS, stream) : -1;
}

static int cuda_trap(void *stream, er_trap *t)
{
  er_trap *d = device_view(t);
  return d ? weft_test_er_trap(d, stream) : -1;
}

static const er_backend cuda_backend = {
    .name = "cuda",
    .log_needle = "cudaError", /* backend_cuda.c names the error (cudaGetErrorName) */
    .alloc = cuda_alloc,
    .free = cuda_free,
    .read = cuda_read,
    .hold = cuda_hold,
    .trap = cuda_trap,
    .load = weft_test_er_load,
};

/* The host test's twin (test_engine_gpu.c,
 * a_device_error_does_not_release_another_streams_running_work): one
 * reader, the trap on the second compute worker's stream. */
Test(cuda_faults, no_early_release_one_reader, .init = setup, .timeout = TU_TIMEOUT(60))
{
  er_result r = er_run(&cuda_backend, 1, ER_SPREAD);
  cr_assert_eq(r.early, 0, "%d buffers released early", r.early);
  cr_assert_eq(r.readers, 1, "%d of 1 writers ran once", r.readers);
  cr_assert_eq(r.wait_all_rc, WEFT_EDEVICE, "weft_wait_all = %d", r.wait_all_rc);
}

/* Four kernels reading at once, on four streams; the trap on a fifth. */
Test(cuda_faults, no_early_release_four_readers_a_stream_each, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  er_result r = er_run(&cuda_backend, 4, ER_SPREAD);
  cr_assert_eq(r.early, 0, "%d buffers released early", r.early);
  cr_assert_eq(r.readers, 4, "%d of 4 writers ran once", r.readers);
  cr_assert_eq(r.wait_all_rc, WEFT_EDEVICE, "weft_wait_all = %d", r.wait_all_rc);
}

/* Four readers queued on one stream (the first reading, three behind it);
 * the trap on the other. */
Test(cuda_faults, no_early_release_four_readers_on_one_stream, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  er_result r = er_run(&cuda_backend, 4, ER_ONE_STREAM);
  cr_assert_eq(r.early, 0, "%d buffers released early", r.early);
  cr_assert_eq(r.readers, 4, "%d of 4 writers ran once", r.readers);
  cr_assert_eq(r.wait_all_rc, WEFT_EDEVICE, "weft_wait_all = %d", r.wait_all_rc);
}

/* The watchdog (watchdog.h), the host suite's twin: a kernel spinning on
 * its host-mapped stop flag past WEFT_GPU_WATCHDOG_MS fails, but the CPU
 * writer of the buffer it reads runs only once the kernel ended, and
 * weft_var_wait on that var does not return 0 before. No device error: the
 * context stays usable, and engine destroy waits for the kernel's end. */
Test(cuda_faults, the_watchdog_keeps_a_held_readers_buffer_until_its_work_ends, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  wd_verdict v = wd_reader_keeps_its_buffer(&cuda_backend);
  cr_assert(v.writer_after_work, "the CPU writer ran while the device still used its buffer");
  cr_assert(v.wait_after_work, "weft_var_wait returned while the device still used the var");
  cr_assert_eq(v.held_status, WEFT_EDEVICE, "the held operator's var = %d", v.held_status);
}

/* The watchdog on one stream (WEFT_GPU_WORKERS=1): a kernel queued behind
 * one held past WEFT_GPU_WATCHDOG_MS reads its buffer before a CPU writer
 * pushed after it overwrites it. */
Test(cuda_faults, the_watchdog_keeps_the_buffers_of_work_queued_behind_until_it_ran,
     .init = setup, .timeout = TU_TIMEOUT(60))
{
  wd_verdict v = wd_stream_order_keeps_the_buffer(&cuda_backend);
  cr_assert(v.writer_after_work, "the CPU writer ran while the device still used its buffer");
  cr_assert(v.wait_after_work, "weft_var_wait returned while the device still used the var");
  cr_assert_eq(v.held_status, WEFT_EDEVICE, "the held operator's var = %d", v.held_status);
}

/* Stream capture (backend.h): a captured trapping kernel does not run at
 * the capture; the replay runs it, and an event recorded after the launch
 * reports the device error (WEFT_EDEVICE, with a log line naming it). The
 * backend alone, no engine. */
Test(cuda_faults, captured_trap_fails_the_replay, .init = setup, .timeout = TU_TIMEOUT(60))
{
  weft_gpu_backend_config cfg;
  weft_gpu_backend_config_default(&cfg);
  cfg.kind = WEFT_GPU_BACKEND_CUDA;
  weft_gpu_backend *b = NULL;
  cr_assert_eq(weft_gpu_backend_open(&b, &cfg), 0);
  cr_assert_gt(weft_gpu_device_count(b), 0);
  weft_gpu_stream *s = NULL;
  weft_gpu_event *e = NULL;
  cr_assert_eq(weft_gpu_stream_create(b, 0, &s), 0);
  cr_assert_eq(weft_gpu_event_create(b, 0, &e), 0);
  void *native = weft_gpu_stream_native(b, s);
  er_trap *t = cuda_alloc(sizeof *t);
  cr_assert_not_null(t);
  /* Loaded before the capture: lazy module loading would load it at its
   * first launch, inside the capture. */
  cr_assert_eq(weft_test_er_load(), 0, "loading the trapping kernel failed");

  cr_assert_eq(weft_gpu_capture_begin(b, s), 0);
  cr_assert_eq(cuda_trap(native, t), 0, "the trapping kernel was not captured");
  weft_gpu_graph *g = NULL;
  cr_assert_eq(weft_gpu_capture_end(b, s, &g), 0);
  cr_assert_not_null(g);
  cr_assert_eq(weft_gpu_stream_sync(b, s), 0, "the capture failed the device");
  cr_assert_eq(atomic_load(&t->ran), 0, "the captured kernel ran at the capture");

  tu_capture cap;
  char err[4096];
  tu_capture_begin(&cap);
  int launch = weft_gpu_graph_launch(b, g, s);
  int record = weft_gpu_event_record(b, e, s);
  int q = WEFT_GPU_EVENT_PENDING;
  bool settled = TU_WAIT_UNTIL((q = weft_gpu_event_query(b, e)) != WEFT_GPU_EVENT_PENDING,
                               TU_DEADLINE_S);
  tu_capture_end(&cap, err, sizeof err);
  cr_assert_eq(launch, 0, "graph_launch = %d", launch);
  cr_assert_eq(record, 0, "event_record = %d", record);
  cr_assert(settled, "the replay's event still pending after %.0f s", TU_DEADLINE_S);
  cr_assert_eq(q, WEFT_EDEVICE, "the replay's event = %d", q);
  cr_assert_eq(atomic_load(&t->ran), 1, "the replay did not run the captured kernel");
  cr_assert(tu_line_has_all(err, "weft: ", "cudaError", NULL),
            "no \"weft: \" line naming the CUDA error; stderr was \"%s\"", err);
  /* The context is lost (a sticky error): nothing more is freed, the
   * process (this test's own) ends next. */
}
