/*
 * parallel_for and parallel_launch: lazy binary splitting. The thread running
 * a piece works through it chunk by chunk (an eighth of what is left, at
 * least grain iterations); before each chunk, if its own deque is empty, it splits the rest of the piece in
 * half and pushes the upper half, for a thief or for itself later. Work is
 * thus cut only as finely as stealing asks for, and an imbalanced loop is
 * rebalanced to within about one chunk.
 */
#include "pool/parallel.h"

#include "pool/group.h"
#include "pool/pool_internal.h"

typedef struct pfor_loop {
  weft_range_fn fn;
  void *arg;
  size_t grain;
  weft_group_impl *group;
} pfor_loop;

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
  return idle && weft_inject_looks_empty(&pool->inject);
}

int weft_pfor_piece(void *loop, size_t b, size_t e)
{
  pfor_loop *L = loop;
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

static int run_loop(weft_pool *pool, size_t begin, size_t end, size_t grain, weft_range_fn fn,
                    void *arg)
{
  weft_group g_pub;
  weft_group_init(&g_pub, pool);
  weft_group_impl *g = (weft_group_impl *)&g_pub;
  pfor_loop L = {fn, arg, grain, g};
  /* A caller outside the pool's work registers (destroy waits for it),
   * counts as busy while it runs pieces, and splits into the injection
   * queue; inside the pool's work, the loop is part of any drain. */
  bool guest;
  int rc = weft_pool_guest_enter(pool, true, &guest);
  if (rc)
    return rc;
  weft_worker *w = weft_worker_of(pool);
  weft_pool *prev_task_pool = weft_tls_task_pool;
  if (!w) {
    weft_busy_add(pool, +1);
    weft_tls_task_pool = pool;
  }
  rc = weft_pfor_piece(&L, begin, end);
  if (rc)
    weft_group_fail(g, rc);
  rc = weft_group_wait_impl(g, w);
  if (!w) {
    weft_tls_task_pool = prev_task_pool;
    weft_busy_add(pool, -1);
  }
  if (guest)
    weft_pool_guest_leave(pool);
  return rc;
}

int weft_parallel_for(weft_pool *pool, size_t begin, size_t end, size_t grain, weft_range_fn fn,
                      void *arg)
{
  if (!pool || !fn || begin > end)
    return WEFT_EINVAL;
  if (begin == end)
    return 0;
  size_t n = end - begin;
  if (grain == 0) {
    grain = n / ((size_t)pool->nworkers * WEFT_PFOR_CHUNKS_PER_WORKER);
    if (grain == 0)
      grain = 1;
  }
  return run_loop(pool, begin, end, grain, fn, arg);
}

typedef struct launch_loop {
  weft_launch_fn fn;
  void *arg;
  int num_tasks;
} launch_loop;

static int launch_range(size_t b, size_t e, void *arg)
{
  launch_loop *l = arg;
  for (size_t id = b; id < e; id++) {
    int rc = l->fn(l->arg, (int)id, l->num_tasks);
    if (rc)
      return rc;
  }
  return 0;
}

int weft_parallel_launch(weft_pool *pool, weft_launch_fn fn, void *arg, int num_tasks)
{
  if (!pool || !fn || num_tasks < 0)
    return WEFT_EINVAL;
  if (num_tasks == 0)
    return 0;
  launch_loop l = {fn, arg, num_tasks};
  return run_loop(pool, 0, (size_t)num_tasks, 1, launch_range, &l);
}
