/*
 * The engine object: the thread's current operator and the failure record
 * (the shutdown gate is in push.c, with the pushes it guards). The
 * engine's life (create, wait_all, destroy) is in lifecycle.c.
 */
#include "common/assert.h"
#include "common/fork.h"
#include "deps/engine.h"
#include "deps/executor.h"
#include "pool/pool_ext.h"

_Thread_local struct weft_opr *weft_tls_opr __attribute__((tls_model("initial-exec")));
/* An executor's thread (device worker, poller): runs no user operator inline. */
_Thread_local bool weft_tls_executor __attribute__((tls_model("initial-exec")));

int weft_gpu_count(const weft_engine *eng)
{
  return eng ? eng->num_devices : 0;
}

void weft_engine_executor_thread(void)
{
  weft_tls_executor = true;
  weft_pool_solo_decline(); /* it releases successors: leave the queue to a pusher */
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

void weft_engine_count_held_failures(weft_engine *eng, int delta)
{
  pthread_mutex_lock(&eng->fail_lock);
  /* relaxed: see nfailed_vars (engine.h): written under fail_lock; the
   * caller's release of the inheriting operator orders it before its run. */
  int n = atomic_load_explicit(&eng->nfailed_vars, memory_order_relaxed) + delta;
  WEFT_ASSERT(n >= 0); /* a layer lets go only of what it counted */
  atomic_store_explicit(&eng->nfailed_vars, n, memory_order_relaxed);
  pthread_mutex_unlock(&eng->fail_lock);
}

int weft_engine_take_failure(weft_engine *eng)
{
  pthread_mutex_lock(&eng->fail_lock);
  int rc = eng->first_failure;
  eng->first_failure = 0;
  eng->first_failure_name = NULL;
  pthread_mutex_unlock(&eng->fail_lock);
  return rc;
}

