/* SPDX-License-Identifier: MIT */
/*
 * The completion path (complete.h): a finished operator's vars are
 * released, in index order, and the requests this grants are counted off
 * their operators, from the finishing thread. What becomes ready goes back
 * to the caller; where it runs is dispatch.c's business. Also a var's keeper
 * letting go of it (ext.h), which completes the keeper's request.
 */
#include "common/assert.h"
#include "common/spinlock.h"
#include "deps/complete.h"
#include "deps/engine.h"
#include "deps/fence.h"
#include "deps/ext.h"
#include "deps/inflight.h"
#include "deps/var.h"

/* A finish that keeps a successor in its own slot does not count itself:
 * the successor carries the count (weft_opr.owed) to its own finish, which
 * adds both in one store. That finish is certain (a kept operator is ready
 * and will finish, wherever it runs), and until it does the slot holds the
 * successor, so no drain check could succeed meanwhile: the locked store a
 * count costs (seq_cst, inflight.c) is paid once per run of kept
 * operators, not per operator. Runs longer than this are counted in steps,
 * so that pacing's view of the backlog (weft_engine_backlog) stays within
 * this of the truth. */
#define WEFT_OWED_MAX 256u

/* Of the operators a finish makes ready, the one its thread runs next is
 * the one pushed first (by the same thread: the lowest seq), the rest go to
 * the ready list: the program order of whoever pushed them, so a pipeline
 * pushed item by item runs an item's stages before the next item's first
 * (depth first, what a serial loop keeps in cache), not every item's first
 * stage ahead of the rest. A successor found on a var after one already
 * kept displaces it if it was pushed earlier. */
static inline bool pushed_before(const weft_var_req *g, const weft_opr *kept)
{
  return (int32_t)(g->seq - kept->req[0].seq) < 0; /* mod 2^32 */
}

/* Takes g's grant off its operator; true when that was the last one.
 * passed: g was handed over along a claimed segment (a simple write,
 * var_queue.h). Then an operator with no other var has its counter at 1
 * (registration is over: the segment was claimed under the var's lock
 * after it) and nothing else changes it (no fence can name a var held by
 * simple writes), so the grant is a load and a store, not a locked
 * decrement: relaxed (both), as the operator reaches this thread through
 * the hand-overs, each a program-order step or a release/acquire pair (the
 * var's lock, the pool's queues), which publish its block. */
static inline bool take_grant(weft_var_req *g, bool passed)
{
  weft_opr *o = g->op;
  if (passed && o->nvars == 1) {
    WEFT_ASSERT(atomic_load_explicit(&o->wait, memory_order_relaxed) == 1);
    atomic_store_explicit(&o->wait, 0, memory_order_relaxed);
    return true;
  }
  /* acq_rel: as in weft_push_opr (the last grant dispatches). */
  int was = atomic_fetch_sub_explicit(&o->wait, 1, memory_order_acq_rel);
  WEFT_ASSERT(was >= 1); /* a wait counter never goes below zero */
  return was == 1;
}

/* o became ready through g: it becomes the successor this thread runs next
 * (keep: a plain CPU operator, pushed before the one kept so far, which
 * then goes to ready instead) or goes to ready. Returns the one kept. */
static inline weft_opr *keep_or_queue(weft_opr *o, const weft_var_req *g, weft_opr *kept,
                                      bool keep, weft_fifo *ready)
{
  WEFT_OPR_MOVE(o, WEFT_OPR_ST_PUSHED, WEFT_OPR_ST_READY);
  if (keep && o->prop == WEFT_PROP_NORMAL && o->ctx.type == WEFT_DEV_CPU &&
      (!kept || pushed_before(g, kept))) {
    if (kept)
      weft_fifo_push(ready, &kept->node);
    return o;
  }
  weft_fifo_push(ready, &o->node);
  return kept;
}

weft_opr *weft_grant_list(weft_var_req *g, weft_opr **keep, weft_fifo *ready)
{
  weft_opr *kept = keep ? *keep : NULL;
  while (g) {
    /* g's op may run and be freed at once; a write comes alone (its next
     * links the segment it claimed, var_queue.h). */
    weft_var_req *gnext = g->write ? NULL : g->next;
    if (take_grant(g, false))
      kept = keep_or_queue(g->op, g, kept, keep != NULL, ready);
    g = gnext;
  }
  return kept;
}

/* weft_opr_retire and weft_opr_count_finish, inlined in the finish below
 * (the common path) and called from a held operator's layer (ext.h: a
 * graph launch's end). */
static inline __attribute__((always_inline)) void retire(weft_engine *eng, weft_opr *op)
{
  if (op->tmpl)
    weft_op_tmpl_release(eng, op->tmpl);
  /* seq_cst (both): pairs with admit and below_cap; wakes a held-back
   * pusher when this makes room (either it sees the room, or we see it). */
  if (op->admitted &&
      atomic_fetch_sub_explicit(&eng->admitted, 1, memory_order_seq_cst) <= eng->max_inflight &&
      atomic_load_explicit(&eng->cap_waiters, memory_order_seq_cst) > 0)
    weft_engine_notify(eng);
}

void weft_opr_retire(weft_engine *eng, weft_opr *op)
{
  retire(eng, op);
}

