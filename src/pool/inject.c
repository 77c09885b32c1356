#include "pool/inject.h"

#include "common/assert.h"
#include "pool/task.h"

_Static_assert((WEFT_INJECT_RING & (WEFT_INJECT_RING - 1)) == 0, "the ring is a power of two");
#define RING_MASK ((uint64_t)WEFT_INJECT_RING - 1)

int weft_inject_init(weft_inject *q)
{
  atomic_init(&q->tail, 0);
  atomic_init(&q->head, 0);
  weft_spin_init(&q->lock);
  weft_fifo_init(&q->overflow);
  atomic_init(&q->noverflow, 0);
  for (uint64_t i = 0; i < WEFT_INJECT_RING; i++) {
    atomic_init(&q->ring[i].seq, i);
    q->ring[i].task = NULL;
  }
  return 0;
}

void weft_inject_destroy(weft_inject *q)
{
  /* destroy ran everything submitted */
  WEFT_ASSERT(weft_inject_looks_empty(q) && weft_fifo_empty(&q->overflow));
  (void)q;
}

/* Claims a free cell of the ring for a producer; NULL when the ring is full. */
static weft_inject_cell *claim_free(weft_inject *q, uint64_t *pos)
{
  uint64_t p = atomic_load_explicit(&q->tail, memory_order_relaxed);
  for (;;) {
    weft_inject_cell *c = &q->ring[p & RING_MASK];
    /* acquire: the consumer that took the cell's last task (its store of
     * p) is done with it before we fill it. */
    uint64_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
    int64_t dif = (int64_t)(seq - p);
    if (dif == 0) {
      /* relaxed: the cell's sequence number carries every ordering */
      if (atomic_compare_exchange_weak_explicit(&q->tail, &p, p + 1, memory_order_relaxed,
                                                memory_order_relaxed)) {
        *pos = p;
        return c;
      }
    } else if (dif < 0) {
      return NULL; /* the cell still holds last lap's task: full */
    } else {
      p = atomic_load_explicit(&q->tail, memory_order_relaxed); /* another producer took p */
    }
  }
}

void weft_inject_push(weft_inject *q, weft_task *t)
{
  uint64_t pos;
  weft_inject_cell *c;
  if (atomic_load_explicit(&q->noverflow, memory_order_relaxed) == 0 && (c = claim_free(q, &pos))) {
    c->task = t;
    /* release: publishes the task to the consumer whose acquire load of
     * seq finds pos + 1 (take_ring, weft_inject_looks_empty). */
    atomic_store_explicit(&c->seq, pos + 1, memory_order_release);
    return;
  }
  weft_spin_lock(&q->lock);
  weft_fifo_push(&q->overflow, &t->link);
  /* relaxed, under the lock: a hint; the lock publishes the list */
  atomic_store_explicit(&q->noverflow, atomic_load_explicit(&q->noverflow, memory_order_relaxed) + 1,
                        memory_order_relaxed);
  weft_spin_unlock(&q->lock);
}

/* Takes published tasks off the ring, oldest first: of the ready run at
 * head (counted up to max), its 1/nshare plus one, at most max. */
static int take_ring(weft_inject *q, weft_task **out, int max, int nshare)
{
  uint64_t h = atomic_load_explicit(&q->head, memory_order_relaxed);
  for (;;) {
    int ready = 0;
    while (ready < max) {
      /* acquire: pairs with the producer's release store of h + 1 */
      uint64_t seq = atomic_load_explicit(&q->ring[(h + (uint64_t)ready) & RING_MASK].seq,
                                          memory_order_acquire);
      if (seq != h + (uint64_t)ready + 1)
        break;
      ready++;
    }
    if (ready == 0) {
      /* Empty at h, or h is stale (another consumer took it): re-read. */
      uint64_t h2 = atomic_load_explicit(&q->head, memory_order_relaxed);
      if (h2 == h)
        return 0;
      h = h2;
      continue;
    }
    /* A full count: a long queue, take all we counted; else a share. */
    int n = ready == max ? max : ready / (nshare > 0 ? nshare : 1) + 1;
    if (n > ready)
      n = ready;
    /* relaxed: the cells' sequence numbers carry the tasks; winning the
     * CAS makes cells h .. h + n - 1 ours alone. */
    if (!atomic_compare_exchange_weak_explicit(&q->head, &h, h + (uint64_t)n, memory_order_relaxed,
                                               memory_order_relaxed))
      continue; /* h now holds the current head */
    for (int i = 0; i < n; i++) {
      weft_inject_cell *c = &q->ring[(h + (uint64_t)i) & RING_MASK];
      out[i] = c->task;
      /* release: our read of the task comes before a producer refills the
       * cell (its acquire load in claim_free). */
      atomic_store_explicit(&c->seq, h + (uint64_t)i + WEFT_INJECT_RING, memory_order_release);
    }
    return n;
  }
}

bool weft_inject_looks_empty(weft_inject *q)
{
  if (atomic_load_explicit(&q->noverflow, memory_order_relaxed) != 0)
    return false;
  uint64_t h = atomic_load_explicit(&q->head, memory_order_relaxed);
  for (;;) {
    /* acquire: a cell taken since we read head carries its consumer's
     * release store, after that consumer's CAS on head, so the re-read
     * below finds head past h (no spinning on a stale head). */
    uint64_t seq = atomic_load_explicit(&q->ring[h & RING_MASK].seq, memory_order_acquire);
    if (seq == h + 1)
      return false; /* a published task at head */
    if ((int64_t)(seq - h) <= 0)
      /* head's cell not yet filled for h, or our view of it is older than
       * the hand-back that must come before h can be filled: nothing
       * published at or after h that a fence before this call must show */
      return true;
    /* h + RING (or later): a consumer took h since we read head */
    h = atomic_load_explicit(&q->head, memory_order_relaxed);
  }
}

weft_task *weft_inject_pop(weft_inject *q)
{
  weft_task *t = NULL;
  weft_inject_pop_batch(q, &t, 1, 1);
  return t;
}

int weft_inject_pop_batch(weft_inject *q, weft_task **out, int max, int nshare)
{
  if (max <= 0)
    return 0;
  int n = take_ring(q, out, max, nshare);
  if (n || atomic_load_explicit(&q->noverflow, memory_order_relaxed) == 0)
    return n;
  /* The ring looked empty, but that look may predate a producer's last
   * ring push before its first overflow push: look again under the lock,
   * which orders after it everything that producer published before its
   * overflow push (so its ring tasks, the older, go first). */
  weft_spin_lock(&q->lock);
  n = take_ring(q, out, max, nshare);
  if (n) {
    weft_spin_unlock(&q->lock);
    return n;
  }
  int64_t left = atomic_load_explicit(&q->noverflow, memory_order_relaxed);
  int64_t share = left / (nshare > 0 ? nshare : 1) + 1;
  for (weft_fifo_node *node; n < max && n < share && (node = weft_fifo_pop(&q->overflow));)
    out[n++] = weft_fifo_entry(node, weft_task, link);
  /* relaxed, under the lock: as in weft_inject_push */
  atomic_store_explicit(&q->noverflow, left - n, memory_order_relaxed);
  weft_spin_unlock(&q->lock);
  return n;
}
