/*
 * Bug B1's scenario (b1.h) on the host backend's emulated device: the same
 * code as the CUDA fault suite (test_cuda_faults.c), so that it runs on
 * every machine, not only where a GPU is lent. A reader is a host function
 * on its stream that reads the canary every 100 us for HOST_READ_S; the
 * failing work sets its flag, then the stream fails (an injected error).
 * Unlike CUDA, the host backend's error stops only its own stream: the
 * readers of the other streams read to the end, and their writers wait.
 */
#include "b1.h"
#include "gpu/host.h"

#define HOST_READ_S 0.3

static void setup(void)
{
  te_clear_env();
  setenv("WEFT_GPU_HOST_DEVICES", "1", 1);
}

static void *host_alloc(size_t bytes)
{
  return calloc(1, bytes);
}

static void host_read_item(void *arg)
{
  b1_reader *r = arg;
  double end = tu_now() + HOST_READ_S * WEFT_TEST_TIMEOUT_MULT;
  unsigned long long beats = 0;
  atomic_store(&r->started, 1);
  for (;;) {
    int c = atomic_load(&r->canary);
    beats++;
    if (c != B1_CANARY && atomic_fetch_add(&r->bad, 1) == 0)
      atomic_store(&r->first_bad, beats);
    atomic_store(&r->beats, beats);
    if (atomic_load(&r->stop) || tu_now() > end)
      break;
    tu_sleep_us(100);
  }
  atomic_store(&r->finished, 1);
}

static int host_read(void *stream, b1_reader *r)
{
  return weft_gpu_host_enqueue(stream, host_read_item, r);
}

static void host_trap_item(void *arg)
{
  atomic_store(&((b1_trap *)arg)->ran, 1);
}

static int host_trap(void *stream, b1_trap *t)
{
  int rc = weft_gpu_host_enqueue(stream, host_trap_item, t);
  return rc ? rc : weft_gpu_host_test_inject_error(stream);
}

static const b1_backend host_backend = {
    .name = "host",
    .log_needle = "device error",
    .alloc = host_alloc,
    .free = free,
    .read = host_read,
    .trap = host_trap,
};

Test(host_faults, b1_one_reader, .init = setup, .timeout = TU_TIMEOUT(60))
{
  b1_result r = b1_run(&host_backend, 1, B1_SPREAD);
  cr_assert_eq(r.early, 0, "%d buffers released early", r.early);
  cr_assert_eq(r.readers, 1, "%d of 1 writers ran once", r.readers);
  cr_assert_eq(r.wait_all_rc, WEFT_EDEVICE, "weft_wait_all = %d", r.wait_all_rc);
}

Test(host_faults, b1_four_readers_a_stream_each, .init = setup, .timeout = TU_TIMEOUT(60))
{
  b1_result r = b1_run(&host_backend, 4, B1_SPREAD);
  cr_assert_eq(r.early, 0, "%d buffers released early", r.early);
  cr_assert_eq(r.readers, 4, "%d of 4 writers ran once", r.readers);
  cr_assert_eq(r.wait_all_rc, WEFT_EDEVICE, "weft_wait_all = %d", r.wait_all_rc);
}

Test(host_faults, b1_four_readers_on_one_stream, .init = setup, .timeout = TU_TIMEOUT(60))
{
  b1_result r = b1_run(&host_backend, 4, B1_ONE_STREAM);
  cr_assert_eq(r.early, 0, "%d buffers released early", r.early);
  cr_assert_eq(r.readers, 4, "%d of 4 writers ran once", r.readers);
  cr_assert_eq(r.wait_all_rc, WEFT_EDEVICE, "weft_wait_all = %d", r.wait_all_rc);
}
