/* SPDX-License-Identifier: MIT */
#include "pool/inject.h"

#include "common/assert.h"
#include "pool/task.h"

_Static_assert((WEFT_INJECT_RING & (WEFT_INJECT_RING - 1)) == 0, "the ring is a power of two");
#define RING_MASK ((uint64_t)WEFT_INJECT_RING - 1)

int weft_inject_init(weft_inject *q)
{
  atomic_init(&q->tail, 0);
  atomic_init(&q->head_seen, 0);
  atomic_init(&q->head, 0);
  weft_spin_init(&q->lock);
  weft_fifo_init(&q->overflow);
  atomic_init(&q->noverflow, 0);
  for (uint64_t i = 0; i < WEFT_INJECT_RING; i++) {
    atomic_init(&q->ring[i].seq, i + 1 - WEFT_INJECT_RING); /* a lap behind position i */
    atomic_init(&q->ring[i].task, NULL);
  }
  return 0;
}

void weft_inject_destroy(weft_inject *q)
{
  /* destroy ran everything submitted */
  WEFT_ASSERT(weft_inject_looks_empty(q) && weft_fifo_empty(&q->overflow));
  (void)q;
}

/* How far published seq is from position p's publication (p + 1): 0 when
 * p's task is published, < 0 when not yet, > 0 when a later lap's is. */
static inline int64_t lap_dif(uint64_t seq, uint64_t p)
{
  return (int64_t)(seq - (p + 1));
}

/* Claims a free cell of the ring for a producer; NULL when the ring is full. */
static weft_inject_cell *claim_free(weft_inject *q, uint64_t *pos)
{
  uint64_t p = atomic_load_explicit(&q->tail, memory_order_relaxed);
  for (;;) {
    /* acquire: pairs with the release store below (another producer's):
     * the claims it saw come before our fill */
    uint64_t h = atomic_load_explicit(&q->head_seen, memory_order_acquire);
    if ((int64_t)(p - h) >= WEFT_INJECT_RING) {
      /* acquire: pairs with the consumers' release CAS: their reads of
       * the cells below head come before we fill one */
      h = atomic_load_explicit(&q->head, memory_order_acquire);
      if ((int64_t)(p - h) >= WEFT_INJECT_RING)
        return NULL; /* p's cell still holds last lap's task: full */
      /* release: passes that order on to the producers that read the copy */
      atomic_store_explicit(&q->head_seen, h, memory_order_release);
    }
    /* relaxed: the cell's sequence number publishes the fill */
    if (atomic_compare_exchange_weak_explicit(&q->tail, &p, p + 1, memory_order_relaxed,
                                              memory_order_relaxed)) {
      *pos = p;
      return &q->ring[p & RING_MASK];
    }
  }
}

/* claim_free for a queue with one producer at a time (weft_inject_push_solo):
 * the same, with a plain store of tail instead of the CAS. */
static weft_inject_cell *claim_solo(weft_inject *q, uint64_t *pos)
{
  uint64_t p = atomic_load_explicit(&q->tail, memory_order_relaxed);
  /* acquire: as in claim_free (a previous producer's copy; the hand-over
   * of the queue between producers orders it too) */
  uint64_t h = atomic_load_explicit(&q->head_seen, memory_order_acquire);
  if ((int64_t)(p - h) >= WEFT_INJECT_RING) {
    /* acquire: as in claim_free */
    h = atomic_load_explicit(&q->head, memory_order_acquire);
    if ((int64_t)(p - h) >= WEFT_INJECT_RING)
      return NULL;
    /* release: as in claim_free */
    atomic_store_explicit(&q->head_seen, h, memory_order_release);
  }
  /* relaxed: no other producer; the cell's sequence number publishes the fill */
  atomic_store_explicit(&q->tail, p + 1, memory_order_relaxed);
  *pos = p;
  return &q->ring[p & RING_MASK];
}

static void inject_one(weft_inject *q, weft_task *t, bool solo)
{
  uint64_t pos;
  weft_inject_cell *c;
  if (atomic_load_explicit(&q->noverflow, memory_order_relaxed) == 0 &&
      (c = solo ? claim_solo(q, &pos) : claim_free(q, &pos))) {
    atomic_store_explicit(&c->task, t, memory_order_relaxed); /* published by seq */
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

void weft_inject_push(weft_inject *q, weft_task *t)
{
  inject_one(q, t, false);
}

void weft_inject_push_solo(weft_inject *q, weft_task *t)
{
  inject_one(q, t, true);
}

/* Moves *h on to the current head past stale values and returns lap_dif
 * of the cell there: 0 when its task is published, < 0 when not (or our
 * view of the cell predates the fill: nothing that a fence before the
 * call must show). A cell that holds a later lap than *h tells that *h is
 * stale: its producer saw head past *h, and our acquire of its seq makes
 * the re-read of head see that too, so the loop moves on. */
static int64_t at_head(weft_inject *q, uint64_t *h)
{
  for (;;) {
    /* acquire: pairs with the producer's release store of the seq */
    int64_t dif = lap_dif(atomic_load_explicit(&q->ring[*h & RING_MASK].seq, memory_order_acquire), *h);
    if (dif <= 0)
      return dif;
    *h = atomic_load_explicit(&q->head, memory_order_relaxed);
  }
}

/* Takes published tasks off the ring, oldest first: of the ready run at
 * head (counted up to max), all max when there are that many, else its
 * 1/nshare plus one. */
static int take_ring(weft_inject *q, weft_task **out, int max, int nshare)
{
  uint64_t h = atomic_load_explicit(&q->head, memory_order_relaxed);
  for (;;) {
    if (at_head(q, &h) < 0)
      return 0;
    /* Read before the claim: once head passes a cell, a producer may fill
     * it again. relaxed: published by the seq read with acquire (at_head,
     * then below); a read whose claim fails is dropped. */
    out[0] = atomic_load_explicit(&q->ring[h & RING_MASK].task, memory_order_relaxed);
    int ready = 1;
    while (ready < max) {
      weft_inject_cell *c = &q->ring[(h + (uint64_t)ready) & RING_MASK];
      /* acquire: as in at_head */
      if (lap_dif(atomic_load_explicit(&c->seq, memory_order_acquire), h + (uint64_t)ready) != 0)
        break;
      out[ready++] = atomic_load_explicit(&c->task, memory_order_relaxed);
    }
    /* A full count: a long queue, take all we counted; else a share. */
    int n = ready == max ? max : ready / (nshare > 0 ? nshare : 1) + 1;
    if (n > ready)
      n = ready;
    /* release: our reads of the cells' tasks come before a producer fills
     * them again (its acquire load of head, claim_free). Winning the CAS
     * makes cells h .. h + n - 1 ours alone. */
    if (atomic_compare_exchange_weak_explicit(&q->head, &h, h + (uint64_t)n, memory_order_release,
                                              memory_order_relaxed))
      return n;
    /* h now holds the current head */
  }
}

bool weft_inject_looks_empty(weft_inject *q)
{
  if (atomic_load_explicit(&q->noverflow, memory_order_relaxed) != 0)
    return false;
  uint64_t h = atomic_load_explicit(&q->head, memory_order_relaxed);
  return at_head(q, &h) < 0;
}

weft_task *weft_inject_pop(weft_inject *q)
{
  weft_task *t;
  /* out's slots past the count are garbage (reads of cells not claimed) */
  return weft_inject_pop_batch(q, &t, 1, 1) ? t : NULL;
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
