/* SPDX-License-Identifier: MIT */
/*
 * The priority queue: ready work that every worker takes before its own
 * deque (prioritized engine operators). A binary max-heap on (priority,
 * then first in first out) under a mutex, with an atomic count that lets
 * workers skip the lock while it is empty.
 */
#ifndef WEFT_POOL_PRIO_H
#define WEFT_POOL_PRIO_H
#include "pool/layer.h" /* layer guard: no include from a lower layer */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct weft_task;

typedef struct weft_prio_item {
  int priority;
  uint64_t seq;
  struct weft_task *task;
} weft_prio_item;

typedef struct weft_prio {
  pthread_mutex_t lock;
  weft_prio_item *heap; /* under lock */
  int64_t n, cap;       /* under lock */
  uint64_t seq;         /* under lock */
  _Atomic int64_t count; /* atomic: written under lock, read without */
} weft_prio;

int weft_prio_init(weft_prio *q);
void weft_prio_destroy(weft_prio *q);
/* Returns 0 or WEFT_ENOMEM. */
int weft_prio_push(weft_prio *q, struct weft_task *t, int priority);
/* The highest-priority task, or NULL. */
struct weft_task *weft_prio_pop(weft_prio *q);
static inline bool weft_prio_looks_empty(weft_prio *q)
{
  return atomic_load_explicit(&q->count, memory_order_relaxed) == 0;
}

#endif /* WEFT_POOL_PRIO_H */
