/* SPDX-License-Identifier: MIT */
/*
 * Generation-tagged handles: what weft_var *, weft_op * and weft_done * are.
 * A handle encodes a slot index and the slot's generation; a slot's
 * generation is odd while it is live and is bumped (to even) when the
 * handle dies, and again when the slot is reused. Slots live in chunks that
 * are never moved or freed before the table, so a stale handle always reads
 * valid memory and is told apart by its generation.
 *
 * The table grows without a fixed cap below what a handle can address:
 * chunk k holds WEFT_HANDLE_BATCH_SLOTS << k slots (tunables.h), so the
 * chunks double and a slot's chunk is a bit scan of its index. A chunk is
 * allocated whole when the table reaches it, but its slots are initialised
 * a batch at a time as they are first needed, so the memory touched follows
 * the slots used (the rest of the newest chunk is address space only).
 * A lookup reads only slots below the table's ready mark, which covers the
 * batches initialised so far.
 */
#ifndef WEFT_DEPS_HANDLES_H
#define WEFT_DEPS_HANDLES_H
#include "deps/layer.h" /* layer guard: no include from a lower layer */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/tunables.h"

/* The low 32 bits of a handle hold its slot's index + 1 (0 is no handle),
 * the high 32 its generation: a table holds at most this many slots, the
 * encoding's limit; the next alloc returns WEFT_ELIMIT. */
#define WEFT_HANDLE_MAX_SLOTS 0xffffffffu
/* Chunks that reach WEFT_HANDLE_MAX_SLOTS: 1024 + 2048 + ... + 2^32 (the
 * last one allocated only as far as the limit). */
#define WEFT_HANDLE_CHUNKS 23u

_Static_assert((WEFT_HANDLE_BATCH_SLOTS & (WEFT_HANDLE_BATCH_SLOTS - 1)) == 0 &&
                   WEFT_HANDLE_BATCH_SLOTS >= 2,
               "WEFT_HANDLE_BATCH_SLOTS must be a power of two");
_Static_assert((uint64_t)WEFT_HANDLE_BATCH_SLOTS * ((1ull << WEFT_HANDLE_CHUNKS) - 1) >=
                       WEFT_HANDLE_MAX_SLOTS &&
                   (uint64_t)WEFT_HANDLE_BATCH_SLOTS * ((1ull << (WEFT_HANDLE_CHUNKS - 1)) - 1) <
                       WEFT_HANDLE_MAX_SLOTS,
               "WEFT_HANDLE_CHUNKS chunks must just reach WEFT_HANDLE_MAX_SLOTS");

/* The first member of every slot type. */
typedef struct weft_slot {
  _Atomic uint32_t gen;   /* atomic: odd while the handle is live */
  uint32_t index;         /* immutable once initialised */
  struct weft_slot *next; /* under the table's lock: free list */
} weft_slot;

typedef struct weft_handles {
  /* What a lookup reads; written only as the table grows, a batch of
   * slots at a time. */
  /* atomic: slots [0, ready) are initialised and their chunks' pointers
   * set; raised under lock, published with release (grow). */
  _Atomic uint32_t ready;
  uint32_t limit;   /* immutable: the most slots, WEFT_HANDLE_MAX_SLOTS (tests: less) */
  size_t slot_size; /* immutable: a multiple of align */
  /* Chunk k, or NULL before the table reaches it: set once, under lock,
   * before ready covers its first slot (ready's release publishes it);
   * read without the lock only below ready. Freed with the table. */
  char *chunk[WEFT_HANDLE_CHUNKS];
  /* What allocation writes, on lines of its own (not a lookup's). */
  _Alignas(WEFT_CACHE_LINE) pthread_mutex_t lock;
  weft_slot *free; /* under lock */
  size_t align;    /* immutable */
} weft_handles;

/* Slots are slot_size rounded up to align (a power of two, 16 or more) and
 * start at multiples of align: 64 (WEFT_CACHE_LINE) keeps two slots that
 * different threads write off one line. Allocates nothing: the first chunk
 * comes with the first alloc. */
int weft_handles_init(weft_handles *h, size_t slot_size, size_t align);
/* fini (may be NULL) is called on every slot ever allocated. */
void weft_handles_destroy(weft_handles *h, void (*fini)(weft_slot *slot));

/* A live slot (its type's other fields untouched since its last free) and
 * its handle: 0, or WEFT_ENOMEM (a chunk could not be allocated: nothing
 * changed, a later call may succeed), or WEFT_ELIMIT (h->limit slots are
 * allocated and none is free). */
int weft_handles_alloc(weft_handles *h, weft_slot **slot, uintptr_t *handle);
/* The slot of a live handle, else NULL (any value of handle: a stale one, a
 * forged one). The slot may die right after; callers that must be sure
 * re-check weft_slot_live under their own lock. Lock-free, O(1). */
weft_slot *weft_handles_get(weft_handles *h, uintptr_t handle);
/* Kills the handle (exactly once: false if it was not live with gen). */
bool weft_slot_kill(weft_slot *s, uint32_t gen);
/* Returns a dead slot to the free list. */
void weft_handles_free(weft_handles *h, weft_slot *s);

/* Testing hook (not part of the public API): tables initialised from now on
 * hold at most n slots (1 <= n <= WEFT_HANDLE_MAX_SLOTS); 0 restores
 * WEFT_HANDLE_MAX_SLOTS. Lets a test reach WEFT_ELIMIT without 4 billion
 * slots. */
void weft_test_handle_limit(uint32_t n);

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
