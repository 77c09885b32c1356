/* SPDX-License-Identifier: MIT */
/*
 * Queueing work. A worker pushes onto its own deque (LIFO, cache-hot) and
 * wakes by the heuristic; any other thread, or a worker whose deque could
 * not grow, uses the injection queue and the exact, fenced wake.
 */
#include "pool/submit.h"

#include <stdint.h>
#include <string.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "pool/idle.h"
#include "pool/pool_ext.h"
#include "pool/solo.h"

int weft_pool_enqueue(weft_pool *pool, weft_worker *w, weft_task *t)
{
  if (w && weft_deque_push(&w->deque, t) == 0) {
    weft_pool_wake_heuristic(pool);
    return 0;
  }
  /* A thread without a deque (registered by weft_pool_guest_enter, or
   * inside one of our tasks), or a deque that could not grow: an injection
   * queue needs no memory. A thread outside the pool that owns (or can
   * claim) the solo queue fills it without a CAS. */
  weft_inject *solo = w ? NULL : weft_solo_queue(pool);
  if (solo)
    weft_inject_push_solo(solo, t);
  else
    weft_inject_push(&pool->inject, t);
  weft_pool_wake_exact(pool);
  return 0;
}

int weft_group_spawn_task(weft_group_impl *g, weft_worker *w, int (*fn)(void *), void *arg,
                          size_t lo, size_t hi)
{
  weft_pool *pool = g->pool;
  weft_task *t = weft_task_alloc(&pool->tasks, weft_task_cache_of(pool, w));
  if (!t)
    return WEFT_ENOMEM;
  t->fn = fn;
  t->arg = arg;
  t->lo = lo;
  t->hi = hi;
  t->group = g;
  t->embedded = false;
  t->argmode = WEFT_TASK_ARG_PTR;
  weft_group_count_spawn(g, w);
  int rc = weft_pool_enqueue(pool, w, t);
  if (rc) {
    weft_task_free(&pool->tasks, weft_task_cache_of(pool, w), t);
    weft_group_task_done(g, w, 0);
  }
  return rc;
}

/* Copies size (1..WEFT_TASK_ARG_INLINE) bytes with fixed-size moves that
 * may overlap, each within [0, size) of both sides: the first 8, the
 * second 8 past 16 bytes, and the last 8 (under 8 bytes: the first and
 * last 4, or byte by byte). No call to memcpy for a few words. */
static inline __attribute__((always_inline)) void copy_small(unsigned char *dst,
                                                              const unsigned char *src,
                                                              size_t size)
{
  _Static_assert(WEFT_TASK_ARG_INLINE <= 24, "copy_small moves up to three words");
  if (size >= 8) {
    uint64_t a, b, c;
    memcpy(&a, src, 8);
    memcpy(&c, src + size - 8, 8);
    if (size > 16) {
      memcpy(&b, src + 8, 8);
      memcpy(dst + 8, &b, 8);
    }
    memcpy(dst, &a, 8);
    memcpy(dst + size - 8, &c, 8);
  } else if (size >= 4) {
    uint32_t a, c;
    memcpy(&a, src, 4);
    memcpy(&c, src + size - 4, 4);
    memcpy(dst, &a, 4);
    memcpy(dst + size - 4, &c, 4);
  } else {
    for (size_t i = 0; i < size; i++)
      dst[i] = src[i];
  }
}

/* The argument of a weft_*_arg task: its bytes into t (up to
 * WEFT_TASK_ARG_INLINE), else into *heap, allocated by the caller. */
static inline __attribute__((always_inline)) void task_set_arg(weft_task *t, const void *data,
                                                                size_t size, void *heap)
{
  if (heap) {
    memcpy(heap, data, size);
    t->arg = heap;
    t->argmode = WEFT_TASK_ARG_HEAP;
  } else if (size) {
    copy_small(t->argbytes, data, size);
    t->argmode = WEFT_TASK_ARG_BYTES;
  } else {
    t->arg = NULL;
    t->argmode = WEFT_TASK_ARG_PTR;
  }
}

