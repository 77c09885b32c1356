/* SPDX-License-Identifier: MIT */
/*
 * Finding work off the own deque. A worker sweeps its victims near ones
 * first (those sharing a cache with it, planned by pool.c), each group from a
 * random start; a helper thread sweeps every worker from a start that varies
 * per call.
 */
#include "pool/search.h"

#include "pool/solo.h"

static inline uint32_t rng_next(uint64_t *s)
{
  uint64_t x = *s; /* xorshift64* */
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return (uint32_t)((x * 0x2545F4914F6CDD1DULL) >> 32);
}

/* One sweep over the victims: near ones first, each group from a random
 * start. *retry: some steal lost a race (the deque was not empty). */
static weft_task *steal_sweep(weft_pool *pool, weft_worker *w, bool *retry)
{
  void *item;
  if (w) {
    int nv = pool->nworkers - 1;
    if (nv <= 0)
      return NULL;
    uint32_t r = rng_next(&w->rng);
    int groups[2][2] = {{0, w->nnear}, {w->nnear, nv}};
    for (int gi = 0; gi < 2; gi++) {
      int lo = groups[gi][0], len = groups[gi][1] - lo;
      for (int k = 0; k < len; k++) {
        weft_worker *v = &pool->workers[w->victims[lo + (int)((r + (uint32_t)k) % (uint32_t)len)]];
        weft_steal_result sr = weft_deque_steal(&v->deque, &item);
        if (sr == WEFT_STEAL_OK) {
          weft_stat_inc(&w->steals);
          if (w->prof)
            weft_prof_instant_builtin(w->prof, WEFT_PROF_STEAL, weft_prof_now(), WEFT_PROF_VICTIM,
                                      v->index);
          return item;
        }
        *retry |= sr == WEFT_STEAL_RETRY;
      }
    }
    return NULL;
  }
  /* A helper thread: every worker, from a start that varies per call. */
  static _Atomic uint32_t start;
  uint32_t s = atomic_fetch_add_explicit(&start, 1, memory_order_relaxed);
  for (int k = 0; k < pool->nworkers; k++) {
    weft_worker *v = &pool->workers[(s + (uint32_t)k) % (uint32_t)pool->nworkers];
    weft_steal_result sr = weft_deque_steal(&v->deque, &item);
    if (sr == WEFT_STEAL_OK)
      return item;
    *retry |= sr == WEFT_STEAL_RETRY;
  }
  return NULL;
}

/* A worker takes its share of the injection queue with one claim (at most
 * WEFT_INJECT_BATCH tasks): the first to run, the rest onto its own deque,
 * the oldest at the bottom so that it runs them oldest first (thieves take
 * the newest). Taken
 * tasks wake nobody: each push woke a worker if none was searching, this
 * worker is awake to run them (as with a push onto its own deque), and a
 * searcher that takes a batch stops searching only after the batch is on
 * its deque, so the last searcher's re-check (idle.c) sees what is left
 * there and hands the search on. */
weft_task *weft_find_injected(weft_pool *pool, weft_worker *w)
{
  weft_task *batch[WEFT_INJECT_BATCH];
  /* Every injection queue (the shared one, then each solo queue claimed:
   * solo.h), the first one in turn, so that a flood into one does not
   * hold up the others' tasks. */
  int nq = 1 + weft_solo_count(pool);
  unsigned q = w->inject_turn < (unsigned)nq ? w->inject_turn : 0;
  w->inject_turn = q + 1;
  int n = 0;
  for (int k = 0; k < nq && !n; k++) {
    n = weft_inject_pop_batch(q ? &pool->solo[q - 1] : &pool->inject, batch, WEFT_INJECT_BATCH,
                              pool->nworkers);
    if (++q == (unsigned)nq)
      q = 0;
  }
  /* Each task's line, and what its argument points to (what a task touches
   * first: an engine operator's block), was written on the submitter's core:
   * ask for them all at once, so that they arrive together rather than one
   * after another as the tasks run. The tasks are still ours here (not yet
   * on the deque, where a thief may take and finish them). */
  for (int i = 0; i < n; i++)
    __builtin_prefetch(batch[i], 1);
  for (int i = 0; i < n; i++) {
    uintptr_t arg = (uintptr_t)batch[i]->arg; /* a prefetch never faults, whatever arg is */
    __builtin_prefetch((const void *)arg, 1);
    __builtin_prefetch((const void *)(arg + WEFT_CACHE_LINE), 1);
  }
  for (int i = n - 1; i >= 1; i--)
    if (weft_deque_push(&w->deque, batch[i])) /* no memory to grow: back to the queue */
      weft_inject_push(&pool->inject, batch[i]);
  return n ? batch[0] : NULL;
}

weft_task *weft_find_nonlocal(weft_pool *pool, weft_worker *w)
{
  for (;;) {
    weft_task *t = weft_prio_pop(&pool->prio);
    if (t)
      return t;
    if (w) {
      t = weft_find_injected(pool, w);
    } else if (!(t = weft_inject_pop(&pool->inject))) {
      int ns = weft_solo_count(pool);
      for (int i = 0; i < ns && !t; i++)
        t = weft_inject_pop(&pool->solo[i]);
    }
    if (t)
      return t;
    bool retry = false;
    t = steal_sweep(pool, w, &retry);
    if (t || !retry)
      return t; /* a lost race is not "empty": sweep again */
  }
}
