/* SPDX-License-Identifier: MIT */
/*
 * Operators in flight, counted by epoch slot in per-thread tallies (see
 * inflight.h and weft_engine_tally), drains, and the wake-ups of threads
 * waiting on the counts.
 */
#include <limits.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/fork.h"
#include "common/sync.h"
#include "deps/inflight.h"
#include "deps/opr.h"

static pthread_mutex_t sync_lock = PTHREAD_MUTEX_INITIALIZER;
static weft_engine_sync *sync_free; /* under sync_lock */
static pthread_once_t sync_fork_once = PTHREAD_ONCE_INIT;

/* fork: the list is consistent in the child (common/fork.h). */
static void sync_fork_prepare(void)
{
  pthread_mutex_lock(&sync_lock);
}

static void sync_fork_release(void)
{
  pthread_mutex_unlock(&sync_lock);
}

static void sync_fork_register(void)
{
  weft_fork_register(WEFT_FORK_ENGINE_SYNC, sync_fork_prepare, sync_fork_release,
                     sync_fork_release);
}

/* A sync block for nworkers workers, zeroed. A recycled block may still be
 * read by a completion of its previous engine (after that engine drained):
 * every field it reads is atomic, and what it computes then is at worst a
 * spurious wake-up. Outside tallies it held go free: their owners' notes of
 * them name the block's previous life. */
weft_engine_sync *weft_engine_sync_get(int nworkers)
{
  pthread_once(&sync_fork_once, sync_fork_register);
  weft_membarrier_setup(); /* before any push can count the light way */
  int ntally = nworkers + WEFT_OUTSIDE_TALLIES + 1;
  pthread_mutex_lock(&sync_lock);
  weft_engine_sync **pp = &sync_free;
  while (*pp && (*pp)->cap < ntally)
    pp = &(*pp)->next;
  weft_engine_sync *s = *pp;
  if (s)
    *pp = s->next;
  pthread_mutex_unlock(&sync_lock);
  if (!s) {
    s = weft_aligned_alloc(64, sizeof *s + (size_t)ntally * sizeof s->tally[0]);
    if (!s)
      return NULL;
    s->cap = ntally;
    atomic_init(&s->idle_seq, 0);
    atomic_init(&s->waiters, 0);
    atomic_init(&s->drain_waiters, 0);
    atomic_init(&s->life, 0);
    atomic_init(&s->fence_word, 0);
    for (int i = 0; i < ntally; i++) {
      for (int k = 0; k < 2; k++) {
        atomic_init(&s->tally[i].pushed[k], 0);
        atomic_init(&s->tally[i].done[k], 0);
      }
      atomic_init(&s->tally[i].owner, NULL);
    }
  }
  atomic_store_explicit(&s->ntally, ntally, memory_order_relaxed);
  atomic_store_explicit(&s->waiters, 0, memory_order_relaxed);
  atomic_store_explicit(&s->drain_waiters, 0, memory_order_relaxed);
  /* relaxed: published with the engine; a thread's note of an outside
   * tally of the previous life no longer matches */
  atomic_store_explicit(&s->life, atomic_load_explicit(&s->life, memory_order_relaxed) + 1,
                        memory_order_relaxed);
  for (int i = 0; i < s->cap; i++) { /* relaxed: published with the engine */
    for (int k = 0; k < 2; k++) {
      atomic_store_explicit(&s->tally[i].pushed[k], 0, memory_order_relaxed);
      atomic_store_explicit(&s->tally[i].done[k], 0, memory_order_relaxed);
    }
    atomic_store_explicit(&s->tally[i].owner, NULL, memory_order_relaxed);
  }
  return s;
}

void weft_engine_sync_put(weft_engine_sync *s)
{
  pthread_mutex_lock(&sync_lock);
  s->next = sync_free;
  sync_free = s;
  pthread_mutex_unlock(&sync_lock);
}

