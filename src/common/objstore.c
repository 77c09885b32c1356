/* SPDX-License-Identifier: MIT */
#include "common/objstore.h"

#include <stdbool.h>
#include <stdint.h>

#include "common/alloc.h"
#include "common/fork.h"
#include "common/tunables.h"
#include "weft/weft.h"

#define NEXT(p) (((void **)(p))[0])
#define MAG_NEXT(p) (((void **)(p))[1])
#define MAG_LEN(p) (((intptr_t *)(p))[2])

/* The registry of live stores (for thread caches going back), and the
 * source of store ids. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static weft_obj_store *live;  /* under registry_lock */
static uint64_t next_id = 1;  /* under registry_lock */

_Thread_local weft_obj_tcache weft_obj_tls[WEFT_OBJ_TLS_KINDS]
    __attribute__((tls_model("initial-exec")));

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key; /* set (non-NULL) once a thread has a cache: its exit flushes */
static bool have_key;

static pthread_once_t registry_fork_once = PTHREAD_ONCE_INIT;

static void registry_fork_prepare(void)
{
  pthread_mutex_lock(&registry_lock);
}

static void registry_fork_parent(void)
{
  pthread_mutex_unlock(&registry_lock);
}

/* The child: the stores it inherited belong to pools and engines it may not
 * use (their locks may be held by threads it does not have), so none is
 * live here, and the forking thread's caches (the child's thread) are
 * dropped rather than given back to one of them. */
static void registry_fork_child(void)
{
  live = NULL;
  for (int k = 0; k < WEFT_OBJ_TLS_KINDS; k++) {
    weft_obj_tls[k].id = 0;
    weft_obj_tls[k].c.free = weft_obj_tls[k].c.full = NULL;
    weft_obj_tls[k].c.n = 0;
  }
  pthread_mutex_unlock(&registry_lock);
}

static void registry_fork_register(void)
{
  weft_fork_register(WEFT_FORK_OBJ_REGISTRY, registry_fork_prepare, registry_fork_parent,
                     registry_fork_child);
}

int weft_obj_store_init(weft_obj_store *s, size_t size, long batch)
{
  if (pthread_mutex_init(&s->lock, NULL))
    return WEFT_ENOMEM;
  pthread_once(&registry_fork_once, registry_fork_register);
  pthread_mutex_lock(&registry_lock);
  s->id = next_id++;
  s->live_next = live;
  live = s;
  pthread_mutex_unlock(&registry_lock);
  size = (size + 7) / 8 * 8;
  s->size = size < 3 * sizeof(void *) ? 3 * sizeof(void *) : size;
  s->batch = batch < 1 ? 1 : batch;
  s->mags = NULL;
  s->slabs = NULL;
  return 0;
}

void weft_obj_store_destroy(weft_obj_store *s)
{
  pthread_mutex_lock(&registry_lock);
  for (weft_obj_store **p = &live; *p; p = &(*p)->live_next)
    if (*p == s) {
      *p = s->live_next;
      break;
    }
  pthread_mutex_unlock(&registry_lock);
  for (void *slab = s->slabs, *next; slab; slab = next) {
    next = *(void **)slab;
    weft_free(slab);
  }
  s->slabs = NULL;
  s->mags = NULL;
  pthread_mutex_destroy(&s->lock);
}

/* Under s->lock. */
static void push_mag(weft_obj_store *s, void *head, long len)
{
  MAG_NEXT(head) = s->mags;
  MAG_LEN(head) = len;
  s->mags = head;
}

/* Under s->lock: carves a new slab into magazines. Objects start a cache
 * line into the slab, after the slab link. */
static int add_slab(weft_obj_store *s)
{
  char *slab = weft_aligned_alloc(WEFT_CACHE_LINE, WEFT_OBJ_SLAB_BYTES); /* line-aligned objects */
  if (!slab)
    return WEFT_ENOMEM;
  *(void **)slab = s->slabs;
  s->slabs = slab;
  long n = (long)((WEFT_OBJ_SLAB_BYTES - WEFT_CACHE_LINE) / s->size);
  void *head = NULL;
  long len = 0;
  for (long i = 0; i < n; i++) {
    void *p = slab + WEFT_CACHE_LINE + (size_t)i * s->size;
    NEXT(p) = head;
    head = p;
    if (++len == s->batch) {
      push_mag(s, head, len);
      head = NULL;
      len = 0;
    }
  }
  if (head)
    push_mag(s, head, len);
  return 0;
}

