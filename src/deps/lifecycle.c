/* SPDX-License-Identifier: MIT */
/*
 * The engine's life: its config, creation (the tables, the caches, the
 * sync block, the device executor), weft_wait_all (epochs and failures),
 * and destroy (the shutdown gate, then a drain).
 */
#include <limits.h>
#include <sched.h>
#include <string.h>

#include "common/alloc.h"
#include "common/env.h"
#include "common/error.h"
#include "common/fork.h"
#include "common/spinlock.h"
#include "deps/arg.h"
#include "deps/engine.h"
#include "deps/executor.h"
#include "deps/ext.h"
#include "deps/help.h"
#include "deps/inflight.h"
#include "deps/opr.h"
#include "deps/push.h"
#include "deps/var.h"
#include "pool/pool_ext.h"

void weft_engine_config_default(weft_engine_config *cfg)
{
  if (!cfg)
    return;
  cfg->pool = NULL;
  cfg->kind = NULL;
  cfg->max_inflight = -1;
  for (size_t k = 0; k < sizeof cfg->reserved / sizeof cfg->reserved[0]; k++)
    cfg->reserved[k] = NULL;
}

/* Waits until drained(eng, slot) holds, announced as a drain waiter. */
static bool drained(weft_engine *eng, void *arg)
{
  return weft_engine_drained(eng, arg ? *(int *)arg : -1);
}

static void wait_drained(weft_engine *eng, int *slot)
{
  weft_engine_sync *sy = eng->sync;
  /* seq_cst: pairs with the read of drain_waiters in count_done. */
  atomic_fetch_add_explicit(&sy->drain_waiters, 1, memory_order_seq_cst);
  weft_engine_wait(eng, drained, slot);
  atomic_fetch_sub_explicit(&sy->drain_waiters, 1, memory_order_relaxed);
}


/* Clears the failed state of the listed vars whose failure came from an
 * operator pushed in an epoch up to upto; later ones stay listed. One clear
 * at a time (wait_lock): a var taken off the list here is back on it, or
 * cleared, before another clear looks. */
static void clear_failures(weft_engine *eng, uint64_t upto)
{
  pthread_mutex_lock(&eng->wait_lock);
  pthread_mutex_lock(&eng->fail_lock);
  weft_var_impl *list = eng->failed_vars;
  eng->failed_vars = NULL;
  pthread_mutex_unlock(&eng->fail_lock);
  weft_var_impl *keep = NULL, *keep_tail = NULL;
  int cleared = 0;
  while (list) {
    weft_var_impl *v = list;
    list = v->failed_next; /* ours: a listed var is not relinked by a setter */
    weft_spin_lock(&v->q.lock);
    if (weft_var_failed(v) && v->failed_epoch > upto) { /* a failure pushed after the wait began */
      v->failed_next = keep;
      keep = v;
      if (!keep_tail)
        keep_tail = v;
    } else {
      weft_var_failed_store(v, 0);
      v->failed_listed = false;
      cleared++;
    }
    weft_spin_unlock(&v->q.lock);
  }
  pthread_mutex_lock(&eng->fail_lock);
  if (keep) {
    keep_tail->failed_next = eng->failed_vars;
    eng->failed_vars = keep;
  }
  /* relaxed: see nfailed_vars (engine.h); after the vars' own clearing. */
  int left = atomic_load_explicit(&eng->nfailed_vars, memory_order_relaxed) - cleared;
  WEFT_ASSERT(left >= 0); /* a listed var is counted once */
  atomic_store_explicit(&eng->nfailed_vars, left, memory_order_relaxed);
  pthread_mutex_unlock(&eng->fail_lock);
  pthread_mutex_unlock(&eng->wait_lock);
}

static int wait_all_entered(weft_engine *eng);

int weft_wait_all(weft_engine *eng)
{
  if (!eng)
    return WEFT_EINVAL;
  if (weft_engine_inside_op(eng) || weft_tls_executor)
    return WEFT_EDEADLK; /* the calling operator is one of those waited for */
  if (weft_capturing(eng))
    return WEFT_EBUSY; /* what it would wait for is recorded, not pushed */
  int guest;
  int rc = weft_engine_enter(eng, &guest);
  if (rc)
    return rc;
  rc = wait_all_entered(eng);
  weft_engine_leave(eng, guest);
  return rc;
}