void weft_engine_sync_notify(weft_engine_sync *sync)
{
  /* seq_cst: pairs with the waiter's increment before it re-checks. */
  if (atomic_load_explicit(&sync->waiters, memory_order_seq_cst) > 0) {
    /* release: pairs with the acquire load of idle_seq in weft_engine_wait. */
    atomic_fetch_add_explicit(&sync->idle_seq, 1, memory_order_release);
    weft_futex_wake(&sync->idle_seq, INT_MAX);
  }
}

void weft_engine_notify(weft_engine *eng)
{
  weft_engine_sync_notify(eng->sync);
}

/* The calling thread's tally: its worker's, or the shared one (own false). */
static weft_engine_tally *my_tally(weft_engine *eng, bool *own)
{
  int w = weft_pool_worker_index(eng->pool);
  *own = w >= 0;
  int shared = atomic_load_explicit(&eng->sync->ntally, memory_order_relaxed) - 1;
  return &eng->sync->tally[w >= 0 ? w : shared];
}

/* Adds n to a count of t (own: the calling worker's tally, else shared). */
static inline void tally_add(_Atomic uint64_t *c, bool own, uint64_t n, memory_order mo)
{
  if (own) /* the owner is the only writer: no read-modify-write */
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n, mo);
  else
    atomic_fetch_add_explicit(c, n, mo);
}

static inline void tally_inc(_Atomic uint64_t *c, bool own, memory_order mo)
{
  tally_add(c, own, 1, mo);
}

/* Whether slot s of sy's tallies is drained. The finished counts are read
 * first: each finish counted there happened after its push, so the push
 * is in the pushed sum read afterwards, and equal sums mean that every
 * push read has finished. */
static bool tally_drained(weft_engine_sync *sy, int s)
{
  uint64_t done = 0, pushed = 0;
  int n = atomic_load_explicit(&sy->ntally, memory_order_relaxed);
  for (int i = 0; i < n; i++) /* seq_cst: pairs with the finishes' stores in count_done */
    done += atomic_load_explicit(&sy->tally[i].done[s], memory_order_seq_cst);
  for (int i = 0; i < n; i++) /* seq_cst: pairs with the pushes' epoch protocol */
    pushed += atomic_load_explicit(&sy->tally[i].pushed[s], memory_order_seq_cst);
  return pushed == done;
}

/* Roughly how many operators are pushed and not finished (relaxed loads of
 * every tally, the finished counts first: never below the true count of
 * those it read, which is all pacing needs). */
uint64_t weft_engine_backlog(weft_engine *eng)
{
  weft_engine_sync *sy = eng->sync;
  uint64_t done = 0, pushed = 0;
  int n = atomic_load_explicit(&sy->ntally, memory_order_relaxed);
  for (int i = 0; i < n; i++)
    for (int k = 0; k < 2; k++) /* relaxed: a hint for pacing, nothing is read through it */
      done += atomic_load_explicit(&sy->tally[i].done[k], memory_order_relaxed);
  for (int i = 0; i < n; i++)
    for (int k = 0; k < 2; k++) /* relaxed: as above */
      pushed += atomic_load_explicit(&sy->tally[i].pushed[k], memory_order_relaxed);
  return pushed > done ? pushed - done : 0;
}

uint64_t weft_engine_finished(weft_engine *eng)
{
  weft_engine_sync *sy = eng->sync;
  uint64_t done = 0;
  int n = atomic_load_explicit(&sy->ntally, memory_order_relaxed);
  for (int i = 0; i < n; i++)
    for (int k = 0; k < 2; k++) /* relaxed: a hint for pacing */
      done += atomic_load_explicit(&sy->tally[i].done[k], memory_order_relaxed);
  return done;
}

int weft_engine_outside_pushers(weft_engine *eng)
{
  weft_engine_sync *sy = eng->sync;
  int first = atomic_load_explicit(&sy->ntally, memory_order_relaxed) - 1 - WEFT_OUTSIDE_TALLIES;
  int n = 0;
  for (int i = first; i < first + WEFT_OUTSIDE_TALLIES; i++) /* relaxed: a hint */
    n += atomic_load_explicit(&sy->tally[i].owner, memory_order_relaxed) != NULL;
  return n > 0 ? n : 1;
}

