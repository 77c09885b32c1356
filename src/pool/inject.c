#include "pool/inject.h"

#include "common/assert.h"
#include "pool/task.h"

int weft_inject_init(weft_inject *q)
{
  weft_spin_init(&q->lock);
  weft_fifo_init(&q->tasks);
  atomic_init(&q->count, 0);
  return 0;
}

void weft_inject_destroy(weft_inject *q)
{
  WEFT_ASSERT(weft_fifo_empty(&q->tasks)); /* destroy ran everything submitted */
}

void weft_inject_push(weft_inject *q, weft_task *t)
{
  weft_spin_lock(&q->lock);
  weft_fifo_push(&q->tasks, &t->link);
  /* relaxed: a hint for lock-free emptiness checks; the task itself is
   * published by the lock, and the parking handshake has its own fence. */
  atomic_store_explicit(&q->count, atomic_load_explicit(&q->count, memory_order_relaxed) + 1,
                        memory_order_relaxed);
  weft_spin_unlock(&q->lock);
}

weft_task *weft_inject_pop(weft_inject *q)
{
  if (weft_inject_looks_empty(q))
    return NULL;
  weft_spin_lock(&q->lock);
  weft_fifo_node *n = weft_fifo_pop(&q->tasks);
  weft_task *t = NULL;
  if (n) {
    t = weft_fifo_entry(n, weft_task, link);
    int64_t count = atomic_load_explicit(&q->count, memory_order_relaxed);
    WEFT_ASSERT(count >= 1); /* count is the list's length, under the lock */
    atomic_store_explicit(&q->count, count - 1, memory_order_relaxed);
  }
  WEFT_ASSERT(n || atomic_load_explicit(&q->count, memory_order_relaxed) == 0);
  weft_spin_unlock(&q->lock);
  return t;
}

int weft_inject_pop_batch(weft_inject *q, weft_task **out, int max)
{
  if (weft_inject_looks_empty(q) || max <= 0)
    return 0;
  weft_spin_lock(&q->lock);
  int64_t count = atomic_load_explicit(&q->count, memory_order_relaxed);
  int n = 0;
  for (weft_fifo_node *node; n < max && (node = weft_fifo_pop(&q->tasks));)
    out[n++] = weft_fifo_entry(node, weft_task, link);
  WEFT_ASSERT(count >= n); /* count is the list's length, under the lock */
  /* relaxed: as in weft_inject_push. */
  atomic_store_explicit(&q->count, count - n, memory_order_relaxed);
  WEFT_ASSERT(n == max || count == n); /* stopped short only when it emptied */
  weft_spin_unlock(&q->lock);
  return n;
}