static int wait_all_entered(weft_engine *eng)
{
  if (eng->naive) {
    pthread_mutex_lock(&eng->naive_lock);
    int rc = weft_engine_take_failure(eng);
    clear_failures(eng, UINT64_MAX);
    pthread_mutex_unlock(&eng->naive_lock);
    return rc;
  }
  /* Move later pushes on to the next epoch, then wait for this one to
   * drain. The next epoch's slot is the one before this; it must be empty
   * before it is reused (an earlier wait_all may still be waiting for it:
   * those operators were pushed before us too, so wait for them first).
   * The lock is held only to flip, never while waiting: a wait_all nested
   * in a task that another wait_all on this thread is helping must not
   * wait for that one to return. */
  int slot;
  uint64_t waited;
  for (;;) {
    pthread_mutex_lock(&eng->wait_lock);
    /* seq_cst: pairs with the epoch reads in weft_engine_count_push. */
    uint64_t e = atomic_load_explicit(&eng->epoch, memory_order_seq_cst);
    int older = (int)((e + 1) & 1);
    if (drained(eng, &older)) {
      atomic_store_explicit(&eng->epoch, e + 1, memory_order_seq_cst); /* seq_cst: same */
      /* A pusher that owns a tally counts with a plain store and only a
       * compiler barrier before it reads the epoch again: this full
       * barrier in every running thread pairs with that (inflight.c,
       * weft_engine_count_push), so the drain below sees its count or it
       * sees the flip. Not needed when no other thread owns one (a user's
       * thread that pushes and waits: 0.44 -> 0.07 us a wait on the VM). */
      if (weft_engine_light_counters(eng->sync))
        weft_fence_heavy(&eng->sync->fence_word);
      pthread_mutex_unlock(&eng->wait_lock);
      slot = (int)(e & 1);
      waited = e;
      break;
    }
    pthread_mutex_unlock(&eng->wait_lock);
    wait_drained(eng, &older);
  }
  wait_drained(eng, &slot);
  int rc = weft_engine_take_failure(eng);
  clear_failures(eng, waited);
  return rc;
}

static int config(weft_engine *eng, const weft_engine_config *cfg)
{
  for (size_t k = 0; k < sizeof cfg->reserved / sizeof cfg->reserved[0]; k++)
    if (cfg->reserved[k]) {
      weft_log("bad weft_engine_config.reserved[%zu]: must be zero (weft_engine_config_default)",
               k);
      return WEFT_EINVAL;
    }
  const char *kind = cfg->kind, *origin = "weft_engine_config.kind";
  if (!kind) {
    kind = weft_env_str("WEFT_ENGINE");
    origin = "WEFT_ENGINE";
  }
  if (!kind || strcmp(kind, "threaded") == 0) {
    eng->naive = false;
  } else if (strcmp(kind, "naive") == 0) {
    eng->naive = true;
  } else {
    weft_log("malformed %s=\"%s\": expected threaded or naive", origin, kind);
    return WEFT_EINVAL;
  }
  if (cfg->max_inflight < -1) {
    weft_log("bad weft_engine_config.max_inflight = %d: expected -1 (automatic) or >= 0",
             cfg->max_inflight);
    return WEFT_EINVAL;
  }
  eng->max_inflight = cfg->max_inflight;
  if (eng->max_inflight < 0) {
    long v;
    int rc = weft_env_int("WEFT_MAX_INFLIGHT", 0, INT_MAX, &v);
    if (rc < 0)
      return rc;
    eng->max_inflight = rc == 0 ? (int)v : 0;
  }
  return 0;
}

static void free_op_slot(weft_slot *s)
{
  weft_op_tmpl *t = (weft_op_tmpl *)s;
  weft_free(t->uses); /* live reusable operators at destroy */
  t->uses = NULL;
  if (t->box) /* no push of it can run any more: done with its argument */
    weft_arg_box_unref(t->box);
  t->box = NULL;
}

static void free_engine(weft_engine *eng)
{
  if (eng->exec) /* drained: no device operator is left */
    eng->exec->close(eng->exec_self);
  weft_handles_destroy(&eng->vars, NULL);
  weft_handles_destroy(&eng->ops, free_op_slot);
  weft_obj_store_destroy(&eng->oprs);
  weft_obj_store_destroy(&eng->bigs);
  weft_free(eng->caches);
  if (eng->sync)
    weft_engine_sync_put(eng->sync);
  pthread_mutex_destroy(&eng->fail_lock);
  pthread_mutex_destroy(&eng->wait_lock);
  pthread_mutex_destroy(&eng->naive_lock);
  if (eng->own_pool)
    weft_pool_destroy(eng->pool);
  weft_free(eng);
}

