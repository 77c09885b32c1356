/* SPDX-License-Identifier: MIT */
/*
 * pthreadpool_create / _destroy / _get_threads_count on a weft pool.
 *
 * Destroy during a call. pthreadpool leaves it undefined; here the pool
 * outlives the calls under way: destroy sets bit 0 of `state`, and the
 * pool is freed by whichever of destroy and the last call's ptp_leave
 * finds the state at exactly "destroyed, no call" (one of them does, once).
 * A call made after destroy returned is the caller's use after free, as
 * with any handle.
 */
#include "compat/pthreadpool/pool.h"

#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "compat/pthreadpool/abi.h"
#include "compat/pthreadpool/crew.h"

#define PTP_DESTROYED UINT64_C(1)
#define PTP_ONE_CALL UINT64_C(2)

void ptp_complain(const char *who, const char *fmt, ...)
{
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "pthreadpool (weft): %s: %s\n", who, msg);
}

static void free_pool(struct pthreadpool *tp)
{
  /* relaxed: a request; weft_pool_destroy waits for the members anyway. */
  atomic_store_explicit(&tp->linger_off, true, memory_order_relaxed);
  if (tp->workers) {
    int rc = weft_pool_destroy(tp->workers);
    if (rc)
      ptp_complain("pthreadpool_destroy", "weft_pool_destroy returned %d", rc);
  }
  pthread_mutex_destroy(&tp->call_lock);
  free(tp->slots);
  free(tp);
}

void ptp_enter(struct pthreadpool *tp)
{
  /* relaxed: a count; call_lock orders the calls, and destroy's fetch_or
   * (acq_rel) reads every registration made before it. */
  atomic_fetch_add_explicit(&tp->state, PTP_ONE_CALL, memory_order_relaxed);
}

void ptp_leave(struct pthreadpool *tp)
{
  /* acq_rel: release publishes this call's use of the pool to whichever
   * thread frees it; acquire, when this one frees, pairs with destroy's. */
  uint64_t old = atomic_fetch_sub_explicit(&tp->state, PTP_ONE_CALL, memory_order_acq_rel);
  if (old == (PTP_ONE_CALL | PTP_DESTROYED))
    free_pool(tp);
}

pthreadpool_t pthreadpool_create(size_t threads_count)
{
  int n;
  if (threads_count == 0) {
    n = weft_pool_default_threads(); /* WEFT_NUM_THREADS, else the CPUs */
    if (n < 0) {
      ptp_complain("pthreadpool_create", "weft_pool_default_threads returned %d", n);
      return NULL;
    }
  } else if (threads_count > INT_MAX) {
    ptp_complain("pthreadpool_create", "%zu threads: too many", threads_count);
    return NULL;
  } else { /* weft_pool_create refuses more workers than weft's limit */
    n = (int)threads_count;
  }
  struct pthreadpool *tp = calloc(1, sizeof *tp);
  if (!tp)
    return NULL;
  if (pthread_mutex_init(&tp->call_lock, NULL)) {
    free(tp);
    return NULL;
  }
  atomic_init(&tp->state, 0);
  atomic_init(&tp->crew, PTP_CREW_CLOSED);
  atomic_init(&tp->queued, 0);
  atomic_init(&tp->lingering, 0);
  atomic_init(&tp->gen, 0);
  atomic_init(&tp->linger_off, false);
  atomic_init(&tp->caller_cpu, -1);
  atomic_init(&tp->moved_ns, INT64_MIN / 2);
  tp->threads = (size_t)n;
  cpu_set_t cpus;
  tp->oversubscribed =
      sched_getaffinity(0, sizeof cpus, &cpus) == 0 && (size_t)CPU_COUNT(&cpus) < tp->threads;
  if (n > 1) {
    tp->slots = aligned_alloc(_Alignof(ptp_slot), sizeof(ptp_slot) * (size_t)n);
    if (!tp->slots) {
      free_pool(tp); /* no workers yet: the lock and the memory */
      return NULL;
    }
    weft_pool_config cfg;
    weft_pool_config_default(&cfg); /* spin count, affinity: weft's env vars */
    cfg.num_threads = n - 1;        /* the caller is the n-th thread */
    cfg.name = "pthreadpool";
    int rc = weft_pool_create(&tp->workers, &cfg);
    if (rc) {
      ptp_complain("pthreadpool_create", "weft_pool_create returned %d", rc);
      tp->workers = NULL; /* weft_pool_create leaves nothing behind on failure */
      free_pool(tp);
      return NULL;
    }
  }
  return tp;
}

size_t pthreadpool_get_threads_count(pthreadpool_t tp)
{
  return tp ? tp->threads : 1;
}

void pthreadpool_destroy(pthreadpool_t tp)
{
  if (!tp)
    return;
  /* acq_rel: acquire reads every call's registration and, when no call is
   * left, their release in ptp_leave; release hands the pool to the last
   * ptp_leave otherwise. */
  uint64_t old = atomic_fetch_or_explicit(&tp->state, PTP_DESTROYED, memory_order_acq_rel);
  if (old & PTP_DESTROYED) {
    ptp_complain("pthreadpool_destroy", "pool %p destroyed twice (ignored)", (void *)tp);
    return;
  }
  if (old != 0) {
    ptp_complain("pthreadpool_destroy",
                 "pool %p destroyed while %llu parallelize calls use it: "
                 "freed when the last returns",
                 (void *)tp, (unsigned long long)(old / PTP_ONE_CALL));
    return;
  }
  free_pool(tp);
}
