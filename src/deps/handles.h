/*
 * Generation-tagged handles: what weft_var *, weft_op * and weft_done * are.
 * A handle encodes a slot index and the slot's generation; a slot's
 * generation is odd while it is live and is bumped (to even) when the
 * handle dies, and again when the slot is reused. Slots live in chunks that
 * are never moved or freed before the table, so a stale handle always reads
 * valid memory and is told apart by its generation.
 */
#ifndef WEFT_DEPS_HANDLES_H
#define WEFT_DEPS_HANDLES_H
#include "deps/layer.h" /* layer guard: no include from a lower layer */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define WEFT_HANDLE_CHUNK_SLOTS 1024u /* slots per chunk */
#define WEFT_HANDLE_CHUNKS 4096u      /* chunks per table: 4M live handles at most */

/* The first member of every slot type. */
typedef struct weft_slot {
  _Atomic uint32_t gen;   /* atomic: odd while the handle is live */
  uint32_t index;         /* immutable */
  struct weft_slot *next; /* under the table's lock: free list */
} weft_slot;

typedef struct weft_handles {
  size_t slot_size;                          /* immutable: a multiple of align */
  size_t align;                              /* immutable */
  pthread_mutex_t lock;
  _Atomic(char *) chunk[WEFT_HANDLE_CHUNKS]; /* atomic: published with release */
  uint32_t nchunks;                          /* under lock */
  weft_slot *free;                           /* under lock */
} weft_handles;

/* Slots are slot_size rounded up to align (a power of two, 16 or more) and
 * start at multiples of align: 64 (WEFT_CACHE_LINE) keeps two slots that
 * different threads write off one line. */
int weft_handles_init(weft_handles *h, size_t slot_size, size_t align);
/* fini (may be NULL) is called on every slot ever allocated. */
void weft_handles_destroy(weft_handles *h, void (*fini)(weft_slot *slot));

/* A live slot (its type's other fields untouched since its last free) and
 * its handle; NULL on WEFT_ENOMEM or a full table. */
weft_slot *weft_handles_alloc(weft_handles *h, uintptr_t *handle);
/* The slot of a live handle, else NULL. The slot may die right after; callers
 * that must be sure re-check weft_slot_live under their own lock. */
weft_slot *weft_handles_get(weft_handles *h, uintptr_t handle);
/* Kills the handle (exactly once: false if it was not live with gen). */
bool weft_slot_kill(weft_slot *s, uint32_t gen);
/* Returns a dead slot to the free list. */
void weft_handles_free(weft_handles *h, weft_slot *s);

static inline uint32_t weft_handle_gen(uintptr_t handle)
{
  return (uint32_t)((uint64_t)handle >> 32);
}

static inline bool weft_slot_live(weft_slot *s, uint32_t gen)
{
  /* acquire: pairs with the acq_rel kill (a slot seen dead stays dead). */
  return atomic_load_explicit(&s->gen, memory_order_acquire) == gen && (gen & 1u);
}

#endif /* WEFT_DEPS_HANDLES_H */
