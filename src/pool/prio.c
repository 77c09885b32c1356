/* SPDX-License-Identifier: MIT */
#include "pool/prio.h"

#include "common/alloc.h"
#include "weft/weft.h"

int weft_prio_init(weft_prio *q)
{
  if (pthread_mutex_init(&q->lock, NULL))
    return WEFT_ENOMEM;
  q->heap = NULL;
  q->n = q->cap = 0;
  q->seq = 0;
  atomic_init(&q->count, 0);
  return 0;
}

void weft_prio_destroy(weft_prio *q)
{
  weft_free(q->heap);
  q->heap = NULL;
  pthread_mutex_destroy(&q->lock);
}

/* a before b: higher priority, then older. */
static bool before(const weft_prio_item *a, const weft_prio_item *b)
{
  return a->priority != b->priority ? a->priority > b->priority : a->seq < b->seq;
}

int weft_prio_push(weft_prio *q, struct weft_task *t, int priority)
{
  pthread_mutex_lock(&q->lock);
  if (q->n == q->cap) {
    int64_t cap = q->cap ? 2 * q->cap : 64;
    weft_prio_item *h = weft_malloc(sizeof *h * (size_t)cap);
    if (!h) {
      pthread_mutex_unlock(&q->lock);
      return WEFT_ENOMEM;
    }
    for (int64_t i = 0; i < q->n; i++)
      h[i] = q->heap[i];
    weft_free(q->heap);
    q->heap = h;
    q->cap = cap;
  }
  weft_prio_item it = {priority, q->seq++, t};
  int64_t i = q->n++;
  while (i > 0 && before(&it, &q->heap[(i - 1) / 2])) {
    q->heap[i] = q->heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  q->heap[i] = it;
  /* relaxed: a hint; the mutex publishes the task. */
  atomic_store_explicit(&q->count, q->n, memory_order_relaxed);
  pthread_mutex_unlock(&q->lock);
  return 0;
}

struct weft_task *weft_prio_pop(weft_prio *q)
{
  if (weft_prio_looks_empty(q))
    return NULL;
  pthread_mutex_lock(&q->lock);
  struct weft_task *t = NULL;
  if (q->n > 0) {
    t = q->heap[0].task;
    weft_prio_item last = q->heap[--q->n];
    int64_t i = 0;
    for (;;) {
      int64_t c = 2 * i + 1;
      if (c >= q->n)
        break;
      if (c + 1 < q->n && before(&q->heap[c + 1], &q->heap[c]))
        c++;
      if (!before(&q->heap[c], &last))
        break;
      q->heap[i] = q->heap[c];
      i = c;
    }
    if (q->n > 0)
      q->heap[i] = last;
    atomic_store_explicit(&q->count, q->n, memory_order_relaxed);
  }
  pthread_mutex_unlock(&q->lock);
  return t;
}
