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
#include <stdint.h>

#include "common/tunables.h"

typedef struct weft_obj_cache { /* owner only */
  void *free;   /* current chain */
  long n;       /* its length */
  void *full;   /* a full magazine in reserve, or NULL */
} weft_obj_cache;

typedef struct weft_obj_store {
  size_t size;          /* immutable: object size, a multiple of 8, >= 3 words */
  long batch;           /* immutable: objects in a full magazine */
  uint64_t id;          /* immutable: unique over the process's life (never reused) */
  /* On a line of its own, with what it guards: every thread's allocation
   * and free reads the fields above, and the lock's line is written at
   * each magazine exchange (a pusher taking one, a worker giving one back),
   * which would make every other thread's next allocation miss. */
  _Alignas(WEFT_CACHE_LINE) pthread_mutex_t lock;
  void *mags;           /* under lock: stack of magazines */
  void *slabs;          /* under lock: linked through each slab's first word */
  struct weft_obj_store *live_next; /* under the registry's lock (objstore.c) */
} weft_obj_store;

/*
 * Thread caches: a thread that is not a worker (a user's thread pushing
 * operators, say) gets a cache of its own for one store per kind, so that
 * it takes a magazine under the store's lock once per batch, not one
 * object per allocation. The cache is the calling thread's (thread-local);
 * when the thread turns to another store of the same kind, or exits, what
 * it holds goes back to its store if that store still lives (a registry of
 * live stores, by id, under a global lock: taken only on such a switch).
 */
enum { WEFT_OBJ_TLS_OPRS = 0, WEFT_OBJ_TLS_TASKS, WEFT_OBJ_TLS_KINDS };

typedef struct weft_obj_tcache { /* the owning thread only */
  uint64_t id;        /* the store it caches for (0: none) */
  weft_obj_cache c;
} weft_obj_tcache;

extern _Thread_local weft_obj_tcache weft_obj_tls[WEFT_OBJ_TLS_KINDS]
    __attribute__((tls_model("initial-exec")));

/* The slow path of weft_obj_thread_cache: a switch of stores. */
weft_obj_cache *weft_obj_thread_cache_switch(weft_obj_store *s, int kind);

/* The calling thread's cache of the given kind for s. */
static inline weft_obj_cache *weft_obj_thread_cache(weft_obj_store *s, int kind)
{
  weft_obj_tcache *t = &weft_obj_tls[kind];
  if (__builtin_expect(t->id == s->id, 1))
    return &t->c;
  return weft_obj_thread_cache_switch(s, kind);
}

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
     * its lines here now (for writing), so the next allocation does not
     * stall on reading its link, nor its first locked instruction on the
     * stores that fill it. */
    if (c->free) {
      const char *next = c->free;
      __builtin_prefetch(next, 1, 3);
      for (size_t off = WEFT_CACHE_LINE; off < s->size && off < WEFT_OBJ_PREFETCH_BYTES;
           off += WEFT_CACHE_LINE)
        __builtin_prefetch(next + off, 1, 3);
    }
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
