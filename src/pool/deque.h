/* SPDX-License-Identifier: MIT */
/*
 * Chase-Lev work-stealing deque (Le, Pop, Cohen, Zappa Nardelli, PPoPP 2013),
 * with the fixes real implementations need:
 *  - signed 64-bit top/bottom, never reset (no ABA, no unsigned wrap);
 *  - _Atomic slots (a thief may read a slot the owner is overwriting; the
 *    thief's CAS on top then fails and the torn value is never used);
 *  - push re-reads the array after growing; the grown array is published with
 *    release and thieves load it with acquire;
 *  - replaced arrays are retired to a list and freed only by destroy, since a
 *    thief may still be reading one;
 *  - a lost race in steal is reported as WEFT_STEAL_RETRY, never as empty.
 *
 * Concurrency contract: push/take by the owner thread only; steal by any
 * thread, concurrently with the owner and with other thieves.
 */
#ifndef WEFT_POOL_DEQUE_H
#define WEFT_POOL_DEQUE_H
#include "pool/layer.h" /* layer guard: no include from a lower layer */

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct weft_deque_array {
  int64_t mask;                       /* capacity - 1; immutable once published */
  struct weft_deque_array *retired;   /* owner only: chain of replaced arrays */
  _Atomic(void *) slot[];             /* atomic: written by owner, read by thieves */
} weft_deque_array;

typedef struct weft_deque {
  /* Thieves' end. atomic: CASed by thieves and by the owner on the last item. */
  _Alignas(64) _Atomic int64_t top;
  /* Owner's end. atomic: written by the owner only, read by thieves. */
  _Alignas(64) _Atomic int64_t bottom;
  /* Owner only: a value top had (top only grows), so that a push reads the
   * thieves' line only when the array may be full. */
  int64_t top_seen;
  /* atomic: replaced by the owner only (release), loaded by thieves (acquire). */
  _Atomic(weft_deque_array *) array;
  weft_deque_array *retired; /* owner only (and destroy): arrays to free at destroy */
} weft_deque;

typedef enum {
  WEFT_STEAL_OK = 0,    /* *out holds the stolen item */
  WEFT_STEAL_EMPTY = 1, /* the deque was empty */
  WEFT_STEAL_RETRY = 2  /* lost a race with the owner or another thief: not empty */
} weft_steal_result;

/* capacity: a power of two >= 2. Returns 0 or WEFT_ENOMEM. */
int weft_deque_init(weft_deque *dq, int64_t capacity);
/* Frees the array and every retired one. No concurrent access allowed. */
void weft_deque_destroy(weft_deque *dq);
/* Owner only. Returns 0, or WEFT_ENOMEM when growing failed (item not pushed). */
int weft_deque_push(weft_deque *dq, void *item);
/* Owner only. The newest item, or NULL when empty. */
void *weft_deque_take(weft_deque *dq);
/* Any thread. The oldest item into *out on WEFT_STEAL_OK. */
weft_steal_result weft_deque_steal(weft_deque *dq, void **out);
/* Any thread; a hint (may be stale by the time it returns). */
static inline bool weft_deque_looks_empty(weft_deque *dq)
{
  int64_t t = atomic_load_explicit(&dq->top, memory_order_relaxed);
  int64_t b = atomic_load_explicit(&dq->bottom, memory_order_relaxed);
  return b <= t;
}

#endif /* WEFT_POOL_DEQUE_H */
