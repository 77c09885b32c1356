/* SPDX-License-Identifier: MIT */
/*
 * Task records: what a deque slot or the injection queue points to. Recycled
 * through an object store (src/common/objstore.h): a cache per worker, a
 * locked store for threads without one.
 */
#ifndef WEFT_POOL_TASK_H
#define WEFT_POOL_TASK_H
#include "pool/layer.h" /* layer guard: no include from a lower layer */

#include <stdbool.h>
#include <stddef.h>

#include "common/assert.h"
#include "common/fifo.h"
#include "common/objstore.h"
#include "common/tunables.h"
#include "weft/weft.h"

struct weft_group_impl;

/* How a task's fn gets its argument (weft_task.argmode). */
enum {
  WEFT_TASK_ARG_PTR = 0, /* arg, the submitter's pointer */
  WEFT_TASK_ARG_BYTES,   /* argbytes: copied in by weft_*_arg (fn gets a copy of them) */
  WEFT_TASK_ARG_HEAP,    /* arg: a copy weft_*_arg allocated, freed once fn returned */
};

/* All written by the submitter before the record is queued (the queue's
 * release publishes them), read by the thread that runs it. */
typedef struct weft_task {
  int (*fn)(void *arg); /* a user task; NULL: a piece of a parallel loop */
  union {
    struct {
      void *arg;     /* fn's argument, or the loop of a piece */
      size_t lo, hi; /* a piece's range */
    };
    /* WEFT_TASK_ARG_BYTES: a user task's argument itself (never a piece's) */
    _Alignas(WEFT_ARG_ALIGN) unsigned char argbytes[WEFT_TASK_ARG_INLINE];
  };
  struct weft_group_impl *group; /* NULL: a plain submission */
  weft_fifo_node link;           /* injection queue link: under its lock */
  /* The record lives in its submitter's own block (the engine's operators,
   * weft_pool_submit_embedded): the pool never frees it. */
  bool embedded;
  uint8_t argmode; /* WEFT_TASK_ARG_* */
} weft_task;
_Static_assert(WEFT_TASK_ARG_INLINE == sizeof(void *) + 2 * sizeof(size_t) &&
                   offsetof(weft_task, argbytes) % WEFT_ARG_ALIGN == 0,
               "a task's inline argument is where its arg and range are, aligned as weft.h says");

typedef weft_obj_store weft_task_store;
typedef weft_obj_cache weft_task_cache;

static inline int weft_task_store_init(weft_task_store *s)
{
  return weft_obj_store_init(s, sizeof(weft_task), WEFT_TASK_BATCH);
}

static inline void weft_task_store_destroy(weft_task_store *s)
{
  weft_obj_store_destroy(s);
}

/* cache NULL: a thread without a worker. */
static inline weft_task *weft_task_alloc(weft_task_store *s, weft_task_cache *c)
{
  return (weft_task *)weft_obj_alloc(s, c);
}

/* Only records the pool allocated: an embedded one is its owner's. */
static inline void weft_task_free(weft_task_store *s, weft_task_cache *c, weft_task *t)
{
  WEFT_ASSERT(!t->embedded);
  weft_obj_free(s, c, t);
}

#endif /* WEFT_POOL_TASK_H */
