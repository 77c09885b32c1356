/* SPDX-License-Identifier: MIT */
/*
 * A graph's definition (def.h): adding nodes and edges.
 */
#include <string.h>

#include "common/alloc.h"
#include "deps/ext.h"
#include "graph/def.h"

int weft_gdef_add(weft_gdef *def, weft_engine *eng, const weft_op_desc *d, void *arg,
                  size_t *node)
{
  if (def->nrecs >= WEFT_GRAPH_NODES_MAX)
    return WEFT_ENOMEM; /* beyond what a graph's counters hold: as its build (build.c) */
  size_t cap = d->num_reads + d->num_writes;
  if (!weft_graph_grow((void **)&def->recs, &def->caprecs, def->nrecs, 1, sizeof *def->recs) ||
      !weft_graph_grow((void **)&def->uses, &def->capuses, def->nuses, cap, sizeof *def->uses))
    return WEFT_ENOMEM;
  /* Straight into the definition's room: a failure leaves nothing behind
   * (the count stays). */
  int n = weft_push_normalize(eng, d, def->uses + def->nuses);
  if (n < 0)
    return n;
  weft_capture_rec *r = &def->recs[def->nrecs];
  weft_rec_set(r, d, def->nuses, n);
  r->arg = arg;
  def->nuses += (size_t)n;
  *node = def->nrecs++;
  def->dirty = true;
  return 0;
}

int weft_gdef_edge(weft_gdef *def, size_t before, size_t after)
{
  if (before >= def->nrecs || after >= def->nrecs || before == after)
    return WEFT_EINVAL;
  if (!weft_graph_grow((void **)&def->edge, &def->capedges, def->nedges, 1, sizeof *def->edge))
    return WEFT_ENOMEM;
  def->edge[def->nedges][0] = (int32_t)before;
  def->edge[def->nedges][1] = (int32_t)after;
  def->nedges++;
  def->dirty = true;
  return 0;
}

void weft_gdef_free(weft_gdef *def)
{
  if (!def)
    return;
  weft_free(def->recs);
  weft_free(def->uses);
  weft_free(def->edge);
  weft_free(def);
}

bool weft_graph_grow(void **arr, size_t *cap, size_t len, size_t n, size_t elem)
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
