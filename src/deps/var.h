/* SPDX-License-Identifier: MIT */
/*
 * The var block: a var's queue (var_queue.h) with the state the engine
 * keeps beside it: its handle, its failed status, and the device fences
 * pending on it (fence.h). Slots are never freed while the engine lives;
 * a handle's generation tells a live var from a deleted one.
 */
#ifndef WEFT_DEPS_VAR_H
#define WEFT_DEPS_VAR_H
#include "deps/layer.h" /* layer guard: no include from a lower layer */

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/tunables.h"
#include "deps/engine.h"
#include "deps/handles.h"
#include "deps/var_queue.h"

typedef struct weft_var_impl weft_var_impl;

struct weft_var_impl {
  /* The first line: read on every push and skip check, written rarely (the
   * handle's life, failures), so it stays shared in every core's cache. */
  weft_slot slot;  /* handle: generation-tagged */
  /* atomic, relaxed, written under q.lock: the status of the last failed
   * write, 0 when fine (stored only when it changes). An operator's skip
   * check reads it without the lock: holding its grants, no write can
   * change it, and the grant's acq_rel chain orders the last writer's store
   * before the read (a concurrent weft_wait_all or weft_var_wait clearing
   * it may go either way, as it could with the lock). */
  _Atomic int failed;
  bool failed_listed;     /* under q.lock: on the engine's failed_vars list */
  uint64_t failed_epoch; /* under q.lock: the epoch of the op that set failed (if failed) */
  struct weft_var_impl *failed_next; /* the list's link (under fail_lock while listed) */
  weft_var_req *fwaiters; /* under q.lock: granted requests waiting for fences on the host */
  /* The second line: the queue, written by every push and completion. A
   * var's slot is a line-aligned 128 bytes (lifecycle.c), so no other var's
   * fields share these lines. */
  _Alignas(WEFT_CACHE_LINE) weft_varq q; /* the queue and its lock */
  weft_var_req *fences;   /* under q.lock: requests of launched device ops, work pending */
  /* under q.lock: the granted request of a holder (ext.h: a graph launch's
   * gate) that may go on holding v after the holder's finish, or NULL: an
   * operator appended behind it must first make the holder's layer let go
   * of v (weft_opr_ext_ops.yield). */
  weft_var_req *keeper;
};
_Static_assert(sizeof(weft_var_impl) == 2 * WEFT_CACHE_LINE, "a var is two lines");

/* Walking the n vars of var[] (an operator with many: WEFT_VAR_PREFETCH_AHEAD,
 * tunables.h), at k: starts moving the lines of a var further on, which
 * the walk will lock (its queue line) and check (its first line). */
static inline void weft_var_prefetch(weft_var_impl *const *var, int k, int n)
{
  if (k + WEFT_VAR_PREFETCH_AHEAD < n) {
    const weft_var_impl *v = var[k + WEFT_VAR_PREFETCH_AHEAD];
    __builtin_prefetch(&v->slot, 0);
    __builtin_prefetch(&v->q, 1);
  }
}

static inline int weft_var_failed(weft_var_impl *v)
{
  return atomic_load_explicit(&v->failed, memory_order_relaxed);
}

/* Under v's lock. */
static inline void weft_var_failed_store(weft_var_impl *v, int status)
{
  atomic_store_explicit(&v->failed, status, memory_order_relaxed);
}

/* Under v's lock, as the release of holder request req passes v: v no
 * longer names it as its keeper (if it did). */
static inline void weft_var_unkeep(weft_var_impl *v, const weft_var_req *req)
{
  if (v->keeper == req)
    v->keeper = NULL;
}

/* The live var of handle var, or NULL. */
static inline weft_var_impl *weft_var_lookup(weft_engine *eng, weft_var *var)
{
  return (weft_var_impl *)weft_handles_get(&eng->vars, (uintptr_t)var);
}
/* The failing case of weft_var_set_failed (var.c). */
void weft_var_set_failed_slow(weft_engine *eng, weft_var_impl *v, int status, uint64_t epoch);

/* Under v's lock: v's failed state becomes status (0: fine again), of the
 * operator pushed in epoch; a failed var is listed for weft_wait_all. */
static inline void weft_var_set_failed(weft_engine *eng, weft_var_impl *v, int status,
                                       uint64_t epoch)
{
  if (status)
    weft_var_set_failed_slow(eng, v, status, epoch);
  else if (weft_var_failed(v)) /* the common case: a store only when it changes */
    weft_var_failed_store(v, 0);
}

#endif /* WEFT_DEPS_VAR_H */
