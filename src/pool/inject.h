/*
 * The injection queue: where threads that own no deque (non-worker threads,
 * and threads helping from outside the pool) put work. MPMC, FIFO.
 *
 * A spinlock-protected intrusive FIFO (common/fifo.h, through
 * weft_task.link): the critical sections are a few pointer stores, and a
 * user's thread pushing operators may hand every one of them to the
 * workers this way, so contention must cost a spin, not a futex sleep (a
 * mutex here spent a third of that mode's time in lock waits and wakes).
 * Workers look at the atomic count before taking the lock, so an empty
 * queue costs them one shared load.
 */
#ifndef WEFT_POOL_INJECT_H
#define WEFT_POOL_INJECT_H
#include "pool/layer.h" /* layer guard: no include from a lower layer */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/fifo.h"
#include "common/spinlock.h"

struct weft_task;

typedef struct weft_inject {
  weft_spinlock lock;
  weft_fifo tasks;       /* under lock: weft_task.link, oldest first */
  _Atomic int64_t count; /* atomic: written under lock (the length of tasks), read without */
} weft_inject;

int weft_inject_init(weft_inject *q);
void weft_inject_destroy(weft_inject *q);
void weft_inject_push(weft_inject *q, struct weft_task *t);
/* NULL when empty. */
struct weft_task *weft_inject_pop(weft_inject *q);
/* Takes up to max of the oldest tasks under one lock, oldest first, into
 * out; returns how many (0 when empty). */
int weft_inject_pop_batch(weft_inject *q, struct weft_task **out, int max);
static inline bool weft_inject_looks_empty(weft_inject *q)
{
  return atomic_load_explicit(&q->count, memory_order_relaxed) == 0;
}

#endif /* WEFT_POOL_INJECT_H */
