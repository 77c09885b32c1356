/* SPDX-License-Identifier: MIT */
/*
 * The engine's side of the executor interface (src/deps/executor.h): what
 * a device executor may read of an operator, and the entry points through
 * which it reports launch, device completion and failure. Fences are added
 * at launch and removed at device completion, under each var's lock.
 */
#include "common/assert.h"
#include "common/spinlock.h"
#include "deps/complete.h"
#include "deps/dispatch.h"
#include "deps/engine.h"
#include "deps/executor.h"
#include "deps/ext.h"
#include "deps/fence.h"
#include "deps/inflight.h"
#include "deps/var.h"

weft_ctx weft_exec_op_ctx(const weft_opr *op)
{
  return op->ctx;
}

weft_prop weft_exec_op_prop(const weft_opr *op)
{
  return (weft_prop)op->prop;
}

const char *weft_exec_op_name(const weft_opr *op)
{
  return op->name ? op->name : "op";
}

int weft_exec_op_call(weft_opr *op, const weft_run_ctx *rc)
{
  WEFT_ASSERT(op->fn); /* a GPU operator takes fn (checked at push) */
  if (op->st == WEFT_OPR_ST_READY) /* the naive engine's block is on its pusher's stack */
    WEFT_OPR_SET(op, WEFT_OPR_ST_RUNNING);
  weft_opr *prev = weft_tls_opr;
  weft_tls_opr = op;
  int status = op->fn(rc, op->arg);
  weft_tls_opr = prev;
  return status;
}

void *weft_exec_op_state(const weft_opr *op)
{
  return op->exec_state;
}

void weft_exec_op_set_state(weft_opr *op, void *state)
{
  op->exec_state = state;
}

weft_fifo_node *weft_exec_op_node(weft_opr *op)
{
  return &op->node;
}

weft_opr *weft_exec_op_of_node(weft_fifo_node *node)
{
  return weft_fifo_entry(node, weft_opr, node);
}

int weft_exec_op_ndevwaits(const weft_opr *op)
{
  int n = atomic_load_explicit(&op->ndevwaits, memory_order_relaxed);
  return n < WEFT_OPR_DEV_WAITS ? n : WEFT_OPR_DEV_WAITS; /* the rest waited on the host */
}

weft_opr *weft_exec_op_devwait(const weft_opr *op, int k)
{
  WEFT_ASSERT(k >= 0 && k < weft_exec_op_ndevwaits(op));
  return op->devwait[k];
}

static void fence_unref(weft_opr *op);

void weft_exec_op_devwaits_done(weft_opr *op)
{
  int n = weft_exec_op_ndevwaits(op);
  for (int k = 0; k < n; k++)
    fence_unref(op->devwait[k]);
  atomic_store_explicit(&op->ndevwaits, 0, memory_order_relaxed);
}

int weft_exec_op_skip_status(const weft_opr *op)
{
  return weft_opr_skip_status(op);
}

/* A held operator's block (ext.h) outlives its run: its executor state
 * goes back when the run is done with it (its completion, and every
 * successor its layer released at its launch issued its device wait), not
 * with the block. */
static void held_state_release(weft_opr *op)
{
  if (op->exec_state)
    op->eng->exec->release_op(op->eng->exec_self, op);
}

void weft_exec_op_fail(weft_opr *op, int status)
{
  WEFT_ASSERT(status != 0); /* a failure has a cause */
  weft_exec_op_devwaits_done(op);
  if (op->internal == WEFT_OPR_HELD)
    held_state_release(op);
  weft_opr *next = weft_opr_complete(op, status, false);
  WEFT_ASSERT(!next); /* keep_one false: nothing kept */
  (void)next;
}

/* Decrements the wait counters of ops (linked through their requests'
 * fnext) and dispatches those that reach zero. */
static void release_waiters(weft_var_req *r)
{
  weft_fifo ready = WEFT_FIFO_INIT;
  while (r) {
    weft_var_req *next = r->fnext;
    weft_opr *o = r->op;
    /* acq_rel: as a grant (weft_push_opr): the last decrement dispatches. */
    int was = atomic_fetch_sub_explicit(&o->wait, 1, memory_order_acq_rel);
    WEFT_ASSERT(was >= 1); /* a wait counter never goes below zero */
    if (was == 1) {
      WEFT_OPR_MOVE(o, WEFT_OPR_ST_PUSHED, WEFT_OPR_ST_READY);
      weft_fifo_push(&ready, &o->node);
    }
    r = next;
  }
  weft_opr_ready_list(&ready);
}

