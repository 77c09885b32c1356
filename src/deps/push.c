/* SPDX-License-Identifier: MIT */
/* Pushing operators (push.h), and the shutdown gate that every call from
 * outside the engine's work passes. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/fork.h"
#include "common/guard.h"
#include "common/sync.h"
#include "deps/arg.h"
#include "deps/dispatch.h"
#include "deps/done.h"
#include "deps/engine.h"
#include "deps/executor.h"
#include "deps/ext.h"
#include "deps/fence.h"
#include "deps/help.h"
#include "deps/inflight.h"
#include "deps/push.h"
#include "deps/var.h"
#include "pool/pool_ext.h"

/* Pushes on this thread (from inside operators, or from a thread outside
 * the pool), for pacing (help.c). */
static _Thread_local unsigned pace_count __attribute__((tls_model("initial-exec")));

/* This thread's pushes, numbered (var_queue.h, weft_var_req.seq). */
static _Thread_local uint32_t push_seq __attribute__((tls_model("initial-exec")));

/* Checks everything in desc but its vars. */
int weft_push_check_desc(const weft_engine *eng, const weft_op_desc *d)
{
  if (!d || (d->fn == NULL) == (d->async_fn == NULL))
    return WEFT_EINVAL;
  if ((d->num_reads && !d->reads) || (d->num_writes && !d->writes))
    return WEFT_EINVAL;
  if (d->num_reads > INT32_MAX / 2 || d->num_writes > INT32_MAX / 2)
    return WEFT_EINVAL;
  if (d->ctx.type != WEFT_DEV_CPU && d->ctx.type != WEFT_DEV_GPU)
    return WEFT_EINVAL;
  if ((int)d->prop < (int)WEFT_PROP_NORMAL || (int)d->prop > (int)WEFT_PROP_ASYNC)
    return WEFT_EINVAL;
  bool copy = d->prop == WEFT_PROP_COPY_TO_GPU || d->prop == WEFT_PROP_COPY_FROM_GPU;
  if (copy && d->ctx.type != WEFT_DEV_GPU)
    return WEFT_EINVAL; /* a copy names the GPU it copies to or from */
  if (d->ctx.type == WEFT_DEV_GPU && (d->ctx.id < 0 || d->ctx.id >= weft_gpu_count(eng)))
    return WEFT_ENODEV;
  if (d->ctx.type == WEFT_DEV_GPU && d->async_fn)
    return WEFT_EINVAL; /* a GPU operator completes with its stream's work */
  if ((d->flags & WEFT_OP_GPU_GRAPH) && (d->ctx.type != WEFT_DEV_GPU || d->prop != WEFT_PROP_NORMAL))
    return WEFT_EINVAL; /* only a kernel operator's work is recorded (weft.h) */
  return 0;
}

static int cmp_use(const void *a, const void *b)
{
  uint32_t x = (uint32_t)((const weft_var_use *)a)->handle;
  uint32_t y = (uint32_t)((const weft_var_use *)b)->handle;
  return x < y ? -1 : x > y;
}

/* Puts var use (h, v, write) into out[0..n), sorted by slot index, merging
 * a handle given twice; returns the new length, or WEFT_EINVAL for two
 * generations of one slot (one of them is dead). Each element is read back
 * field by field: a struct copy of one just stored (wide loads of narrow
 * stores) would stall on store forwarding, once per push. */
static int insert_use(weft_var_use *out, int n, uintptr_t h, weft_var_impl *v, bool write)
{
  int j = n;
  while (j > 0 && (uint32_t)out[j - 1].handle > (uint32_t)h)
    j--;
  if (j > 0 && (uint32_t)out[j - 1].handle == (uint32_t)h) {
    if (out[j - 1].handle != h)
      return WEFT_EINVAL; /* same slot, two generations: one is dead */
    out[j - 1].write |= write;
    return n;
  }
  for (int i = n; i > j; i--) {
    out[i].handle = out[i - 1].handle;
    out[i].var = out[i - 1].var;
    out[i].write = out[i - 1].write;
  }
  out[j].handle = h;
  out[j].var = v;
  out[j].write = write;
  return n + 1;
}

