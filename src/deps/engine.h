/*
 * The dependency engine's internal structures, shared by src/deps/.
 *
 * An operator in flight is an opr: a block holding the copied descriptor and
 * one var-queue request per var it uses (vars sorted by index, duplicates
 * merged, read+write counted as write). Its wait counter starts at
 * nvars + 1: each granted request takes one off, and the pusher takes the
 * last one once it has appended the op to every var, so the op cannot start
 * before its registration is complete. At zero the op is dispatched; when it
 * finishes, each var's queue is completed and the requests this grants are
 * counted off their own ops, from the finishing thread.
 */
#ifndef WEFT_DEPS_ENGINE_H
#define WEFT_DEPS_ENGINE_H
#include "deps/layer.h" /* layer guard: no include from a lower layer */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/objstore.h"
#include "common/tunables.h"
#include "deps/handles.h"
#include "deps/var_queue.h"
#include "pool/task.h"
#include "weft/weft.h"

/* Operators with at most this many vars take their requests from the
 * recycled block itself; larger ones allocate them, vars. 4: the header
 * and the arrays of an operator with up to 3 vars fill 4 lines. */
#define WEFT_OPR_INLINE_VARS 4

typedef struct weft_var_impl {
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
   * var's slot is a line-aligned 128 bytes (engine.c), so no other var's
   * fields share these lines. */
  _Alignas(WEFT_CACHE_LINE) weft_varq q; /* the queue and its lock */
  weft_var_req *fences;   /* under q.lock: requests of launched device ops, work pending */
} weft_var_impl;
_Static_assert(sizeof(weft_var_impl) == 2 * WEFT_CACHE_LINE, "a var is two lines");

static inline int weft_var_failed(weft_var_impl *v)
{
  return atomic_load_explicit(&v->failed, memory_order_relaxed);
}

/* Under v's lock. */
static inline void weft_var_failed_store(weft_var_impl *v, int status)
{
  atomic_store_explicit(&v->failed, status, memory_order_relaxed);
}

/* Normalised var list of an operator: sorted by index, distinct. */
typedef struct weft_var_use {
  uintptr_t handle; /* the var's handle, for re-validation at push */
  weft_var_impl *var; /* its slot (slots are never freed; liveness is
                       * re-checked under the var's lock at push) */
  bool write;
} weft_var_use;

/* A reusable operator (weft_op_new). */
typedef struct weft_op_impl {
  weft_slot slot;
  weft_op_desc desc;  /* copied; reads/writes cleared (see uses) */
  weft_var_use *uses; /* owned */
  int nuses;
  _Atomic int refs;   /* the live handle + one per push in flight */
} weft_op_impl;

/* A worker's caches of recycled blocks, on a line of its own: the workers
 * pop and push their heads on every operator. */
typedef struct weft_worker_caches {
  _Alignas(WEFT_CACHE_LINE) weft_obj_cache oprs; /* owner only */
  weft_obj_cache bigs;                            /* owner only */
} weft_worker_caches;

/* Internal operator kinds (opr.internal). */
enum { WEFT_OPR_USER = 0, WEFT_OPR_WAIT, WEFT_OPR_DELETE };

