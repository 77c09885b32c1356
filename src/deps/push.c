/*
 * Pushing operators: checking and normalising a descriptor, registering the
 * operator on its vars (all their locks, in index order, so its requests
 * take the same place on every queue relative to any other operator's),
 * reusable operators, and the naive engine's synchronous path.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/fork.h"
#include "common/sync.h"
#include "deps/engine.h"
#include "deps/executor.h"
#include "pool/pool_ext.h"

_Thread_local weft_opr *weft_tls_opr __attribute__((tls_model("initial-exec")));
/* Pushes from inside operators on this thread, for pacing (engine.c). */
static _Thread_local unsigned pace_count __attribute__((tls_model("initial-exec")));

weft_var_impl *weft_var_lookup(weft_engine *eng, weft_var *var)
{
  return (weft_var_impl *)weft_handles_get(&eng->vars, (uintptr_t)var);
}

/* Checks everything in desc but its vars. */
static int check_desc(const weft_engine *eng, const weft_op_desc *d)
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
  return 0;
}

static int cmp_use(const void *a, const void *b)
{
  uint32_t x = (uint32_t)((const weft_var_use *)a)->handle;
  uint32_t y = (uint32_t)((const weft_var_use *)b)->handle;
  return x < y ? -1 : x > y;
}

/* Normalises desc's vars into out[] (room for num_reads + num_writes):
 * every handle live, sorted by slot index, one entry per var, read+write
 * counted as write. Returns the count, or WEFT_EINVAL for a dead handle. */
