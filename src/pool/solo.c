/* SPDX-License-Identifier: MIT */
/* The solo injection queues' ownership (solo.h). */
#include "pool/solo.h"

#include <pthread.h>
#include <stdbool.h>

#include "common/fork.h"
#include "common/tunables.h"
#include "pool/pool_ext.h"

_Thread_local uint64_t weft_solo_last WEFT_TLS;
_Thread_local weft_inject *weft_solo_last_q WEFT_TLS;

/* The calling thread's claims: uids of pools one of whose solo queues it
 * owns (0: an empty entry), and that queue's index. */
static _Thread_local uint64_t claims[WEFT_SOLO_CLAIMS] WEFT_TLS;
static _Thread_local int claim_idx[WEFT_SOLO_CLAIMS] WEFT_TLS;
/* Its address is the thread's token (unique among live threads). */
static _Thread_local char token WEFT_TLS;
/* Set by weft_pool_solo_decline: never claim. */
static _Thread_local bool declined WEFT_TLS;

void weft_pool_solo_decline(void)
{
  declined = true;
}

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static weft_pool *live;     /* under live_lock: linked through solo_next */
static uint64_t next_uid = 1; /* under live_lock */

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static bool have_key;

/* fork: the registry is consistent in the child (common/fork.h); the
 * child's pools are stale (no workers), and the forking thread's claims
 * (the child's thread) name pools it never pushes to again. */
static void live_fork_prepare(void)
{
  pthread_mutex_lock(&live_lock);
}

static void live_fork_release(void)
{
  pthread_mutex_unlock(&live_lock);
}

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void fork_register(void)
{
  weft_fork_register(WEFT_FORK_SOLO_REGISTRY, live_fork_prepare, live_fork_release,
                     live_fork_release);
}

void weft_solo_register(weft_pool *pool)
{
  pthread_once(&fork_once, fork_register);
  for (int i = 0; i < WEFT_SOLO_QUEUES; i++)
    atomic_init(&pool->solo_owner[i], NULL);
  atomic_init(&pool->nsolo, 0);
  pthread_mutex_lock(&live_lock);
  pool->uid = next_uid++;
  pool->solo_next = live;
  live = pool;
  pthread_mutex_unlock(&live_lock);
}

void weft_solo_unregister(weft_pool *pool)
{
  pthread_mutex_lock(&live_lock);
  for (weft_pool **p = &live; *p; p = &(*p)->solo_next)
    if (*p == pool) {
      *p = pool->solo_next;
      break;
    }
  pthread_mutex_unlock(&live_lock);
}

/* The thread's exit: gives back each claim whose pool still lives. */
static void thread_exit(void *arg)
{
  (void)arg;
  pthread_mutex_lock(&live_lock);
  for (int i = 0; i < WEFT_SOLO_CLAIMS; i++) {
    if (!claims[i])
      continue;
    for (weft_pool *p = live; p; p = p->solo_next)
      if (p->uid == claims[i]) { /* live: not freed while we hold the registry */
        void *me = &token;
        /* release: our pushes (tail, the copy of head) come before the
         * next owner's (its acquire CAS) */
        atomic_compare_exchange_strong_explicit(&p->solo_owner[claim_idx[i]], &me, NULL,
                                                memory_order_release, memory_order_relaxed);
        break;
      }
    claims[i] = 0;
  }
  pthread_mutex_unlock(&live_lock);
  weft_solo_last = 0;
  weft_solo_last_q = NULL;
}

static void make_key(void)
{
  have_key = pthread_key_create(&exit_key, thread_exit) == 0;
}

/* Notes solo[i] of pool as the calling thread's (the fast path's check). */
static weft_inject *note(weft_pool *pool, int i)
{
  weft_solo_last = pool->uid;
  weft_solo_last_q = &pool->solo[i];
  return weft_solo_last_q;
}

weft_inject *weft_solo_claim(weft_pool *pool)
{
  if (declined)
    return NULL;
  void *me = &token;
  int free_q = -1;
  for (int i = 0; i < WEFT_SOLO_QUEUES; i++) {
    /* relaxed: only we store our own token; a value that is ours was ours
     * all along. Others' everywhere: the shared queue, with no lock taken
     * (every submission of an outside thread past the queues comes this
     * way). */
    void *owner = atomic_load_explicit(&pool->solo_owner[i], memory_order_relaxed);
    if (owner == me)
      return note(pool, i); /* ours, noted before another pool's */
    if (!owner && free_q < 0)
      free_q = i;
  }
  if (free_q < 0)
    return NULL;
  int entry = -1;
  pthread_mutex_lock(&live_lock);
  for (int i = 0; i < WEFT_SOLO_CLAIMS && entry < 0; i++) {
    bool alive = false;
    for (weft_pool *p = live; p && claims[i] && !alive; p = p->solo_next)
      alive = p->uid == claims[i];
    if (!alive) /* empty, or its pool is gone */
      entry = i;
  }
  pthread_mutex_unlock(&live_lock);
  pthread_once(&key_once, make_key);
  /* Without a note and the key, our exit could not give the claim back. */
  if (entry < 0 || !have_key || pthread_setspecific(exit_key, claims))
    return NULL;
  for (int i = free_q; i < WEFT_SOLO_QUEUES; i++) {
    void *none = NULL;
    /* acquire: pairs with the previous owner's release as it gave the
     * queue back; our pushes continue from its tail */
    if (!atomic_compare_exchange_strong_explicit(&pool->solo_owner[i], &none, me,
                                                 memory_order_acquire, memory_order_relaxed))
      continue; /* another thread's */
    claims[entry] = pool->uid;
    claim_idx[entry] = i;
    /* release: the consumers that see solo[i] counted (acquire) see it
     * initialised; raised before our first push into it, so that a
     * parking worker's re-check of every queue after its fence covers
     * that push (idle.c: the push, then the submitter's fence) */
    int n = atomic_load_explicit(&pool->nsolo, memory_order_relaxed);
    while (n < i + 1 && !atomic_compare_exchange_weak_explicit(&pool->nsolo, &n, i + 1,
                                                               memory_order_release,
                                                               memory_order_relaxed)) {
    }
    return note(pool, i);
  }
  return NULL;
}