void weft_exec_op_launched(weft_opr *op, int status)
{
  WEFT_ASSERT(op->st == WEFT_OPR_ST_READY || op->st == WEFT_OPR_ST_RUNNING || !WEFT_ASSERTS_ON);
  WEFT_OPR_SET(op, WEFT_OPR_ST_LAUNCHED);
  op->status = status;
  if (op->internal == WEFT_OPR_HELD) {
    /* Its holder holds the vars: its layer releases the successors that
     * wait for it on the device now (ext.h), the rest at its finish. */
    /* relaxed: the launched work's reference; the successors' devwait
     * entries are published with their release (ext.h). */
    atomic_store_explicit(&op->dev_refs, 1, memory_order_relaxed);
    if (status == 0 && op->eng->ext->launched) {
      weft_fifo ready = WEFT_FIFO_INIT;
      op->eng->ext->launched(op, &ready);
      weft_opr_ready_list(&ready);
    }
    return;
  }
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
    weft_fifo ready = WEFT_FIFO_INIT;
    weft_grant_list(g, NULL, &ready);
    weft_opr_ready_list(&ready);
  }
}

bool weft_exec_op_run(weft_opr *op, weft_exec_run *run)
{
  return op->internal == WEFT_OPR_HELD && op->eng->ext->run_of && op->eng->ext->run_of(op, run);
}

void weft_exec_op_run_launched(weft_opr *op, int status)
{
  WEFT_ASSERT(op->internal == WEFT_OPR_HELD && op->eng->ext->run_launched);
  WEFT_ASSERT(op->st == WEFT_OPR_ST_READY || op->st == WEFT_OPR_ST_RUNNING || !WEFT_ASSERTS_ON);
  WEFT_OPR_SET(op, WEFT_OPR_ST_LAUNCHED);
  op->status = status;
  op->dev_run = true;
  /* relaxed: as in weft_exec_op_launched. */
  atomic_store_explicit(&op->dev_refs, 1, memory_order_relaxed);
  weft_fifo ready = WEFT_FIFO_INIT;
  op->eng->ext->run_launched(op, status, &ready);
  weft_opr_ready_list(&ready);
}

void weft_exec_run_free(weft_engine *eng, void *cache)
{
  if (cache && eng->exec && eng->exec->run_free)
    eng->exec->run_free(eng->exec_self, cache);
}

void weft_exec_op_device_done(weft_opr *op, int status)
{
  weft_engine *eng = op->eng;
  if (op->internal == WEFT_OPR_HELD) { /* its vars are its holder's: its layer finishes it */
    WEFT_ASSERT(op->st == WEFT_OPR_ST_LAUNCHED || !WEFT_ASSERTS_ON); /* once per run */
    int final = op->status ? op->status : status;
    fence_unref(op); /* the launched work's reference */
    weft_fifo ready = WEFT_FIFO_INIT;
    weft_opr *next = eng->ext->finish(op, final, false, &ready, NULL);
    WEFT_ASSERT(!next); /* keep_one false: nothing kept */
    (void)next;
    weft_opr_ready_list(&ready);
    return;
  }
  /* Exactly once per launched operator. */
  WEFT_OPR_MOVE(op, WEFT_OPR_ST_LAUNCHED, WEFT_OPR_ST_DONE);
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
  fence_unref(op); /* the launched work's reference */
  weft_engine_count_done(eng, slot);
}

static void fence_unref(weft_opr *op)
{
  /* acq_rel: the last reference recycles the block (a held operator's:
   * gives its executor state back) after every holder is done with it. */
  if (atomic_fetch_sub_explicit(&op->dev_refs, 1, memory_order_acq_rel) != 1)
    return;
  if (op->internal == WEFT_OPR_HELD)
    held_state_release(op);
  else
    weft_opr_free(op->eng, op);
}
