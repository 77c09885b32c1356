/*
 * Recording a thread's pushes while it captures (capture.h).
 */
#include <string.h>

#include "common/alloc.h"
#include "deps/capture.h"

_Thread_local weft_capture *weft_tls_capture __attribute__((tls_model("initial-exec")));

int weft_capture_begin(weft_engine *eng)
{
  if (weft_tls_capture)
    return WEFT_EBUSY;
  weft_capture *c = weft_malloc(sizeof *c);
  if (!c)
    return WEFT_ENOMEM;
  memset(c, 0, sizeof *c);
  c->eng = eng;
  c->opr = weft_tls_opr;
  weft_tls_capture = c;
  return 0;
}

/* Makes room for n more elements of size elem in *arr (count *len, room
 * *cap); false without memory. */
static bool grow(void **arr, size_t *cap, size_t len, size_t n, size_t elem)
{
  if (len + n <= *cap)
    return true;
  size_t want = *cap ? *cap : 64;
  while (want < len + n)
    want *= 2;
  void *p = weft_malloc(want * elem);
  if (!p)
    return false;
  if (len)
    memcpy(p, *arr, len * elem);
  weft_free(*arr);
  *arr = p;
  *cap = want;
  return true;
}

int weft_capture_push(weft_capture *c, const weft_op_desc *d, const weft_var_use *uses, int n)
{
  if (!grow((void **)&c->recs, &c->caprecs, c->nrecs, 1, sizeof *c->recs) ||
      !grow((void **)&c->uses, &c->capuses, c->nuses, (size_t)n, sizeof *c->uses))
    return WEFT_ENOMEM;
  weft_capture_rec *r = &c->recs[c->nrecs++];
  r->desc = *d;
  r->desc.reads = r->desc.writes = NULL;
  r->desc.num_reads = r->desc.num_writes = 0;
  r->use0 = c->nuses;
  r->nuses = n;
  memcpy(&c->uses[c->nuses], uses, sizeof *uses * (size_t)n);
  c->nuses += (size_t)n;
  return 0;
}

void weft_capture_drop(void)
{
  weft_capture *c = weft_tls_capture;
  weft_tls_capture = NULL;
  weft_free(c->recs);
  weft_free(c->uses);
  weft_free(c);
}

int weft_capture_end(weft_engine *eng, struct weft_graph **out)
{
  weft_capture *c = weft_tls_capture;
  if (!c || c->eng != eng)
    return WEFT_EINVAL;
  weft_tls_capture = NULL;
  struct weft_graph *g = weft_graph_build(c);
  weft_free(c->recs);
  weft_free(c->uses);
  weft_free(c);
  *out = g;
  return g ? 0 : WEFT_ENOMEM;
}
