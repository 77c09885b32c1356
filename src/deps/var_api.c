/* SPDX-License-Identifier: MIT */
/* The public calls on vars: creation, deferred deletion, and waiting for a
 * var (both internal operators on the var's queue). */
#include <inttypes.h>

#include "common/error.h"
#include "common/sync.h"
#include "deps/engine.h"
#include "deps/ext.h"
#include "deps/help.h"
#include "deps/inflight.h"
#include "deps/wait_cycle.h"
#include "deps/push.h"
#include "deps/var.h"

static int var_new(weft_engine *eng, weft_var **out);
static int var_delete(weft_engine *eng, weft_var *var);
static int var_wait_entered(weft_engine *eng, weft_var *var);

int weft_var_new(weft_engine *eng, weft_var **out)
{
  if (!eng || !out)
    return WEFT_EINVAL;
  *out = NULL;
  WEFT_GUARDED(guest, var_new(eng, out));
}

int weft_var_delete(weft_engine *eng, weft_var *var)
{
  if (!eng)
    return WEFT_EINVAL;
  if (weft_capturing(eng))
    return WEFT_EBUSY; /* a capture records pushes only */
  WEFT_GUARDED(guest, var_delete(eng, var));
}

int weft_var_wait(weft_engine *eng, weft_var *var)
{
  if (!eng)
    return WEFT_EINVAL;
  if (weft_capturing(eng))
    return WEFT_EBUSY; /* what it would wait for is recorded, not pushed */
  WEFT_GUARDED(guest, var_wait_entered(eng, var));
}

static int var_new(weft_engine *eng, weft_var **out)
{
  uintptr_t h;
  weft_slot *s;
  int rc = weft_handles_alloc(&eng->vars, &s, &h);
  if (rc == WEFT_ELIMIT)
    weft_log("weft_var_new: the engine has %" PRIu32 " vars, as many as var handles can "
             "address (a deleted var counts until its deletion has run)",
             eng->vars.limit);
  if (rc)
    return rc;
  weft_var_impl *v = (weft_var_impl *)s;
  weft_spin_lock(&v->q.lock); /* a wait_all may be clearing failures */
  v->q.nreaders = 0;
  v->q.writer = false;
  v->q.mixed = false;
  v->q.head = v->q.tail = v->q.ctail = NULL;
  weft_var_failed_store(v, 0);
  v->failed_epoch = 0;
  v->fences = v->fwaiters = NULL; /* a deleted var had none left: its deletion waited */
  v->keeper = NULL;                /* as its deletion found it: no holder keeps a dead var */
  weft_spin_unlock(&v->q.lock);
  *out = (weft_var *)h;
  return 0;
}

static int delete_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  (void)arg;
  return 0;
}

static int var_delete(weft_engine *eng, weft_var *var)
{
  weft_var_impl *v = weft_var_lookup(eng, var);
  if (!v)
    return WEFT_EINVAL;
  uint32_t gen = weft_handle_gen((uintptr_t)var);
  if (eng->naive) {
    pthread_mutex_lock(&eng->naive_lock);
    weft_spin_lock(&v->q.lock);
    bool killed = weft_slot_kill(&v->slot, gen);
    weft_spin_unlock(&v->q.lock);
    if (killed)
      weft_handles_free(&eng->vars, &v->slot);
    pthread_mutex_unlock(&eng->naive_lock);
    return killed ? 0 : WEFT_EINVAL;
  }
  /* An internal write that kills the handle as it registers (under the
   * var's lock) and frees the var when it completes, after every earlier
   * operator on it. */
  weft_op_desc d = {0};
  d.fn = delete_fn;
  d.prop = WEFT_PROP_ASYNC; /* trivial: run inline when ready */
  d.flags = WEFT_OP_NOSKIP;
  d.name = "weft_var_delete";
  weft_var_use use = {(uintptr_t)var, v, true};
  return weft_push_opr(eng, &d, &use, 1, WEFT_OPR_DELETE, NULL, false);
}

static int wait_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  weft_var_waiter *w = arg;
  weft_engine *eng = weft_tls_opr->eng;
  weft_spin_lock(&w->v->q.lock);
  w->status = weft_var_failed(w->v); /* reported once: */
  weft_var_failed_store(w->v, 0);
  weft_spin_unlock(&w->v->q.lock);
  /* seq_cst: publishes status; pairs with the waiter's re-check after it
   * announced itself (weft_engine_wait). */
  atomic_store_explicit(&w->done, 1, memory_order_seq_cst);
  weft_engine_notify(eng); /* w may be gone from here on */
  return 0;
}

static bool waiter_done(weft_engine *eng, void *arg)
{
  (void)eng;
  /* seq_cst: pairs with the store in wait_fn. */
  return atomic_load_explicit(&((weft_var_waiter *)arg)->done, memory_order_seq_cst) != 0;
}

/* Whether v is one of op's vars (sorted by slot index, as every
 * operator's are). */
static bool opr_has_var(const weft_opr *op, const weft_var_impl *v)
{
  int lo = 0, hi = op->nvars;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (op->var[mid]->slot.index < v->slot.index)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < op->nvars && op->var[lo] == v;
}

static int var_wait_entered(weft_engine *eng, weft_var *var)
{
  weft_var_impl *v = weft_var_lookup(eng, var);
  if (!v)
    return WEFT_EINVAL;
  weft_opr *cur = weft_tls_opr;
  if (cur && cur->eng == eng)
    for (int k = 0; k < cur->nvars; k++)
      if (cur->var[k] == v)
        return WEFT_EDEADLK; /* it waits for the calling operator itself */
  if (cur && cur->eng == eng && cur->internal == WEFT_OPR_HELD &&
      opr_has_var(eng->ext->holder(cur), v))
    return WEFT_EDEADLK; /* it waits for the holder of the calling operator's vars */
  if (weft_tls_executor)
    return WEFT_EDEADLK; /* a device worker or poller: it completes device work */
  if (eng->naive) {
    pthread_mutex_lock(&eng->naive_lock);
    weft_spin_lock(&v->q.lock);
    int status = weft_var_failed(v);
    weft_var_failed_store(v, 0);
    weft_spin_unlock(&v->q.lock);
    pthread_mutex_unlock(&eng->naive_lock);
    return status;
  }
  /* Inside an operator (or nested inside one): a wait for what cannot
   * finish before that operator does is answered at once (wait_cycle.h). */
  weft_opr *caller = cur && cur->eng == eng ? cur : NULL;
  const weft_nest *up = weft_tls_nest;
  weft_var_waiter w = {v, caller, up, 0, 0, 0, NULL, 0, false};
  bool checked = caller || up;
  if (checked) {
    weft_wait_list(eng, &w);
    int rc = weft_wait_loops(eng, &w);
    if (rc) {
      weft_wait_unlist(eng, &w);
      return rc;
    }
  }
  weft_op_desc d = {0};
  d.fn = wait_fn;
  d.arg = &w;
  d.prop = WEFT_PROP_ASYNC; /* trivial: run inline when ready */
  d.flags = WEFT_OP_NOSKIP;
  d.name = "weft_var_wait";
  weft_var_use use = {(uintptr_t)var, v, true};
  int rc = weft_push_opr(eng, &d, &use, 1, WEFT_OPR_WAIT, NULL, false);
  if (checked) /* registered (or not at all): a check sees its request from now on */
    weft_wait_unlist(eng, &w);
  if (rc)
    return rc;
  weft_engine_wait(eng, waiter_done, &w);
  return w.status;
}
