/* SPDX-License-Identifier: MIT */
/*
 * The crew word (crew.h): join, leave, close and wait. Members are the
 * only ones who sleep nowhere; the caller sleeps on the word (futex) once
 * a spin of PTP_JOIN_SPIN_NS found members still inside, and the last one
 * to leave a closed crew wakes it.
 */
#include "compat/pthreadpool/crew.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "compat/pthreadpool/pool.h"

void ptp_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

int64_t ptp_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

bool ptp_move_off_cpu(int cpu)
{
  cpu_set_t set, other;
  if (cpu < 0 || cpu >= CPU_SETSIZE || sched_getaffinity(0, sizeof set, &set) != 0 ||
      !CPU_ISSET(cpu, &set) || CPU_COUNT(&set) < 2)
    return false;
  other = set;
  CPU_CLR(cpu, &other);
  if (sched_setaffinity(0, sizeof other, &other) != 0)
    return false;
  (void)sched_setaffinity(0, sizeof set, &set); /* a subset set a moment ago: cannot fail */
  return true;
}

void ptp_crew_open(struct pthreadpool *tp)
{
  /* release: publishes tp->call and the slots to the joiners; pairs with
   * the acquire CAS in ptp_crew_join. */
  atomic_store_explicit(&tp->crew, 0, memory_order_release);
}

unsigned ptp_crew_join(struct pthreadpool *tp)
{
  /* acquire: as the CAS below. */
  uint32_t s = atomic_load_explicit(&tp->crew, memory_order_acquire);
  for (;;) {
    if ((s & PTP_CREW_CLOSED) || ((s >> 16) & PTP_CREW_MAX) == PTP_CREW_MAX)
      return 0;
    /* acquire: the call the caller published with the open (release). */
    if (atomic_compare_exchange_weak_explicit(&tp->crew, &s, s + PTP_CREW_JOINED_ONE + 1,
                                              memory_order_acquire, memory_order_acquire))
      return ((s >> 16) & PTP_CREW_MAX) + 1;
  }
}

void ptp_crew_leave(struct pthreadpool *tp)
{
  /* release: the member's items and their effects, to the caller's acquire
   * load in ptp_crew_close_and_wait. */
  uint32_t old = atomic_fetch_sub_explicit(&tp->crew, 1, memory_order_release);
  if ((old & 0xffffu) == 1 && (old & PTP_CREW_CLOSED))
    syscall(SYS_futex, (uint32_t *)&tp->crew, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void ptp_crew_close_and_wait(struct pthreadpool *tp)
{
  /* acq_rel: no join after this (the joiners' CAS reads it). */
  uint32_t s = atomic_fetch_or_explicit(&tp->crew, PTP_CREW_CLOSED, memory_order_acq_rel);
  s |= PTP_CREW_CLOSED;
  if ((s & 0xffffu) == 0)
    return;
  int64_t deadline = ptp_now_ns() + PTP_JOIN_SPIN_NS;
  unsigned spins = 0;
  /* acquire: pairs with the members' release in ptp_crew_leave. */
  while (((s = atomic_load_explicit(&tp->crew, memory_order_acquire)) & 0xffffu) != 0) {
    if ((++spins & 63) != 0 || ptp_now_ns() < deadline) {
      ptp_cpu_relax();
      continue;
    }
    /* The last member to leave wakes us once it sees the closed bit. */
    syscall(SYS_futex, (uint32_t *)&tp->crew, FUTEX_WAIT_PRIVATE, s, NULL, NULL, 0);
  }
}