/* ------------------------------------------------ outside tallies
 *
 * A thread outside the pool that pushes claims one of the engine's outside
 * tallies (a CAS of its token into the tally's owner) and notes it in
 * claims[]; from then on it counts its pushes there with a plain store.
 * The note names the sync block's life, so it goes stale when the engine
 * is destroyed (and the block handed out again with its owners cleared).
 * The thread's exit gives its claims back (a CAS from its token, so a claim
 * cleared and re-taken by another thread meanwhile stays that thread's). */

typedef struct outside_claim {
  weft_engine_sync *sy; /* NULL: an empty entry */
  uint64_t life;        /* sy's life when claimed */
  int idx;              /* the tally's index in sy */
} outside_claim;

static _Thread_local outside_claim claims[WEFT_OUTSIDE_CLAIMS]
    __attribute__((tls_model("initial-exec")));
static _Thread_local int last_claim __attribute__((tls_model("initial-exec"))) = -1;
/* Its address is the thread's token (unique among live threads). */
static _Thread_local char claim_token __attribute__((tls_model("initial-exec")));

static pthread_once_t claim_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t claim_key;
static bool have_claim_key;

static void claims_exit(void *arg)
{
  (void)arg;
  for (int i = 0; i < WEFT_OUTSIDE_CLAIMS; i++) {
    outside_claim *c = &claims[i];
    if (!c->sy || atomic_load_explicit(&c->sy->life, memory_order_relaxed) != c->life)
      continue; /* empty, or its engine is gone: the claim went with it */
    void *me = &claim_token;
    /* release: our counts come before the next owner's (its acquire CAS) */
    atomic_compare_exchange_strong_explicit(&c->sy->tally[c->idx].owner, &me, NULL,
                                            memory_order_release, memory_order_relaxed);
    c->sy = NULL;
  }
  last_claim = -1;
}

static void make_claim_key(void)
{
  have_claim_key = pthread_key_create(&claim_key, claims_exit) == 0;
}

/* The index of sy's first outside tally (after the workers'; the shared
 * one is last). */
static inline int first_outside(weft_engine_sync *sy)
{
  return atomic_load_explicit(&sy->ntally, memory_order_relaxed) - 1 - WEFT_OUTSIDE_TALLIES;
}

/* The calling thread's own outside tally in sy, claimed now if it has
 * none and one is free; NULL: it shares (none free, or no room to note a
 * claim). Out of line: only a thread's first push on an engine (or one
 * after a lost claim) comes here; inlined, its frame made every counted
 * push save six registers (callgrind). */
static __attribute__((noinline, cold)) weft_engine_tally *claim_outside(weft_engine_sync *sy)
{
  uint64_t life = atomic_load_explicit(&sy->life, memory_order_relaxed);
  int free_entry = -1;
  for (int i = 0; i < WEFT_OUTSIDE_CLAIMS; i++) {
    outside_claim *c = &claims[i];
    if (c->sy == sy && c->life == life) {
      last_claim = i;
      return &sy->tally[c->idx];
    }
    if (free_entry < 0 &&
        (!c->sy || atomic_load_explicit(&c->sy->life, memory_order_relaxed) != c->life))
      free_entry = i; /* empty, or its engine is gone */
  }
  if (free_entry < 0)
    return NULL;
  int first = first_outside(sy);
  for (int idx = first; idx < first + WEFT_OUTSIDE_TALLIES; idx++) {
    /* relaxed: a tally someone owns is skipped without a locked
     * instruction (a thread past the owned ones comes here every push) */
    if (atomic_load_explicit(&sy->tally[idx].owner, memory_order_relaxed))
      continue;
    pthread_once(&claim_key_once, make_claim_key);
    /* Without the key, the thread's exit could not give the claim back. */
    if (!have_claim_key || pthread_setspecific(claim_key, claims))
      return NULL;
    void *none = NULL;
    /* seq_cst: an acquire of the previous owner's release as it gave the
     * tally back (our plain increments continue from its counts), and
     * ordered against a wait_all's seq_cst reads of the owners
     * (weft_engine_light_counters): see weft_engine_count_push. */
    if (atomic_compare_exchange_strong_explicit(&sy->tally[idx].owner, &none, &claim_token,
                                                memory_order_seq_cst, memory_order_relaxed)) {
      claims[free_entry] = (outside_claim){sy, life, idx};
      last_claim = free_entry;
      return NULL; /* this push still shares: see weft_engine_count_push */
    }
  }
  return NULL;
}

