/*
 * Operator kinds defined above the engine.
 *
 * The engine runs two kinds of operator whose meaning a layer above it
 * defines (the graph layer, src/graph/, for the replay of a captured graph),
 * and knows of them only what this header says (design.md §1). As with the
 * device executor (executor.h), the composition root (src/layers.c) hands
 * each engine a table of that layer's entry points (weft_engine_create_with),
 * and the engine reaches the layer through the table alone: never by a
 * name, so no call and no include runs upward.
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

#include <stdatomic.h>
#include <stdbool.h>

#include "common/fifo.h"
#include "deps/engine.h"
#include "deps/opr.h"
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
   * the same device go at its launch: executor.h). For each, it appends op
   * to the successor's devwait[] (a slot claimed with ndevwaits) and takes
   * one reference on op's dev_refs (weft_exec_op_devwaits_done drops it;
   * the last one gives op's executor state back), sets op->dev_released,
   * and appends the successors it makes ready to ready. From the device
   * worker, before op's completion can be seen. NULL: none. */
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

#endif /* WEFT_DEPS_EXT_H */