int weft_engine_create_with(weft_engine **out, const weft_engine_config *cfg_in,
                            const weft_executor_ops *exec, const weft_opr_ext_ops *ext)
{
  if (!out)
    return WEFT_EINVAL;
  *out = NULL;
  weft_engine_config cfg;
  if (cfg_in)
    cfg = *cfg_in;
  else
    weft_engine_config_default(&cfg);
  if (cfg.pool && weft_pool_forked(cfg.pool))
    return WEFT_ESHUTDOWN; /* a pool inherited through fork */
  weft_engine *eng = weft_aligned_alloc(64, sizeof *eng);
  if (!eng)
    return WEFT_ENOMEM;
  memset(eng, 0, sizeof *eng);
  eng->fork_gen = weft_fork_generation();
  eng->ext = ext;
  weft_spin_init(&eng->loop_lock);
  int rc = config(eng, &cfg);
  if (rc) {
    weft_free(eng);
    return rc;
  }
  pthread_mutexattr_t ma;
  pthread_mutexattr_init(&ma);
  pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE); /* naive ops push from inside */
  bool ok_naive = pthread_mutex_init(&eng->naive_lock, &ma) == 0;
  pthread_mutexattr_destroy(&ma);
  bool ok_fail = pthread_mutex_init(&eng->fail_lock, NULL) == 0;
  if (ok_fail && pthread_mutex_init(&eng->wait_lock, NULL)) {
    pthread_mutex_destroy(&eng->fail_lock);
    ok_fail = false;
  }
  bool ok_vars = weft_handles_init(&eng->vars, sizeof(weft_var_impl), WEFT_CACHE_LINE) == 0;
  bool ok_ops = weft_handles_init(&eng->ops, sizeof(weft_op_tmpl), WEFT_CACHE_LINE) == 0;
  bool ok_oprs = weft_obj_store_init(&eng->oprs, (sizeof(weft_opr) + 63) / 64 * 64,
                                     WEFT_OPR_BATCH) == 0;
  if (ok_oprs && weft_obj_store_init(&eng->bigs, sizeof(weft_opr_big), WEFT_OPR_BATCH / 8)) {
    weft_obj_store_destroy(&eng->oprs);
    ok_oprs = false;
  }
  if (!(ok_naive && ok_fail && ok_vars && ok_ops && ok_oprs)) {
    if (ok_naive)
      pthread_mutex_destroy(&eng->naive_lock);
    if (ok_fail) {
      pthread_mutex_destroy(&eng->fail_lock);
      pthread_mutex_destroy(&eng->wait_lock);
    }
    if (ok_vars)
      weft_handles_destroy(&eng->vars, NULL);
    if (ok_ops)
      weft_handles_destroy(&eng->ops, NULL);
    if (ok_oprs) {
      weft_obj_store_destroy(&eng->oprs);
      weft_obj_store_destroy(&eng->bigs);
    }
    weft_free(eng);
    return WEFT_ENOMEM;
  }
  eng->pool = cfg.pool;
  if (!eng->pool) {
    rc = weft_pool_create(&eng->pool, NULL);
    if (rc) {
      eng->pool = NULL;
      free_engine(eng);
      return rc;
    }
    eng->own_pool = true;
  }
  size_t ncaches = (size_t)weft_pool_num_threads(eng->pool);
  eng->caches = weft_aligned_alloc(WEFT_CACHE_LINE, ncaches * sizeof *eng->caches);
  if (eng->caches)
    memset(eng->caches, 0, ncaches * sizeof *eng->caches);
  eng->sync = weft_engine_sync_get(weft_pool_num_threads(eng->pool));
  if (!eng->caches || !eng->sync) {
    free_engine(eng);
    return WEFT_ENOMEM;
  }
  if (exec) {
    rc = exec->open(eng->pool, &eng->exec_self, &eng->num_devices);
    if (rc) {
      free_engine(eng);
      return rc;
    }
    eng->exec = exec;
  }
  atomic_init(&eng->epoch, 0);
  atomic_init(&eng->admitted, 0);
  atomic_init(&eng->cap_waiters, 0);

  weft_guard_init(&eng->guard);
  *out = eng;
  return 0;
}

int weft_engine_destroy(weft_engine *eng)
{
  if (!eng)
    return WEFT_EINVAL;
  if (weft_fork_stale(eng->fork_gen))
    return WEFT_ESHUTDOWN; /* a fork child's copy: frees nothing, waits for nothing */
  if (weft_engine_inside_op(eng) || weft_tls_executor ||
      (eng->own_pool && weft_pool_in_task(eng->pool)))
    return WEFT_EDEADLK;
  if (weft_capturing(eng))
    return WEFT_EBUSY; /* end the capture first */
  weft_guard_close(&eng->guard); /* new calls from outside: WEFT_ESHUTDOWN */
  weft_guard_wait_empty(&eng->guard);
  if (eng->naive) { /* a push from inside one of its ops may still run */
    pthread_mutex_lock(&eng->naive_lock);
    pthread_mutex_unlock(&eng->naive_lock);
  } else {
    wait_drained(eng, NULL);
  }
  int rc = weft_engine_take_failure(eng);
  if (eng->ext) /* drained: what the layer above keeps of eng goes now */
    eng->ext->closing(eng);
  free_engine(eng);
  return rc;
}
