/* SPDX-License-Identifier: MIT */
/* The public calls that push: weft_push, and those on reusable operators
 * (weft_op_new, weft_op_push, weft_op_delete): a template of a normalised
 * descriptor, reference counted by its handle and by each push in flight
 * (opr.c). While the calling thread has a push sink on the engine (a
 * graph's capture), its pushes are recorded instead (ext.h). */
#include <inttypes.h>

#include "common/alloc.h"
#include "common/error.h"
#include "deps/arg.h"
#include "deps/engine.h"
#include "deps/ext.h"
#include "deps/opr.h"
#include "deps/push.h"

/* The thread's push sink (ext.h): set by the layer that records pushes. */
_Thread_local weft_push_sink *weft_tls_sink __attribute__((tls_model("initial-exec")));

/* A push's own argument (weft_push_arg), or none (weft_push: NULL). */
typedef struct push_arg_in {
  const void *data;
  size_t size;
  weft_arg_drop_fn drop;
} push_arg_in;

/* A recorded push with its own argument: the graph keeps a box of it. */
static int record_arg(weft_engine *eng, const weft_op_desc *desc, const weft_var_use *uses,
                      int n, const void *data, size_t size, weft_arg_drop_fn drop)
{
  weft_arg_box *box = weft_arg_box_new(data, size, drop);
  if (!box)
    return WEFT_ENOMEM;
  weft_op_desc d = *desc;
  d.arg = weft_arg_box_arg(box);
  int rc = eng->ext->record(weft_tls_sink, &d, uses, n, box);
  if (rc)
    weft_arg_box_discard(box);
  return rc;
}

/* weft_push and weft_push_arg: the checked descriptor's vars normalised
 * (on the stack for ordinary operators), then recorded or pushed. Inline
 * in both, so that each keeps its one call frame. */
static inline __attribute__((always_inline)) int push_desc(weft_engine *eng,
                                                           const weft_op_desc *desc,
                                                           const push_arg_in *a)
{
  int rc = weft_push_check_desc(eng, desc);
  if (rc)
    return rc;
  int out; /* registered before the engine's tables are read (non-zero: from outside) */
  rc = weft_engine_enter(eng, &out);
  if (rc)
    return rc;
  size_t cap = desc->num_reads + desc->num_writes;
  weft_var_use local[2 * WEFT_OPR_BIG_VARS]; /* no allocation for ordinary ops */
  weft_var_use *uses = cap <= 2 * WEFT_OPR_BIG_VARS ? local : weft_malloc(sizeof *uses * cap);
  if (!uses) {
    rc = WEFT_ENOMEM;
  } else {
    int n = weft_push_normalize(eng, desc, uses);
    if (n < 0)
      rc = n;
    else if (weft_capturing(eng))
      rc = a ? record_arg(eng, desc, uses, n, a->data, a->size, a->drop)
             : eng->ext->record(weft_tls_sink, desc, uses, n, NULL);
    else
      rc = a ? weft_push_uses_arg(eng, desc, uses, n, out, a->data, a->size, a->drop)
             : weft_push_uses(eng, desc, uses, n, NULL, out);
    if (uses != local)
      weft_free(uses);
  }
  weft_engine_leave(eng, out);
  return rc;
}

int weft_push(weft_engine *eng, const weft_op_desc *desc)
{
  if (!eng)
    return WEFT_EINVAL;
  return push_desc(eng, desc, NULL);
}

int weft_push_arg(weft_engine *eng, const weft_op_desc *desc, const void *data, size_t size,
                  weft_arg_drop_fn drop)
{
  if (!eng)
    return WEFT_EINVAL;
  int rc = weft_arg_check(desc, data, size);
  if (rc)
    return rc;
  push_arg_in a = {data, size, drop};
  return push_desc(eng, desc, &a);
}

static weft_op_tmpl *op_lookup(weft_engine *eng, weft_op *op)
{
  return (weft_op_tmpl *)weft_handles_get(&eng->ops, (uintptr_t)op);
}

static int op_new(weft_engine *eng, const weft_op_desc *desc, weft_arg_box *box, weft_op **out);

int weft_op_new(weft_engine *eng, const weft_op_desc *desc, weft_op **out)
{
  if (!eng || !out)
    return WEFT_EINVAL;
  *out = NULL;
  WEFT_GUARDED(guest, op_new(eng, desc, NULL, out));
}

