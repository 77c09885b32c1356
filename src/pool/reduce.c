/* SPDX-License-Identifier: MIT */
/*
 * weft_parallel_reduce (weft.h).
 *
 * Scheduled (the default): a weft_parallel_for whose chunks fold into one
 * accumulator per worker of the pool and one for the calling thread, each
 * on lines of its own, chosen by who runs the chunk: a worker of this pool
 * by its index (a worker runs one chunk at a time, so its accumulator has
 * one writer), the caller by the slot after the workers'. Any other thread
 * that runs a chunk (one helping in a wait of its own may take a piece of
 * this loop) folds it into an accumulator of its own and combines that
 * into the overflow slot under the loop's lock. The loop's wait orders
 * every chunk before the caller combines the slots.
 *
 * Deterministic: the range is cut into chunks of a size fixed by the range
 * and grain alone, and reduced as a balanced binary tree over them, split
 * at chunk boundaries: each node spawns its right half into a fork-join
 * group, reduces its left half into its own accumulator, waits, and folds
 * the right's into it. The tree's shape, so the grouping of every combine,
 * depends on nothing else, and the order of operands is the range's.
 */
#include <pthread.h>
#include <string.h>

#include "common/alloc.h"
#include "pool/core.h"
#include "pool/pool_ext.h"

/* Accumulators are laid out this far apart (and so aligned). */
#define SLOT_ALIGN 64
/* The accumulators one call keeps on its stack before it allocates them. */
#define STACK_BYTES 2048

typedef struct reduce_loop {
  weft_pool *pool;
  const void *identity;
  size_t acc_size;
  weft_reduce_body_fn body;
  weft_reduce_combine_fn combine;
  void *arg;
  /* scheduled: [nworkers + 2] accumulators, stride bytes apart (the
   * workers', the caller's, the overflow, under lock) */
  unsigned char *slots;
  size_t stride;
  int nworkers;
  pthread_t caller;
  pthread_mutex_t lock;
  /* deterministic: the chunk size */
  size_t chunk;
} reduce_loop;

static inline void *slot(const reduce_loop *L, int i)
{
  return L->slots + (size_t)i * L->stride;
}

/* An accumulator for a frame: in buf if it fits, else allocated (NULL
 * without memory). */
static void *acc_get(const reduce_loop *L, unsigned char *buf, size_t room)
{
  return L->acc_size <= room ? buf : weft_malloc(L->acc_size);
}

static void acc_put(void *acc, const unsigned char *buf)
{
  if (acc != (const void *)buf)
    weft_free(acc);
}

/* -------------------------------------------------------- scheduled */

static int scheduled_chunk(size_t b, size_t e, void *arg)
{
  reduce_loop *L = arg;
  int w = weft_pool_worker_index(L->pool);
  if (w >= 0)
    return L->body(b, e, slot(L, w), L->arg);
  if (pthread_equal(pthread_self(), L->caller))
    return L->body(b, e, slot(L, L->nworkers), L->arg);
  _Alignas(SLOT_ALIGN) unsigned char buf[256];
  void *acc = acc_get(L, buf, sizeof buf);
  if (!acc)
    return WEFT_ENOMEM;
  memcpy(acc, L->identity, L->acc_size);
  int rc = L->body(b, e, acc, L->arg);
  if (!rc) {
    pthread_mutex_lock(&L->lock);
    L->combine(slot(L, L->nworkers + 1), acc, L->arg);
    pthread_mutex_unlock(&L->lock);
  }
  acc_put(acc, buf);
  return rc;
}

