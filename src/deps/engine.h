/* SPDX-License-Identifier: MIT */
/*
 * The engine object (struct weft_engine): what every part of src/deps
 * reads, and the few things that belong to the object itself: the thread's
 * current operator and the record of the first failure.
 *
 * Where the rest lives (src/deps/), each file calling only those above it
 * in this list:
 *   handles.h     generation-tagged handle tables (vars, reusable ops)
 *   var_queue.h   a var's FIFO of requests: reads together, writes alone
 *   opr.h         the op block: an operator in flight, its requests, its life
 *   var.h         the var block (its queue) and its failed state
 *   inflight.h    operators counted by epoch; drains; wake-ups
 *   fence.h       device fences checked when a request is granted
 *   complete.h    the completion path: a finished op releases its vars
 *   done.h        async completion tokens
 *   dispatch.h    the release policy: where a ready op runs; running it
 *   help.h        waiting by helping; pacing
 *   executor.h    the executor interface; executor.c, its engine side
 *   ext.h         the operator kinds defined above the engine (a graph's
 *                 nodes and gates), reached through eng->ext
 *   wait_cycle.h    a wait inside an operator that would wait for it
 *   push.h        registering an operator on its vars; the shutdown gate
 *   var_api.c, op_api.c, lifecycle.c: the public calls
 */
#ifndef WEFT_DEPS_ENGINE_H
#define WEFT_DEPS_ENGINE_H
#include "deps/layer.h" /* layer guard: no include from a lower layer */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/guard.h"
#include "common/objstore.h"
#include "common/spinlock.h"
#include "common/tunables.h"
#include "deps/handles.h"
#include "weft/weft.h"

struct weft_opr;
struct weft_var_impl;
struct weft_engine_sync;
struct weft_executor_ops;
struct weft_opr_ext_ops;

/* A worker's caches of recycled blocks, on a line of its own: the workers
 * pop and push their heads on every operator. */
typedef struct weft_worker_caches {
  _Alignas(WEFT_CACHE_LINE) weft_obj_cache oprs; /* owner only */
  weft_obj_cache bigs;                            /* owner only */
} weft_worker_caches;

struct weft_engine {
  weft_pool *pool;     /* immutable */
  bool own_pool;       /* immutable */
  bool naive;          /* immutable */
  int max_inflight;    /* immutable: 0 = unbounded */
  const struct weft_executor_ops *exec; /* immutable: device executor, or NULL */
  void *exec_self;     /* immutable: the executor's state */
  int num_devices;     /* immutable: devices the executor drives */
  /* immutable: the operator kinds defined above the engine (ext.h), or
   * NULL: none (their operators are never pushed then) */
  const struct weft_opr_ext_ops *ext;
  unsigned long fork_gen; /* immutable: the fork generation at create (common/fork.h) */
  /* atomic, relaxed, written under fail_lock: how many vars are on
   * failed_vars, and how many failures a layer above holds for its held
   * operators (ext.h, inherited: weft_engine_count_held_failures). Zero
   * means no var of the engine is failed (a failed var is always listed)
   * and no held operator inherits one, so a skip check
   * (weft_opr_skip_status) or a finish need not read its vars' failed
   * states, nor ask the layer. A failure set by an operator before
   * one that uses its var is counted before that operator runs (the count
   * is raised before the var is released, and the release/grant chain
   * orders it); a clearing running meanwhile may be seen or not, as the
   * var's own state may. On this read-mostly line: read by every operator,
   * written only when a var fails or is cleared. */
  _Atomic int nfailed_vars;

  weft_handles vars;   /* internally locked */
  weft_handles ops;    /* internally locked */
  weft_obj_store oprs; /* internally locked */
  weft_obj_store bigs; /* internally locked: arrays of operators with many vars */
  weft_worker_caches *caches; /* [pool workers], each owned by its worker */