typedef struct weft_opr {
  /* The first lines: what the pusher writes for every operator (the block
   * usually comes from another core, which recycled it, so each line
   * written is a line moved): the header, then the var and request arrays,
   * so that an operator with up to 2 vars is 3 lines and one with up to 4 is
   * 4. While the block is free the object store links it through its first
   * words. */
  weft_engine *eng;
  weft_op_fn fn;              /* NULL: an async operator (async_fn) */
  void *arg;
  const char *name;
  weft_op_impl *tmpl;         /* the reusable op it was pushed from, or NULL */
  weft_var_impl **var;        /* [nvars], sorted by index */
  weft_var_req *req;          /* [nvars]: req[k].write tells the kind */
  uint64_t epoch;             /* the epoch it was pushed in (its parent's, if pushed by an op) */
  weft_ctx ctx;
  unsigned flags;
  int nvars;
  _Atomic int wait;           /* atomic: grants missing, +1 until registered */
  int status;                 /* set by the thread that runs or skips it */
  uint8_t prop;               /* a weft_prop */
  uint8_t internal;           /* WEFT_OPR_* */
  uint8_t slot;               /* the inflight slot (epoch & 1) it is counted in */
  bool admitted;              /* counted in eng->admitted */
  weft_var_impl *var_inline[WEFT_OPR_INLINE_VARS];
  weft_var_req req_inline[WEFT_OPR_INLINE_VARS];
  /* What only some operators use, each written only for them. */
  weft_async_op_fn async_fn;  /* fn NULL */
  /* atomic: an async op finishes when both its signal and its async_fn's
   * return have happened (2 -> 0), so the block outlives the call. */
  _Atomic int async_refs;
  _Atomic uint32_t async_done; /* naive engine (a block on the pusher's stack): set at the signal */
  int priority;               /* WEFT_PROP_PRIORITIZED: higher runs first */
  /* A queue link: async operators run inline (dispatch.c), device operators
   * (stream workers, the executor's failure list). */
  struct weft_opr *link;
  /* Its pool task record (weft_pool_submit_embedded): written by the thread
   * that dispatches it through the pool, read by the one that runs it; most
   * operators run on the worker that made them ready and never touch it. */
  weft_task task;
  /* Device operators (src/deps/executor.h), last: CPU operators never touch
   * these lines. devwait: fences to wait for on the device, filled by the
   * threads that grant it (a slot each, claimed with ndevwaits) and read by
   * the device worker once it is dispatched. */
  _Atomic int ndevwaits;
  /* atomic: its launched device work (1) + one per devwait[] entry that
   * names it; the block is recycled at zero. */
  _Atomic int dev_refs;
  void *exec_state;           /* the executor's (its event, its worker) */
  struct weft_opr *devwait[WEFT_OPR_DEV_WAITS];
} weft_opr;
_Static_assert(offsetof(weft_opr, req_inline) == 2 * WEFT_CACHE_LINE,
               "an operator's header and var array fill two lines, its requests start the third");
_Static_assert(offsetof(weft_opr, req_inline) + 2 * sizeof(weft_var_req) <= 3 * WEFT_CACHE_LINE &&
                   offsetof(weft_opr, req_inline) + 4 * sizeof(weft_var_req) <= 4 * WEFT_CACHE_LINE,
               "an operator with 2 vars is written in 3 lines, one with 4 in 4");

/* Completion token of an async operator (process-wide table: the signal
 * carries no engine). */
/* The var and request arrays of an operator with more than
 * WEFT_OPR_INLINE_VARS vars (up to WEFT_OPR_BIG_VARS). */
typedef struct weft_opr_big {
  void *link; /* object store link while free */
  weft_var_impl *var[WEFT_OPR_BIG_VARS];
  weft_var_req req[WEFT_OPR_BIG_VARS];
} weft_opr_big;

typedef struct weft_done_impl {
  weft_slot slot;
  /* atomic, relaxed: written before the token is handed out (published by
   * the caller), read by a signal, which a stale signal may do while the
   * slot's next user writes it (its kill then fails, so the value is unused). */
  _Atomic(weft_opr *) opr;
} weft_done_impl;

enum { WEFT_ENGINE_RUNNING = 0, WEFT_ENGINE_DRAINING = 1 };

/* Where threads wait for an engine's counts to fall. Kept apart from the
 * engine and never freed (recycled through a process-wide list): the
 * completion that drains a count notifies after its decrement, when
 * weft_engine_destroy may already have freed the engine. A notify on a
 * recycled block is a spurious wake-up, which every waiter tolerates. */
/* Operators counted by epoch slot, pushed and finished, each count only
 * growing: one tally per pool worker, written by that worker alone (a load
 * and a store, no read-modify-write, on a line of its own), and a shared
 * one, updated by RMW, for every other thread. A slot is drained when the
 * sum of its finished counts equals the sum of its pushed counts, read in
 * that order (engine.c, tally_drained). */