void *weft_obj_alloc_slow(weft_obj_store *s, weft_obj_cache *c)
{
  if (c && c->full) { /* the reserve becomes the current chain */
    c->free = c->full;
    c->n = MAG_LEN(c->full);
    c->full = NULL;
    return weft_obj_alloc(s, c);
  }
  pthread_mutex_lock(&s->lock);
  if (!s->mags && add_slab(s)) {
    pthread_mutex_unlock(&s->lock);
    return NULL;
  }
  void *head = s->mags;
  s->mags = MAG_NEXT(head);
  long len = MAG_LEN(head);
  if (!c) { /* take one object; the rest of the chain goes back */
    if (len > 1)
      push_mag(s, NEXT(head), len - 1);
    pthread_mutex_unlock(&s->lock);
    return head;
  }
  pthread_mutex_unlock(&s->lock);
  c->free = NEXT(head);
  c->n = len - 1;
  return head;
}

void weft_obj_free_slow(weft_obj_store *s, weft_obj_cache *c, void *p)
{
  if (!c) { /* add to the top magazine if it has room, else start one */
    pthread_mutex_lock(&s->lock);
    void *top = s->mags;
    if (top && MAG_LEN(top) < s->batch) {
      s->mags = MAG_NEXT(top);
      NEXT(p) = top;
      push_mag(s, p, MAG_LEN(top) + 1);
    } else {
      NEXT(p) = NULL;
      push_mag(s, p, 1);
    }
    pthread_mutex_unlock(&s->lock);
    return;
  }
  /* The current chain is full: it becomes the reserve, and a reserve that
   * was already there goes to the store. */
  void *give = c->full;
  long give_len = give ? MAG_LEN(give) : 0;
  MAG_LEN(c->free) = c->n;
  c->full = c->free;
  NEXT(p) = NULL;
  c->free = p;
  c->n = 1;
  if (give) {
    pthread_mutex_lock(&s->lock);
    push_mag(s, give, give_len);
    pthread_mutex_unlock(&s->lock);
  }
}

/* Gives what t holds back to its store, if that store still lives. */
static void tcache_flush(weft_obj_tcache *t)
{
  if (!t->id)
    return;
  pthread_mutex_lock(&registry_lock);
  weft_obj_store *s = live;
  while (s && s->id != t->id)
    s = s->live_next;
  if (s) { /* live: it cannot be destroyed while we hold the registry */
    pthread_mutex_lock(&s->lock);
    if (t->c.free)
      push_mag(s, t->c.free, t->c.n);
    if (t->c.full)
      push_mag(s, t->c.full, MAG_LEN(t->c.full));
    pthread_mutex_unlock(&s->lock);
  } /* else its slabs went with it */
  pthread_mutex_unlock(&registry_lock);
  t->id = 0;
  t->c.free = t->c.full = NULL;
  t->c.n = 0;
}

static void thread_exit(void *arg)
{
  (void)arg;
  for (int k = 0; k < WEFT_OBJ_TLS_KINDS; k++)
    tcache_flush(&weft_obj_tls[k]);
}

static void make_key(void)
{
  have_key = pthread_key_create(&exit_key, thread_exit) == 0;
}

weft_obj_cache *weft_obj_thread_cache_switch(weft_obj_store *s, int kind)
{
  weft_obj_tcache *t = &weft_obj_tls[kind];
  tcache_flush(t);
  pthread_once(&key_once, make_key);
  /* Without a key (no room for one), the thread's exit would strand its
   * cache: such a thread goes through the store's lock instead. */
  if (!have_key || pthread_setspecific(exit_key, weft_obj_tls))
    return NULL;
  t->id = s->id;
  return &t->c;
}
