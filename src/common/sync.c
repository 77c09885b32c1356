/* SPDX-License-Identifier: MIT */
#include "common/sync.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/fork.h"

_Bool weft_membarrier_ok_;
static pthread_once_t membarrier_once = PTHREAD_ONCE_INIT;

static bool membarrier_register(void)
{
#if WEFT_TSAN
  return false; /* both sides fence: see sync.h */
#else
  return syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#endif
}

/* Registration is per process: a fork child registers again. */
static void membarrier_fork_child(void)
{
  if (weft_membarrier_ok_)
    weft_membarrier_ok_ = membarrier_register();
}

static void membarrier_fork_prepare(void)
{
}

static void membarrier_init(void)
{
  weft_membarrier_ok_ = membarrier_register();
  /* a prepare of its own: the child handler runs only after one */
  weft_fork_register(WEFT_FORK_MEMBARRIER, membarrier_fork_prepare, NULL, membarrier_fork_child);
}

void weft_membarrier_setup(void)
{
  pthread_once(&membarrier_once, membarrier_init);
}

void weft_fence_heavy(_Atomic int64_t *word)
{
  if (!weft_membarrier_ok_) {
    weft_fence_sc(word);
    return;
  }
  atomic_thread_fence(memory_order_seq_cst); /* this thread's own side */
  if (syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
    /* A kernel that accepted the registration refused the barrier: going
     * on could lose a wake-up or free what another thread still uses. */
    fprintf(stderr, "weft: membarrier(PRIVATE_EXPEDITED) failed after registration\n");
    abort();
  }
}

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