static int normalize(weft_engine *eng, const weft_op_desc *d, weft_var_use *out)
{
  int n = 0;
  for (size_t i = 0; i < d->num_writes; i++)
    out[n++] = (weft_var_use){(uintptr_t)d->writes[i], NULL, true};
  for (size_t i = 0; i < d->num_reads; i++)
    out[n++] = (weft_var_use){(uintptr_t)d->reads[i], NULL, false};
  for (int i = 0; i < n; i++)
    if (!(out[i].var = weft_var_lookup(eng, (weft_var *)out[i].handle)))
      return WEFT_EINVAL;
  if (n > 16) {
    qsort(out, (size_t)n, sizeof *out, cmp_use);
  } else { /* the common case: a handful of vars */
    for (int i = 1; i < n; i++) {
      weft_var_use x = out[i];
      int j = i - 1;
      while (j >= 0 && cmp_use(&out[j], &x) > 0) {
        out[j + 1] = out[j];
        j--;
      }
      out[j + 1] = x;
    }
  }
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

static weft_opr *opr_alloc(weft_engine *eng, int nvars)
{
  int w = weft_pool_worker_index(eng->pool);
  weft_opr *op = weft_obj_alloc(&eng->oprs, w >= 0 ? &eng->caches[w].oprs : NULL);
  if (!op)
    return NULL;
  if (nvars <= WEFT_OPR_INLINE_VARS) {
    op->var = op->var_inline;
    op->req = op->req_inline;
  } else if (nvars <= WEFT_OPR_BIG_VARS) {
    weft_opr_big *b = weft_obj_alloc(&eng->bigs, w >= 0 ? &eng->caches[w].bigs : NULL);
    if (!b) {
      weft_obj_free(&eng->oprs, w >= 0 ? &eng->caches[w].oprs : NULL, op);
      return NULL;
    }
    op->var = b->var;
    op->req = b->req;
  } else {
    op->var = weft_malloc(sizeof *op->var * (size_t)nvars);
    op->req = weft_malloc(sizeof *op->req * (size_t)nvars);
    if (!op->var || !op->req) {
      weft_free(op->var);
      weft_free(op->req);
      weft_obj_free(&eng->oprs, w >= 0 ? &eng->caches[w].oprs : NULL, op);
      return NULL;
    }
  }
  op->nvars = nvars;
  return op;
}

void weft_opr_free(weft_engine *eng, weft_opr *op)
{
  if (op->ctx.type == WEFT_DEV_GPU && op->exec_state) /* its event goes back to the pool */
    eng->exec->release(eng->exec_self, op);
  int w = weft_pool_worker_index(eng->pool);
  if (op->nvars > WEFT_OPR_BIG_VARS) {
    weft_free(op->var);
    weft_free(op->req);
  } else if (op->nvars > WEFT_OPR_INLINE_VARS) {
    weft_obj_free(&eng->bigs, w >= 0 ? &eng->caches[w].bigs : NULL,
                  (char *)op->var - offsetof(weft_opr_big, var));
  }
  weft_obj_free(&eng->oprs, w >= 0 ? &eng->caches[w].oprs : NULL, op);
}

static void unlock_vars(weft_opr *op, int n)
{
  while (n-- > 0)
    weft_spin_unlock(&op->var[n]->q.lock);
}

int weft_push_opr(weft_engine *eng, const weft_op_desc *d, const weft_var_use *uses, int n,
                  int internal, weft_op_impl *tmpl, bool admitted)
{
  weft_opr *op = opr_alloc(eng, n);
  if (!op)
    return WEFT_ENOMEM;
  op->eng = eng;
  op->fn = d->fn;
  if (!d->fn) /* the block's later lines: only for the operators that use them */
    op->async_fn = d->async_fn;
  op->arg = d->arg;
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
  if (op->ctx.type == WEFT_DEV_GPU) { /* the device fields (the block's last lines) */
    atomic_init(&op->ndevwaits, 0);
    atomic_init(&op->dev_refs, 0);
    op->exec_state = NULL;
  }
  for (int k = 0; k < n; k++)
    op->var[k] = uses[k].var; /* still live: checked below, under its lock */
  atomic_init(&op->wait, n + 1);
  op->epoch = weft_engine_count_push(eng); /* before it can complete */
  op->slot = (int)(op->epoch & 1);

  for (int k = 0; k < n; k++)
    weft_spin_lock(&op->var[k]->q.lock);
  /* Under every lock: each var still live (a deletion kills the handle
   * under the var's lock), and a deletion kills it now. */
  for (int k = 0; k < n; k++) {
    uint32_t gen = weft_handle_gen(uses[k].handle);
    bool ok = weft_slot_live(&op->var[k]->slot, gen);
    if (ok && internal == WEFT_OPR_DELETE)
      ok = weft_slot_kill(&op->var[k]->slot, gen);
    if (!ok) {
      unlock_vars(op, n);
      int slot = op->slot;
      weft_opr_free(eng, op);
      weft_engine_count_done(eng, slot);
      return WEFT_EINVAL;
    }
  }
  op->admitted = admitted;
  int granted = 0;
  bool simple = internal == WEFT_OPR_USER && op->ctx.type == WEFT_DEV_CPU;
  for (int k = 0; k < n; k++) {
    op->req[k].op = op;
    op->req[k].write = uses[k].write;
    op->req[k].simple = simple;
    if (weft_varq_append(&op->var[k]->q, &op->req[k])) {
      granted++;
      if (op->var[k]->fences) /* a host-side wait for a device fence adds one */
        weft_fence_check(op->var[k], &op->req[k]);
    }
  }
  /* While op holds every lock of its vars, nothing else changes its counter
   * (a grant and a fence's release each hold a var's lock): settle it with a
   * plain store instead of a locked decrement after the unlocks (which would
   * wait for every store to the block's lines). relaxed: the unlocks publish
   * it (release), to the completions that lock a var to grant op. */
  int left = atomic_load_explicit(&op->wait, memory_order_relaxed) - (granted + 1);
  atomic_store_explicit(&op->wait, left, memory_order_relaxed);
  unlock_vars(op, n);
  if (left == 0) /* every request granted, no fence to wait for: op is ours */
    weft_opr_ready(op);
  return 0;
}

/* ------------------------------------------------------------- naive */

/* Runs one push synchronously: the reference engine. */
static int naive_push(weft_engine *eng, const weft_op_desc *d, const weft_var_use *uses, int n,
                      weft_op_impl *tmpl)
{
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
    if (!(d->flags & WEFT_OP_NOSKIP))
      for (int k = 0; k < n && !status; k++)
        status = weft_var_failed(var[k]);
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
        weft_done *done = weft_done_token(&op);
        if (!done) {
          status = WEFT_ENOMEM;
        } else {
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
  }
  pthread_mutex_unlock(&eng->naive_lock);
  if (var != vars)
    weft_free(var);
  (void)tmpl;
  return rc;
}

/* ------------------------------------------------------------- pushes */

/* Whether the calling thread is outside the engine's own operators (then
 * it registers with destroy, is refused once destroy began, and waits at
 * max_inflight). Plain pool tasks count as outside: destroy waits for
 * operators, not for them. */
static bool outside(weft_engine *eng)
{
  return !(weft_tls_opr && weft_tls_opr->eng == eng);
}

int weft_engine_enter(weft_engine *eng, bool *guest)
{
  if (weft_fork_stale(eng->fork_gen)) { /* inherited through fork: no workers */
    *guest = false;
    return WEFT_ESHUTDOWN;
  }
  *guest = outside(eng);
  if (!*guest)
    return 0; /* the engine's own work: part of any drain */
  /* seq_cst (both): pairs with destroy's store of state and its read of
   * nsubmitting: either we see the shutdown or destroy waits for us. */
  atomic_fetch_add_explicit(&eng->nsubmitting, 1, memory_order_seq_cst);
  if (atomic_load_explicit(&eng->state, memory_order_seq_cst) != WEFT_ENGINE_RUNNING) {
    atomic_fetch_sub_explicit(&eng->nsubmitting, 1, memory_order_seq_cst);
    *guest = false;
    return WEFT_ESHUTDOWN;
  }
  return 0;
}

void weft_engine_leave(weft_engine *eng, bool guest)
{
  if (guest) /* release: the call is done with the engine before destroy frees it */
    atomic_fetch_sub_explicit(&eng->nsubmitting, 1, memory_order_release);
}

static bool below_cap(weft_engine *eng, void *arg)
{
  (void)arg;
  /* seq_cst: pairs with the decrement in weft_opr_complete. */
  return atomic_load_explicit(&eng->admitted, memory_order_seq_cst) < eng->max_inflight;
}

/* Takes a place under max_inflight: an outside pusher waits for one; from
 * inside the engine's work it helps run operators while over the cap, and
 * then goes over it rather than block. */
static void admit(weft_engine *eng, bool out)
{
  for (;;) {
    /* seq_cst: pairs with below_cap's load and the completion's decrement. */
    if (atomic_fetch_add_explicit(&eng->admitted, 1, memory_order_seq_cst) < eng->max_inflight)
      return;
    if (!out) { /* an executor's thread (a GPU op's fn) never helps: it runs device work */
      while (!weft_tls_executor &&
             atomic_load_explicit(&eng->admitted, memory_order_seq_cst) > eng->max_inflight &&
             (weft_opr_run_inline_one() || weft_pool_help_one(eng->pool))) {
      }
      return; /* keep the place: never block inside the engine's work */
    }
    atomic_fetch_sub_explicit(&eng->admitted, 1, memory_order_seq_cst);
    /* seq_cst: announce, then (in the wait) re-check the cap; pairs with the
     * finish's decrement of admitted and its read of cap_waiters. */
    atomic_fetch_add_explicit(&eng->cap_waiters, 1, memory_order_seq_cst);
    weft_engine_wait(eng, below_cap, NULL);
    atomic_fetch_sub_explicit(&eng->cap_waiters, 1, memory_order_relaxed);
  }
}

/* Pushes normalised uses, with the shutdown gate and back pressure. */
/* Pushes normalised uses with back pressure; the caller has entered the
 * engine (out: from outside its work). */
static int push_uses(weft_engine *eng, const weft_op_desc *d, const weft_var_use *uses, int n,
                     weft_op_impl *tmpl, bool out)
{
  if (eng->naive)
    return naive_push(eng, d, uses, n, tmpl);
  bool capped = eng->max_inflight > 0;
  if (capped)
    admit(eng, out);
  else if (!out && ++pace_count % WEFT_PACE_EVERY == 0 && weft_pool_worker_index(eng->pool) >= 0)
    weft_engine_pace(eng);
  int rc = weft_push_opr(eng, d, uses, n, WEFT_OPR_USER, tmpl, capped);
  if (rc && capped) { /* seq_cst: as in admit */
    atomic_fetch_sub_explicit(&eng->admitted, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&eng->cap_waiters, memory_order_seq_cst) > 0)
      weft_engine_notify(eng);
  }
  return rc;
}

