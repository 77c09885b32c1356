/*
 * Fixed-size object recycling: a store per object kind and a cache per
 * owner (a worker), used without a lock. Objects move between caches and the
 * store a magazine at a time: a chain of up to `batch` free objects, handed
 * over in O(1) under the store's lock, whatever its length (objects drift
 * from the thread that allocates them to the one that frees them: a thief, a
 * completing worker). A cache keeps its current chain and at most one full
 * magazine in reserve. Slabs are freed only with the store.
 *
 * A free object's words: [0] next object in its chain, and for a chain's
 * first object [1] the next magazine on the store and [2] the chain's length.
 */
#ifndef WEFT_COMMON_OBJSTORE_H
#define WEFT_COMMON_OBJSTORE_H

#include <pthread.h>
#include <stddef.h>

typedef struct weft_obj_cache { /* owner only */
  void *free;   /* current chain */
  long n;       /* its length */
  void *full;   /* a full magazine in reserve, or NULL */
} weft_obj_cache;

typedef struct weft_obj_store {
  size_t size;          /* immutable: object size, a multiple of 8, >= 3 words */
  long batch;           /* immutable: objects in a full magazine */
  pthread_mutex_t lock;
  void *mags;           /* under lock: stack of magazines */
  void *slabs;          /* under lock: linked through each slab's first word */
} weft_obj_store;

/* size: the object's size; batch: objects a magazine holds (a cache holds
 * up to twice that). Returns 0 or WEFT_ENOMEM. */
int weft_obj_store_init(weft_obj_store *s, size_t size, long batch);
void weft_obj_store_destroy(weft_obj_store *s);

/* cache NULL: a thread without one (one object under the store's lock). */
void *weft_obj_alloc_slow(weft_obj_store *s, weft_obj_cache *c);
void weft_obj_free_slow(weft_obj_store *s, weft_obj_cache *c, void *p);

static inline void *weft_obj_alloc(weft_obj_store *s, weft_obj_cache *c)
{
  if (c && c->free) {
    void *p = c->free;
    c->free = ((void **)p)[0];
    c->n--;
    /* The next object was most likely freed by another core: start moving
     * its first line here now (for writing), so the next allocation does
     * not stall on reading its link. */
    if (c->free)
      __builtin_prefetch(c->free, 1, 3);
    return p;
  }
  return weft_obj_alloc_slow(s, c);
}

static inline void weft_obj_free(weft_obj_store *s, weft_obj_cache *c, void *p)
{
  if (c && c->n < s->batch) {
    ((void **)p)[0] = c->free;
    c->free = p;
    c->n++;
    return;
  }
  weft_obj_free_slow(s, c, p);
}

#endif /* WEFT_COMMON_OBJSTORE_H */
