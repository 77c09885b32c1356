/* SPDX-License-Identifier: MIT */
/*
 * Early release after a device error (early_release.h) and the watchdog's
 * (watchdog.h) on the host backend's emulated device: the same code as the
 * CUDA fault suite (test_cuda_faults.c), so that it runs on every machine,
 * not only on one with a GPU. A reader is a host function on its stream that reads the
 * canary every 100 us for HOST_READ_S (a held one: until its stop flag);
 * the failing work sets its flag, then the stream fails (an injected
 * error). Unlike CUDA, the host backend's error stops only its own stream:
 * the readers of the other streams read to the end, and their writers wait.
 */
#include "early_release.h"
#include "gpu/host.h"
#include "watchdog.h"

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

/* Reads r's canary until r->stop or for seconds. */
static void host_read_for(er_reader *r, double seconds)
{
  double end = tu_now() + seconds;
  unsigned long long beats = 0;
  atomic_store(&r->started, 1);
  for (;;) {
    int c = atomic_load(&r->canary);
    beats++;
    if (c != ER_CANARY && atomic_fetch_add(&r->bad, 1) == 0)
      atomic_store(&r->first_bad, beats);
    atomic_store(&r->beats, beats);
    if (atomic_load(&r->stop) || tu_now() > end)
      break;
    tu_sleep_us(100);
  }
  atomic_store(&r->finished, 1);
}

static void host_read_item(void *arg)
{
  host_read_for(arg, HOST_READ_S * WEFT_TEST_TIMEOUT_MULT);
}

static int host_read(void *stream, er_reader *r)
{
  return weft_gpu_host_enqueue(stream, host_read_item, r);
}

static void host_hold_item(void *arg)
{
  er_reader *r = arg;
  host_read_for(r, TU_DEADLINE_S);
  TU_CHECK(atomic_load(&r->stop), "a held reader was never stopped (%.0f s)", TU_DEADLINE_S);
}

static int host_hold(void *stream, er_reader *r)
{
  return weft_gpu_host_enqueue(stream, host_hold_item, r);
}

static void host_trap_item(void *arg)
{
  atomic_store(&((er_trap *)arg)->ran, 1);
}

static int host_trap(void *stream, er_trap *t)
{
  int rc = weft_gpu_host_enqueue(stream, host_trap_item, t);
  return rc ? rc : weft_gpu_host_test_inject_error(stream);
}

static const er_backend host_backend = {
    .name = "host",
    .log_needle = "device error",
    .alloc = host_alloc,
    .free = free,
    .read = host_read,
    .hold = host_hold,
    .trap = host_trap,
};

Test(host_faults, no_early_release_one_reader, .init = setup, .timeout = TU_TIMEOUT(60))
{
  er_result r = er_run(&host_backend, 1, ER_SPREAD);
  cr_assert_eq(r.early, 0, "%d buffers released early", r.early);
  cr_assert_eq(r.readers, 1, "%d of 1 writers ran once", r.readers);
  cr_assert_eq(r.wait_all_rc, WEFT_EDEVICE, "weft_wait_all = %d", r.wait_all_rc);
}

Test(host_faults, no_early_release_four_readers_a_stream_each, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  er_result r = er_run(&host_backend, 4, ER_SPREAD);
  cr_assert_eq(r.early, 0, "%d buffers released early", r.early);
  cr_assert_eq(r.readers, 4, "%d of 4 writers ran once", r.readers);
  cr_assert_eq(r.wait_all_rc, WEFT_EDEVICE, "weft_wait_all = %d", r.wait_all_rc);
}

Test(host_faults, no_early_release_four_readers_on_one_stream, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  er_result r = er_run(&host_backend, 4, ER_ONE_STREAM);
  cr_assert_eq(r.early, 0, "%d buffers released early", r.early);
  cr_assert_eq(r.readers, 4, "%d of 4 writers ran once", r.readers);
  cr_assert_eq(r.wait_all_rc, WEFT_EDEVICE, "weft_wait_all = %d", r.wait_all_rc);
}

/* The watchdog (watchdog.h): work held past WEFT_GPU_WATCHDOG_MS fails, but
 * the CPU writer of the var it reads runs only once that work ended, and
 * weft_var_wait on the var does not return 0 before. */
Test(host_faults, the_watchdog_keeps_a_held_readers_buffer_until_its_work_ends, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  wd_verdict v = wd_reader_keeps_its_buffer(&host_backend);
  cr_assert(v.writer_after_work, "the CPU writer ran while the device still used its buffer");
  cr_assert(v.wait_after_work, "weft_var_wait returned while the device still used the var");
  cr_assert_eq(v.held_status, WEFT_EDEVICE, "the held operator's var = %d", v.held_status);
}

/* The watchdog (watchdog.h): on one stream, a reader queued behind work
 * held past WEFT_GPU_WATCHDOG_MS keeps its buffer until its own work ran,
 * so a CPU writer pushed after it runs after it. */
Test(host_faults, the_watchdog_keeps_the_buffers_of_work_queued_behind_until_it_ran,
     .init = setup, .timeout = TU_TIMEOUT(60))
{
  wd_verdict v = wd_stream_order_keeps_the_buffer(&host_backend);
  cr_assert(v.writer_after_work, "the CPU writer ran while the device still used its buffer");
  cr_assert(v.wait_after_work, "weft_var_wait returned while the device still used the var");
  cr_assert_eq(v.held_status, WEFT_EDEVICE, "the held operator's var = %d", v.held_status);
}
