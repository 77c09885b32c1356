/* SPDX-License-Identifier: MIT */
/* The var block: looking a handle up, and its failed state. */
#include "deps/var.h"

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