typedef struct weft_engine_tally {
  _Alignas(64) _Atomic uint64_t pushed[2];
  _Atomic uint64_t done[2];
} weft_engine_tally;

typedef struct weft_engine_sync {
  _Alignas(64) _Atomic int waiters; /* atomic: threads sleeping on idle_seq */
  _Atomic uint32_t idle_seq;        /* atomic: futex word, bumped by notify */
  /* atomic: threads waiting for a slot to drain (wait_all, destroy); while
   * there are any, a completion checks the sums and notifies at zero. */
  _Atomic int drain_waiters;
  int cap;                          /* immutable: tallies allocated */
  /* atomic, relaxed: set when handed out (pool workers + 1); a late
   * completion of the block's previous engine may read it then. */
  _Atomic int ntally;
  struct weft_engine_sync *next;    /* under the list's lock while free */
  weft_engine_tally tally[];        /* [cap] */
} weft_engine_sync;

struct weft_engine {
  weft_pool *pool;     /* immutable */
  bool own_pool;       /* immutable */
  bool naive;          /* immutable */
  int max_inflight;    /* immutable: 0 = unbounded */
  const struct weft_executor_ops *exec; /* immutable: device executor, or NULL */
  void *exec_self;     /* immutable: the executor's state */
  int num_devices;     /* immutable: devices the executor drives */
  unsigned long fork_gen; /* immutable: the fork generation at create (common/fork.h) */

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
  /* atomic: with max_inflight, operators admitted and not finished; an
   * outside pusher takes a place before it pushes, so the cap is exact. */
  _Atomic int64_t admitted;
  /* atomic: outside pushers asleep at the cap: only then does a finish
   * that makes room wake anyone (not wait_all's waiters at every finish). */
  _Atomic int cap_waiters;
  pthread_mutex_t wait_lock; /* one weft_wait_all flips epochs at a time */
  struct weft_engine_sync *sync; /* immutable: waiters, idle_seq, tallies */

  _Alignas(64) _Atomic int state;       /* WEFT_ENGINE_* */
  _Atomic int64_t nsubmitting;          /* outside pushers inside weft_push */

  pthread_mutex_t fail_lock;
  int first_failure;   /* under fail_lock: first failure since wait_all */
  /* under fail_lock: the vars that failed since their last clearing (a
   * superset: weft_var_wait clears a var without unlisting it), so that
   * weft_wait_all clears those, not every var. */
  weft_var_impl *failed_vars;
  const char *first_failure_name; /* under fail_lock */

  pthread_mutex_t naive_lock; /* naive engine: one push at a time (recursive) */
};

/* Set on an executor's threads (weft_engine_executor_thread). */
extern _Thread_local bool weft_tls_executor __attribute__((tls_model("initial-exec")));

/* The operator running on this thread (its fn or async_fn), or NULL. */
extern _Thread_local weft_opr *weft_tls_opr __attribute__((tls_model("initial-exec")));

/* push.c */
weft_var_impl *weft_var_lookup(weft_engine *eng, weft_var *var);
/* Pushes an operator on the given normalised vars (internal ops too). */
/* admitted: the caller took a place under max_inflight for it (released at
 * completion; on failure the caller gives it back). */
int weft_push_opr(weft_engine *eng, const weft_op_desc *desc, const weft_var_use *uses, int nuses,
                  int internal, weft_op_impl *tmpl, bool admitted);

/* Drops a reference to a reusable operator (freeing it with the last). */
void weft_op_tmpl_release(weft_engine *eng, weft_op_impl *t);

/* A call from outside the engine's work registers (destroy waits for it)
 * and is refused with WEFT_ESHUTDOWN once destroy began. */
int weft_engine_enter(weft_engine *eng, bool *guest);
void weft_engine_leave(weft_engine *eng, bool guest);

