/* SPDX-License-Identifier: MIT */
/*
 * Operator kinds defined above the engine: the graph layer's one door to
 * the engine, both ways (as executor.h is the device executor's). Its
 * first half is what the engine calls of the layer (weft_opr_ext_ops);
 * its second what the layer may read and do of the engine's objects.
 *
 * The engine runs two kinds of operator whose meaning a layer above it
 * defines (the graph layer, src/graph/, for the replay of a captured graph),
 * and knows of them only what this header says (docs/design.md, "Layout"). As
 * with the device executor (executor.h), the composition root (src/layers.c)
 * hands each engine a table of that layer's entry points
 * (weft_engine_create_with), and the engine reaches the layer through the
 * table alone: never by a name, so no call and no include runs upward.
 *
 *   WEFT_OPR_HELD (opr.h)
 *     An operator that runs a user's fn or async_fn (or goes to its device)
 *     but holds no var itself: another operator, its holder, holds its vars
 *     for it. Its var[] lists them (the skip check and the waits read it);
 *     it has no requests. It is made ready by its layer and dispatched as
 *     any operator (the pool, inline, the executor); its start and its
 *     finish are its layer's (start, finish, run), which hand back what
 *     they make ready. Its block is its layer's: the engine never recycles
 *     it. The engine reads and writes its header (the block's first two
 *     lines, but for the extension area) and, when it queues it, its
 *     queue line (node, task: the third); nothing further.
 *   WEFT_OPR_HOLDER (opr.h)
 *     An operator registered on vars on behalf of held operators: its layer
 *     pushes it (weft_push_register), and it is granted and dispatched as
 *     any operator, but when it is ready it runs nothing of its own: its
 *     layer's hold starts what it holds the vars for. Its layer ends it
 *     with weft_opr_finish_vars, which releases its vars and gives its
 *     block back to the layer (put). Its requests may go on holding their
 *     vars past its finish: such a var names the request as its keeper
 *     (var.h), and a request about to queue behind a keeper first makes
 *     the keeper's layer let go of the var (yield).
 *
 * Every op block has an extension area (weft_opr.ext, opr.h), owned by the
 * layer that defines the operator's kind: the engine never touches it.
 *
 * Pushes recorded instead of run (a graph's capture): a thread's push sink
 * (weft_tls_sink) on an engine hands that engine's pushes from the thread
 * to the sink's layer (record). The engine checks the sink on each push
 * (weft_capturing); the layer sets it and clears it.
 *
 * Every entry is called on the thread that holds the operator (the held
 * one, or the holder), as the comments say; none may block.
 */
#ifndef WEFT_DEPS_EXT_H
#define WEFT_DEPS_EXT_H
#include "deps/layer.h" /* layer guard: no include from a lower layer */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/fifo.h"
#include "common/fork.h"
#include "common/guard.h"
#include "common/spinlock.h"
#include "deps/arg.h"
#include "deps/complete.h"
#include "deps/dispatch.h"
#include "deps/engine.h"
#include "deps/executor.h"
#include "deps/handles.h"
#include "deps/inflight.h"
#include "deps/opr.h"
#include "deps/push.h"
#include "deps/var.h"
#include "pool/pool_ext.h"

/* A thread's push sink: while the thread has one on eng (weft_capturing),
 * its pushes to eng are recorded by the sink's layer instead of run. The
 * layer's own record embeds it. */
typedef struct weft_push_sink {
  weft_engine *eng; /* immutable; not to be touched once orphaned */
  /* The operator the thread ran when the sink was set (of another engine,
   * or NULL): an operator run on this thread meanwhile (an inline successor
   * of a weft_done_signal, say) is not the sink's, and pushes as usual. */
  const struct weft_opr *opr;
  /* atomic, relaxed: eng's destroy ran while the sink was set (the layer's
   * closing); eng may be freed, and a new engine at the same address is
   * not the sink's. */
  _Atomic bool orphaned;
} weft_push_sink;

