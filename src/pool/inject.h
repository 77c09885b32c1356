/*
 * The injection queue: where threads that own no deque (non-worker threads,
 * and threads helping from outside the pool) put work. MPMC, FIFO.
 *
 * Under a spinlock: the critical sections are a few stores, and a user's
 * thread pushing operators may hand every one of them to the workers this
 * way, so contention must cost a spin, not a futex sleep (a mutex here
 * spent a third of that mode's time in lock waits and wakes). The tasks sit
 * in a ring of pointers (WEFT_INJECT_RING, inside the pool's block) while
 * it has room, and beyond it in an intrusive FIFO (common/fifo.h, through
 * weft_task.link), so a push never needs memory. The ring is what makes a
 * worker's batch cheap: it reads a batch's pointers from a few contiguous
 * lines and can fetch all their tasks at once, where walking the list
 * waits for one task's line after another (each written on the pusher's
 * core) while holding the lock. Workers look at the atomic count before
 * taking the lock, so an empty queue costs them one shared load.
 */
#ifndef WEFT_POOL_INJECT_H
#define WEFT_POOL_INJECT_H
#include "pool/layer.h" /* layer guard: no include from a lower layer */

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/fifo.h"
#include "common/spinlock.h"
#include "common/tunables.h"

struct weft_task;

typedef struct weft_inject {
  weft_spinlock lock;
  uint32_t head, tail;   /* under lock: ring positions (free-running), oldest at head */
  /* under lock: tasks pushed while the ring was full, oldest first; while
   * it holds any, every push goes here too (newer than the whole ring) */
  weft_fifo overflow;
  _Atomic int64_t count; /* atomic: written under lock (tasks queued), read without */
  _Alignas(64) struct weft_task *ring[WEFT_INJECT_RING]; /* under lock */
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
