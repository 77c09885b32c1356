/* SPDX-License-Identifier: MIT */
/*
 * A test-and-test-and-set spinlock for critical sections of a few dozen
 * instructions (a var queue's append or completion). Not fair; never held
 * across a call that can block.
 */
#ifndef WEFT_COMMON_SPINLOCK_H
#define WEFT_COMMON_SPINLOCK_H

#include <stdatomic.h>

#include "common/sync.h"

typedef struct weft_spinlock {
  _Atomic int locked; /* atomic: 1 while held */
} weft_spinlock;

static inline void weft_spin_init(weft_spinlock *l)
{
  atomic_init(&l->locked, 0);
}

static inline void weft_spin_lock(weft_spinlock *l)
{
  for (unsigned spins = 0;;) {
    /* acquire: pairs with the release in unlock (the protected data). */
    if (!atomic_exchange_explicit(&l->locked, 1, memory_order_acquire))
      return;
    while (atomic_load_explicit(&l->locked, memory_order_relaxed))
      weft_spin_step(&spins, 255); /* then yields: the holder was preempted */
  }
}

static inline void weft_spin_unlock(weft_spinlock *l)
{
  /* release: publishes the protected data to the next holder. */
  atomic_store_explicit(&l->locked, 0, memory_order_release);
}

#endif /* WEFT_COMMON_SPINLOCK_H */
