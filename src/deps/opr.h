/* SPDX-License-Identifier: MIT */
/*
 * The op block: an operator in flight. It holds the copied descriptor and
 * one var-queue request per var it uses (vars sorted by index, duplicates
 * merged, read+write counted as write). Its wait counter starts at
 * nvars + 1: each granted request takes one off, and the pusher takes the
 * last one once it has appended the op to every var, so the op cannot start
 * before its registration is complete. At zero the op is dispatched
 * (dispatch.h); when it finishes, its vars are released (complete.h).
 *
 * State machine (WEFT_OPR_*_ST, asserted where it moves): pushed -> ready
 * (wait counter at zero) -> running -> done, each once; a block is free
 * again only once done.
 */
#ifndef WEFT_DEPS_OPR_H
#define WEFT_DEPS_OPR_H
#include "deps/layer.h" /* layer guard: no include from a lower layer */

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/assert.h"
#include "common/fifo.h"
#include "common/tunables.h"
#include "deps/engine.h"
#include "deps/handles.h"
#include "deps/var_queue.h"
#include "pool/pool_ext.h"
#include "pool/task.h"
#include "weft/weft.h"

typedef struct weft_var_impl weft_var_impl;

/* Operators with at most this many vars take their requests from the
 * recycled block itself; larger ones allocate them, vars. 4: the header
 * and the arrays of an operator with up to 3 vars fill 4 lines. */
#define WEFT_OPR_INLINE_VARS 4

/* Normalised var list of an operator: sorted by index, distinct. */
typedef struct weft_var_use {
  uintptr_t handle; /* the var's handle, for re-validation at push */
  weft_var_impl *var; /* its slot (slots are never freed; liveness is
                       * re-checked under the var's lock at push) */
  bool write;
} weft_var_use;

/* The extension area of an op block: owned by the layer that defines the
 * operator's kind (ext.h), which the engine never touches. Where an
 * operator's inline var array would be: an operator of such a kind has no
 * var array in its block (its layer keeps its var list), and the area is
 * in the header's two lines. */
#define WEFT_OPR_EXT_BYTES (WEFT_OPR_INLINE_VARS * sizeof(void *))

/* A reusable operator (weft_op_new): the template every push of it copies
 * into an operator block. The names of an operator, by what they are:
 *   weft_op        the public handle of a reusable operator (weft.h);
 *   weft_op_tmpl   what that handle points to (here);
 *   weft_opr       an operator block: one push, of a template or not
 *                  (below), what the var queues and the pool hold;
 *   weft_exec_op   a weft_opr as a device executor sees it: opaque
 *                  (executor.h). */
typedef struct weft_op_tmpl {
  weft_slot slot;
  weft_op_desc desc;  /* copied; reads/writes cleared (see uses) */
  weft_var_use *uses; /* owned */
  int nuses;
  struct weft_arg_box *box; /* weft_op_new_arg: its argument (a reference); else NULL */
  _Atomic int refs;   /* the live handle + one per push in flight */
} weft_op_tmpl;

/* Where an operator's arg lives when its block holds it (weft_opr.argmode):
 * the caller's pointer (or a template's or a graph's box: theirs), its
 * block's argbytes (a drop at the free), a box the block holds a
 * reference to (arg.h). */
enum { WEFT_OPR_ARG_PTR = 0, WEFT_OPR_ARG_BYTES, WEFT_OPR_ARG_BOX };

/* Internal operator kinds (opr.internal): a pushed user operator, a var
 * wait, a var deletion; and the two kinds a layer above the engine defines
 * (ext.h): an operator whose vars another one holds for it (a user
 * operator too: a captured graph's node, replayed), and such a holder (a
 * graph launch's gate). */
enum { WEFT_OPR_USER = 0, WEFT_OPR_WAIT, WEFT_OPR_DELETE, WEFT_OPR_HELD, WEFT_OPR_HOLDER };