int weft_push(weft_engine *eng, const weft_op_desc *desc)
{
  if (!eng)
    return WEFT_EINVAL;
  int rc = check_desc(eng, desc);
  if (rc)
    return rc;
  bool out; /* registered before the engine's tables are read */
  rc = weft_engine_enter(eng, &out);
  if (rc)
    return rc;
  size_t cap = desc->num_reads + desc->num_writes;
  weft_var_use local[2 * WEFT_OPR_BIG_VARS]; /* no allocation for ordinary ops */
  weft_var_use *uses = cap <= 2 * WEFT_OPR_BIG_VARS ? local : weft_malloc(sizeof *uses * cap);
  if (!uses) {
    rc = WEFT_ENOMEM;
  } else {
    int n = normalize(eng, desc, uses);
    rc = n < 0 ? n : push_uses(eng, desc, uses, n, NULL, out);
    if (uses != local)
      weft_free(uses);
  }
  weft_engine_leave(eng, out);
  return rc;
}

/* ---------------------------------------------------- reusable operators */

static weft_op_impl *op_lookup(weft_engine *eng, weft_op *op)
{
  return (weft_op_impl *)weft_handles_get(&eng->ops, (uintptr_t)op);
}

static void op_unref(weft_engine *eng, weft_op_impl *t)
{
  /* acq_rel: the last reference frees what the others used. */
  if (atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) == 1) {
    weft_free(t->uses);
    t->uses = NULL;
    weft_handles_free(&eng->ops, &t->slot);
  }
}

