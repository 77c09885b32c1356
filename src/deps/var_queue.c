#include "deps/var_queue.h"

#include <stddef.h>

void weft_varq_init(weft_varq *q)
{
  weft_spin_init(&q->lock);
  q->nreaders = 0;
  q->writer = false;
  q->head = q->tail = NULL;
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

weft_var_req *weft_varq_complete(weft_varq *q, bool write)
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
      break;
    }
    q->nreaders++;
  }
  return granted;
}