typedef struct weft_opr {
  /* What the pusher writes for every operator (the block usually comes
   * from another core, which recycled it, so each line written is a line
   * moved): the header and the var array (two lines), then, past the queue
   * line, the requests, so that an operator with up to 2 vars is 3 lines
   * and one with up to 4 is 4. While the block is free the object store
   * links it through its first words. */
  weft_engine *eng;
  weft_op_fn fn;              /* NULL: an async operator (async_fn) */
  void *arg;
  const char *name;
  weft_op_tmpl *tmpl;         /* the reusable op it was pushed from, or NULL */
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
  /* WEFT_OPR_ST_*: where it is in its life, kept by the thread that holds
   * it at each step (written only where assertions are on). */
  uint8_t st;
  /* WEFT_OPR_ARG_*: where arg lives when the block holds it (arg.h);
   * written by the pusher, read by the block's free. */
  uint8_t argmode;
  /* Finishes of the operators before it in a run of kept successors, not
   * yet counted (complete.c): its own finish counts them with its own.
   * Written by the thread that holds it (zeroed by its registration). */
  uint16_t owed;
  union {
    weft_var_impl *var_inline[WEFT_OPR_INLINE_VARS];
    /* WEFT_OPR_HELD, WEFT_OPR_HOLDER: its layer's (ext.h) */
    _Alignas(void *) unsigned char ext[WEFT_OPR_EXT_BYTES];
  };
  /* The third line: what queues it once it is ready, written by the thread
   * that makes it ready (not by the pusher). A queue node (common/fifo.h):
   * inline operators queued on a thread (dispatch.c), device operators in
   * their executor's queues. */
  weft_fifo_node node;
  /* Its pool task record (weft_pool_submit_embedded): written by the thread
   * that dispatches it through the pool, read by the one that runs it; most
   * operators run on the worker that made them ready and never touch it. */
  weft_task task;
  weft_var_req req_inline[WEFT_OPR_INLINE_VARS];
  /* What only some operators use, each written only for them. */
  weft_async_op_fn async_fn;  /* fn NULL */
  /* atomic: an async op finishes when both its signal and its async_fn's
   * return have happened (2 -> 0), so the block outlives the call. */
  _Atomic int async_refs;
  _Atomic uint32_t async_done; /* naive engine (a block on the pusher's stack): set at the signal */
  int priority;               /* WEFT_PROP_PRIORITIZED: higher runs first */
  /* WEFT_OPR_ARG_BYTES: arg is argbytes, copied in by the pusher; its
   * drop runs at the block's free (the pusher's, read by the freeing
   * thread, which the operator's completion orders after it). */
  weft_arg_drop_fn arg_drop;
  _Alignas(WEFT_ARG_ALIGN) unsigned char argbytes[WEFT_OP_ARG_INLINE];
  /* Device operators (src/deps/executor.h), last: CPU operators never touch
   * these lines. devwait: fences to wait for on the device, filled by the
   * threads that grant it (a slot each, claimed with ndevwaits) and read by
   * the device worker once it is dispatched. */
  _Atomic int ndevwaits;
  /* atomic: its launched device work (1) + one per devwait[] entry that
   * names it; the block is recycled at zero. */
  _Atomic int dev_refs;
  void *exec_state;           /* the executor's (its event, its worker) */
  /* A held operator that leads a run (executor.h, weft_exec_run): this
   * launch replayed the run as one, so its finish is the run's. Written
   * by the launching device worker, read and cleared by the finish. */
  bool dev_run;
  struct weft_opr *devwait[WEFT_OPR_DEV_WAITS];
} weft_opr;
_Static_assert(offsetof(weft_opr, ext) + WEFT_OPR_EXT_BYTES <= 2 * WEFT_CACHE_LINE &&
                   sizeof(((weft_opr *)0)->ext) == sizeof(((weft_opr *)0)->var_inline),
               "the extension area is where the inline var array is, in the header's lines");
_Static_assert(offsetof(weft_opr, node) == 2 * WEFT_CACHE_LINE &&
                   offsetof(weft_opr, task) + sizeof(weft_task) <= 3 * WEFT_CACHE_LINE,
               "an operator's header and var array fill two lines, its queue links the third");