int weft_push_normalize(weft_engine *eng, const weft_op_desc *d, weft_var_use *out)
{
  size_t total = d->num_writes + d->num_reads;
  if (total <= 16) { /* the common case: a handful of vars, sorted as they come */
    int n = 0;
    for (size_t i = 0; i < total; i++) {
      bool write = i < d->num_writes;
      weft_var *var = write ? d->writes[i] : d->reads[i - d->num_writes];
      weft_var_impl *v = weft_var_lookup(eng, var);
      if (!v)
        return WEFT_EINVAL;
      n = insert_use(out, n, (uintptr_t)var, v, write);
      if (n < 0)
        return n;
    }
    return n;
  }
  int n = 0;
  for (size_t i = 0; i < d->num_writes; i++)
    out[n++] = (weft_var_use){(uintptr_t)d->writes[i], NULL, true};
  for (size_t i = 0; i < d->num_reads; i++)
    out[n++] = (weft_var_use){(uintptr_t)d->reads[i], NULL, false};
  for (int i = 0; i < n; i++)
    if (!(out[i].var = weft_var_lookup(eng, (weft_var *)out[i].handle)))
      return WEFT_EINVAL;
  qsort(out, (size_t)n, sizeof *out, cmp_use);
  int m = 0;
  for (int i = 0; i < n; i++) {
    if (m > 0 && out[m - 1].handle == out[i].handle) {
      out[m - 1].write |= out[i].write;
      continue;
    }
    if (m > 0 && (uint32_t)out[m - 1].handle == (uint32_t)out[i].handle)
      return WEFT_EINVAL; /* same slot, two generations: one is dead */
    out[m++] = out[i];
  }
  return m;
}

static void unlock_vars(weft_opr *op, int n)
{
  while (n-- > 0)
    weft_spin_unlock(&op->var[n]->q.lock);
}

static inline __attribute__((always_inline)) int
push_register(weft_engine *eng, weft_opr *op, const weft_var_use *uses, int n, bool admitted,
              int internal);

/* weft_push_opr, inlined into weft_push_uses (a user's push: two call
 * frames less, 21 instructions a push from outside in callgrind) and
 * called by the other pushes. */
/* A one-shot push's own argument (weft_push_arg): its bytes, copied into
 * the block, or the box that holds them (box non-NULL). */
typedef struct arg_in {
  const void *data;
  size_t size;
  weft_arg_drop_fn drop;
  weft_arg_box *box;
} arg_in;

