/* SPDX-License-Identifier: MIT */
/*
 * Op blocks: allocation from the calling worker's caches (or the shared
 * store), their var and request arrays (inline, a big block, or the heap),
 * and the reference count of the reusable operator a block was pushed from.
 */
#include <stddef.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "deps/arg.h"
#include "deps/engine.h"
#include "deps/executor.h"
#include "deps/opr.h"
#include "pool/pool_ext.h"

weft_opr *weft_opr_alloc_big(weft_engine *eng, int w, weft_opr *op, int nvars)
{
  WEFT_ASSERT(nvars > WEFT_OPR_INLINE_VARS);
  if (nvars <= WEFT_OPR_BIG_VARS) {
    weft_opr_big *b = weft_obj_alloc(&eng->bigs, w >= 0 ? &eng->caches[w].bigs : NULL);
    if (!b) {
      weft_obj_free(&eng->oprs, w >= 0 ? &eng->caches[w].oprs : NULL, op);
      return NULL;
    }
    op->var = b->var;
    op->req = b->req;
  } else {
    op->var = weft_malloc(sizeof *op->var * (size_t)nvars);
    op->req = weft_malloc(sizeof *op->req * (size_t)nvars);
    if (!op->var || !op->req) {
      weft_free(op->var);
      weft_free(op->req);
      weft_obj_free(&eng->oprs, w >= 0 ? &eng->caches[w].oprs : NULL, op);
      return NULL;
    }
  }
  op->nvars = nvars;
  return op;
}

void weft_opr_free_slow(weft_engine *eng, int w, weft_opr *op)
{
  if (op->argmode == WEFT_OPR_ARG_BYTES) {
    if (op->arg_drop)
      op->arg_drop(op->arg);
  } else if (op->argmode == WEFT_OPR_ARG_BOX) {
    weft_arg_box_unref((weft_arg_box *)((char *)op->arg - offsetof(weft_arg_box, bytes)));
  }
  if (op->argmode && op->nvars <= WEFT_OPR_INLINE_VARS && op->ctx.type != WEFT_DEV_GPU) {
    op->argmode = WEFT_OPR_ARG_PTR; /* nothing else of the slow path: the common free */
    weft_opr_free(eng, op);
    return;
  }
  if (op->ctx.type == WEFT_DEV_GPU && op->exec_state) /* its event goes back to the pool */
    eng->exec->release_op(eng->exec_self, op);
  if (op->nvars > WEFT_OPR_BIG_VARS) {
    weft_free(op->var);
    weft_free(op->req);
  } else if (op->nvars > WEFT_OPR_INLINE_VARS) {
    weft_obj_free(&eng->bigs, w >= 0 ? &eng->caches[w].bigs : NULL,
                  (char *)op->var - offsetof(weft_opr_big, var));
  }
  weft_obj_free(&eng->oprs, w >= 0 ? &eng->caches[w].oprs : NULL, op);
}

void weft_op_tmpl_release(weft_engine *eng, weft_op_tmpl *t)
{
  /* acq_rel: the last reference frees what the others used. */
  int left = atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel);
  WEFT_ASSERT(left >= 1); /* the handle's reference and one per push in flight */
  if (left == 1) {
    weft_free(t->uses);
    t->uses = NULL;
    if (t->box) /* its last push finished: done with its argument */
      weft_arg_box_unref(t->box);
    t->box = NULL;
    weft_handles_free(&eng->ops, &t->slot);
  }
}

