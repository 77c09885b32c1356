/*
 * Running operators: dispatch of a ready operator by where it comes from
 * (the pool: the worker's own deque or the injection queue; the priority
 * queue; inline for WEFT_PROP_ASYNC), running or skipping it, and its
 * completion, which releases its vars and dispatches, from the completing
 * thread, the operators that this makes ready.
 */
#include "common/alloc.h"
#include "common/prof.h"
#include "common/sync.h"
#include "deps/engine.h"
#include "deps/executor.h"
#include "pool/pool_ext.h"

/* Inline (WEFT_PROP_ASYNC) operators made ready while this thread is already
 * running one are queued here and run by the outermost call, so a chain of
 * inline operators runs in a loop, not in ever deeper recursion. */
static _Thread_local weft_fifo inline_q __attribute__((tls_model("initial-exec")));
static _Thread_local bool inline_active __attribute__((tls_model("initial-exec")));
/* An executor's thread (device worker, poller): runs no user operator inline. */
_Thread_local bool weft_tls_executor __attribute__((tls_model("initial-exec")));

void weft_engine_executor_thread(void)
{
  weft_tls_executor = true;
}

static int run_task(void *arg)
{
  for (weft_opr *op = arg; op;)
    op = weft_opr_run(op);
  return 0;
}

void weft_engine_between(weft_task *next)
{
  if (next && next->fn == run_task)
    weft_engine_drain_before((const weft_opr *)next->arg);
  else
    weft_engine_drain_flush();
}

void weft_opr_ready(weft_opr *op)
{
  if (op->internal != WEFT_OPR_USER) {
    /* A var wait or deletion: trivial, and never queued behind the inline
     * operator that may be the one waiting (weft_var_wait inside it). */
    weft_opr *next = weft_opr_run(op);
    if (next)
      weft_opr_ready(next); /* a successor it kept: queue it as usual */
    return;
  }
  if (op->ctx.type == WEFT_DEV_GPU) {
    op->eng->exec->submit(op->eng->exec_self, op);
    return;
  }
  if (op->prop != WEFT_PROP_ASYNC || weft_tls_executor) {
    op->task.fn = run_task;
    op->task.arg = op;
    bool prio = op->prop == WEFT_PROP_PRIORITIZED;
    if (weft_pool_submit_embedded(op->eng->pool, &op->task, prio, prio ? op->priority : 0) == 0)
      return;
    if (weft_tls_executor) { /* never inline here: a pool task cannot fail this way */
      weft_opr_complete(op, WEFT_ENOMEM, false);
      return;
    }
    /* No memory to grow the priority queue: run it here rather than lose it. */
  }
  weft_fifo_push(&inline_q, &op->node);
  if (inline_active)
    return;
  inline_active = true;
  while (weft_opr_run_inline_one())
    ;
  inline_active = false;
}

bool weft_opr_run_inline_one(void)
{
  weft_fifo_node *n = weft_fifo_pop(&inline_q);
  if (!n)
    return false;
  weft_opr *o = weft_fifo_entry(n, weft_opr, node);
  while (o)
    o = weft_opr_run(o);
  return true;
}

int weft_opr_skip_status(const weft_opr *op)
{
  if (op->flags & WEFT_OP_NOSKIP)
    return 0;
  int status = 0;
  for (int k = 0; k < op->nvars && !status; k++)
    status = weft_var_failed(op->var[k]); /* no lock: see weft_var_impl.failed */
  return status;
}

weft_opr *weft_opr_run(weft_opr *op)
{
  int status = 0;
  if (op->internal == WEFT_OPR_USER) {
    /* Skip an operator that uses a failed var; it passes the status on. */
    status = weft_opr_skip_status(op);
    if (status)
      return weft_opr_complete(op, status, true);
  }
  if (weft_tls_between) /* a drain check left for later: now, unless op keeps it */
    weft_engine_drain_before(op);
  weft_run_ctx rc = {op->ctx, NULL, weft_pool_worker_index(op->eng->pool)};
  weft_opr *prev = weft_tls_opr;
  weft_tls_opr = op;
  weft_prof_mark pm = weft_prof_op_begin(op->internal == WEFT_OPR_USER); /* trace span */
  if (op->fn) {
    status = op->fn(&rc, op->arg);
    weft_prof_op_end(pm, op->name);
    weft_tls_opr = prev;
    return weft_opr_complete(op, status, true);
  }
  weft_done *done = weft_done_token(op);
  if (!done) {
    weft_tls_opr = prev;
    return weft_opr_complete(op, WEFT_ENOMEM, true);
  }
  atomic_init(&op->async_refs, 2);
  op->async_fn(&rc, op->arg, done); /* signals through weft_done_signal */
  weft_prof_op_end(pm, op->name);
  weft_tls_opr = prev;
  /* acq_rel: the second of (signal, return) finishes the op and must see
   * the status the signal stored. */
  if (atomic_fetch_sub_explicit(&op->async_refs, 1, memory_order_acq_rel) == 1)
    return weft_opr_complete(op, op->status, true);
  return NULL;
}