static inline __attribute__((always_inline)) int
push_opr(weft_engine *eng, const weft_op_desc *d, const weft_var_use *uses, int n, int internal,
         weft_op_tmpl *tmpl, bool admitted, const arg_in *ain)
{
  /* Each var's queue line was most likely last written by the core that
   * completed its previous operator: start moving it here (for writing)
   * now, so that its lock below does not wait for it on top of the stores
   * that fill the block. */
  for (int k = 0; k < n && k < WEFT_REGISTER_HOLD_VARS; k++)
    __builtin_prefetch(&uses[k].var->q, 1, 3);
  weft_opr *op = weft_opr_alloc(eng, n);
  if (!op)
    return WEFT_ENOMEM;
  op->eng = eng;
  op->fn = d->fn;
  if (!d->fn) /* the block's later lines: only for the operators that use them */
    op->async_fn = d->async_fn;
  if (!ain) {
    op->arg = d->arg;
    op->argmode = WEFT_OPR_ARG_PTR;
  } else if (ain->box) {
    op->arg = weft_arg_box_arg(ain->box);
    op->argmode = WEFT_OPR_ARG_BOX;
  } else {
    if (ain->size) /* data may be NULL for size 0 */
      memcpy(op->argbytes, ain->data, ain->size);
    op->arg = ain->size ? op->argbytes : NULL;
    op->arg_drop = ain->drop;
    /* Without a drop the bytes need nothing at the free: the common free
     * (no slow path, about 70 instructions an operator less). */
    op->argmode = ain->drop ? WEFT_OPR_ARG_BYTES : WEFT_OPR_ARG_PTR;
  }
  op->ctx = d->ctx;
  op->prop = d->prop;
  if (d->prop == WEFT_PROP_PRIORITIZED)
    op->priority = d->priority;
  op->flags = d->flags;
  op->name = d->name;
  op->internal = internal;
  op->tmpl = tmpl;
  op->admitted = false; /* set once registered: a failed push gives its place back itself */
  op->status = 0;
  WEFT_OPR_SET(op, WEFT_OPR_ST_PUSHED);
  if (op->ctx.type == WEFT_DEV_GPU) { /* the device fields (the block's last lines) */
    atomic_init(&op->ndevwaits, 0);
    atomic_init(&op->dev_refs, 0);
    op->exec_state = NULL;
  }
  for (int k = 0; k < n; k++)
    op->var[k] = uses[k].var; /* still live: checked below, under its lock */
  int rc = push_register(eng, op, uses, n, admitted, internal);
  if (rc) {
    int slot = op->slot;
    op->argmode = WEFT_OPR_ARG_PTR; /* the caller's still: no drop on an error */
    weft_opr_free(eng, op);
    weft_engine_count_done(eng, slot);
  }
  return rc;
}

int weft_push_opr(weft_engine *eng, const weft_op_desc *d, const weft_var_use *uses, int n,
                  int internal, weft_op_tmpl *tmpl, bool admitted)
{
  return push_opr(eng, d, uses, n, internal, tmpl, admitted, NULL);
}

int weft_push_register(weft_engine *eng, weft_opr *op, const weft_var_use *uses, int n,
                       bool admitted)
{
  return push_register(eng, op, uses, n, admitted, op->internal);
}

/* Under v's lock, before r is appended to v, which a holder's request
 * other than r keeps (var.h): the holder's layer lets go of v, or is told
 * to at its end (ext.h). */
static inline void keeper_yield(weft_var_impl *v, weft_var_req *r)
{
  const weft_opr *holder = v->keeper->op;
  holder->eng->ext->yield(v, r);
}

/* Under v's lock (op's request r on it filled in): appends r; returns
 * whether it is granted at once. */
static inline __attribute__((always_inline)) bool append_req(weft_var_impl *v, weft_var_req *r)
{
  if (!weft_varq_append(&v->q, r))
    return false;
  if (v->fences) /* a host-side wait for a device fence adds one */
    weft_fence_check(v, r);
  return true;
}

/* The end of a registration: op's requests are all on its vars (granted
 * of them at once), whose locks it still holds unless stream: settles its
 * counter, unlocks, and dispatches it if it is ready. */
static inline __attribute__((always_inline)) int register_end(weft_opr *op, int n, bool stream,
                                                             int granted)
{
  int left;
  if (stream) {
    /* acq_rel: as a grant (weft_grant_list): the last decrement makes op
     * ready, and sees the registration and every grant. */
    left = atomic_fetch_sub_explicit(&op->wait, granted + 1, memory_order_acq_rel) - (granted + 1);
  } else {
    /* While op holds every lock of its vars, nothing else changes its
     * counter (a grant and a fence's release each hold a var's lock):
     * settle it with a plain store instead of a locked decrement after the
     * unlocks (which would wait for every store to the block's lines).
     * relaxed: the unlocks publish it (release), to the completions that
     * lock a var to grant op. */
    left = atomic_load_explicit(&op->wait, memory_order_relaxed) - (granted + 1);
    atomic_store_explicit(&op->wait, left, memory_order_relaxed);
    unlock_vars(op, n);
  }
  WEFT_ASSERT(left >= 0); /* a wait counter never goes below zero */
  if (left == 0) { /* every request granted, no fence to wait for: op is ours */
    WEFT_OPR_MOVE(op, WEFT_OPR_ST_PUSHED, WEFT_OPR_ST_READY);
    weft_opr_ready(op);
  }
  return 0;
}

