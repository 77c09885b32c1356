/* SPDX-License-Identifier: MIT */
/*
 * The var queue: MXNet's ThreadedVar as a FIFO reader-writer queue.
 *
 * Every operator that reads or writes a var puts one request on the var's
 * queue, in push order. Reads run together, writes run alone and in push
 * order: a request is granted when everything before it allows it.
 *   - granted reads not yet complete are counted (MXNet's num_pending_reads);
 *   - a granted write not yet complete is flagged (MXNet's pending write,
 *     once triggered);
 *   - waiting requests stay queued, oldest first.
 * A read is granted when no write is granted and none waits before it; a
 * write when nothing is granted and nothing waits before it. Completing a
 * request grants, in order, the reads at the head of the queue, or the write
 * at the head once the last granted read is done.
 *
 * Claimed segments: a completion that grants a write of a plain CPU
 * operator (simple) may take every request still waiting with it, in one
 * step: the granted request's next links them on (the segment's links are
 * not written again while it lasts), the queue stays held for writing and
 * starts empty again behind them (new requests queue there as usual). When
 * that operator finishes, its completion hands the var straight to the
 * first claimed request if it is a simple write too, which holds the rest
 * through its own next, without the lock and without touching the queue's
 * line (which the pusher keeps); anything else, and any failure, gives the
 * rest back to the queue's head under the lock (weft_varq_unclaim) first. A
 * run of writes to one var (a chain) then costs its pusher and its runner
 * one exchange of the queue's line per segment, not per operator. In a
 * segment of writes only (pure: the queue notes whether its waiting requests
 * may hold anything else), each hand-over moves a cursor along the segment,
 * WEFT_VARQ_AHEAD requests ahead, and prefetches what the coming hand-overs
 * touch (the requests and the first lines of their operators, most likely in
 * the pusher's cache); in a mixed one a walk would stall on line after line
 * for hand-overs a read soon stops, so there is none.
 *
 * Locking: the caller holds the queue's lock around append and complete; an
 * operator's appends to all its vars happen under all their locks, taken in
 * one global order (the vars' indices), so that two operators' requests
 * appear in the same order on every var they share and no cycle can form.
 */
#ifndef WEFT_DEPS_VAR_QUEUE_H
#define WEFT_DEPS_VAR_QUEUE_H
#include "deps/layer.h" /* layer guard: no include from a lower layer */

#include <stdbool.h>
#include <stdint.h>

#include "common/spinlock.h"

typedef struct weft_var_req {
  struct weft_var_req *next; /* under the queue's lock: queue / granted list link */
  void *op;                  /* immutable: the operator this request belongs to */
  bool write;                /* immutable */
  bool simple;               /* immutable: its operator is a user CPU operator */
  /* Of a granted simple write holding a claimed segment: every request in
   * the segment is a simple write, so the prefetch cursor may walk it
   * (written with the grant that hands the segment over, read by the
   * holder's completion). */
  bool pure;
  /* Whether next is a simple write (written with next, by whoever links it:
   * the completion of a holder reads it in its own line, not next's). */
  bool next_sw;
  /* immutable: its operator's place in its pushing thread's pushes (mod
   * 2^32), for the release policy's choice of the successor to run next
   * (complete.c); in every request of an operator, so a grant reads it in
   * the request's own line. */
  uint32_t seq;
  /* under the var's lock: link in the var's fence list (its operator's
   * device work is pending) or fence-waiter list (its operator waits for a
   * fence on the host); see src/deps/executor.h. */
  union {
    struct weft_var_req *fnext;
    /* Of a granted simple write holding a claimed segment: a request of the
     * segment further on, the prefetch cursor (written before the grant that
     * hands the var over, read by its operator's completion). Never at once
     * with fnext: a segment is claimed only while the var has no fences, and
     * none appear while simple CPU writes hold it (only a launched device
     * operator adds one). */
    struct weft_var_req *ahead;
  };
} weft_var_req;

typedef struct weft_varq {
  weft_spinlock lock;
  int32_t nreaders;          /* under lock: granted reads not yet complete */
  bool writer;               /* under lock: a granted write not yet complete */
  /* under lock: the waiting requests may include one that is not a simple
   * write (set by its append, cleared when the queue empties) */
  bool mixed;
  /* under lock: head is a simple write (kept, so that unclaim can link the
   * segment's last request to head without reading head's line) */
  bool head_sw;
  weft_var_req *head, *tail; /* under lock: waiting requests, oldest first */
  weft_var_req *ctail;       /* under lock: the last claimed request (while claimed) */
} weft_varq;

void weft_varq_init(weft_varq *q);

/* Under q's lock. Queues r; returns true if it is granted at once (then it
 * is not queued and r->next is unused). */
bool weft_varq_append(weft_varq *q, weft_var_req *r);

/* Under q's lock. Completes a granted request (write tells which kind) and
 * returns the requests this grants, linked through next, oldest first
 * (NULL when none); a granted write comes alone (its next, if any, links
 * the segment it claimed). claim: a granted simple write may claim the
 * requests waiting behind it (see above). */
weft_var_req *weft_varq_complete(weft_varq *q, bool write, bool claim);

/* Under q's lock: r, about to complete, gives the unfinished rest of the
 * segment it holds (its next, up to ctail) back to the head of the queue. */
void weft_varq_unclaim(weft_varq *q, weft_var_req *r);

/* The first request of the segment a granted request about to complete
 * holds, or NULL (read by the thread completing it, without the lock). */
static inline weft_var_req *weft_varq_claimed(const weft_var_req *r)
{
  return r->simple && r->write ? r->next : NULL;
}

/* Without the lock. r holds a claimed segment whose first request is a
 * simple write: r completes and hands the var to that request, which holds
 * the rest of the segment; returns it, granted (alone: a write). */
weft_var_req *weft_varq_pass(weft_var_req *r);

/* Whether weft_varq_pass may hand r's var on (r holds a segment). */
static inline bool weft_varq_passable(const weft_var_req *r)
{
  return r->next_sw;
}

/* Under q's lock. Nothing granted and nothing waiting. */
static inline bool weft_varq_idle(const weft_varq *q)
{
  return q->nreaders == 0 && !q->writer && q->head == NULL;
}

#endif /* WEFT_DEPS_VAR_QUEUE_H */
