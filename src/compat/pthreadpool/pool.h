/* SPDX-License-Identifier: MIT */
/*
 * The pthreadpool object (pool.c) and the call path (call.c).
 *
 * A pool of T threads is the caller plus a weft pool of T - 1 workers
 * (none when T is 1: every call then runs on the caller). Calls on one pool
 * are serialized, as pthreadpool documents; a call from inside a call's
 * function on the same pool runs serially on that thread.
 *
 * A call splits its items into T slots (grid.h), one per member: the
 * caller is member 0, and the workers that run the call's member tasks
 * join it as members 1..T-1 (crew.h). A member takes its own slot's items
 * from the front, one at a time, then halves of the other slots' from the
 * back. Items are claimed one by one, so an item that blocks until the
 * others are done (pthreadpool's tests have one) holds only itself: every
 * other item stays free for whoever is running.
 */
#ifndef PTP_POOL_H
#define PTP_POOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compat/pthreadpool/grid.h"
#include "weft/weft.h"

struct pthreadpool {
  weft_pool *workers;         /* immutable; NULL when threads is 1 */
  size_t threads;             /* immutable: the caller included */
  /* immutable: more threads than CPUs this process may use at create; a
   * spinning thread then yields its CPU now and then (call.c). */
  bool oversubscribed;
  pthread_mutex_t call_lock;  /* held by the thread whose parallel call runs */
  /* atomic: parallel calls under way (or waiting for call_lock) << 1, plus
   * bit 0 once pthreadpool_destroy was called; whoever brings it to exactly
   * 1 frees the pool (pool.c). */
  _Atomic uint64_t state;
  ptp_slot *slots;            /* threads of them; under call_lock */
  const struct ptp_call *call; /* the call under way: written before the
                                  crew opens, read by its members (crew.h) */
  /* atomic: the call's crew (crew.h). */
  _Alignas(64) _Atomic uint32_t crew;
  /* atomic, relaxed: member tasks submitted and not started yet, and those
   * lingering after a call for the next (call.c); the caller submits only as
   * many as the call can use beyond both. */
  _Atomic int queued, lingering;
  /* atomic, relaxed: bumped by the caller before each open, so that a
   * lingering member can tell a new call from the one it served. */
  _Atomic uint32_t gen;
  /* atomic, relaxed: lingering members leave at once (YIELD_WORKERS, destroy). */
  _Atomic bool linger_off;
  /* atomic, relaxed: the CPU the caller ran on at the last open (-1 before
   * any); a member on that CPU moves off it, or yields (call.c). */
  _Atomic int caller_cpu;
  /* atomic, relaxed: when a member last moved off the caller's CPU (call.c). */
  _Atomic int64_t moved_ns;
};

/* The flags this library knows (abi.h); others are reported once. */
#define PTP_KNOWN_FLAGS (PTHREADPOOL_FLAG_DISABLE_DENORMALS | PTHREADPOOL_FLAG_YIELD_WORKERS)

/* A parallel call's registration: destroy waits for it (by deferring the
 * free to ptp_leave). */
void ptp_enter(struct pthreadpool *tp);
void ptp_leave(struct pthreadpool *tp);

/* Runs the grid on tp (NULL: on the caller). `who` names the API function
 * in messages. Every tile runs exactly once before this returns. */
void ptp_run(struct pthreadpool *tp, ptp_grid *g, const char *who);

/* One line on stderr: "pthreadpool (weft): <who>: <what>". */
void ptp_complain(const char *who, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* PTP_POOL_H */