/* The calling thread's push sink, or NULL (set by the sink's layer). */
extern _Thread_local weft_push_sink *weft_tls_sink __attribute__((tls_model("initial-exec")));

/* Whether the calling thread's pushes to eng are recorded (not from inside
 * an operator it runs meanwhile). */
static inline bool weft_capturing(const weft_engine *eng)
{
  const weft_push_sink *s = weft_tls_sink;
  return __builtin_expect(s != NULL, 0) && s->eng == eng && weft_tls_opr == s->opr &&
         !atomic_load_explicit(&s->orphaned, memory_order_relaxed);
}

struct weft_exec_run; /* executor.h */

typedef struct weft_opr_ext_ops {
  /* ------------------------------------------------ held operators */
  /* The pool task's entry for a ready held CPU operator with a fn
   * (weft_opr_task), not nested in another operator, with no drain check
   * or trace on this thread and no failed var (weft_opr_task checks):
   * runs op, and what it keeps for this thread, in the layer's own loop.
   * worker: the calling worker's index (or -1); hook: for a finish that
   * may leave its drain check for later (weft_engine_count_done_op); *run:
   * the operators the task ran in a row, to which the layer adds its own,
   * stopping at WEFT_KEEP_RUN_MAX. Returns the operator to run next on
   * this thread (of any kind), or NULL. One call per task, not per node. */
  weft_opr *(*run)(weft_opr *op, int worker, weft_between_fn hook, unsigned *run);
  /* op starts: on this thread before its fn or async_fn (run_op), or it
   * goes to its device, or it is ended without running (no memory). */
  void (*start)(weft_opr *op);
  /* The status held op inherits from its layer (a graph node's
   * predecessor along an explicit edge failed, or was skipped), which
   * skips op as a failed var would; 0: none. Asked by the skip check
   * (weft_opr_skip_status) as op starts, unless op has WEFT_OP_NOSKIP, and
   * only while some failure is counted: the layer counts each one it holds
   * (weft_engine_count_held_failures, engine.h) from before the release of
   * the operator that inherits it until it lets go of it, so that no fast
   * path of the layer's or the engine's runs op without this check. NULL:
   * never. */
  int (*inherited)(const weft_opr *op);
  /* Finishes op with status, as weft_opr_finish_vars finishes an
   * operator (the same arguments and result): from run_op, a
   * weft_done_signal, the executor's completion or failure. */
  weft_opr *(*finish)(weft_opr *op, int status, bool keep_one, weft_fifo *ready,
                      weft_between_fn hook);
  /* Held GPU op's device work is enqueued, with status 0 (its fn's, and
   * an event tracks the work): the layer may release successors that wait
   * for it on the device (as a pushed operator's fences let successors on
   * the same device go at its launch: executor.h), each through
   * weft_opr_release_on_device (below: a devwait[] slot of the successor
   * names op, with a reference on op's device state), and remember for op's
   * finish that it did; it appends the successors it makes ready to ready.
   * From the device worker, before op's completion can be seen. NULL:
   * none. */
  void (*launched)(weft_opr *op, weft_fifo *ready);
  /* Whether held GPU op leads a run of operators that replays as one
   * device graph this launch (executor.h, weft_exec_op_run): fills *run.
   * From op's device worker. NULL: no runs. */
  bool (*run_of)(weft_opr *op, struct weft_exec_run *run);
  /* Leader op's run is enqueued as one (weft_exec_op_run_launched; op has
   * dev_run set, and status: 0 or why not): the layer releases what waits
   * for the run on the device, as launched does for one operator (only
   * when status is 0), and op's finish then finishes the whole run. */
  void (*run_launched)(weft_opr *op, int status, weft_fifo *ready);
  /* The holder whose requests hold op's vars while op runs (op runs on
   * this thread, or waits for what this thread runs): stable meanwhile. */
  weft_opr *(*holder)(const weft_opr *op);

  /* ------------------------------------------------ holders */
  /* op, a holder, is ready (every var granted): what it holds them for
   * begins. From weft_opr_ready, on the thread that made it ready. */
  void (*hold)(weft_opr *op);
  /* weft_push_register of holder op, holding the locks of all its vars,
   * before it appends to any. */
  void (*register_locked)(weft_opr *op);
  /* Under v's lock, once holder request r is on v (appended, granted or
   * not). */
  void (*appended)(weft_var_impl *v, weft_var_req *r);
  /* A holder's block, its vars released (weft_opr_finish_vars, after
   * which the engine touches it no more): back to its layer. */
  void (*put)(weft_opr *op);
  /* Under v's lock, before req is appended to v, whose keeper (a holder's
   * request) is not req: the keeper's layer lets go of v now (completing
   * the keeper on v's queue and clearing v->keeper), or later, if req need
   * not wait (a read beside a kept read) or the keeper's holder still
   * runs. */
  void (*yield)(weft_var_impl *v, const weft_var_req *req);

  /* ------------------------------------------------ recorded pushes */
  /* A push (the checked descriptor d on its n normalised uses) from the
   * thread of sink (weft_capturing): recorded. 0 or WEFT_E*. box: the
   * push's argument box (arg.h; d->arg is its bytes), or NULL: on 0 the
   * layer keeps the caller's reference to it, and lets go of it once no
   * launch can run the recorded operator; on an error the caller keeps it. */
  int (*record)(weft_push_sink *sink, const weft_op_desc *d, const weft_var_use *uses, int n,
                struct weft_arg_box *box);

  /* ------------------------------------------------ the engine's end */
  /* eng's destroy drained it (no operator runs, no call from outside is
   * inside it): the layer lets go of eng (what it kept of eng's vars and
   * blocks, and the sinks set on eng) before eng is freed. */
  void (*closing)(weft_engine *eng);
} weft_opr_ext_ops;

