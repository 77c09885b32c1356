/* SPDX-License-Identifier: MIT */
/*
 * Device fences on vars: a launched device operator's pending work, which
 * its successors respect on the device (same device) or on the host
 * (anything else): the check made when a request is granted. The protocol
 * is described in src/deps/executor.h; launch and device completion, which
 * add and remove fences, are in src/deps/executor.c.
 *
 * Locking: a var's fence and fence-waiter lists are under its queue lock,
 * like the queue itself; an operator's devwait[] slots are claimed with an
 * atomic counter because two of its vars may grant it at once.
 */
#include "common/assert.h"
#include "deps/fence.h"

/* Whether request r must wait for fence f (both on the same var). */
static inline bool hazard(const weft_var_req *r, const weft_var_req *f)
{
  return r->write || f->write; /* reads after reads run together */
}

/*
 * v->fences is newest first (a launch prepends its fence, and a writer
 * launches only after every earlier request of v launched). The newest
 * write fence was itself checked against every fence older than it, so
 * its work completes only after theirs: r needs the read fences newer than
 * it (if r writes) and it, nothing older. A chain of writers on a device
 * thus waits for one predecessor, not for all of them in flight (which,
 * past WEFT_OPR_DEV_WAITS, went to the host).
 */
bool weft_fence_check(weft_var_impl *v, weft_var_req *r)
{
  weft_opr *o = r->op;
  bool host = false;
  bool last = false; /* f is the newest write fence: the last one r needs */
  for (weft_var_req *f = v->fences; f && !last; f = f->fnext) {
    if (!hazard(r, f))
      continue;
    last = f->write;
    weft_opr *fo = f->op;
    if (o->ctx.type == WEFT_DEV_GPU && o->ctx.id == fo->ctx.id) {
      /* relaxed: a slot index; the slots are published with o's dispatch
       * (the acq_rel decrements of its wait counter). */
      int k = atomic_fetch_add_explicit(&o->ndevwaits, 1, memory_order_relaxed);
      if (k < WEFT_OPR_DEV_WAITS) {
        /* relaxed: fo cannot be recycled meanwhile (it holds its own
         * reference until device_done takes its fence off v, under v's
         * lock, which we hold). */
        atomic_fetch_add_explicit(&fo->dev_refs, 1, memory_order_relaxed);
        o->devwait[k] = fo;
        continue;
      }
    }
    host = true;
  }
  if (host) {
    /* relaxed: our own grant's decrement, still to come, keeps the counter
     * above zero until after this increment. */
    atomic_fetch_add_explicit(&o->wait, 1, memory_order_relaxed);
    r->fnext = v->fwaiters;
    v->fwaiters = r;
  }
  return host;
}