/* weft_group_spawn_task for weft_group_spawn_arg (heap: see task_set_arg). */
static inline __attribute__((always_inline)) int
spawn_arg_task(weft_group_impl *g, weft_worker *w, int (*fn)(void *), const void *data,
               size_t size, void *heap)
{
  weft_pool *pool = g->pool;
  weft_task *t = weft_task_alloc(&pool->tasks, weft_task_cache_of(pool, w));
  if (!t)
    return WEFT_ENOMEM;
  t->fn = fn;
  task_set_arg(t, data, size, heap);
  t->group = g;
  t->embedded = false;
  weft_group_count_spawn(g, w);
  int rc = weft_pool_enqueue(pool, w, t);
  if (rc) { /* as weft_group_spawn_task: the caller frees the heap copy */
    weft_task_free(&pool->tasks, weft_task_cache_of(pool, w), t);
    weft_group_task_done(g, w, 0);
  }
  return rc;
}

static int spawn_arg_slow(weft_group_impl *g, weft_worker *w, weft_task_fn fn, const void *data,
                          size_t size);

int weft_group_spawn_arg(weft_group *pub, weft_task_fn fn, const void *data, size_t size)
{
  weft_group_impl *g = (weft_group_impl *)pub;
  if (!g || !fn || g->magic != WEFT_GROUP_MAGIC || !g->pool || (!data && size))
    return WEFT_EINVAL;
  weft_worker *w = weft_worker_of(g->pool);
  if (w && size <= WEFT_TASK_ARG_INLINE) /* the fast path: a worker, no allocation */
    return spawn_arg_task(g, w, fn, data, size, NULL);
  return spawn_arg_slow(g, w, fn, data, size);
}

/* weft_group_spawn_arg but a worker's inline one: a heap copy, or a thread
 * outside the pool. Out of line, as spawn_as_guest. */
static __attribute__((noinline)) int spawn_arg_slow(weft_group_impl *g, weft_worker *w,
                                                    weft_task_fn fn, const void *data,
                                                    size_t size)
{
  void *heap = NULL;
  if (size > WEFT_TASK_ARG_INLINE && !(heap = weft_malloc(size)))
    return WEFT_ENOMEM;
  int rc;
  if (w) { /* the pool's own worker: no registration */
    rc = spawn_arg_task(g, w, fn, data, size, heap);
  } else {
    int guest;
    rc = weft_pool_guest_enter(g->pool, true, &guest);
    if (!rc) {
      rc = spawn_arg_task(g, NULL, fn, data, size, heap);
      if (guest)
        weft_pool_guest_leave(g->pool, guest);
    }
  }
  if (rc)
    weft_free(heap); /* nothing was queued */
  return rc;
}

/* weft_group_spawn from a thread outside the pool. Out of line, so that the
 * worker's path saves no registers for it. */
static __attribute__((noinline)) int spawn_as_guest(weft_group_impl *g, weft_task_fn fn,
                                                    void *arg)
{
  int guest;
  int rc = weft_pool_guest_enter(g->pool, true, &guest);
  if (rc)
    return rc;
  rc = weft_group_spawn_task(g, NULL, fn, arg, 0, 0);
  if (guest)
    weft_pool_guest_leave(g->pool, guest);
  return rc;
}

int weft_group_spawn(weft_group *pub, weft_task_fn fn, void *arg)
{
  weft_group_impl *g = (weft_group_impl *)pub;
  if (!g || !fn || g->magic != WEFT_GROUP_MAGIC || !g->pool)
    return WEFT_EINVAL;
  weft_worker *w = weft_worker_of(g->pool);
  if (w) /* the pool's own worker: the fast path, no registration */
    return weft_group_spawn_task(g, w, fn, arg, 0, 0);
  return spawn_as_guest(g, fn, arg);
}

