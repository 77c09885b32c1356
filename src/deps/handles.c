/* SPDX-License-Identifier: MIT */
#include "deps/handles.h"

#include <string.h>

#include "common/alloc.h"
#include "weft/weft.h"

_Static_assert(sizeof(uintptr_t) >= 8, "handles need 64-bit pointers");

/* The testing hook's limit (0: none). relaxed: a test sets it before it
 * creates what it limits, on the same thread. */
static _Atomic uint32_t test_limit;

void weft_test_handle_limit(uint32_t n)
{
  atomic_store_explicit(&test_limit, n, memory_order_relaxed);
}

/* Chunk k holds the slots [B (2^k - 1), B (2^(k+1) - 1)), B =
 * WEFT_HANDLE_BATCH_SLOTS: index + B lies in [B 2^k, B 2^(k+1)), so its
 * highest set bit names k. */
#define BATCH_LOG2 ((unsigned)__builtin_ctz(WEFT_HANDLE_BATCH_SLOTS))

static inline unsigned chunk_of(uint32_t index)
{
  uint64_t j = (uint64_t)index + WEFT_HANDLE_BATCH_SLOTS;
  return (unsigned)(63 - __builtin_clzll(j)) - BATCH_LOG2;
}

static inline uint64_t chunk_base(unsigned k)
{
  return ((uint64_t)WEFT_HANDLE_BATCH_SLOTS << k) - WEFT_HANDLE_BATCH_SLOTS;
}

/* The slots of chunk k the table may use: the chunk's size, or as many as
 * are left below the limit. */
static inline uint64_t chunk_slots(const weft_handles *h, unsigned k)
{
  uint64_t n = (uint64_t)WEFT_HANDLE_BATCH_SLOTS << k, room = h->limit - chunk_base(k);
  return n < room ? n : room;
}

static inline weft_slot *slot_at(const weft_handles *h, uint32_t index)
{
  unsigned k = chunk_of(index);
  return (weft_slot *)(h->chunk[k] + (size_t)(index - chunk_base(k)) * h->slot_size);
}

int weft_handles_init(weft_handles *h, size_t slot_size, size_t align)
{
  if (align < 16 || (align & (align - 1)))
    return WEFT_EINVAL;
  if (pthread_mutex_init(&h->lock, NULL))
    return WEFT_ENOMEM;
  uint32_t limit = atomic_load_explicit(&test_limit, memory_order_relaxed);
  h->limit = limit ? limit : WEFT_HANDLE_MAX_SLOTS;
  h->align = align;
  h->slot_size = (slot_size + align - 1) / align * align;
  atomic_init(&h->ready, 0);
  for (unsigned k = 0; k < WEFT_HANDLE_CHUNKS; k++)
    h->chunk[k] = NULL;
  h->free = NULL;
  return 0;
}

void weft_handles_destroy(weft_handles *h, void (*fini)(weft_slot *slot))
{
  /* relaxed: the table's users are gone (the caller's synchronisation). */
  uint32_t ready = atomic_load_explicit(&h->ready, memory_order_relaxed);
  if (fini)
    for (uint32_t i = 0; i < ready; i++)
      fini(slot_at(h, i));
  for (unsigned k = 0; k < WEFT_HANDLE_CHUNKS; k++) {
    weft_free(h->chunk[k]);
    h->chunk[k] = NULL;
  }
  atomic_store_explicit(&h->ready, 0, memory_order_relaxed);
  h->free = NULL;
  pthread_mutex_destroy(&h->lock);
}

/* Under h->lock, with the free list empty: initialises the next batch of
 * slots (first allocating their chunk, at its first batch) and puts them on
 * the free list, the lowest index first. */
static int grow(weft_handles *h)
{
  /* relaxed: written only under the lock, which this thread holds. */
  uint32_t ready = atomic_load_explicit(&h->ready, memory_order_relaxed);
  if (ready == h->limit)
    return WEFT_ELIMIT;
  unsigned k = chunk_of(ready);
  uint64_t nslots = chunk_slots(h, k), off = ready - chunk_base(k);
  if (!h->chunk[k]) { /* off == 0 */
    if (nslots > SIZE_MAX / h->slot_size)
      return WEFT_ENOMEM;
    /* Not zeroed, and untouched beyond the batches initialised below: the
     * chunk's memory is taken up as its slots are. */
    char *chunk = weft_aligned_alloc(h->align, (size_t)nslots * h->slot_size);
    if (!chunk)
      return WEFT_ENOMEM;
    h->chunk[k] = chunk;
  }
  uint64_t n = nslots - off < WEFT_HANDLE_BATCH_SLOTS ? nslots - off : WEFT_HANDLE_BATCH_SLOTS;
  char *first = h->chunk[k] + (size_t)off * h->slot_size;
  memset(first, 0, (size_t)n * h->slot_size);
  for (uint64_t i = n; i-- > 0;) {
    weft_slot *s = (weft_slot *)(first + (size_t)i * h->slot_size);
    atomic_init(&s->gen, 0);
    s->index = (uint32_t)(ready + i);
    s->next = h->free;
    h->free = s;
  }
  /* release: publishes the batch's initialised slots, and the pointer of
   * their chunk, to lock-free lookups (pairs with the acquire in
   * weft_handles_get). */
  atomic_store_explicit(&h->ready, (uint32_t)(ready + n), memory_order_release);
  return 0;
}

int weft_handles_alloc(weft_handles *h, weft_slot **slot, uintptr_t *handle)
{
  pthread_mutex_lock(&h->lock);
  int rc = h->free ? 0 : grow(h);
  if (rc) {
    pthread_mutex_unlock(&h->lock);
    return rc;
  }
  weft_slot *s = h->free;
  h->free = s->next;
  pthread_mutex_unlock(&h->lock);
  s->next = NULL;
  uint32_t gen = atomic_load_explicit(&s->gen, memory_order_relaxed) + 1; /* even -> odd */
  /* relaxed: the handle reaches other threads only through the caller, who
   * publishes it (and the slot's contents) by its own synchronisation. */
  atomic_store_explicit(&s->gen, gen, memory_order_relaxed);
  *handle = ((uintptr_t)gen << 32) | ((uintptr_t)s->index + 1);
  *slot = s;
  return 0;
}

weft_slot *weft_handles_get(weft_handles *h, uintptr_t handle)
{
  /* The index, from the low 32 bits (index + 1): 0, no handle, wraps to
   * 2^32 - 1, which no ready count exceeds. */
  uint32_t index = (uint32_t)((uint64_t)handle & 0xffffffffu) - 1u;
  /* acquire: pairs with the release in grow: the slots below ready are
   * initialised, and their chunks' pointers set. */
  if (index >= atomic_load_explicit(&h->ready, memory_order_acquire))
    return NULL;
  weft_slot *s = slot_at(h, index);
  return weft_slot_live(s, weft_handle_gen(handle)) ? s : NULL;
}

bool weft_slot_kill(weft_slot *s, uint32_t gen)
{
  uint32_t expected = gen;
  /* acq_rel: exactly one killer wins; pairs with weft_slot_live's acquire. */
  return (gen & 1u) && atomic_compare_exchange_strong_explicit(&s->gen, &expected, gen + 1,
                                                               memory_order_acq_rel,
                                                               memory_order_relaxed);
}

void weft_handles_free(weft_handles *h, weft_slot *s)
{
  pthread_mutex_lock(&h->lock);
  s->next = h->free;
  h->free = s;
  pthread_mutex_unlock(&h->lock);
}
