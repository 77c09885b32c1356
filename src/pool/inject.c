#include "pool/inject.h"

#include "pool/task.h"

int weft_inject_init(weft_inject *q)
{
  if (pthread_mutex_init(&q->lock, NULL))
    return WEFT_ENOMEM;
  q->head = q->tail = NULL;
  atomic_init(&q->count, 0);
  return 0;
}

void weft_inject_destroy(weft_inject *q)
{
  pthread_mutex_destroy(&q->lock);
}

void weft_inject_push(weft_inject *q, weft_task *t)
{
  t->next = NULL;
  pthread_mutex_lock(&q->lock);
  if (q->tail)
    q->tail->next = t;
  else
    q->head = t;
  q->tail = t;
  /* relaxed: a hint for lock-free emptiness checks; the task itself is
   * published by the mutex, and the parking handshake has its own fence. */
  atomic_store_explicit(&q->count, atomic_load_explicit(&q->count, memory_order_relaxed) + 1,
                        memory_order_relaxed);
  pthread_mutex_unlock(&q->lock);
}

weft_task *weft_inject_pop(weft_inject *q)
{
  if (weft_inject_looks_empty(q))
    return NULL;
  pthread_mutex_lock(&q->lock);
  weft_task *t = q->head;
  if (t) {
    q->head = t->next;
    if (!q->head)
      q->tail = NULL;
    atomic_store_explicit(&q->count, atomic_load_explicit(&q->count, memory_order_relaxed) - 1,
                          memory_order_relaxed);
  }
  pthread_mutex_unlock(&q->lock);
  return t;
}