  /* Operators pushed and not finished are counted by epoch (two slots) in
   * sync's tallies: a weft_wait_all moves pushes on to the next epoch and
   * waits for its own slot to drain, so operators pushed after it began
   * cannot hold it up. The threads waiting for a count to fall (wait_all,
   * destroy, pushers held back by max_inflight) sleep on sync's idle_seq. */
  _Alignas(64) _Atomic uint64_t epoch; /* atomic: bumped by weft_wait_all */
  struct weft_engine_sync *sync; /* immutable: waiters, idle_seq, tallies */
  /* The cap's counts, on a line of their own: with max_inflight every push
   * and every finish writes admitted, and every push (from any thread) and
   * finish reads epoch and sync (above). */
  /* atomic: with max_inflight, operators admitted and not finished; an
   * outside pusher takes a place before it pushes, so the cap is exact. */
  _Alignas(64) _Atomic int64_t admitted;
  /* atomic: outside pushers asleep at the cap: only then does a finish
   * that makes room wake anyone (not wait_all's waiters at every finish). */
  _Atomic int cap_waiters;
  /* atomic, relaxed, zeroed at create: with max_inflight, async operators
   * whose async_fn has returned without their weft_done_signal having come
   * (raised by the thread that ran the async_fn, if it saw no signal yet,
   * before it gives up its hold on the operator; lowered by whichever of
   * that thread and the signal finishes it, before the finish). A hint for an outside
   * pusher's wait at the cap (push.c): such an operator may wait for an
   * operator not pushed yet. Touched only when max_inflight is set. */
  _Atomic int64_t async_waits;
  pthread_mutex_t wait_lock; /* one weft_wait_all flips epochs at a time */

  /* Calls from outside the engine's own operators enter it (push.c,
   * weft_engine_enter); destroy closes it and waits for them to leave. */
  _Alignas(64) weft_guard guard;

  pthread_mutex_t fail_lock;
  int first_failure;   /* under fail_lock: first failure since wait_all */
  /* under fail_lock: the vars that failed since their last clearing (a
   * superset: weft_var_wait clears a var without unlisting it), so that
   * weft_wait_all clears those, not every var. */
  struct weft_var_impl *failed_vars;
  const char *first_failure_name; /* under fail_lock */

  pthread_mutex_t naive_lock; /* naive engine: one push at a time (recursive) */

  /* The waits inside operators being checked for loops (wait_cycle.h):
   * listed from before their check until their wait operator is
   * registered. All three under loop_lock (taken after a var's lock, never
   * before one). */
  weft_spinlock loop_lock;
  struct weft_var_waiter *loop_pending;
  uint64_t loop_tickets;
};

/* The operator running on this thread (its fn or async_fn), or NULL. */
extern _Thread_local struct weft_opr *weft_tls_opr __attribute__((tls_model("initial-exec")));
/* Set on an executor's threads (weft_engine_executor_thread). */
extern _Thread_local bool weft_tls_executor __attribute__((tls_model("initial-exec")));

/* Records a failure (the first since the last weft_wait_all is kept). */
void weft_engine_record_failure(weft_engine *eng, int status, const char *name);
/* Takes the kept failure (0 if none) and clears it. */
int weft_engine_take_failure(weft_engine *eng);
/* A layer above stores delta more (or, negative, lets go of as many)
 * failures that its held operators inherit (ext.h: inherited): counted
 * with the failed vars (nfailed_vars), so that every path that skips the
 * skip check while none is failed takes it meanwhile. A store is counted
 * before it can be read: before the release of the operator that
 * inherits it. */
void weft_engine_count_held_failures(weft_engine *eng, int delta);

/* Whether no var of eng is failed: an operator about to run has nothing to
 * skip for (read after the release that made it ready). */
static inline bool weft_engine_no_failed_var(const weft_engine *eng)
{
  /* relaxed: see nfailed_vars (above) */
  return atomic_load_explicit(&eng->nfailed_vars, memory_order_relaxed) == 0;
}

#endif /* WEFT_DEPS_ENGINE_H */
