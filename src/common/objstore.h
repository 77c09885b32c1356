/*
 * Fixed-size object recycling: a store per object kind (slabs, and a shared
 * free list under a mutex) and a cache per owner (a worker) that allocation
 * and freeing use without a lock. A cache that grows past the store's
 * cache_max gives half back to the store; an empty one refills with half.
 * Objects flow between caches when one thread frees what another allocated
 * (a thief, a completing worker); the store balances them. Slabs are freed
 * only with the store. A free object's first word is the free-list link.
 */
#ifndef WEFT_COMMON_OBJSTORE_H
#define WEFT_COMMON_OBJSTORE_H

#include <pthread.h>
#include <stddef.h>

#include "common/tunables.h"

typedef struct weft_obj_cache { /* owner only */
  void *free;
  long n;
} weft_obj_cache;

typedef struct weft_obj_store {
  size_t size;         /* immutable: object size, a multiple of its alignment */
  long cache_max;      /* immutable: the most objects one cache keeps */
  pthread_mutex_t lock;
  void *free;          /* under lock */
  long n;              /* under lock */
  void *slabs;         /* under lock: linked through each slab's first word */
} weft_obj_store;

/* size: the object's size (at least a pointer); cache_max: see above.
 * Returns 0 or WEFT_ENOMEM. */
int weft_obj_store_init(weft_obj_store *s, size_t size, long cache_max);
void weft_obj_store_destroy(weft_obj_store *s);

/* cache NULL: a thread without one (takes the store's lock). */
void *weft_obj_alloc_slow(weft_obj_store *s, weft_obj_cache *c);
void weft_obj_free_slow(weft_obj_store *s, weft_obj_cache *c, void *p);

static inline void *weft_obj_alloc(weft_obj_store *s, weft_obj_cache *c)
{
  if (c && c->free) {
    void *p = c->free;
    c->free = *(void **)p;
    c->n--;
    return p;
  }
  return weft_obj_alloc_slow(s, c);
}

static inline void weft_obj_free(weft_obj_store *s, weft_obj_cache *c, void *p)
{
  if (c && c->n < s->cache_max) {
    *(void **)p = c->free;
    c->free = p;
    c->n++;
    return;
  }
  weft_obj_free_slow(s, c, p);
}

#endif /* WEFT_COMMON_OBJSTORE_H */