_Static_assert(offsetof(weft_opr, req_inline) == 3 * WEFT_CACHE_LINE,
               "an operator's requests start the fourth line");
_Static_assert(offsetof(weft_opr, req_inline) + 2 * sizeof(weft_var_req) <= 4 * WEFT_CACHE_LINE &&
                   offsetof(weft_opr, req_inline) + 4 * sizeof(weft_var_req) <= 5 * WEFT_CACHE_LINE,
               "an operator with 2 vars is written in 3 lines, one with 4 in 4");
/* The var and request arrays of an operator with more than
 * WEFT_OPR_INLINE_VARS vars (up to WEFT_OPR_BIG_VARS). */
typedef struct weft_opr_big {
  void *link; /* object store link while free */
  weft_var_impl *var[WEFT_OPR_BIG_VARS];
  weft_var_req req[WEFT_OPR_BIG_VARS];
} weft_opr_big;

/* An operator's life, each step once: pushed (registering, then waiting
 * for grants) -> ready (its wait counter reached zero) -> running (its fn
 * or async_fn was called) -> launched (a device operator's work is
 * enqueued) -> done (its vars released); free while the block is recycled.
 * A skipped operator goes from ready to done. */
enum {
  WEFT_OPR_ST_FREE = 0,
  WEFT_OPR_ST_PUSHED,
  WEFT_OPR_ST_READY,
  WEFT_OPR_ST_RUNNING,
  WEFT_OPR_ST_LAUNCHED,
  WEFT_OPR_ST_DONE,
};
#if WEFT_ASSERTS_ON
#define WEFT_OPR_SET(op, to) ((op)->st = (uint8_t)(to))
#define WEFT_OPR_MOVE(op, from, to) (WEFT_ASSERT((op)->st == (from)), WEFT_OPR_SET(op, to))
#else
#define WEFT_OPR_SET(op, to) ((void)0)
#define WEFT_OPR_MOVE(op, from, to) ((void)0)
#endif

/* The uncommon cases of alloc and free (opr.c): an operator with more than
 * WEFT_OPR_INLINE_VARS vars, a device operator, one whose block holds its
 * argument (the free runs its drop). w: the calling worker, or -1. */
weft_opr *weft_opr_alloc_big(weft_engine *eng, int w, weft_opr *op, int nvars);
void weft_opr_free_slow(weft_engine *eng, int w, weft_opr *op);

/* A block for an operator with nvars vars, from the calling worker's cache
 * (or the calling thread's, common/objstore.h); NULL without memory.
 * Inline: once per operator. */
static inline weft_opr *weft_opr_alloc(weft_engine *eng, int nvars)
{
  int w = weft_pool_worker_index(eng->pool);
  weft_opr *op = (weft_opr *)weft_obj_alloc(
      &eng->oprs, w >= 0 ? &eng->caches[w].oprs : weft_obj_thread_cache(&eng->oprs, WEFT_OBJ_TLS_OPRS));
  if (!op)
    return NULL;
  if (nvars > WEFT_OPR_INLINE_VARS)
    return weft_opr_alloc_big(eng, w, op, nvars);
  op->var = op->var_inline;
  op->req = op->req_inline;
  op->nvars = nvars;
  return op;
}

/* Gives the block back (and its executor state, for a device operator). */
static inline void weft_opr_free(weft_engine *eng, weft_opr *op)
{
  WEFT_ASSERT(op->eng == eng);
  int w = weft_pool_worker_index(eng->pool);
  if (op->nvars > WEFT_OPR_INLINE_VARS || op->ctx.type == WEFT_DEV_GPU || op->argmode)
    weft_opr_free_slow(eng, w, op);
  else
    weft_obj_free(&eng->oprs,
                  w >= 0 ? &eng->caches[w].oprs : weft_obj_thread_cache(&eng->oprs, WEFT_OBJ_TLS_OPRS),
                  op);
}

/* Drops a reference to a reusable operator (freeing it with the last). */
void weft_op_tmpl_release(weft_engine *eng, weft_op_tmpl *t);

#endif /* WEFT_DEPS_OPR_H */