/* Fills op's request on its var k (prefetching the vars ahead when the
 * registration streams); returns it. */
static inline __attribute__((always_inline)) weft_var_req *
fill_req(weft_opr *op, const weft_var_use *uses, int n, int k, bool stream, bool simple,
         uint32_t seq)
{
  if (stream)
    weft_var_prefetch(op->var, k, n);
  weft_var_req *r = &op->req[k];
  r->op = op;
  r->write = uses[k].write;
  r->simple = simple;
  r->seq = seq;
  return r;
}

/* push_register from the append of op's request on var k on, for an
 * operator that is no holder, var k being kept by a holder (var.h): each
 * keeper lets go of its var, or is told to at its end (ext.h), before the
 * request is appended there. Out of line, and to the registration's end:
 * an indirect call in the common loop, or one that the loop's values
 * outlive, would cost every push the registers it clobbers. */
static __attribute__((noinline, cold)) int register_kept(weft_opr *op, const weft_var_use *uses,
                                                         int n, int k, int granted)
{
  /* What the caller filled in k's request with (recomputed here: fewer
   * values for the common loop to keep for this call). */
  bool stream = n > WEFT_REGISTER_HOLD_VARS, simple = op->req[k].simple;
  uint32_t seq = op->req[k].seq;
  for (; k < n; k++) {
    weft_var_impl *v = op->var[k];
    weft_var_req *r = fill_req(op, uses, n, k, stream, simple, seq);
    if (v->keeper)
      keeper_yield(v, r);
    granted += append_req(v, r);
    if (stream)
      weft_spin_unlock(&v->q.lock);
  }
  return register_end(op, n, stream, granted);
}

/* weft_push_register's body (inlined into push_opr). internal: op's kind
 * (op->internal), a constant where the caller's is: a user's push then
 * holds none of a holder's steps. */
static inline __attribute__((always_inline)) int
push_register(weft_engine *eng, weft_opr *op, const weft_var_use *uses, int n, bool admitted,
              int internal)
{
  WEFT_ASSERT(internal == op->internal);
  op->owed = 0;
  atomic_init(&op->wait, n + 1);
  op->epoch = weft_engine_count_push(eng); /* before it can complete */
  op->slot = (int)(op->epoch & 1);

  /* Each var is locked, in index order, and checked under its lock: still
   * live (a deletion kills the handle under the var's lock), and a
   * deletion kills it now. */
  bool stream = n > WEFT_REGISTER_HOLD_VARS;
  for (int k = 0; k < n; k++) {
    if (stream)
      weft_var_prefetch(op->var, k, n);
    weft_spin_lock(&op->var[k]->q.lock);
    uint32_t gen = weft_handle_gen(uses[k].handle);
    bool ok = weft_slot_live(&op->var[k]->slot, gen);
    if (ok && internal == WEFT_OPR_DELETE)
      ok = weft_slot_kill(&op->var[k]->slot, gen);
    if (!ok) {
      unlock_vars(op, k + 1);
      return WEFT_EINVAL;
    }
  }
  bool holder = internal == WEFT_OPR_HOLDER;
  if (holder) /* every lock of its vars held (ext.h) */
    eng->ext->register_locked(op);
  op->admitted = admitted;
  int granted = 0;
  bool simple = internal == WEFT_OPR_USER && op->ctx.type == WEFT_DEV_CPU;
  uint32_t seq = push_seq++;
  /* Past WEFT_REGISTER_HOLD_VARS vars (a holder such as a graph launch's
   * gate, an operator with many vars), each var is unlocked as soon as
   * op's request is on it: one pass over the vars' lines instead of two.
   * That keeps the order every operator needs: nothing can queue ahead of
   * op on a var it has not yet appended to (it still holds that lock), so
   * two operators sharing vars queue in the same order on all of them. A
   * var's completion may then grant op meanwhile: op's own +1 keeps its
   * counter above zero until the locked decrement below. */
  for (int k = 0; k < n; k++) {
    weft_var_impl *v = op->var[k];
    weft_var_req *r = fill_req(op, uses, n, k, stream, simple, seq);
    if (__builtin_expect(v->keeper != NULL, 0)) { /* a holder keeps v (var.h, ext.h) */
      if (!holder) /* it lets go of v, or is told to at its end */
        return register_kept(op, uses, n, k, granted);
      if (v->keeper == r) { /* ours, still held since our last finish */
        granted++;
        if (stream)
          weft_spin_unlock(&v->q.lock);
        continue;
      }
      keeper_yield(v, r);
    }
    if (append_req(v, r))
      granted++;
    if (holder)
      eng->ext->appended(v, r);
    if (stream)
      weft_spin_unlock(&v->q.lock);
  }
  return register_end(op, n, stream, granted);
}