bool weft_engine_light_counters(weft_engine_sync *sy)
{
  int first = first_outside(sy);
  for (int idx = first; idx < first + WEFT_OUTSIDE_TALLIES; idx++) {
    /* seq_cst: after the caller's seq_cst flip of the epoch, against the
     * claim's seq_cst CAS (claim_outside) */
    void *o = atomic_load_explicit(&sy->tally[idx].owner, memory_order_seq_cst);
    if (o && o != &claim_token)
      return true;
  }
  return false;
}

/* The calling (outside) thread's own tally in sy, or NULL: it shares. */
static inline weft_engine_tally *my_outside_tally(weft_engine_sync *sy)
{
  int i = last_claim;
  if (i >= 0 && claims[i].sy == sy &&
      claims[i].life == atomic_load_explicit(&sy->life, memory_order_relaxed))
    return &sy->tally[claims[i].idx];
  return claim_outside(sy);
}

/* An owned tally's counts: written by the owner alone with plain stores;
 * seq_cst under TSan, which does not model the membarrier that wait_all's
 * side issues (then both sides are seq_cst: a symmetric Dekker pair). */
#if WEFT_TSAN
#define OWNED_MO memory_order_seq_cst
#else
#define OWNED_MO memory_order_relaxed
#endif

uint64_t weft_engine_count_push(weft_engine *eng)
{
  weft_opr *parent = weft_tls_opr;
  if (parent && parent->eng == eng) {
    /* Pushed from inside an operator: counted with it, so a weft_wait_all
     * that waits for the parent waits for what it pushes; the parent's own
     * count keeps that slot from draining meanwhile. relaxed: the push is
     * ordered before its finish by the operator's own hand-offs. */
    bool own;
    weft_engine_tally *t = my_tally(eng, &own);
    tally_inc(&t->pushed[parent->slot], own, memory_order_relaxed);
    return parent->epoch;
  }
  weft_engine_sync *sy = eng->sync;
  /* A plain task of the pool pushing shares (a worker's own tally would
   * need wait_all's membarrier every time). */
  weft_engine_tally *t = weft_pool_worker_index(eng->pool) < 0 ? my_outside_tally(sy) : NULL;
  if (t) {
    /* An outside tally we own. The count and the epoch's re-read form a
     * Dekker pair with wait_all's flip and its read of the counts: between
     * them we need only a compiler barrier, since wait_all puts a full
     * barrier into every running thread (weft_fence_heavy) between its
     * flip and its read, whenever a thread other than itself owns a tally
     * (weft_engine_light_counters). Without membarrier, a full fence here.
     *
     * A wait_all that read our tally's owner as free skips the barrier;
     * our claim then came after that read (seq_cst, both), and the push
     * that claimed counted on the shared tally, whose seq_cst re-read of
     * the epoch sees the flip; every later push of ours reads the epoch
     * after that. A wait_all on our own thread needs no barrier for our
     * counts: they come before it in program order. */
    for (;;) {
      uint64_t e = atomic_load_explicit(&eng->epoch, OWNED_MO);
      _Atomic uint64_t *c = &t->pushed[e & 1];
      atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1, OWNED_MO);
#if !WEFT_TSAN /* (under TSan both sides' operations are seq_cst instead) */
      if (weft_membarrier_ok_)
        atomic_signal_fence(memory_order_seq_cst); /* the compiler keeps the order */
      else
        atomic_thread_fence(memory_order_seq_cst); /* pairs with wait_all's fence_sc */
#endif
      if (atomic_load_explicit(&eng->epoch, OWNED_MO) == e)
        return e;
      weft_engine_count_done(eng, (int)(e & 1)); /* flipped meanwhile: count again */
    }
  }
  weft_engine_tally *shared =
      &sy->tally[atomic_load_explicit(&sy->ntally, memory_order_relaxed) - 1];
  for (;;) {
    /* seq_cst (all three): a weft_wait_all that flipped the epoch after we
     * read it either sees our count in the old slot, or we see its flip on
     * the re-read and move to the new slot. */
    uint64_t e = atomic_load_explicit(&eng->epoch, memory_order_seq_cst);
    atomic_fetch_add_explicit(&shared->pushed[e & 1], 1, memory_order_seq_cst);
    if (atomic_load_explicit(&eng->epoch, memory_order_seq_cst) == e)
      return e;
    weft_engine_count_done(eng, (int)(e & 1));
  }
}