/* Frees what eng's executor recorded for a run (weft_exec_run.cache; NULL:
 * nothing), when the layer drops the run (its graph's destroy, or eng's
 * closing, before the executor closes). */
void weft_exec_run_free(weft_engine *eng, void *cache);

/*
 * ----------------------------------------------------------------------
 * The other way: what the layer may read and do of the engine's objects.
 *
 * The layouts of an op block (opr.h), a var (var.h) and an engine
 * (engine.h) are the engine's. The layer touches none of their fields: it
 * reads and writes them through the functions below, each inline where a
 * replay's path takes it, so the seam costs no call. The structs a call
 * hands over whole (weft_var_use, weft_push_sink, weft_exec_run) are the
 * interface's own. Besides these, the layer calls the engine's entry points
 * that the headers included above declare for it: a push's checks and its
 * registration (push.h: weft_push_check_desc, weft_push_normalize,
 * weft_push_register, weft_push_uses, weft_push_naive, weft_push_admit and
 * weft_push_unadmit, weft_engine_enter and weft_engine_leave), the
 * dispatch of what it makes ready (dispatch.h: weft_opr_ready,
 * weft_opr_ready_list, weft_opr_task, weft_engine_between), a holder's end
 * (complete.h: weft_opr_finish_vars, weft_opr_retire,
 * weft_opr_count_finish), the engine's counts (inflight.h:
 * weft_engine_count_push, weft_engine_count_done; engine.h: the failure
 * counts, weft_engine_no_failed_var and weft_engine_record_failure; push.h:
 * weft_engine_inside_op), a var's failed state and its prefetch (var.h:
 * weft_var_failed, weft_var_prefetch) and arguments (arg.h).
 * tests/api/check_seam.py holds src/graph to this.
 */

/* ------------------------------------------------ an op block: what it is */
static inline weft_engine *weft_opr_engine(const weft_opr *op)
{
  return op->eng;
}
static inline void *weft_opr_arg(const weft_opr *op)
{
  return op->arg;
}
/* The arg of a block of the layer's: a held operator's for its next run (a
 * launch's own arguments), set while no run of it is under way. */
