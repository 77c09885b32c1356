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

/* A sync block with tallies for ntally threads, zeroed. A recycled block
 * may still be read by a completion of its previous engine (after that
 * engine drained): every field it reads is atomic, and what it computes
 * then is at worst a spurious wake-up. */
weft_engine_sync *weft_engine_sync_get(int ntally)
{
  pthread_once(&sync_fork_once, sync_fork_register);
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
    for (int i = 0; i < ntally; i++)
      for (int k = 0; k < 2; k++) {
        atomic_init(&s->tally[i].pushed[k], 0);
        atomic_init(&s->tally[i].done[k], 0);
      }
  }
  atomic_store_explicit(&s->ntally, ntally, memory_order_relaxed);
  atomic_store_explicit(&s->waiters, 0, memory_order_relaxed);
  atomic_store_explicit(&s->drain_waiters, 0, memory_order_relaxed);
  for (int i = 0; i < s->cap; i++) /* relaxed: published with the engine */
    for (int k = 0; k < 2; k++) {
      atomic_store_explicit(&s->tally[i].pushed[k], 0, memory_order_relaxed);
      atomic_store_explicit(&s->tally[i].done[k], 0, memory_order_relaxed);
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
  weft_engine_tally *shared =
      &eng->sync->tally[atomic_load_explicit(&eng->sync->ntally, memory_order_relaxed) - 1];
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

