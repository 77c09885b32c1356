#include "common/sync.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

void weft_futex_wait(_Atomic uint32_t *word, uint32_t expected, int64_t timeout_ns)
{
  struct timespec ts, *tsp = NULL;
  if (timeout_ns >= 0) {
    ts.tv_sec = (time_t)(timeout_ns / 1000000000);
    ts.tv_nsec = (long)(timeout_ns % 1000000000);
    tsp = &ts;
  }
  /* EAGAIN (value changed), EINTR and ETIMEDOUT all just return: every caller
   * re-checks its condition in a loop. */
  (void)syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, expected, tsp, NULL, 0);
}

void weft_futex_wake(_Atomic uint32_t *word, int n)
{
  (void)syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

int64_t weft_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static _Atomic uint32_t pauses_per_us;

uint32_t weft_pauses_per_us(void)
{
  uint32_t v = atomic_load_explicit(&pauses_per_us, memory_order_relaxed);
  if (v)
    return v;
  /* Best of three short measurements; racing calibrations are harmless. */
  int64_t best = INT64_MAX;
  const int n = 2000;
  for (int rep = 0; rep < 3; rep++) {
    int64_t t0 = weft_now_ns();
    for (int i = 0; i < n; i++)
      weft_cpu_pause();
    int64_t dt = weft_now_ns() - t0;
    if (dt < best)
      best = dt;
  }
  if (best < 1)
    best = 1;
  int64_t per_us = (int64_t)n * 1000 / best;
  v = per_us < 1 ? 1 : per_us > 100000 ? 100000 : (uint32_t)per_us;
  atomic_store_explicit(&pauses_per_us, v, memory_order_relaxed);
  return v;
}