static inline void weft_opr_set_arg(weft_opr *op, void *arg)
{
  op->arg = arg;
}
static inline const char *weft_opr_name(const weft_opr *op)
{
  return op->name;
}
static inline weft_ctx weft_opr_ctx(const weft_opr *op)
{
  return op->ctx;
}
static inline weft_op_fn weft_opr_fn(const weft_opr *op)
{
  return op->fn;
}
static inline weft_prop weft_opr_prop(const weft_opr *op)
{
  return (weft_prop)op->prop;
}
static inline int weft_opr_kind(const weft_opr *op) /* WEFT_OPR_* (internal) */
{
  return op->internal;
}
static inline int weft_opr_nvars(const weft_opr *op)
{
  return op->nvars;
}
static inline weft_var_impl *const *weft_opr_vars(const weft_opr *op)
{
  return op->var;
}
/* The epoch it runs in, and the inflight slot it is counted in. */
static inline uint64_t weft_opr_epoch(const weft_opr *op)
{
  return op->epoch;
}
static inline int weft_opr_slot(const weft_opr *op)
{
  return op->slot;
}
static inline int weft_opr_status(const weft_opr *op)
{
  return op->status;
}
/* Finishes owed to a holder by a run of kept successors (complete.c). */
static inline uint32_t weft_opr_owed(const weft_opr *op)
{
  return op->owed;
}
/* Where its extension area is: WEFT_OPR_EXT_BYTES, pointer-aligned, this
 * far into the block. The area is the layer's own, and so is what it puts
 * there (a graph node's place in its graph). */
#define WEFT_OPR_EXT_OFFSET offsetof(weft_opr, ext)
/* The descriptor it was made from, reads and writes left out. */
static inline weft_op_desc weft_opr_desc(const weft_opr *op)
{
  weft_op_desc d = {0};
  d.fn = op->fn;
  d.async_fn = op->fn ? NULL : op->async_fn;
  d.arg = op->arg;
  d.ctx = op->ctx;
  d.prop = (weft_prop)op->prop;
  d.priority = d.prop == WEFT_PROP_PRIORITIZED ? op->priority : 0;
  d.flags = op->flags;
  d.name = op->name;
  return d;
}

/* Its life (WEFT_OPR_ST_*, opr.h): kept only where assertions are on. */
static inline void weft_opr_state_set(weft_opr *op, int st)
{
  WEFT_OPR_SET(op, st);
  (void)op;
  (void)st;
}
static inline void weft_opr_state_move(weft_opr *op, int from, int to)
{
  WEFT_OPR_MOVE(op, from, to);
  (void)op;
  (void)from;
  (void)to;
}

/* ------------------------------------------------ an op block: its making */
/* The size of a held operator's block that holds no requests (its holder's)
 * and none of the async, priority and device fields: its header (with the
 * extension area) and its queue line. */
#define WEFT_OPR_HELD_PLAIN_BYTES (3 * WEFT_CACHE_LINE)
/* ... and one that is never queued either (run in order by its layer). */
#define WEFT_OPR_HELD_UNQUEUED_BYTES (2 * WEFT_CACHE_LINE)
_Static_assert(offsetof(weft_opr, ext) + WEFT_OPR_EXT_BYTES <= WEFT_OPR_HELD_UNQUEUED_BYTES &&
                   offsetof(weft_opr, node) >= WEFT_OPR_HELD_UNQUEUED_BYTES &&
                   offsetof(weft_opr, task) + sizeof(weft_task) <= WEFT_OPR_HELD_PLAIN_BYTES &&
                   offsetof(weft_opr, req_inline) >= WEFT_OPR_HELD_PLAIN_BYTES &&
                   offsetof(weft_opr, async_fn) >= WEFT_OPR_HELD_PLAIN_BYTES,
               "a held block cut short keeps its header and extension area (and its queue line)");