static int scheduled(reduce_loop *L, size_t begin, size_t end, size_t grain, void *result)
{
  L->nworkers = weft_pool_num_threads(L->pool);
  L->stride = (L->acc_size + SLOT_ALIGN - 1) / SLOT_ALIGN * SLOT_ALIGN;
  size_t n = (size_t)L->nworkers + 2;
  if (L->stride > (SIZE_MAX - SLOT_ALIGN) / n)
    return WEFT_ENOMEM;
  _Alignas(SLOT_ALIGN) unsigned char buf[STACK_BYTES];
  L->slots = n * L->stride <= sizeof buf ? buf : weft_aligned_alloc(SLOT_ALIGN, n * L->stride);
  if (!L->slots)
    return WEFT_ENOMEM;
  for (size_t i = 0; i < n; i++)
    memcpy(slot(L, (int)i), L->identity, L->acc_size);
  L->caller = pthread_self();
  pthread_mutex_init(&L->lock, NULL);
  int rc = weft_parallel_for(L->pool, begin, end, grain, scheduled_chunk, L);
  pthread_mutex_destroy(&L->lock);
  if (!rc) {
    memcpy(result, L->identity, L->acc_size);
    for (size_t i = 0; i < n; i++)
      L->combine(result, slot(L, (int)i), L->arg);
  }
  if (L->slots != buf)
    weft_free(L->slots);
  return rc;
}

/* ---------------------------------------------------- deterministic */

typedef struct det_node {
  reduce_loop *L;
  size_t lo, hi; /* on chunk boundaries (hi: or the range's end) */
  void *acc;     /* receives the node's reduction */
} det_node;

static int det_reduce(void *arg)
{
  det_node *me = arg;
  reduce_loop *L = me->L;
  size_t chunks = (me->hi - me->lo - 1) / L->chunk + 1;
  if (chunks == 1) {
    memcpy(me->acc, L->identity, L->acc_size);
    return L->body(me->lo, me->hi, me->acc, L->arg);
  }
  size_t mid = me->lo + chunks / 2 * L->chunk;
  _Alignas(SLOT_ALIGN) unsigned char buf[256];
  void *racc = acc_get(L, buf, sizeof buf);
  if (!racc)
    return WEFT_ENOMEM;
  det_node right = {L, mid, me->hi, racc};
  det_node left = {L, me->lo, mid, me->acc};
  weft_group g;
  weft_group_init(&g, L->pool);
  int rc = weft_group_spawn(&g, det_reduce, &right); /* WEFT_ENOMEM, WEFT_ESHUTDOWN */
  int lrc = det_reduce(&left);
  int wrc = weft_group_wait(&g); /* nothing to wait for if the spawn failed */
  if (!rc)
    rc = lrc ? lrc : wrc;
  if (!rc)
    L->combine(me->acc, racc, L->arg);
  acc_put(racc, buf);
  return rc;
}

static int deterministic(reduce_loop *L, size_t begin, size_t end, size_t grain, void *result)
{
  size_t n = end - begin;
  L->chunk = grain ? grain : (n - 1) / WEFT_REDUCE_CHUNKS + 1;
  _Alignas(SLOT_ALIGN) unsigned char buf[256];
  void *acc = acc_get(L, buf, sizeof buf);
  if (!acc)
    return WEFT_ENOMEM;
  det_node root = {L, begin, end, acc};
  /* The root runs on the caller, as parallel_for's first piece does: a
   * thread outside the pool spawns into it as a guest (weft_group_spawn). */
  int rc = det_reduce(&root);
  if (!rc) {
    memcpy(result, L->identity, L->acc_size);
    L->combine(result, acc, L->arg);
  }
  acc_put(acc, buf);
  return rc;
}

int weft_parallel_reduce(weft_pool *pool, size_t begin, size_t end, size_t grain,
                         const void *identity, size_t acc_size, weft_reduce_body_fn body,
                         weft_reduce_combine_fn combine, void *arg, void *result, unsigned flags)
{
  if (!pool || !body || !combine || !identity || !result || !acc_size || begin > end ||
      (flags & ~(unsigned)WEFT_REDUCE_DETERMINISTIC))
    return WEFT_EINVAL;
  if (begin == end) {
    memmove(result, identity, acc_size);
    return 0;
  }
  reduce_loop L;
  memset(&L, 0, sizeof L);
  L.pool = pool;
  L.identity = identity;
  L.acc_size = acc_size;
  L.body = body;
  L.combine = combine;
  L.arg = arg;
  return flags & WEFT_REDUCE_DETERMINISTIC ? deterministic(&L, begin, end, grain, result)
                                           : scheduled(&L, begin, end, grain, result);
}