static inline __attribute__((always_inline)) void count_finish(weft_engine *eng, int slot,
                                                               uint64_t epoch, uint32_t count,
                                                               weft_opr *next,
                                                               weft_between_fn hook)
{
  /* Not drained, so no check: next, about to run here, is counted in slot;
   * or this thread is inside an operator counted in slot (op ran while it
   * helps or waits), whose own finish checks. */
  const weft_opr *cur = weft_tls_opr;
  if (next && next->slot == slot && count + next->owed <= WEFT_OWED_MAX)
    next->owed = (uint16_t)(count + next->owed); /* counted with next's own finish */
  else if ((next && next->slot == slot) || (cur && cur->eng == eng && cur->slot == slot))
    weft_engine_count_done_busy(eng, slot, count);
  else
    weft_engine_count_done_op(eng, epoch, count, hook);
}

weft_opr *weft_opr_finish_vars(weft_opr *op, int status, bool keep_one, weft_fifo *ready,
                               weft_between_fn hook)
{
  WEFT_ASSERT(op->st == WEFT_OPR_ST_READY || op->st == WEFT_OPR_ST_RUNNING || !WEFT_ASSERTS_ON);
  WEFT_OPR_SET(op, WEFT_OPR_ST_DONE); /* once: a second finish trips the assert above */
  weft_engine *eng = op->eng;
  bool user = op->internal == WEFT_OPR_USER;
  weft_opr *next = NULL;
  if (keep_one && weft_pool_worker_index(eng->pool) < 0)
    keep_one = false;
  if (status && user)
    weft_engine_record_failure(eng, status, op->name);
  /* relaxed: see nfailed_vars (engine.h). */
  bool anyfailed = atomic_load_explicit(&eng->nfailed_vars, memory_order_relaxed) != 0;
  bool many = op->nvars > WEFT_REGISTER_HOLD_VARS; /* a holder, most likely: var.h */
  for (int k = 0; k < op->nvars; k++) {
    if (many)
      weft_var_prefetch(op->var, k, op->nvars);
    weft_var_impl *v = op->var[k];
    weft_var_req *me = &op->req[k];
    bool write = me->write;
    weft_var_req *rest = weft_varq_claimed(me);
    if (rest) { /* a claimed segment: hand the var on without its lock? */
      if (!status && weft_varq_passable(me) && (!anyfailed || !weft_var_failed(v))) {
        weft_var_req *r = weft_varq_pass(me); /* granted alone: a write */
        if (take_grant(r, true))
          next = keep_or_queue(r->op, r, next, keep_one, ready);
        continue; /* the var stays held for writing, now by r */
      }
    }
    weft_spin_lock(&v->q.lock);
    if (rest) /* a failure, or a request that needs the queue */
      weft_varq_unclaim(&v->q, me);
    if (write && user) /* a write's status is the var's: failed, or fine again */
      weft_var_set_failed(eng, v, status, op->epoch);
    if (op->internal == WEFT_OPR_HOLDER) /* a holder that lets go of its vars */
      weft_var_unkeep(v, me);
    weft_var_req *g = weft_varq_complete(&v->q, write, v->fences == NULL);
    if (v->fences) /* device work pending on v: the granted respect it */
      for (weft_var_req *r = g; r; r = r->next)
        weft_fence_check(v, r);
    weft_spin_unlock(&v->q.lock);
    next = weft_grant_list(g, keep_one ? &next : NULL, ready);
    if (op->internal == WEFT_OPR_DELETE) /* the var's last request: free it */
      weft_handles_free(&eng->vars, &v->slot);
  }
  int slot = op->slot;
  uint64_t epoch = op->epoch;
  uint32_t count = 1u + op->owed; /* op and the run of kept operators before it */
  retire(eng, op);
  if (op->internal == WEFT_OPR_HOLDER)
    eng->ext->put(op); /* its layer's block (ext.h): back to it */
  else
    weft_opr_free(eng, op);
  count_finish(eng, slot, epoch, count, next, hook);
  return next;
}

void weft_opr_count_finish(weft_engine *eng, int slot, uint64_t epoch, uint32_t count,
                           weft_opr *next, weft_between_fn hook)
{
  count_finish(eng, slot, epoch, count, next, hook);
}

/* A var's keeper (var.h) lets go of it (ext.h). */
void weft_var_keeper_yield(weft_var_impl *v)
{
  weft_var_req *kr = v->keeper;
  v->keeper = NULL;
  weft_var_req *g = weft_varq_complete(&v->q, kr->write, false);
  WEFT_ASSERT(!g); /* between launches nothing queues behind a kept var: it yields first */
  (void)g;
}

void weft_var_keeper_drop(weft_var_impl *v, weft_var_req *me, weft_fifo *ready)
{
  weft_var_req *granted = NULL;
  weft_spin_lock(&v->q.lock);
  if (v->keeper == me) { /* a holder keeps exactly the vars that name it */
    v->keeper = NULL;
    granted = weft_varq_complete(&v->q, me->write, v->fences == NULL);
    if (v->fences) /* device work pending on v: the granted respect it */
      for (weft_var_req *r = granted; r; r = r->next)
        weft_fence_check(v, r);
  }
  weft_spin_unlock(&v->q.lock);
  weft_grant_list(granted, NULL, ready);
}