/* A held operator (WEFT_OPR_HELD) of eng in a block of the layer's, zeroed,
 * of bytes (sizeof(weft_opr), or one of the sizes above): what d says
 * (fn or async_fn, arg, name, ctx, prop, flags, priority; its reads and
 * writes are not read) and its vars (var[nvars], the layer's, which its
 * holder's requests hold). Its wait counter is 0: the layer counts. */
static inline void weft_opr_init_held(weft_opr *op, size_t bytes, weft_engine *eng,
                                      const weft_op_desc *d, weft_var_impl **var, int nvars)
{
  op->eng = eng;
  op->fn = d->fn;
  op->arg = d->arg;
  op->name = d->name;
  op->ctx = d->ctx;
  op->prop = (uint8_t)d->prop;
  op->flags = d->flags;
  if (bytes > WEFT_OPR_HELD_PLAIN_BYTES) {
    op->async_fn = d->async_fn;
    op->priority = d->priority;
    atomic_init(&op->async_refs, 0);
    atomic_init(&op->async_done, 0);
    atomic_init(&op->ndevwaits, 0);
    atomic_init(&op->dev_refs, 0);
  }
  op->internal = WEFT_OPR_HELD;
  op->var = var;
  op->req = NULL;
  op->nvars = nvars;
  atomic_init(&op->wait, 0);
}

/* A holder (WEFT_OPR_HOLDER) of eng in a block of the layer's: its vars
 * var[nvars] (sorted, distinct: the normalised list) and their requests
 * req[nvars]; arg and name are the layer's. It runs nothing of its own
 * (prop ASYNC: where it becomes ready) and is never skipped. */
static inline void weft_opr_init_holder(weft_opr *op, weft_engine *eng, void *arg,
                                        const char *name, weft_var_impl **var,
                                        weft_var_req *req, int nvars)
{
  op->eng = eng;
  op->fn = NULL;
  op->arg = arg;
  op->name = name;
  op->ctx = (weft_ctx){WEFT_DEV_CPU, 0};
  op->prop = WEFT_PROP_ASYNC;
  op->flags = WEFT_OP_NOSKIP;
  op->internal = WEFT_OPR_HOLDER;
  op->tmpl = NULL;
  op->var = var;
  op->req = req;
  op->nvars = nvars;
}

/* A holder before each registration (weft_push_register) or resume. */
static inline void weft_opr_arm_holder(weft_opr *op)
{
  op->admitted = false;
  op->status = 0;
  WEFT_OPR_SET(op, WEFT_OPR_ST_PUSHED);
}

/* A holder that holds its vars already (kept from its last run) runs
 * again without a registration: ready in a fresh epoch, counted as pushed
 * (admitted: it holds a place under max_inflight). The caller then
 * dispatches it (weft_opr_ready). */
static inline void weft_opr_restart_holder(weft_engine *eng, weft_opr *op, uint64_t epoch,
                                           bool admitted)
{
  (void)eng;
  op->owed = 0;
  atomic_store_explicit(&op->wait, 0, memory_order_relaxed); /* nothing to wait for */
  op->epoch = epoch;
  op->slot = (uint8_t)(epoch & 1);
  op->admitted = admitted;
  WEFT_OPR_SET(op, WEFT_OPR_ST_READY);
}

/* ------------------------------------------------ a held operator's run */
/* Held op (done with its last launch, or never run) is ready in the run
 * of its holder's epoch. */
static inline void weft_opr_held_ready(weft_opr *op, uint64_t epoch)
{
  op->epoch = epoch;
  op->slot = (uint8_t)(epoch & 1);
  WEFT_ASSERT(op->st == WEFT_OPR_ST_FREE || op->st == WEFT_OPR_ST_DONE || !WEFT_ASSERTS_ON);
  WEFT_OPR_SET(op, WEFT_OPR_ST_READY);
}

