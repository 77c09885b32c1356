/* SPDX-License-Identifier: MIT */
/*
 * Chase-Lev deque; see deque.h for the contract. The memory orders follow
 * Le et al. (PPoPP 2013), figure 1, with release/acquire on the array pointer
 * and on bottom instead of standalone release fences.
 */
#include "pool/deque.h"

#include "common/alloc.h"
#include "common/assert.h"
#include "common/sync.h"
#include "weft/weft.h"

static weft_deque_array *array_new(int64_t capacity)
{
  weft_deque_array *a = weft_malloc(sizeof *a + (size_t)capacity * sizeof(_Atomic(void *)));
  if (!a)
    return NULL;
  a->mask = capacity - 1;
  a->retired = NULL;
  for (int64_t i = 0; i < capacity; i++)
    atomic_init(&a->slot[i], NULL);
  return a;
}

int weft_deque_init(weft_deque *dq, int64_t capacity)
{
  if (capacity < 2 || (capacity & (capacity - 1)))
    return WEFT_EINVAL;
  weft_deque_array *a = array_new(capacity);
  if (!a)
    return WEFT_ENOMEM;
  atomic_init(&dq->top, 0);
  atomic_init(&dq->bottom, 0);
  dq->top_seen = 0;
  atomic_init(&dq->array, a);
  dq->retired = NULL;
  return 0;
}

void weft_deque_destroy(weft_deque *dq)
{
  weft_free(atomic_load_explicit(&dq->array, memory_order_relaxed));
  for (weft_deque_array *r = dq->retired, *next; r; r = next) {
    next = r->retired;
    weft_free(r);
  }
  atomic_store_explicit(&dq->array, NULL, memory_order_relaxed);
  dq->retired = NULL;
}

/* Owner only: doubles the array, copying the live items [t, b). */
static weft_deque_array *grow(weft_deque *dq, weft_deque_array *a, int64_t t, int64_t b)
{
  weft_deque_array *na = array_new(2 * (a->mask + 1));
  if (!na)
    return NULL;
  /* Indices map to slots by i & mask: the capacity stays a power of two,
   * and the live items [t, b) fit. */
  WEFT_ASSERT(((na->mask + 1) & na->mask) == 0 && b - t <= na->mask + 1);
  for (int64_t i = t; i < b; i++)
    atomic_store_explicit(&na->slot[i & na->mask],
                          atomic_load_explicit(&a->slot[i & a->mask], memory_order_relaxed),
                          memory_order_relaxed);
  /* Publishes the copied slots; pairs with the acquire load of array in steal. */
  atomic_store_explicit(&dq->array, na, memory_order_release);
  a->retired = dq->retired; /* a thief may still read a: free it at destroy */
  dq->retired = a;
  return na;
}

int weft_deque_push(weft_deque *dq, void *item)
{
  int64_t b = atomic_load_explicit(&dq->bottom, memory_order_relaxed);
  weft_deque_array *a = atomic_load_explicit(&dq->array, memory_order_relaxed);
  /* The owner's view of the size is never negative: top_seen is a value top
   * had, and top never passes bottom outside take. */
  WEFT_ASSERT(b - dq->top_seen >= 0);
  /* Slots below top_seen were taken when it was read (with acquire, below),
   * so only a deque that looks full needs a fresh top. */
  if (b - dq->top_seen > a->mask) {
    /* Acquire: pairs with the thieves' CAS on top, so their reads of the
     * slots we are about to reuse happened before we overwrite them. */
    int64_t t = atomic_load_explicit(&dq->top, memory_order_acquire);
    dq->top_seen = t;
    if (b - t > a->mask) {
      a = grow(dq, a, t, b); /* re-read: push into the new array */
      if (!a)
        return WEFT_ENOMEM;
    }
  }
  atomic_store_explicit(&a->slot[b & a->mask], item, memory_order_relaxed);
  /* Publishes the slot (and the item's contents) to thieves; pairs with the
   * acquire load of bottom in steal. */
  atomic_store_explicit(&dq->bottom, b + 1, memory_order_release);
  return 0;
}

void *weft_deque_take(weft_deque *dq)
{
  int64_t b = atomic_load_explicit(&dq->bottom, memory_order_relaxed) - 1;
  weft_deque_array *a = atomic_load_explicit(&dq->array, memory_order_relaxed);
#if WEFT_TSAN
  /* TSan: the store-load fence below becomes an RMW on bottom (common/sync.h). */
  (void)atomic_exchange_explicit(&dq->bottom, b, memory_order_seq_cst);
#else
  atomic_store_explicit(&dq->bottom, b, memory_order_relaxed);
  /* Orders the bottom store before the top load; pairs with the fence in
   * steal so that owner and thief cannot both take the last item. */
  atomic_thread_fence(memory_order_seq_cst);
#endif
  /* seq_cst under TSan (pairs with the RMW on top in steal); relaxed after
   * the fence otherwise. */
  int64_t t = atomic_load_explicit(&dq->top, WEFT_TSAN ? memory_order_seq_cst : memory_order_relaxed);
  /* The size before this take, b + 1 - t, is never negative: thieves take
   * only below the bottom they read. */
  WEFT_ASSERT(t <= b + 1);
  if (t > b) { /* empty: restore bottom */
    atomic_store_explicit(&dq->bottom, b + 1, memory_order_relaxed);
    return NULL;
  }
  void *item = atomic_load_explicit(&a->slot[b & a->mask], memory_order_relaxed);
  if (t == b) {
    /* Last item: race the thieves for it through top. seq_cst: part of the
     * same total order as the fences in take and steal. */
    if (!atomic_compare_exchange_strong_explicit(&dq->top, &t, t + 1, memory_order_seq_cst,
                                                 memory_order_relaxed))
      item = NULL; /* a thief got it */
    /* Restore bottom whatever the outcome (top is now b + 1). */
    atomic_store_explicit(&dq->bottom, b + 1, memory_order_relaxed);
  }
  return item;
}

weft_steal_result weft_deque_steal(weft_deque *dq, void **out)
{
#if WEFT_TSAN
  /* TSan: the fence becomes a seq_cst RMW on top, ordered with the owner's
   * seq_cst exchange of bottom in take (common/sync.h). */
  int64_t t = atomic_fetch_add_explicit(&dq->top, 0, memory_order_seq_cst);
  int64_t b = atomic_load_explicit(&dq->bottom, memory_order_seq_cst);
#else
  /* Acquire: pairs with the owner's/other thieves' updates of top. */
  int64_t t = atomic_load_explicit(&dq->top, memory_order_acquire);
  /* Orders the top load before the bottom load; pairs with the fence in take. */
  atomic_thread_fence(memory_order_seq_cst);
  /* Acquire: pairs with the release store of bottom in push (slot contents). */
  int64_t b = atomic_load_explicit(&dq->bottom, memory_order_acquire);
#endif
  if (t >= b)
    return WEFT_STEAL_EMPTY;
  /* Acquire: pairs with the release store of a grown array in grow(). */
  weft_deque_array *a = atomic_load_explicit(&dq->array, memory_order_acquire);
  void *item = atomic_load_explicit(&a->slot[t & a->mask], memory_order_relaxed);
  /* seq_cst: claims item t; fails if the owner or another thief took it. */
  if (!atomic_compare_exchange_strong_explicit(&dq->top, &t, t + 1, memory_order_seq_cst,
                                               memory_order_relaxed))
    return WEFT_STEAL_RETRY;
  *out = item;
  return WEFT_STEAL_OK;
}