void weft_var_set_failed(weft_engine *eng, weft_var_impl *v, int status, uint64_t epoch)
{
  if (!status) { /* the common case: a store only when it changes */
    if (weft_var_failed(v))
      weft_var_failed_store(v, 0);
    return;
  }
  weft_var_failed_store(v, status);
  v->failed_epoch = epoch;
  if (!v->failed_listed) {
    v->failed_listed = true;
    pthread_mutex_lock(&eng->fail_lock); /* lock order: a var's lock, then fail_lock */
    v->failed_next = eng->failed_vars;
    eng->failed_vars = v;
    pthread_mutex_unlock(&eng->fail_lock);
  }
}

void weft_engine_record_failure(weft_engine *eng, int status, const char *name)
{
  pthread_mutex_lock(&eng->fail_lock);
  if (!eng->first_failure) {
    eng->first_failure = status;
    eng->first_failure_name = name;
  }
  pthread_mutex_unlock(&eng->fail_lock);
}

weft_opr *weft_grant_list(weft_var_req *g, weft_opr **keep)
{
  weft_opr *kept = keep ? *keep : NULL;
  while (g) {
    /* g's op may run and be freed at once; a write comes alone (its next
     * links the segment it claimed, var_queue.h). */
    weft_var_req *gnext = g->write ? NULL : g->next;
    weft_opr *o = g->op;
    /* acq_rel: as in weft_push_opr (the last grant dispatches). */
    if (atomic_fetch_sub_explicit(&o->wait, 1, memory_order_acq_rel) == 1) {
      if (keep && !kept && o->prop == WEFT_PROP_NORMAL && o->ctx.type == WEFT_DEV_CPU)
        kept = o;
      else
        weft_opr_ready(o);
    }
    g = gnext;
  }
  return kept;
}

void weft_opr_retire(weft_engine *eng, weft_opr *op)
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

weft_opr *weft_opr_complete(weft_opr *op, int status, bool keep_one)
{
  weft_engine *eng = op->eng;
  bool user = op->internal == WEFT_OPR_USER;
  weft_opr *next = NULL;
  if (keep_one && weft_pool_worker_index(eng->pool) < 0)
    keep_one = false;
  if (status && user)
    weft_engine_record_failure(eng, status, op->name);
  for (int k = 0; k < op->nvars; k++) {
    weft_var_impl *v = op->var[k];
    weft_var_req *me = &op->req[k];
    bool write = me->write;
    weft_var_req *rest = weft_varq_claimed(me);
    if (rest) { /* a claimed segment: hand the var on without its lock? */
      if (!status && weft_varq_passable(me) && !weft_var_failed(v)) {
        weft_var_req *r = weft_varq_pass(me);
        next = weft_grant_list(r, keep_one ? &next : NULL);
        continue; /* the var stays held for writing, now by r */
      }
    }
    weft_spin_lock(&v->q.lock);
    if (rest) /* a failure, or a request that needs the queue */
      weft_varq_unclaim(&v->q, me);
    if (write && user) /* a write's status is the var's: failed, or fine again */
      weft_var_set_failed(eng, v, status, op->epoch);
    weft_var_req *g = weft_varq_complete(&v->q, write, v->fences == NULL);
    if (v->fences) /* device work pending on v: the granted respect it */
      for (weft_var_req *r = g; r; r = r->next)
        weft_fence_check(v, r);
    weft_spin_unlock(&v->q.lock);
    next = weft_grant_list(g, keep_one ? &next : NULL);
    if (op->internal == WEFT_OPR_DELETE) /* the var's last request: free it */
      weft_handles_free(&eng->vars, &v->slot);
  }
  int slot = op->slot;
  uint64_t epoch = op->epoch;
  weft_opr_retire(eng, op);
  weft_opr_free(eng, op);
  if (next && next->slot == slot) /* next is counted in slot: not drained */
    weft_engine_count_done_busy(eng, slot);
  else
    weft_engine_count_done_op(eng, epoch);
  return next;
}
