#include "pool/inject.h"

#include "common/assert.h"
#include "pool/task.h"

_Static_assert((WEFT_INJECT_RING & (WEFT_INJECT_RING - 1)) == 0, "the ring is a power of two");

int weft_inject_init(weft_inject *q)
{
  weft_spin_init(&q->lock);
  q->head = q->tail = 0;
  weft_fifo_init(&q->overflow);
  atomic_init(&q->count, 0);
  return 0;
}

void weft_inject_destroy(weft_inject *q)
{
  /* destroy ran everything submitted */
  WEFT_ASSERT(q->head == q->tail && weft_fifo_empty(&q->overflow));
  (void)q;
}

/* Under the lock: count += delta. relaxed: a hint for lock-free emptiness
 * checks; the tasks themselves are published by the lock, and the parking
 * handshake has its own fence. */
static inline void count_add(weft_inject *q, int64_t delta)
{
  int64_t c = atomic_load_explicit(&q->count, memory_order_relaxed) + delta;
  WEFT_ASSERT(c >= 0); /* count is the number of tasks queued, under the lock */
  atomic_store_explicit(&q->count, c, memory_order_relaxed);
}

void weft_inject_push(weft_inject *q, weft_task *t)
{
  weft_spin_lock(&q->lock);
  if (q->tail - q->head < WEFT_INJECT_RING && weft_fifo_empty(&q->overflow))
    q->ring[q->tail++ & (WEFT_INJECT_RING - 1)] = t;
  else
    weft_fifo_push(&q->overflow, &t->link);
  count_add(q, +1);
  weft_spin_unlock(&q->lock);
}

/* Under the lock: up to max of the oldest tasks into out (the ring holds
 * the oldest; the overflow only what came after it filled). */
static int take(weft_inject *q, weft_task **out, int max)
{
  int n = 0;
  while (n < max && q->head != q->tail)
    out[n++] = q->ring[q->head++ & (WEFT_INJECT_RING - 1)];
  for (weft_fifo_node *node; n < max && (node = weft_fifo_pop(&q->overflow));)
    out[n++] = weft_fifo_entry(node, weft_task, link);
  if (n)
    count_add(q, -n);
  WEFT_ASSERT(n == max || atomic_load_explicit(&q->count, memory_order_relaxed) == 0);
  return n;
}

weft_task *weft_inject_pop(weft_inject *q)
{
  weft_task *t = NULL;
  weft_inject_pop_batch(q, &t, 1);
  return t;
}

int weft_inject_pop_batch(weft_inject *q, weft_task **out, int max)
{
  if (weft_inject_looks_empty(q) || max <= 0)
    return 0;
  weft_spin_lock(&q->lock);
  int n = take(q, out, max);
  weft_spin_unlock(&q->lock);
  return n;
}
