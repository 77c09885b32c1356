/* SPDX-License-Identifier: MIT */
/* The var block: looking a handle up, its failed state, and its keeper. */
#include "deps/var.h"

#include "common/spinlock.h"
#include "deps/complete.h"
#include "deps/ext.h"
#include "deps/fence.h"

void weft_var_set_failed_slow(weft_engine *eng, weft_var_impl *v, int status, uint64_t epoch)
{
  weft_var_failed_store(v, status);
  v->failed_epoch = epoch;
  if (!v->failed_listed) {
    v->failed_listed = true;
    pthread_mutex_lock(&eng->fail_lock); /* lock order: a var's lock, then fail_lock */
    v->failed_next = eng->failed_vars;
    eng->failed_vars = v;
    /* relaxed: see nfailed_vars (engine.h); the var's release orders it. */
    atomic_store_explicit(&eng->nfailed_vars,
                          atomic_load_explicit(&eng->nfailed_vars, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    pthread_mutex_unlock(&eng->fail_lock);
  }
}


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