static int op_new_arg(weft_engine *eng, const weft_op_desc *desc, const void *data, size_t size,
                      weft_arg_drop_fn drop, weft_op **out)
{
  int rc = weft_arg_check(desc, data, size);
  if (rc)
    return rc;
  weft_arg_box *box = weft_arg_box_new(data, size, drop);
  if (!box)
    return WEFT_ENOMEM;
  rc = op_new(eng, desc, box, out);
  if (rc)
    weft_arg_box_discard(box);
  return rc;
}

int weft_op_new_arg(weft_engine *eng, const weft_op_desc *desc, const void *data, size_t size,
                    weft_arg_drop_fn drop, weft_op **out)
{
  if (!eng || !out)
    return WEFT_EINVAL;
  *out = NULL;
  WEFT_GUARDED(guest, op_new_arg(eng, desc, data, size, drop, out));
}

/* box: the operator's own argument (weft_op_new_arg), whose reference the
 * template takes on success; NULL: desc->arg, the caller's. */
static int op_new(weft_engine *eng, const weft_op_desc *desc, weft_arg_box *box, weft_op **out)
{
  int rc = weft_push_check_desc(eng, desc);
  if (rc)
    return rc;
  size_t cap = desc->num_reads + desc->num_writes;
  weft_var_use *uses = weft_malloc(sizeof *uses * (cap ? cap : 1));
  if (!uses)
    return WEFT_ENOMEM;
  int n = weft_push_normalize(eng, desc, uses);
  if (n < 0) {
    weft_free(uses);
    return n;
  }
  uintptr_t h;
  weft_slot *s;
  rc = weft_handles_alloc(&eng->ops, &s, &h);
  if (rc == WEFT_ELIMIT)
    weft_log("weft_op_new: the engine has %" PRIu32 " reusable operators, as many as their "
             "handles can address (a deleted one counts until its last push has finished)",
             eng->ops.limit);
  if (rc) {
    weft_free(uses);
    return rc;
  }
  weft_op_tmpl *t = (weft_op_tmpl *)s;
  t->desc = *desc;
  if (box)
    t->desc.arg = weft_arg_box_arg(box);
  t->box = box;
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

/* Records a push of template t (a reference held): its vars must be live
 * now, as a push's would be. */
static int capture_tmpl(weft_engine *eng, const weft_op_tmpl *t)
{
  for (int k = 0; k < t->nuses; k++)
    if (!weft_slot_live(&t->uses[k].var->slot, weft_handle_gen(t->uses[k].handle)))
      return WEFT_EINVAL;
  if (t->box) /* the graph's own reference: it may outlive the operator */
    weft_arg_box_ref(t->box);
  int rc = eng->ext->record(weft_tls_sink, &t->desc, t->uses, t->nuses, t->box);
  if (rc && t->box)
    weft_arg_box_unref(t->box); /* the template's reference remains */
  return rc;
}

int weft_op_push(weft_engine *eng, weft_op *op)
{
  if (!eng)
    return WEFT_EINVAL;
  WEFT_GUARDED(out, op_push(eng, op, out)); /* registered before the tables are read */
}

static int op_push(weft_engine *eng, weft_op *op, bool out)
{
  weft_op_tmpl *t = op_lookup(eng, op);
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
    weft_op_tmpl_release(eng, t);
    return WEFT_EINVAL;
  }
  if (weft_capturing(eng)) { /* recorded: the graph copies the template */
    int rc = capture_tmpl(eng, t);
    weft_op_tmpl_release(eng, t);
    return rc;
  }
  int rc = weft_push_uses(eng, &t->desc, t->uses, t->nuses, t, out);
  if (rc || eng->naive)
    weft_op_tmpl_release(eng, t); /* no operator in flight holds it */
  return rc;
}

static int op_delete(weft_engine *eng, weft_op *op)
{
  weft_op_tmpl *t = op_lookup(eng, op);
  if (!t || !weft_slot_kill(&t->slot, weft_handle_gen((uintptr_t)op)))
    return WEFT_EINVAL;
  weft_op_tmpl_release(eng, t); /* the handle's reference; pushes in flight hold theirs */
  return 0;
}

int weft_op_delete(weft_engine *eng, weft_op *op)
{
  if (!eng)
    return WEFT_EINVAL;
  WEFT_GUARDED(guest, op_delete(eng, op));
}
