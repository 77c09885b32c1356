/* SPDX-License-Identifier: MIT */
/*
 * A doorbell: the wake-up of one service thread that sleeps on a condition
 * variable when it has nothing to do (a GPU stream worker, the GPU
 * completion thread), rung by any number of threads that hand it work
 * through a queue of their own (gpu/mpsc.h). A ring costs no lock
 * unless the service thread is parked, and no ring is ever lost.
 *
 * The protocol (a Dekker handshake; all four accesses seq_cst):
 *
 *   ringer                                 sleeper (holding lock)
 *   publish the work (its queue)           seen = weft_doorbell_seen()   (before its sweep)
 *   rings += 1        (weft_doorbell_ring) ... finds nothing ...
 *   if parked: lock, signal cond, unlock   parked = 1                    (weft_doorbell_arm)
 *                                          while rings == seen: wait cond (weft_doorbell_rung)
 *                                          parked = 0                    (weft_doorbell_disarm)
 *
 * In every interleaving one side sees the other's write: either the sleeper
 * reads the new rings and does not wait, or the ringer reads parked = 1 and
 * signals under the lock, which the sleeper holds from before its store
 * until the wait releases it (so the signal cannot fall between its check
 * and its wait). A ringer that reads parked = 0 late costs one needless
 * signal at most. tests/reliability/rl_doorbell.cpp model-checks it, with
 * mutants for each order.
 *
 * Field         | written by                    | read by
 * --------------|-------------------------------|------------------------
 * rings         | ringers (seq_cst add)         | the sleeper (seq_cst load)
 * parked        | the sleeper (seq_cst store 1, | ringers (seq_cst load)
 *               | relaxed store 0)              |
 *
 * The lock and the condition variable stay the caller's: the sleeper's
 * wait also ends for reasons of its own (a stop, a timeout, a waiter's
 * return), each checked under the same lock. The pool's workers do not use
 * this: many of them sleep at once, each waking the next, on a futex
 * eventcount (pool/park.h); MPI's progress thread is handed its jobs in a
 * list under its lock (mpi/progress.c), so a flag would save nothing there.
 *
 * Every access is an atomic operation on one of the two words (no
 * standalone fence), so ThreadSanitizer models the protocol as it is.
 */
#ifndef WEFT_COMMON_DOORBELL_H
#define WEFT_COMMON_DOORBELL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

typedef struct weft_doorbell {
  _Atomic unsigned long rings; /* atomic: rings ever (see the table above) */
  _Atomic int parked;          /* atomic: 1 while the sleeper waits on its cond */
} weft_doorbell;

static inline void weft_doorbell_init(weft_doorbell *d)
{
  atomic_init(&d->rings, 0);
  atomic_init(&d->parked, 0);
}

/* A ringer, after publishing its work: wakes the sleeper if it is parked
 * (signals cond under lock). seq_cst: the add publishes the work (it is a
 * release) and, with the load of parked, is the ringer's half of the
 * handshake. */
static inline void weft_doorbell_ring(weft_doorbell *d, pthread_mutex_t *lock, pthread_cond_t *cond)
{
  atomic_fetch_add_explicit(&d->rings, 1, memory_order_seq_cst);
  if (atomic_load_explicit(&d->parked, memory_order_seq_cst)) {
    pthread_mutex_lock(lock);
    pthread_cond_signal(cond);
    pthread_mutex_unlock(lock);
  }
}

/* The sleeper, before it looks for work: the count a later park compares
 * against. seq_cst: a ring after this load is found by the next sweep or
 * ends the park; acquire-wise it also makes the rung work visible. */
static inline unsigned long weft_doorbell_seen(weft_doorbell *d)
{
  return atomic_load_explicit(&d->rings, memory_order_seq_cst);
}

/* The sleeper, holding lock, before its wait loop: from here on a ringer
 * signals. seq_cst: the sleeper's half of the handshake. */
static inline void weft_doorbell_arm(weft_doorbell *d)
{
  atomic_store_explicit(&d->parked, 1, memory_order_seq_cst);
}

/* The sleeper's wait condition, checked under lock after arming: whether a
 * ring came after seen. seq_cst: pairs with the ringer's add (handshake). */
static inline bool weft_doorbell_rung(weft_doorbell *d, unsigned long seen)
{
  return atomic_load_explicit(&d->rings, memory_order_seq_cst) != seen;
}

/* The sleeper, after its wait loop (still holding lock or not). relaxed: a
 * hint to ringers only; a ringer that still reads 1 signals once for
 * nothing. */
static inline void weft_doorbell_disarm(weft_doorbell *d)
{
  atomic_store_explicit(&d->parked, 0, memory_order_relaxed);
}

#endif /* WEFT_COMMON_DOORBELL_H */
