#include "pool/task.h"

#include "common/alloc.h"
#include "common/tunables.h"

int weft_task_store_init(weft_task_store *s)
{
  if (pthread_mutex_init(&s->lock, NULL))
    return WEFT_ENOMEM;
  s->free = NULL;
  s->nfree = 0;
  s->slabs = NULL;
  return 0;
}

void weft_task_store_destroy(weft_task_store *s)
{
  for (void *slab = s->slabs, *next; slab; slab = next) {
    next = *(void **)slab;
    weft_free(slab);
  }
  s->slabs = NULL;
  s->free = NULL;
  pthread_mutex_destroy(&s->lock);
}

/* Under s->lock: carves a new slab onto s->free. */
static int add_slab(weft_task_store *s)
{
  char *slab = weft_malloc(WEFT_TASK_SLAB_BYTES);
  if (!slab)
    return WEFT_ENOMEM;
  *(void **)slab = s->slabs;
  s->slabs = slab;
  /* The first task starts after the link word, aligned for a task. */
  size_t first = (sizeof(void *) + _Alignof(weft_task) - 1) / _Alignof(weft_task) * _Alignof(weft_task);
  size_t n = (WEFT_TASK_SLAB_BYTES - first) / sizeof(weft_task);
  weft_task *t = (weft_task *)(slab + first);
  for (size_t i = 0; i < n; i++) {
    t[i].next = s->free;
    s->free = &t[i];
  }
  s->nfree += (long)n;
  return 0;
}

weft_task *weft_task_alloc_slow(weft_task_store *s, weft_task_cache *c)
{
  pthread_mutex_lock(&s->lock);
  if (!s->free && add_slab(s)) {
    pthread_mutex_unlock(&s->lock);
    return NULL;
  }
  weft_task *t = s->free;
  s->free = t->next;
  s->nfree--;
  if (c) { /* refill the worker's list with up to half a cache's worth */
    while (s->free && c->nfree < WEFT_TASK_CACHE_MAX / 2) {
      weft_task *u = s->free;
      s->free = u->next;
      s->nfree--;
      u->next = c->free;
      c->free = u;
      c->nfree++;
    }
  }
  pthread_mutex_unlock(&s->lock);
  return t;
}

void weft_task_free_slow(weft_task_store *s, weft_task_cache *c, weft_task *t)
{
  pthread_mutex_lock(&s->lock);
  t->next = s->free;
  s->free = t;
  s->nfree++;
  if (c) { /* the worker's list is full: give half of it back */
    while (c->nfree > WEFT_TASK_CACHE_MAX / 2) {
      weft_task *u = c->free;
      c->free = u->next;
      c->nfree--;
      u->next = s->free;
      s->free = u;
      s->nfree++;
    }
  }
  pthread_mutex_unlock(&s->lock);
}
