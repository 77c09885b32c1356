#include "deps/var_queue.h"

#include <stddef.h>

void weft_varq_init(weft_varq *q)
{
  weft_spin_init(&q->lock);
  q->nreaders = 0;
  q->writer = false;
  q->head = q->tail = q->ctail = NULL;
}

bool weft_varq_append(weft_varq *q, weft_var_req *r)
{
  r->next = NULL;
  if (q->head == NULL && !q->writer && (!r->write || q->nreaders == 0)) {
    if (r->write)
      q->writer = true;
    else
      q->nreaders++;
    return true;
  }
  if (q->tail)
    q->tail->next = r;
  else
    q->head = r;
  q->tail = r;
  return false;
}

weft_var_req *weft_varq_complete(weft_varq *q, bool write, bool claim)
{
  if (write)
    q->writer = false;
  else
    q->nreaders--;
  weft_var_req *granted = NULL, **link = &granted;
  while (q->head && !q->writer) {
    weft_var_req *r = q->head;
    if (r->write && q->nreaders > 0)
      break; /* the write waits for the granted reads */
    q->head = r->next;
    if (!q->head)
      q->tail = NULL;
    r->next = NULL;
    *link = r;
    link = &r->next;
    if (r->write) {
      q->writer = true;
      r->claimed = NULL;
      if (claim && r->simple && q->head) { /* r's op takes the rest along */
        r->claimed = q->head;
        q->ctail = q->tail;
        q->head = q->tail = NULL;
      }
      break;
    }
    q->nreaders++;
  }
  return granted;
}

weft_var_req *weft_varq_pass(weft_var_req *r)
{
  weft_var_req *n = r->claimed;
  r->claimed = NULL;
  n->claimed = n->next; /* nobody else writes a claimed request's link */
  n->next = NULL;
  return n;
}

void weft_varq_unclaim(weft_varq *q, weft_var_req *rest)
{
  q->ctail->next = q->head; /* still NULL: appends went to the empty queue */
  if (!q->head)
    q->tail = q->ctail;
  q->head = rest;
  q->ctail = NULL;
}
