/* SPDX-License-Identifier: MIT */
/*
 * The injection queue: where threads that own no deque (non-worker threads,
 * and threads helping from outside the pool) put work. MPMC, FIFO for each
 * producer.
 *
 * A bounded ring of cells, after D. Vyukov's MPMC queue: a producer claims
 * a position with a CAS on tail, fills the cell and publishes it by storing
 * the cell's sequence number (release); a consumer reads the published
 * cells at head, then claims them with a CAS on head (release). Unlike
 * Vyukov's, a consumer writes nothing into a cell: a producer learns that
 * a cell is free from head (a lap behind its position), which it reads
 * only when the copy it keeps says the ring may be full. So a cell's line
 * is written by producers alone, and a user's thread pushing operators
 * (the common producer: usually alone) writes, per task, one cell line
 * that a consumer must read anyway, and reads no line a worker wrote: no
 * lock shared with the workers, no locked instruction on a line they
 * write. Consumers never read tail (that would pull the producer's line
 * away on every pop): emptiness is read off the cell at head.
 *
 * A queue that one producer at a time fills (a pool's solo queue:
 * pool/solo.h) claims with a plain store of tail instead of the CAS
 * (weft_inject_push_solo); the hand-over between producers orders one's
 * claims before the next's.
 *
 * When the ring is full, tasks wait in an intrusive FIFO (common/fifo.h,
 * through weft_task.link) under a spinlock, so a push never needs memory;
 * while it holds any, every push goes there too, and consumers take the
 * ring first (it holds the older), looking at it again under the lock
 * before they take from the list. So a lone producer's tasks come out in
 * its order. With several producers, each one's tasks keep their order in
 * the ring and in the list, but a list task may overtake a ring task of
 * its producer when another producer's claimed cell, not yet filled, sits
 * at head (a ring consumer cannot skip it). Nothing in the pool relies on
 * more: submission order is not a promise (deques and steals reorder).
 */
#ifndef WEFT_POOL_INJECT_H
#define WEFT_POOL_INJECT_H
#include "pool/layer.h" /* layer guard: no include from a lower layer */

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/fifo.h"
#include "common/spinlock.h"
#include "common/tunables.h"

struct weft_task;

typedef struct weft_inject_cell {
  /* atomic, written by producers only: p + 1 once the task of position p
   * (p mod WEFT_INJECT_RING the cell's index) is published; below that,
   * not yet (a lap behind) */
  _Atomic uint64_t seq;
  /* atomic, relaxed: written by the producer of the cell's position; read
   * by consumers before they claim it (a read whose claim fails is
   * dropped, so it may race with the next lap's fill) */
  _Atomic(struct weft_task *) task;
} weft_inject_cell;

typedef struct weft_inject {
  _Atomic uint64_t tail; /* atomic: the next position to fill (producers' CAS) */
  /* atomic: a value head had, as a producer last read it (producers only:
   * on tail's line); release/acquire, so that what a consumer's claim
   * ordered before it reaches every producer that relies on the copy */
  _Atomic uint64_t head_seen;
  _Alignas(64) _Atomic uint64_t head; /* atomic: the next position to take (consumers' CAS) */
  _Alignas(64) weft_spinlock lock; /* guards overflow */
  /* under lock: tasks pushed while the ring was full, oldest first */
  weft_fifo overflow;
  /* atomic: written under lock (tasks in overflow), read without: while
   * non-zero, pushes go to the overflow */
  _Atomic int64_t noverflow;
  _Alignas(64) weft_inject_cell ring[WEFT_INJECT_RING];
} weft_inject;

int weft_inject_init(weft_inject *q);
void weft_inject_destroy(weft_inject *q);
void weft_inject_push(weft_inject *q, struct weft_task *t);
/* The same, for a queue that one producer at a time fills (a pool's solo
 * queue, solo.h): it claims its cell with a plain store of tail, no CAS.
 * Two producers at once would claim one cell twice. */
void weft_inject_push_solo(weft_inject *q, struct weft_task *t);
/* NULL when empty. */
struct weft_task *weft_inject_pop(weft_inject *q);
/* Takes up to max of the oldest tasks, oldest first, into out (the slots
 * past the returned count may have been written: ignore them): of the
 * ring's published tasks (counted up to max), all max when there are that
 * many, else one in nshare plus one; when the ring is empty, overflow
 * tasks likewise. Returns how many (0 when empty). */
int weft_inject_pop_batch(weft_inject *q, struct weft_task **out, int max, int nshare);
/* Whether no task is queued. A caller that needs the answer to see every
 * task published before its own store-load fence (the parking handshake)
 * gets it: a stale head is detected and read again. */
bool weft_inject_looks_empty(weft_inject *q);

#endif /* WEFT_POOL_INJECT_H */
