#include "common/objstore.h"

#include "common/alloc.h"
#include "weft/weft.h"

int weft_obj_store_init(weft_obj_store *s, size_t size, long cache_max)
{
  s->cache_max = cache_max < 2 ? 2 : cache_max;
  if (pthread_mutex_init(&s->lock, NULL))
    return WEFT_ENOMEM;
  s->size = size < sizeof(void *) ? sizeof(void *) : size;
  s->free = NULL;
  s->n = 0;
  s->slabs = NULL;
  return 0;
}

void weft_obj_store_destroy(weft_obj_store *s)
{
  for (void *slab = s->slabs, *next; slab; slab = next) {
    next = *(void **)slab;
    weft_free(slab);
  }
  s->slabs = NULL;
  s->free = NULL;
  pthread_mutex_destroy(&s->lock);
}

/* Under s->lock: carves a new slab onto s->free. Objects start a cache line
 * into the slab (after the link word), so each is aligned to 64 bytes' worth
 * of its own size's alignment needs (sizes here are multiples of 8). */
static int add_slab(weft_obj_store *s)
{
  char *slab = weft_malloc(WEFT_OBJ_SLAB_BYTES);
  if (!slab)
    return WEFT_ENOMEM;
  *(void **)slab = s->slabs;
  s->slabs = slab;
  size_t n = (WEFT_OBJ_SLAB_BYTES - WEFT_CACHE_LINE) / s->size;
  for (size_t i = 0; i < n; i++) {
    void *p = slab + WEFT_CACHE_LINE + i * s->size;
    *(void **)p = s->free;
    s->free = p;
  }
  s->n += (long)n;
  return 0;
}

void *weft_obj_alloc_slow(weft_obj_store *s, weft_obj_cache *c)
{
  pthread_mutex_lock(&s->lock);
  if (!s->free && add_slab(s)) {
    pthread_mutex_unlock(&s->lock);
    return NULL;
  }
  void *p = s->free;
  s->free = *(void **)p;
  s->n--;
  if (c) { /* refill the cache with up to half a cache's worth */
    while (s->free && c->n < s->cache_max / 2) {
      void *q = s->free;
      s->free = *(void **)q;
      s->n--;
      *(void **)q = c->free;
      c->free = q;
      c->n++;
    }
  }
  pthread_mutex_unlock(&s->lock);
  return p;
}

void weft_obj_free_slow(weft_obj_store *s, weft_obj_cache *c, void *p)
{
  pthread_mutex_lock(&s->lock);
  *(void **)p = s->free;
  s->free = p;
  s->n++;
  if (c) { /* the cache is full: give half of it back */
    while (c->n > s->cache_max / 2) {
      void *q = c->free;
      c->free = *(void **)q;
      c->n--;
      *(void **)q = s->free;
      s->free = q;
      s->n++;
    }
  }
  pthread_mutex_unlock(&s->lock);
}
