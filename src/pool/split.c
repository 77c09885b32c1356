/* SPDX-License-Identifier: MIT */
/*
 * A piece of a parallel loop, by lazy binary splitting. The thread running
 * a piece works through it chunk by chunk (an eighth of what is left, at
 * least grain iterations); before each chunk, if its own deque is empty, it
 * splits the rest of the piece in half and pushes the upper half (a task of
 * the loop's group), for a thief or for itself later. Work is
 * thus cut only as finely as stealing asks for, and an imbalanced loop is
 * rebalanced to within about one chunk.
 */
#include "pool/split.h"

#include "pool/solo.h"
#include "pool/submit.h"

/* Whether to split off half of the piece now. A worker keeps one half on
 * its deque whenever the deque is empty (lazy binary splitting): a thief
 * then finds work at once instead of waiting for the victim's next chunk
 * boundary, and a loop nobody steals from splits only log2(n / grain)
 * times. A thread without a deque splits into the injection queue only
 * when some worker is idle and the queue is empty. */
static bool should_split(weft_pool *pool, weft_worker *w)
{
  if (w)
    return weft_deque_looks_empty(&w->deque);
  bool idle = atomic_load_explicit(&pool->nsearching, memory_order_relaxed) > 0 ||
              weft_ec_waiters(&pool->ec) > 0;
  if (!idle || !weft_inject_looks_empty(&pool->inject))
    return false;
  int ns = weft_solo_count(pool);
  for (int i = 0; i < ns; i++)
    if (!weft_inject_looks_empty(&pool->solo[i]))
      return false;
  return true;
}

int weft_pfor_piece(void *loop, size_t b, size_t e)
{
  weft_pfor_loop *L = loop;
  weft_pool *pool = L->group->pool;
  weft_worker *w = weft_worker_of(pool);
  const size_t grain = L->grain;
  while (e - b > grain) {
    /* relaxed: a hint; a failure elsewhere skips the chunks not started. */
    if (atomic_load_explicit(&L->group->status, memory_order_relaxed))
      return 0;
    if ((e - b) / 2 >= grain && should_split(pool, w)) { /* no overflow for huge grains */
      /* Split on a multiple of grain from b (and so from the loop's begin):
       * only the piece that ends at the loop's end has a short last chunk. */
      size_t mid = b + (e - b) / 2 / grain * grain;
      if (weft_group_spawn_task(L->group, w, NULL, L, mid, e) == 0) {
        e = mid;
        continue;
      }
      /* No memory for the task: carry on without splitting. */
    }
    /* A chunk is an eighth of what is left (a multiple of grain): large
     * while much is left, so calls and split checks are few, and down to
     * grain at the end, where the balance is decided. */
    size_t c = (e - b) / WEFT_PFOR_CHUNK_DIVISOR / grain * grain;
    if (c < grain)
      c = grain;
    int rc = L->fn(b, b + c, L->arg);
    if (rc)
      return rc;
    b += c;
  }
  if (atomic_load_explicit(&L->group->status, memory_order_relaxed))
    return 0;
  return L->fn(b, e, L->arg);
}
