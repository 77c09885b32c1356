/* SPDX-License-Identifier: MIT */
#include "deps/var_queue.h"

#include <stddef.h>

#include "common/assert.h"
#include "common/tunables.h"

void weft_varq_init(weft_varq *q)
{
  weft_spin_init(&q->lock);
  q->nreaders = 0;
  q->writer = false;
  q->mixed = false;
  q->head = q->tail = q->ctail = NULL;
}

bool weft_varq_append(weft_varq *q, weft_var_req *r)
{
  r->next = NULL;
  r->next_sw = false;
  /* A write granted excludes reads granted: the pending-write bookkeeping. */
  WEFT_ASSERT(!(q->writer && q->nreaders > 0));
  WEFT_ASSERT((q->head == NULL) == (q->tail == NULL));
  if (q->head == NULL && !q->writer && (!r->write || q->nreaders == 0)) {
    if (r->write)
      q->writer = true;
    else
      q->nreaders++;
    return true;
  }
  bool sw = r->simple && r->write;
  if (!sw)
    q->mixed = true;
  if (q->tail) {
    q->tail->next = r;
    q->tail->next_sw = sw;
  } else {
    q->head = r;
    q->head_sw = sw;
  }
  q->tail = r;
  return false;
}

weft_var_req *weft_varq_complete(weft_varq *q, bool write, bool claim)
{
  if (write) {
    WEFT_ASSERT(q->writer && q->nreaders == 0); /* the write completing was granted alone */
    q->writer = false;
  } else {
    WEFT_ASSERT(q->nreaders > 0 && !q->writer); /* a granted read completes once */
    q->nreaders--;
  }
  weft_var_req *granted = NULL, **link = &granted;
  while (q->head && !q->writer) {
    weft_var_req *r = q->head;
    if (r->write && q->nreaders > 0)
      break; /* the write waits for the granted reads */
    q->head = r->next;
    q->head_sw = r->next_sw;
    if (!q->head) {
      q->tail = NULL;
      q->mixed = false;
    }
    r->next = NULL;
    *link = r;
    link = &r->next;
    if (r->write) {
      q->writer = true;
      if (claim && r->simple && q->head) { /* r's op takes the rest along */
        r->next = q->head;
        r->ahead = NULL;
        r->pure = !q->mixed;
        q->ctail = q->tail;
        q->head = q->tail = NULL;
        q->mixed = false;
      }
      break;
    }
    q->nreaders++;
  }
  WEFT_ASSERT(!(q->writer && q->nreaders > 0));
  return granted;
}

/* The first lines of c's operator (its wait counter and what runs it). */
static inline void prefetch_op(const weft_var_req *c)
{
  __builtin_prefetch(c->op, 1);
  __builtin_prefetch((const char *)c->op + WEFT_CACHE_LINE, 1);
}

/* Whether a hand-over can go on past c (to a simple write after it). */
static inline bool passes_on(const weft_var_req *c)
{
  return c->next && c->next_sw;
}

weft_var_req *weft_varq_pass(weft_var_req *r)
{
  weft_var_req *n = r->next, *c = r->ahead;
  r->next = NULL;
  n->pure = r->pure;
  if (!r->pure) { /* reads or other kinds in it: a walk would stall for nothing */
    n->ahead = NULL;
    return n;
  }
  /* The cursor stays strictly ahead of n, WEFT_VARQ_AHEAD requests once
   * (re)started. A restart walks the run of simple writes only (a hand-over
   * stops at anything else, and each step of the walk waits for its line);
   * then one step per hand-over, which reads the line the previous one
   * prefetched (and does not look at what it steps onto: that line is
   * still on its way). The links it follows are the segment's, which nobody
   * writes meanwhile. */
  if (c == n)
    c = NULL;
  if (!c) {
    c = n->next;
    for (int i = 1; c && passes_on(c) && i < WEFT_VARQ_AHEAD; i++) {
      prefetch_op(c);
      c = c->next;
    }
  } else if (c->next) {
    prefetch_op(c);
    c = c->next;
  }
  if (c)
    __builtin_prefetch(c, 1);
  n->ahead = c;
  return n;
}

void weft_varq_unclaim(weft_varq *q, weft_var_req *r)
{
  weft_var_req *rest = r->next;
  r->next = NULL;
  if (!r->pure)
    q->mixed = true;
  q->ctail->next = q->head; /* still NULL: appends went to the empty queue */
  q->ctail->next_sw = q->head && q->head_sw;
  if (!q->head)
    q->tail = q->ctail;
  q->head = rest;
  q->head_sw = r->next_sw;
  q->ctail = NULL;
}
