/*
 * Device fences on vars: a launched device operator's pending work, which
 * its successors respect on the device (same device) or on the host
 * (anything else). The protocol is described in src/deps/executor.h.
 *
 * Locking: a var's fence and fence-waiter lists are under its queue lock,
 * like the queue itself; an operator's devwait[] slots are claimed with an
 * atomic counter because two of its vars may grant it at once.
 */
#include "common/sync.h"
#include "deps/engine.h"
#include "deps/executor.h"

/* Whether request r must wait for fence f (both on the same var). */
static inline bool hazard(const weft_var_req *r, const weft_var_req *f)
{
  return r->write || f->write; /* reads after reads run together */
}

bool weft_fence_check(weft_var_impl *v, weft_var_req *r)
{
  weft_opr *o = r->op;
  bool host = false;
  for (weft_var_req *f = v->fences; f; f = f->fnext) {
    if (!hazard(r, f))
      continue;
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

/* Decrements the wait counters of ops (linked through their requests'
 * fnext) and dispatches those that reach zero. */
static void release_waiters(weft_var_req *r)
{
  while (r) {
    weft_var_req *next = r->fnext;
    weft_opr *o = r->op;
    /* acq_rel: as a grant (weft_push_opr): the last decrement dispatches. */
    if (atomic_fetch_sub_explicit(&o->wait, 1, memory_order_acq_rel) == 1)
      weft_opr_ready(o);
    r = next;
  }
}

void weft_opr_launched(weft_opr *op, int status)
{
  op->status = status;
  /* relaxed: published with the fences (under each var's lock). */
  atomic_store_explicit(&op->dev_refs, 1, memory_order_relaxed);
  for (int k = 0; k < op->nvars; k++) {
    weft_var_impl *v = op->var[k];
    weft_var_req *me = &op->req[k];
    weft_spin_lock(&v->q.lock);
    if (me->write) /* successors see fn's status now, the device's later */
      weft_var_set_failed(op->eng, v, status, op->epoch);
    weft_var_req *g = weft_varq_complete(&v->q, me->write, false); /* a fence follows */
    me->fnext = v->fences;
    v->fences = me;
    for (weft_var_req *r = g; r; r = r->next)
      weft_fence_check(v, r);
    weft_spin_unlock(&v->q.lock);
    weft_grant_list(g, NULL);
  }
}

void weft_opr_device_done(weft_opr *op, int status)
{
  weft_engine *eng = op->eng;
  int final = op->status ? op->status : status;
  if (final)
    weft_engine_record_failure(eng, final, op->name);
  for (int k = 0; k < op->nvars; k++) {
    weft_var_impl *v = op->var[k];
    weft_var_req *me = &op->req[k];
    weft_spin_lock(&v->q.lock);
    if (me->write && final && !op->status) {
      /* The device failed under it: later writers on this var are on the
       * same (now failed) device or still wait for this fence. */
      weft_var_set_failed(eng, v, final, op->epoch);
    }
    weft_var_req **pf = &v->fences;
    while (*pf != me)
      pf = &(*pf)->fnext;
    *pf = me->fnext;
    /* Release the waiters no fence of v holds back any more. */
    bool any = v->fences != NULL, anywrite = false;
    for (weft_var_req *f = v->fences; f; f = f->fnext)
      anywrite |= f->write;
    weft_var_req *go = NULL;
    for (weft_var_req **pw = &v->fwaiters; *pw;) {
      weft_var_req *r = *pw;
      if (r->write ? any : anywrite) {
        pw = &r->fnext;
        continue;
      }
      *pw = r->fnext;
      r->fnext = go;
      go = r;
    }
    weft_spin_unlock(&v->q.lock);
    release_waiters(go);
  }
  int slot = op->slot;
  weft_opr_retire(eng, op);
  weft_opr_fence_unref(op); /* the launched work's reference */
  weft_engine_count_done(eng, slot);
}

void weft_opr_fence_unref(weft_opr *op)
{
  /* acq_rel: the last reference recycles the block after every holder is
   * done with it. */
  if (atomic_fetch_sub_explicit(&op->dev_refs, 1, memory_order_acq_rel) == 1)
    weft_opr_free(op->eng, op);
}