/* ------------------------------------------------------------- naive */

/* Runs one push synchronously: the reference engine. skip: a status to
 * skip it with, as a failed var's (unless WEFT_OP_NOSKIP; 0: none);
 * *ended (if not NULL): the status it ended with, its own or the one it
 * was skipped with (0 when the push itself failed). */
static int naive_push(weft_engine *eng, const weft_op_desc *d, const weft_var_use *uses, int n,
                      weft_op_tmpl *tmpl, int skip, int *ended)
{
  if (ended)
    *ended = 0;
  weft_var_impl *vars[64], **var = n <= 64 ? vars : weft_malloc(sizeof *var * (size_t)n);
  if (!var)
    return WEFT_ENOMEM;
  pthread_mutex_lock(&eng->naive_lock);
  int rc = 0;
  for (int k = 0; k < n && !rc; k++) {
    var[k] = uses[k].var;
    if (!weft_slot_live(&var[k]->slot, weft_handle_gen(uses[k].handle)))
      rc = WEFT_EINVAL;
  }
  if (!rc) {
    int status = 0;
    if (!(d->flags & WEFT_OP_NOSKIP)) {
      status = skip;
      for (int k = 0; k < n && !status; k++)
        status = weft_var_failed(var[k]);
    }
    if (!status) {
      weft_opr op = {0};
      op.eng = eng;
      op.fn = d->fn;
      op.async_fn = d->async_fn;
      op.arg = d->arg;
      op.ctx = d->ctx;
      op.prop = d->prop;
      op.flags = d->flags;
      op.name = d->name;
      op.nvars = n;
      op.var = var;
      weft_run_ctx rctx = {d->ctx, NULL, weft_current_worker()};
      weft_opr *prev = weft_tls_opr;
      weft_tls_opr = &op;
      if (d->ctx.type == WEFT_DEV_GPU) {
        status = eng->exec->run_sync(eng->exec_self, &op); /* fn on a stream, then a sync */
      } else if (d->fn) {
        status = d->fn(&rctx, d->arg);
      } else {
        atomic_init(&op.async_done, 0);
        weft_done *done = NULL;
        status = weft_done_token(&op, &done);
        if (!status) {
          d->async_fn(&rctx, d->arg, done);
          /* acquire: pairs with the release store in weft_done_signal. */
          while (!atomic_load_explicit(&op.async_done, memory_order_acquire))
            weft_futex_wait(&op.async_done, 0, -1);
          status = op.status;
        }
      }
      weft_tls_opr = prev;
    }
    for (int k = 0; k < n; k++) /* not a var the op deleted (its slot may be reused) */
      if (uses[k].write && weft_slot_live(&var[k]->slot, weft_handle_gen(uses[k].handle))) {
        weft_spin_lock(&var[k]->q.lock);
        weft_var_set_failed(eng, var[k], status, 0);
        weft_spin_unlock(&var[k]->q.lock);
      }
    if (status)
      weft_engine_record_failure(eng, status, d->name);
    if (ended)
      *ended = status;
  }
  pthread_mutex_unlock(&eng->naive_lock);
  if (var != vars)
    weft_free(var);
  (void)tmpl;
  return rc;
}