void weft_op_tmpl_release(weft_engine *eng, weft_op_impl *t)
{
  op_unref(eng, t);
}

static int op_new(weft_engine *eng, const weft_op_desc *desc, weft_op **out);

int weft_op_new(weft_engine *eng, const weft_op_desc *desc, weft_op **out)
{
  if (!eng || !out)
    return WEFT_EINVAL;
  *out = NULL;
  bool guest;
  int rc = weft_engine_enter(eng, &guest);
  if (rc)
    return rc;
  rc = op_new(eng, desc, out);
  weft_engine_leave(eng, guest);
  return rc;
}

static int op_new(weft_engine *eng, const weft_op_desc *desc, weft_op **out)
{
  int rc = check_desc(eng, desc);
  if (rc)
    return rc;
  size_t cap = desc->num_reads + desc->num_writes;
  weft_var_use *uses = weft_malloc(sizeof *uses * (cap ? cap : 1));
  if (!uses)
    return WEFT_ENOMEM;
  int n = normalize(eng, desc, uses);
  if (n < 0) {
    weft_free(uses);
    return n;
  }
  uintptr_t h;
  weft_op_impl *t = (weft_op_impl *)weft_handles_alloc(&eng->ops, &h);
  if (!t) {
    weft_free(uses);
    return WEFT_ENOMEM;
  }
  t->desc = *desc;
  t->desc.reads = t->desc.writes = NULL;
  t->desc.num_reads = t->desc.num_writes = 0;
  t->uses = uses;
  t->nuses = n;
  /* release: the template is complete before another thread can take a
   * reference (pairs with the acquire CAS in weft_op_push). */
  atomic_store_explicit(&t->refs, 1, memory_order_release);
  *out = (weft_op *)h;
  return 0;
}

static int op_push(weft_engine *eng, weft_op *op, bool out);

int weft_op_push(weft_engine *eng, weft_op *op)
{
  if (!eng)
    return WEFT_EINVAL;
  bool out; /* registered before the engine's tables are read */
  int rc = weft_engine_enter(eng, &out);
  if (rc)
    return rc;
  rc = op_push(eng, op, out);
  weft_engine_leave(eng, out);
  return rc;
}

static int op_push(weft_engine *eng, weft_op *op, bool out)
{
  weft_op_impl *t = op_lookup(eng, op);
  if (!t)
    return WEFT_EINVAL;
  /* Take a reference only while the template is alive (refs > 0)... */
  int r = atomic_load_explicit(&t->refs, memory_order_relaxed);
  do {
    if (r <= 0)
      return WEFT_EINVAL;
    /* acquire: pairs with the release in op_new (the template's contents). */
  } while (!atomic_compare_exchange_weak_explicit(&t->refs, &r, r + 1, memory_order_acquire,
                                                  memory_order_relaxed));
  /* ...and then make sure it is still the same, live operator. */
  if (!weft_slot_live(&t->slot, weft_handle_gen((uintptr_t)op))) {
    op_unref(eng, t);
    return WEFT_EINVAL;
  }
  int rc = push_uses(eng, &t->desc, t->uses, t->nuses, t, out);
  if (rc || eng->naive)
    op_unref(eng, t); /* no operator in flight holds it */
  return rc;
}

int weft_op_delete(weft_engine *eng, weft_op *op)
{
  if (!eng)
    return WEFT_EINVAL;
  bool guest;
  int rc = weft_engine_enter(eng, &guest);
  if (rc)
    return rc;
  weft_op_impl *t = op_lookup(eng, op);
  if (!t || !weft_slot_kill(&t->slot, weft_handle_gen((uintptr_t)op)))
    rc = WEFT_EINVAL;
  else
    op_unref(eng, t); /* the handle's reference; pushes in flight hold theirs */
  weft_engine_leave(eng, guest);
  return rc;
}
