/*
 * Task records: what a deque slot or the injection queue points to. Carved
 * from slabs; each worker keeps a private free list, and a pool-wide list
 * (under a mutex) serves non-worker threads and balances the drift that
 * stealing causes (a task freed by its thief lands on the thief's list).
 * Slabs are freed only when the pool is destroyed.
 */
#ifndef WEFT_POOL_TASK_H
#define WEFT_POOL_TASK_H

#include <pthread.h>
#include <stddef.h>

#include "common/tunables.h"
#include "weft/weft.h"

struct weft_group_impl;

typedef struct weft_task {
  int (*fn)(void *arg);          /* a user task; NULL: a piece of a parallel loop */
  void *arg;                     /* fn's argument, or the loop of a piece */
  size_t lo, hi;                 /* a piece's range */
  struct weft_group_impl *group; /* NULL: a plain submission */
  struct weft_task *next;        /* free list or injection queue link */
} weft_task;

typedef struct weft_task_cache { /* owner only */
  weft_task *free;
  long nfree;
} weft_task_cache;

typedef struct weft_task_store {
  pthread_mutex_t lock;
  weft_task *free;  /* under lock */
  long nfree;       /* under lock */
  void *slabs;      /* under lock: singly linked through each slab's first word */
} weft_task_store;

int weft_task_store_init(weft_task_store *s);
void weft_task_store_destroy(weft_task_store *s);

/* cache NULL: a thread without a worker (takes the store's lock). */
weft_task *weft_task_alloc_slow(weft_task_store *s, weft_task_cache *c);
void weft_task_free_slow(weft_task_store *s, weft_task_cache *c, weft_task *t);

static inline weft_task *weft_task_alloc(weft_task_store *s, weft_task_cache *c)
{
  if (c && c->free) {
    weft_task *t = c->free;
    c->free = t->next;
    c->nfree--;
    return t;
  }
  return weft_task_alloc_slow(s, c);
}

static inline void weft_task_free(weft_task_store *s, weft_task_cache *c, weft_task *t)
{
  if (c && c->nfree < WEFT_TASK_CACHE_MAX) {
    t->next = c->free;
    c->free = t;
    c->nfree++;
    return;
  }
  weft_task_free_slow(s, c, t);
}

#endif /* WEFT_POOL_TASK_H */