void weft_engine_count_done_busy(weft_engine *eng, int slot, uint32_t n)
{
  bool own;
  weft_engine_tally *t = my_tally(eng, &own);
  /* seq_cst: as in count_done. No one needs waking: the slot is not
   * drained, and the finish of the operator about to run checks again. */
  tally_add(&t->done[slot], own, n, memory_order_seq_cst);
}


/* A drain check this worker left for between tasks (pool_ext.h): its last
 * finish counted down pend_epoch's slot of pend_sync while a thread waited
 * for a drain. NULL: none. */
static _Thread_local weft_engine_sync *pend_sync __attribute__((tls_model("initial-exec")));
static _Thread_local uint64_t pend_epoch __attribute__((tls_model("initial-exec")));

void weft_engine_drain_flush(void)
{
  weft_engine_sync *sy = pend_sync;
  if (!sy)
    return;
  pend_sync = NULL;
  weft_tls_between = NULL;
  /* The sync block outlives its engine (recycled, never freed): at worst
   * a spurious wake-up of a later engine's waiter. */
  if (tally_drained(sy, (int)(pend_epoch & 1)))
    weft_engine_sync_notify(sy);
}

void weft_engine_drain_before(const weft_engine *eng, uint64_t epoch)
{
  /* An operator counted in the same epoch: nothing of it has drained, and
   * its own finish counts down again (and checks, or leaves the check
   * again). */
  if (pend_sync && !(eng->sync == pend_sync && epoch == pend_epoch))
    weft_engine_drain_flush();
}

/* Uncounts an operator of epoch (only epoch & 1 matters unless deferring).
 * hook non-NULL: a finished operator's count, whose drain check a worker
 * running the engine's task from its main loop may leave for between
 * tasks (hook becomes the pool's weft_tls_between). */
static void count_done(weft_engine *eng, uint64_t epoch, uint32_t n, weft_between_fn hook)
{
  weft_engine_sync *sy = eng->sync; /* eng may be freed once the count drains */
  int slot = (int)(epoch & 1);
  bool own;
  weft_engine_tally *t = my_tally(eng, &own);
  /* seq_cst: orders the count before the read of drain_waiters (a waiter
   * announces itself, then reads the sums: one of us sees the other). */
  tally_add(&t->done[slot], own, n, memory_order_seq_cst);
  if (atomic_load_explicit(&sy->drain_waiters, memory_order_seq_cst) == 0)
    return;
  if (hook && own && weft_pool_top_task()) {
    /* A worker in its main loop: sum the tallies (every worker's lines,
     * which their owners keep writing) only once it is about to run
     * something not counted in this epoch, or to go idle. */
    if (pend_sync && (pend_sync != sy || pend_epoch != epoch))
      weft_engine_drain_flush();
    pend_sync = sy;
    pend_epoch = epoch;
    weft_tls_between = hook;
    return;
  }
  if (tally_drained(sy, slot))
    weft_engine_sync_notify(sy);
}

void weft_engine_count_done(weft_engine *eng, int slot)
{
  count_done(eng, (uint64_t)slot, 1, NULL);
}

void weft_engine_count_done_op(weft_engine *eng, uint64_t epoch, uint32_t n, weft_between_fn hook)
{
  count_done(eng, epoch, n, hook);
}

bool weft_engine_drained(weft_engine *eng, int slot)
{
  if (slot >= 0)
    return tally_drained(eng->sync, slot);
  return tally_drained(eng->sync, 0) && tally_drained(eng->sync, 1);
}

