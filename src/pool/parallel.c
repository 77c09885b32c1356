/* SPDX-License-Identifier: MIT */
/*
 * parallel_for and parallel_launch: the calling thread runs the whole range
 * as one piece of a loop (split.c), which splits off halves for idle workers,
 * and then waits for the loop's group, helping meanwhile (wait.c).
 */
#include "pool/split.h"
#include "pool/wait.h"

static int run_loop(weft_pool *pool, size_t begin, size_t end, size_t grain, weft_range_fn fn,
                    void *arg)
{
  weft_group g_pub;
  weft_group_init(&g_pub, pool);
  weft_group_impl *g = (weft_group_impl *)&g_pub;
  weft_pfor_loop L = {fn, arg, grain, g};
  /* A caller outside the pool's work registers (destroy waits for it),
   * counts as busy while it runs pieces, and splits into the injection
   * queue; inside the pool's work, the loop is part of any drain. */
  int guest;
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
    weft_pool_guest_leave(pool, guest);
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