/* ------------------------------------------------------------- pushes */

bool weft_engine_inside_op(const weft_engine *eng)
{
  return weft_tls_opr && weft_tls_opr->eng == eng;
}

/* Calls from outside the engine's own operators register with destroy, are
 * refused once destroy began, and wait at max_inflight. Plain pool tasks
 * count as outside: destroy waits for operators, not for them. */
int weft_engine_enter(weft_engine *eng, int *guest)
{
  *guest = 0;
  if (weft_fork_stale(eng->fork_gen)) /* inherited through fork: no workers */
    return WEFT_ESHUTDOWN;
  if (weft_engine_inside_op(eng))
    return 0; /* the engine's own work: part of any drain */
  /* Either destroy's close refuses us, or its wait sees us inside
   * (common/guard.h: no locked instruction on this side). */
  *guest = weft_guard_enter(&eng->guard, true);
  return *guest ? 0 : WEFT_ESHUTDOWN;
}

void weft_engine_leave(weft_engine *eng, int guest)
{
  if (guest) /* the call is done with the engine before destroy frees it */
    weft_guard_leave(&eng->guard, guest);
}

/* An outside pusher's wait for a place under max_inflight (its own stack).
 * Progress is a place freed: admitted at a new low. */
typedef struct cap_wait {
  int64_t low;        /* the fewest admitted seen while waiting */
  int64_t stalled_at; /* since when no progress while an async op waits; 0: not stalled */
  bool over;          /* stalled WEFT_CAP_STALL_NS: take a place over the cap */
} cap_wait;

static bool room_or_stall(weft_engine *eng, void *arg)
{
  cap_wait *w = arg;
  /* seq_cst: pairs with the decrement in weft_opr_complete. */
  int64_t n = atomic_load_explicit(&eng->admitted, memory_order_seq_cst);
  if (n < eng->max_inflight)
    return true;
  /* relaxed: a hint (engine.h); one read late starts or ends a stall one
   * look late. No async operator waiting: what holds the places finishes
   * by itself, so the pusher waits as long as it takes. */
  if (n < w->low || atomic_load_explicit(&eng->async_waits, memory_order_relaxed) <= 0) {
    if (n < w->low)
      w->low = n;
    w->stalled_at = 0;
    return false;
  }
  int64_t now = weft_now_ns();
  if (!w->stalled_at)
    w->stalled_at = now;
  else if (now - w->stalled_at >= WEFT_CAP_STALL_NS)
    w->over = true; /* that operator may wait for this very push */
  return w->over;
}

/* Takes a place under max_inflight: an outside pusher waits for one (and
 * takes one over the cap after a stall, tunables.h: WEFT_CAP_STALL_NS);
 * from inside the engine's work it helps run operators while over the cap,
 * and then goes over it rather than block. */
void weft_push_admit(weft_engine *eng, bool out)
{
  cap_wait w = {INT64_MAX, 0, false};
  for (;;) {
    /* seq_cst: pairs with room_or_stall's load and the completion's decrement. */
    if (atomic_fetch_add_explicit(&eng->admitted, 1, memory_order_seq_cst) < eng->max_inflight)
      return;
    if (!out) {
      weft_engine_help_over_cap(eng); /* bounded depth: help.h */
      return; /* keep the place: never block inside the engine's work */
    }
    if (w.over)
      return; /* stalled: keep the place, over the cap */
    atomic_fetch_sub_explicit(&eng->admitted, 1, memory_order_seq_cst);
    /* seq_cst: announce, then (in the wait) re-check the cap; pairs with the
     * finish's decrement of admitted and its read of cap_waiters. */
    atomic_fetch_add_explicit(&eng->cap_waiters, 1, memory_order_seq_cst);
    weft_engine_wait_sliced(eng, room_or_stall, &w, WEFT_CAP_STALL_NS / WEFT_CAP_STALL_LOOKS);
    atomic_fetch_sub_explicit(&eng->cap_waiters, 1, memory_order_relaxed);
  }
}

