#include "deps/handles.h"

#include <string.h>

#include "common/alloc.h"
#include "weft/weft.h"

_Static_assert(sizeof(uintptr_t) >= 8, "handles need 64-bit pointers");

int weft_handles_init(weft_handles *h, size_t slot_size, size_t align)
{
  if (align < 16 || (align & (align - 1)))
    return WEFT_EINVAL;
  if (pthread_mutex_init(&h->lock, NULL))
    return WEFT_ENOMEM;
  h->align = align;
  h->slot_size = (slot_size + align - 1) / align * align;
  for (uint32_t i = 0; i < WEFT_HANDLE_CHUNKS; i++)
    atomic_init(&h->chunk[i], NULL);
  h->nchunks = 0;
  h->free = NULL;
  return 0;
}

void weft_handles_destroy(weft_handles *h, void (*fini)(weft_slot *slot))
{
  for (uint32_t c = 0; c < h->nchunks; c++) {
    char *chunk = atomic_load_explicit(&h->chunk[c], memory_order_relaxed);
    if (fini)
      for (uint32_t i = 0; i < WEFT_HANDLE_CHUNK_SLOTS; i++)
        fini((weft_slot *)(chunk + i * h->slot_size));
    weft_free(chunk);
  }
  h->nchunks = 0;
  h->free = NULL;
  pthread_mutex_destroy(&h->lock);
}

/* Under h->lock. */
static int add_chunk(weft_handles *h)
{
  if (h->nchunks == WEFT_HANDLE_CHUNKS)
    return WEFT_ENOMEM;
  size_t bytes = WEFT_HANDLE_CHUNK_SLOTS * h->slot_size;
  char *chunk = weft_aligned_alloc(h->align, bytes);
  if (!chunk)
    return WEFT_ENOMEM;
  memset(chunk, 0, bytes);
  uint32_t base = h->nchunks * WEFT_HANDLE_CHUNK_SLOTS;
  for (uint32_t i = WEFT_HANDLE_CHUNK_SLOTS; i-- > 0;) {
    weft_slot *s = (weft_slot *)(chunk + i * h->slot_size);
    atomic_init(&s->gen, 0);
    s->index = base + i;
    s->next = h->free;
    h->free = s;
  }
  /* release: publishes the initialised slots to lock-free lookups. */
  atomic_store_explicit(&h->chunk[h->nchunks], chunk, memory_order_release);
  h->nchunks++;
  return 0;
}

weft_slot *weft_handles_alloc(weft_handles *h, uintptr_t *handle)
{
  pthread_mutex_lock(&h->lock);
  if (!h->free && add_chunk(h)) {
    pthread_mutex_unlock(&h->lock);
    return NULL;
  }
  weft_slot *s = h->free;
  h->free = s->next;
  pthread_mutex_unlock(&h->lock);
  s->next = NULL;
  uint32_t gen = atomic_load_explicit(&s->gen, memory_order_relaxed) + 1; /* even -> odd */
  /* relaxed: the handle reaches other threads only through the caller, who
   * publishes it (and the slot's contents) by its own synchronisation. */
  atomic_store_explicit(&s->gen, gen, memory_order_relaxed);
  *handle = ((uintptr_t)gen << 32) | (uintptr_t)(s->index + 1);
  return s;
}

weft_slot *weft_handles_get(weft_handles *h, uintptr_t handle)
{
  uint64_t idx1 = (uint64_t)handle & 0xffffffffu;
  if (idx1 == 0)
    return NULL;
  uint64_t idx = idx1 - 1;
  uint64_t c = idx / WEFT_HANDLE_CHUNK_SLOTS;
  if (c >= WEFT_HANDLE_CHUNKS)
    return NULL;
  /* acquire: pairs with the release publication in add_chunk. */
  char *chunk = atomic_load_explicit(&h->chunk[c], memory_order_acquire);
  if (!chunk)
    return NULL;
  weft_slot *s = (weft_slot *)(chunk + (idx % WEFT_HANDLE_CHUNK_SLOTS) * h->slot_size);
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