/* Held op's run is over (it ran, or was skipped, or failed). */
static inline void weft_opr_held_done(weft_opr *op)
{
  WEFT_ASSERT(op->st == WEFT_OPR_ST_READY || op->st == WEFT_OPR_ST_RUNNING ||
              op->st == WEFT_OPR_ST_LAUNCHED || !WEFT_ASSERTS_ON);
  WEFT_OPR_SET(op, WEFT_OPR_ST_DONE);
}

/* Ready held op is appended to ready (a weft_fifo of ready operators). */
static inline void weft_opr_held_queue(weft_opr *op, weft_fifo *ready)
{
  weft_fifo_push(ready, &op->node);
}

/* Held op is ready (as weft_opr_held_ready) and appended to ready. */
static inline void weft_opr_held_append(weft_opr *op, uint64_t epoch, weft_fifo *ready)
{
  weft_opr_held_ready(op, epoch);
  weft_fifo_push(ready, &op->node);
}

/* Calls op's fn on this thread as the operator it runs (weft_tls_opr),
 * with rc's ctx its own; returns fn's status. */
static inline int weft_opr_call_fn(weft_opr *op, weft_run_ctx *rc)
{
  rc->ctx = op->ctx;
  weft_tls_opr = op;
  int status = op->fn(rc, op->arg);
  weft_tls_opr = NULL;
  return status;
}

/* The layer counts what each of its held operators waits for (its
 * predecessors in the layer's order) in a word of its own, which each
 * predecessor's finish takes one off: whether that was the last, which
 * releases the operator. */
static inline bool weft_held_count_down(_Atomic int32_t *p)
{
  /* acquire: a 1 is the count every other predecessor left with its
   * release decrement below: this one is the last, nobody else touches the
   * count this run, and the layer puts it back for the next one, so it
   * needs no locked decrement. */
  int was = atomic_load_explicit(p, memory_order_acquire);
  if (was != 1)
    /* acq_rel: as a grant (weft_grant_list): the last decrement releases
     * the operator and sees what every predecessor wrote. */
    was = atomic_fetch_sub_explicit(p, 1, memory_order_acq_rel);
  WEFT_ASSERT(was >= 1); /* a wait counter never goes below zero */
  return was == 1;
}

/* GPU operator s waits on the device for held GPU operator waited, which
 * launched: a devwait slot of s names it, with a reference on waited's
 * device state (weft_exec_op_devwaits_done drops it). The caller's
 * release of s (the acq_rel count that makes it ready, or the dispatch
 * that queues it) publishes the slot to whoever runs s. */
static inline void weft_opr_add_devwait(weft_opr *s, weft_opr *waited)
{
  /* relaxed: a slot index; published with s's release (above). */
  int slot = atomic_fetch_add_explicit(&s->ndevwaits, 1, memory_order_relaxed);
  WEFT_ASSERT(slot < WEFT_OPR_DEV_WAITS); /* a layer gives no more device edges */
  /* relaxed: waited's own reference (its launched work's) keeps its state
   * until this one is counted. */
  atomic_fetch_add_explicit(&waited->dev_refs, 1, memory_order_relaxed);
  s->devwait[slot] = waited;
}

/* A held GPU operator s released by held GPU operator waited at its launch:
 * s waits for it on the device (weft_opr_add_devwait), and s's count p
 * (weft_held_count_down; NULL: waited is its only predecessor) goes down.
 * The decrement's release (or s's dispatch) publishes the wait slot to
 * whoever runs s. When that was the last count, s is ready in waited's
 * epoch, appended to ready. */
static inline void weft_opr_release_on_device(weft_opr *s, weft_opr *waited,
                                              _Atomic int32_t *p, weft_fifo *ready)
{
  uint64_t epoch = waited->epoch;
  weft_opr_add_devwait(s, waited);
  if (p && !weft_held_count_down(p))
    return;
  weft_opr_held_append(s, epoch, ready);
}

