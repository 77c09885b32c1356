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

int64_t weft_spin_until(int64_t deadline_ns)
{
  for (;;) {
    int64_t now = weft_now_ns();
    if (now >= deadline_ns)
      return now;
    for (int i = 0; i < 8; i++)
      weft_cpu_pause();
  }
}
