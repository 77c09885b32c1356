/* SPDX-License-Identifier: MIT */
/*
 * A graph's gate keeping its vars between launches (keep.h): the yield an
 * operator forces on a kept var, and the gate's steps from launch to
 * launch.
 */
#include "common/assert.h"
#include "graph/keep.h"

static inline weft_gate *gate_of(const weft_var_req *r)
{
  return (weft_gate *)weft_opr_arg(weft_var_req_opr(r));
}

void weft_keep_yield(weft_var_impl *v, const weft_var_req *req)
{
  weft_var_req *kr = weft_var_keeper(v);
  if (!weft_var_req_write(req) && !weft_var_req_write(kr) &&
      weft_opr_kind(weft_var_req_opr(req)) != WEFT_OPR_GATE)
    return; /* a read beside a kept read: granted with it, nothing waits */
  weft_gate *gate = gate_of(kr);
  /* relaxed: a first guess; the CASes below decide. */
  unsigned s = atomic_load_explicit(&gate->hold, memory_order_relaxed);
  for (;;) {
    if (s & WEFT_HOLD_RUN) {
      if (s & WEFT_HOLD_WANTED)
        return; /* its end releases every var already */
      /* relaxed: only this word's order matters. Either the end's CAS to
       * KEPT comes first, this one fails and v is let go of below; or this
       * one does, the end's fails, and the end releases every var, v under
       * its lock, after req is appended (we hold that lock). */
      if (atomic_compare_exchange_weak_explicit(&gate->hold, &s, s | WEFT_HOLD_WANTED,
                                                memory_order_relaxed, memory_order_relaxed))
        return;
      continue;
    }
    WEFT_ASSERT(s == WEFT_HOLD_KEPT || s == WEFT_HOLD_PART); /* a var names no gate that is off */
    /* acquire: pairs with the end's release CAS to KEPT (a yield's CAS
     * before this one continues its release sequence): the launch's nodes
     * come before the operator that gets v now. Fails if a launch took
     * the gate meanwhile (RUN): then the loop marks it WANTED. */
    if (atomic_compare_exchange_weak_explicit(&gate->hold, &s, WEFT_HOLD_PART,
                                              memory_order_acquire, memory_order_relaxed))
      break;
  }
  weft_var_keeper_yield(v);
}

void weft_keep_mark(weft_var_impl *v, weft_var_req *req)
{
  if (!weft_var_keeper(v)) {
    weft_var_set_keeper(v, req);
    return;
  }
  if (weft_var_keeper(v) == req)
    return;
  /* Another launch that runs keeps v (its yield marked it WANTED): v will
   * come back to nobody, so this gate cannot keep it either. relaxed: its
   * own end reads the word with a CAS, after this registration. */
  atomic_fetch_or_explicit(&gate_of(req)->hold, WEFT_HOLD_WANTED, memory_order_relaxed);
}

bool weft_keep_resume(weft_gate *gate)
{
  unsigned s = WEFT_HOLD_KEPT;
  /* relaxed: the previous launch's end reaches us through running's
   * acquire; the yields that come later read RUN from this word itself.
   * Fails when a yield took a var (PART): the gate stays PART until the
   * registration holds every lock of its vars (weft_keep_run_locked). */
  if (atomic_compare_exchange_strong_explicit(&gate->hold, &s, WEFT_HOLD_RUN,
                                              memory_order_relaxed, memory_order_relaxed))
    return true;
  WEFT_ASSERT(s == WEFT_HOLD_PART); /* between launches, and not KEPT */
  return false;
}

void weft_keep_run_locked(weft_opr *gate_op)
{
  weft_gate *gate = weft_opr_arg(gate_op);
  /* relaxed: a yield writes this word only under the lock of a var that
   * names the gate as its keeper, one of the gate's vars, whose locks the
   * caller holds: nothing else writes it now. The yields after it read RUN
   * under those locks, which the registration releases. */
  unsigned s = atomic_load_explicit(&gate->hold, memory_order_relaxed);
  WEFT_ASSERT(s == WEFT_HOLD_RUN || s == WEFT_HOLD_PART); /* fresh, or kept with a var lost */
  if (s == WEFT_HOLD_PART)
    atomic_store_explicit(&gate->hold, WEFT_HOLD_RUN, memory_order_relaxed);
}

void weft_keep_start(weft_engine *eng, weft_opr *op, bool admitted)
{
  /* its epoch is counted before it can complete */
  weft_opr_restart_holder(eng, op, weft_engine_count_push(eng), admitted);
  weft_opr_ready(op);
}

bool weft_keep_end(weft_gate *gate)
{
  unsigned s = WEFT_HOLD_RUN;
  /* release: the launch's nodes, gathered by count_off's acq_rel chain,
   * before whatever a yield hands a var to; pairs with its acquire CAS. */
  return atomic_compare_exchange_strong_explicit(&gate->hold, &s, WEFT_HOLD_KEPT,
                                                 memory_order_release, memory_order_relaxed);
}

void weft_keep_drop(struct weft_graph *g)
{
  weft_gate *gate = g->kept;
  if (!gate)
    return;
  g->kept = NULL;
  weft_fifo ready = WEFT_FIFO_INIT;
  for (int k = 0; k < g->nvars; k++) {
    weft_var_prefetch(g->vars, k, g->nvars);
    weft_var_keeper_drop(g->vars[k], &gate->req[k], &ready);
  }
  weft_gate_put(&gate->op); /* OFF */
  weft_opr_ready_list(&ready);
}