/* dispatch.c */
void weft_opr_ready(weft_opr *op);
/* Finishes op: releases its vars and dispatches what that makes ready.
 * keep_one: on a pool worker, one ready pool operator is returned to run
 * next on this thread instead of being queued (its inputs are in this
 * core's cache, and it skips a push and a pop); else NULL. */
weft_opr *weft_opr_complete(weft_opr *op, int status, bool keep_one);
void weft_opr_free(weft_engine *eng, weft_opr *op);
/* A finished operator gives back its reusable operator's reference and its
 * place under max_inflight (waking a held-back pusher). */
void weft_opr_retire(weft_engine *eng, weft_opr *op);
/* Takes one grant off the operator of each request in g (linked through
 * next, from weft_varq_complete) and dispatches those that reach zero.
 * keep non-NULL and *keep NULL: the first CPU operator of the pool that
 * becomes ready is returned instead, to run next on this worker. Returns
 * *keep (or NULL). */
weft_opr *weft_grant_list(weft_var_req *g, weft_opr **keep);
/* fence.c: device fences on vars (src/deps/executor.h). Under v's lock,
 * for request r just granted on v: makes r's operator respect v's fences,
 * on the device or (one more on its wait counter; returns true) on the
 * host. */
bool weft_fence_check(weft_var_impl *v, weft_var_req *r);
void weft_engine_record_failure(weft_engine *eng, int status, const char *name);
/* Under v's lock: v's failed state becomes status (0: fine again), of the
 * operator pushed in epoch; a failed var is listed for weft_wait_all. */
void weft_var_set_failed(weft_engine *eng, weft_var_impl *v, int status, uint64_t epoch);
/* Runs one inline (WEFT_PROP_ASYNC) operator queued on this thread behind
 * the one running, if any (a wait inside that one needs it); returns
 * whether it ran one. */
bool weft_opr_run_inline_one(void);
/* Runs the operator now on this thread (its fn, or starts its async_fn);
 * returns a successor to run next on this thread, or NULL. */
weft_opr *weft_opr_run(weft_opr *op);

/* engine.c */
/* Counts a new operator in the current epoch (its parent's, when an
 * operator pushes it); returns that epoch (the slot is epoch & 1). */
uint64_t weft_engine_count_push(weft_engine *eng);
/* Called by a worker pushing from inside an operator every WEFT_PACE_EVERY
 * pushes: past WEFT_PACE_OPS operators pushed and not finished, lets the
 * others catch up (tunables.h). */
void weft_engine_pace(weft_engine *eng);
/* Uncounts it (a completion, or a push that failed). */
void weft_engine_count_done(weft_engine *eng, int slot);
/* The same for a finished operator of the given epoch. On a worker running a
 * task from its main loop, the drain check (when a thread waits for one) is
 * left for later: weft_engine_between, before the worker runs anything not
 * counted in that epoch or goes idle. */
void weft_engine_count_done_op(weft_engine *eng, uint64_t epoch);
/* Does the left drain check now, if any. */
void weft_engine_drain_flush(void);
/* Does it now unless op is counted in the same epoch (before running op). */
void weft_engine_drain_before(const weft_opr *op);
/* dispatch.c: the weft_tls_between hook (pool_ext.h) for a left check. */
struct weft_task;
void weft_engine_between(struct weft_task *next);
/* The same, when the caller knows the slot is not drained (it is about to
 * run an operator counted in it): no drain check. */
void weft_engine_count_done_busy(weft_engine *eng, int slot);
/* Waits until pred(eng, arg) holds, helping the pool run tasks on a worker. */
void weft_engine_wait(weft_engine *eng, bool (*pred)(weft_engine *eng, void *arg), void *arg);
/* Wakes threads in weft_engine_wait (after a completion). */
void weft_engine_notify(weft_engine *eng);
void weft_engine_sync_notify(weft_engine_sync *sync);

/* done.c */
weft_done *weft_done_token(weft_opr *op);

#endif /* WEFT_DEPS_ENGINE_H */
