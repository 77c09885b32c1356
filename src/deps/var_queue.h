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
 * Locking: the caller holds the queue's lock around append and complete; an
 * operator's appends to all its vars happen under all their locks, taken in
 * one global order (the vars' indices), so that two operators' requests
 * appear in the same order on every var they share and no cycle can form.
 */
#ifndef WEFT_DEPS_VAR_QUEUE_H
#define WEFT_DEPS_VAR_QUEUE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/spinlock.h"

typedef struct weft_var_req {
  struct weft_var_req *next; /* under the queue's lock: queue / granted list link */
  void *op;                  /* immutable: the operator this request belongs to */
  bool write;                /* immutable */
  /* under the var's lock: link in the var's fence list (its operator's
   * device work is pending) or fence-waiter list (its operator waits for a
   * fence on the host); see src/deps/executor.h. */
  struct weft_var_req *fnext;
} weft_var_req;

typedef struct weft_varq {
  weft_spinlock lock;
  int32_t nreaders;          /* under lock: granted reads not yet complete */
  bool writer;               /* under lock: a granted write not yet complete */
  weft_var_req *head, *tail; /* under lock: waiting requests, oldest first */
} weft_varq;

void weft_varq_init(weft_varq *q);

/* Under q's lock. Queues r; returns true if it is granted at once (then it
 * is not queued and r->next is unused). */
bool weft_varq_append(weft_varq *q, weft_var_req *r);

/* Under q's lock. Completes a granted request (write tells which kind) and
 * returns the requests this grants, linked through next, oldest first
 * (NULL when none). */
weft_var_req *weft_varq_complete(weft_varq *q, bool write);

/* Under q's lock. Nothing granted and nothing waiting. */
static inline bool weft_varq_idle(const weft_varq *q)
{
  return q->nreaders == 0 && !q->writer && q->head == NULL;
}

#endif /* WEFT_DEPS_VAR_QUEUE_H */