/* A run's leader replayed its run as one (ext->run_launched), so its finish
 * is the run's: written by the launching device worker, read and cleared by
 * the finish (the executor's hand-off from launch to completion orders
 * them). */
static inline bool weft_opr_dev_run(const weft_opr *op)
{
  return op->dev_run;
}
static inline void weft_opr_set_dev_run(weft_opr *op, bool on)
{
  op->dev_run = on;
}

/* ------------------------------------------------ vars */
/* Whether v's slot still holds the var of handle (not deleted since). */
static inline bool weft_var_live(weft_var_impl *v, uintptr_t handle)
{
  return weft_slot_live(&v->slot, weft_handle_gen(handle));
}
/* Under v's lock (the engine holds it when it calls the layer's yield,
 * register_locked or appended): the holder request that keeps v past its holder's
 * finish, or NULL (var.h, keeper). */
static inline weft_var_req *weft_var_keeper(const weft_var_impl *v)
{
  return v->keeper;
}
static inline void weft_var_set_keeper(weft_var_impl *v, weft_var_req *r)
{
  v->keeper = r;
}
/* Under v's lock, in a yield (ext->yield), with nothing queued behind the
 * keeper: v's keeper lets go of it, and names it no more. */
void weft_var_keeper_yield(weft_var_impl *v);
/* Keeper request me lets go of v if v still names it (takes v's lock): what
 * that grants is appended to ready (fences respected). */
void weft_var_keeper_drop(weft_var_impl *v, weft_var_req *me, weft_fifo *ready);
/* A request on a var: the operator that made it, and its kind. */
static inline weft_opr *weft_var_req_opr(const weft_var_req *r)
{
  return (weft_opr *)r->op;
}
static inline bool weft_var_req_write(const weft_var_req *r)
{
  return r->write;
}
/* v's failed state becomes status (0: fine again), of an operator of
 * epoch, if that changes it: under v's lock, taken only then. */
static inline void weft_var_set_status(weft_engine *eng, weft_var_impl *v, int status,
                                       uint64_t epoch)
{
  if (status || weft_var_failed(v)) {
    weft_spin_lock(&v->q.lock);
    weft_var_set_failed(eng, v, status, epoch);
    weft_spin_unlock(&v->q.lock);
  }
}

/* ------------------------------------------------ the engine */
static inline weft_pool *weft_engine_pool(const weft_engine *eng)
{
  return eng->pool;
}
/* The naive engine (WEFT_ENGINE=naive): every push runs before it returns,
 * under the engine's naive lock. */
static inline bool weft_engine_naive(const weft_engine *eng)
{
  return eng->naive;
}
static inline void weft_engine_naive_lock(weft_engine *eng)
{
  pthread_mutex_lock(&eng->naive_lock);
}
static inline void weft_engine_naive_unlock(weft_engine *eng)
{
  pthread_mutex_unlock(&eng->naive_lock);
}
/* Whether pushes are capped (WEFT_MAX_INFLIGHT): a holder then takes a
 * place first (weft_push_admit). */
static inline bool weft_engine_capped(const weft_engine *eng)
{
  return eng->max_inflight > 0;
}
/* Whether eng was made with the layer's table ext (weft_engine_create_with
 * may make one without). */
static inline bool weft_engine_has_ext(const weft_engine *eng, const weft_opr_ext_ops *ext)
{
  return eng->ext == ext;
}
/* Whether eng belongs to the parent of this forked process. */
static inline bool weft_engine_fork_stale(const weft_engine *eng)
{
  return weft_fork_stale(eng->fork_gen);
}
/* Whether eng's destroy has begun and the caller is not one of its
 * operators (which the destroy drains): a new entry is refused. */
static inline bool weft_engine_closed_to(const weft_engine *eng)
{
  return weft_guard_closed(&eng->guard) && !weft_engine_inside_op(eng);
}

#endif /* WEFT_DEPS_EXT_H */