/* weft_push_uses and weft_push_uses_arg (ain: the latter's argument). */
static inline __attribute__((always_inline)) int
push_uses(weft_engine *eng, const weft_op_desc *d, const weft_var_use *uses, int n,
          weft_op_tmpl *tmpl, bool out, const arg_in *ain)
{
  bool capped = eng->max_inflight > 0;
  if (capped)
    weft_push_admit(eng, out);
  else if (++pace_count % WEFT_PACE_EVERY == 0) {
    bool worker = weft_pool_worker_index(eng->pool) >= 0;
    if (!out && worker)
      weft_engine_pace(eng); /* an operator pushing: helps meanwhile */
    else if (out && !worker && !weft_pool_in_task(eng->pool))
      weft_engine_pace_outside(eng); /* a user's own thread: sleeps meanwhile */
  }
  int rc = push_opr(eng, d, uses, n, WEFT_OPR_USER, tmpl, capped, ain);
  if (rc && capped)
    weft_push_unadmit(eng);
  return rc;
}

int weft_push_uses(weft_engine *eng, const weft_op_desc *d, const weft_var_use *uses, int n,
                   weft_op_tmpl *tmpl, bool out)
{
  if (eng->naive)
    return naive_push(eng, d, uses, n, tmpl, 0, NULL);
  return push_uses(eng, d, uses, n, tmpl, out, NULL);
}

int weft_push_uses_arg(weft_engine *eng, const weft_op_desc *d, const weft_var_use *uses, int n,
                       bool out, const void *data, size_t size, weft_arg_drop_fn drop_fn)
{
  arg_in ain = {data, size, drop_fn, NULL};
  if (size > WEFT_OP_ARG_INLINE && !(ain.box = weft_arg_box_new(data, size, drop_fn)))
    return WEFT_ENOMEM;
  int rc;
  if (eng->naive) { /* run at once: the copy lives in this frame (or the box) */
    union {
      max_align_t align;
      unsigned char bytes[WEFT_OP_ARG_INLINE];
    } copy;
    weft_op_desc dc = *d;
    if (ain.box) {
      dc.arg = weft_arg_box_arg(ain.box);
    } else {
      if (size)
        memcpy(copy.bytes, data, size);
      dc.arg = size ? copy.bytes : NULL;
    }
    rc = naive_push(eng, &dc, uses, n, NULL, 0, NULL);
    if (!rc) { /* it ran, or was skipped: done with its argument */
      if (ain.box)
        weft_arg_box_unref(ain.box);
      else if (drop_fn)
        drop_fn(dc.arg);
      return 0;
    }
  } else {
    rc = push_uses(eng, d, uses, n, NULL, out, &ain);
  }
  if (rc && ain.box)
    weft_arg_box_discard(ain.box);
  return rc;
}

int weft_push_naive(weft_engine *eng, const weft_op_desc *d, const weft_var_use *uses, int n,
                    int skip, int *ended)
{
  WEFT_ASSERT(eng->naive);
  return naive_push(eng, d, uses, n, NULL, skip, ended);
}

void weft_push_unadmit(weft_engine *eng)
{
  /* seq_cst (both): as in weft_push_admit. */
  atomic_fetch_sub_explicit(&eng->admitted, 1, memory_order_seq_cst);
  if (atomic_load_explicit(&eng->cap_waiters, memory_order_seq_cst) > 0)
    weft_engine_notify(eng);
}