/* fn(arg) as a task on the deque or injection queue. */
static int submit_task(weft_pool *pool, weft_task_fn fn, void *arg)
{
  if (!pool || !fn)
    return WEFT_EINVAL;
  int guest;
  int rc = weft_pool_guest_enter(pool, true, &guest);
  if (rc)
    return rc;
  weft_worker *w = weft_worker_of(pool);
  weft_task *t = weft_task_alloc(&pool->tasks, weft_task_cache_of(pool, w));
  rc = WEFT_ENOMEM;
  if (t) {
    t->fn = fn;
    t->arg = arg;
    t->lo = t->hi = 0;
    t->group = NULL;
    t->embedded = false;
    t->argmode = WEFT_TASK_ARG_PTR;
    rc = weft_pool_enqueue(pool, w, t);
  }
  if (guest)
    weft_pool_guest_leave(pool, guest);
  return rc;
}

/* Where an embedded task goes: the caller's deque (or the injection queue),
 * the priority queue, or the injection queue behind what waits there. */
enum { EMBED_HERE, EMBED_PRIO, EMBED_LAST };

static int submit_embedded(weft_pool *pool, weft_task *t, int where, int priority)
{
  int guest;
  int rc = weft_pool_guest_enter(pool, true, &guest);
  if (rc)
    return rc;
  WEFT_ASSERT(t->fn != NULL); /* the caller set fn and arg (pool_ext.h) */
  t->lo = t->hi = 0;
  t->group = NULL;
  t->embedded = true;
  t->argmode = WEFT_TASK_ARG_PTR;
  weft_worker *w = weft_worker_of(pool);
  if (where == EMBED_HERE) {
    weft_pool_enqueue(pool, w, t);
  } else if (where == EMBED_PRIO) {
    rc = weft_prio_push(&pool->prio, t, priority);
    if (rc == 0)
      weft_pool_wake_exact(pool);
  } else {
    weft_inject_push(&pool->inject, t);
    /* A worker looks at the injection queue before it can park, as it
     * runs its deque (weft_pool_enqueue): the heuristic wake will do. */
    if (w)
      weft_pool_wake_heuristic(pool);
    else
      weft_pool_wake_exact(pool);
  }
  if (guest)
    weft_pool_guest_leave(pool, guest);
  return rc;
}

int weft_pool_submit_embedded(weft_pool *pool, weft_task *t, bool prio, int priority)
{
  return submit_embedded(pool, t, prio ? EMBED_PRIO : EMBED_HERE, priority);
}

int weft_pool_submit_embedded_last(weft_pool *pool, weft_task *t)
{
  return submit_embedded(pool, t, EMBED_LAST, 0);
}

int weft_pool_submit(weft_pool *pool, weft_task_fn fn, void *arg)
{
  return submit_task(pool, fn, arg);
}

int weft_pool_submit_arg(weft_pool *pool, weft_task_fn fn, const void *data, size_t size)
{
  if (!pool || !fn || (!data && size))
    return WEFT_EINVAL;
  void *heap = NULL;
  if (size > WEFT_TASK_ARG_INLINE && !(heap = weft_malloc(size)))
    return WEFT_ENOMEM;
  int guest;
  int rc = weft_pool_guest_enter(pool, true, &guest);
  if (!rc) {
    weft_worker *w = weft_worker_of(pool);
    weft_task *t = weft_task_alloc(&pool->tasks, weft_task_cache_of(pool, w));
    rc = WEFT_ENOMEM;
    if (t) {
      t->fn = fn;
      task_set_arg(t, data, size, heap);
      t->group = NULL;
      t->embedded = false;
      rc = weft_pool_enqueue(pool, w, t);
    }
    if (guest)
      weft_pool_guest_leave(pool, guest);
  }
  if (rc)
    weft_free(heap);
  return rc;
}
