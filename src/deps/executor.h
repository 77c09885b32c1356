/* SPDX-License-Identifier: MIT */
/*
 * Executors: how operators of a device context (WEFT_DEV_GPU) leave the pool.
 *
 * The engine defines this interface and knows nothing of what implements it
 * (docs/design.md, "Layout"): the GPU layer (src/gpu/) fills a
 * weft_executor_ops, and the library's composition root (src/layers.c, whose
 * weft_engine_create calls weft_engine_create_with) hands it to each engine
 * it creates. An executor receives ready device operators and reports back
 * through the entry points below.
 *
 * A device operator's life:
 *   1. ready (every grant in): the engine calls submit_op(); the executor queues
 *      it on a device worker.
 *   2. the worker checks weft_exec_op_skip_status() (a failed var: it ends
 *      the operator with weft_exec_op_fail(), which drops the device waits
 *      it holds), makes its stream wait for the operator's device waits
 *      (weft_exec_op_devwait(): the events of predecessors on the same
 *      device), drops them (weft_exec_op_devwaits_done()), runs fn through
 *      weft_exec_op_call(), records an event and calls
 *      weft_exec_op_launched(): its vars are released at once, each leaving
 *      a *fence* (the operator's pending device work) on the var.
 *   3. when its event completes, the executor's completion poller calls
 *      weft_exec_op_device_done(): the fences go, and with them what held
 *      back the successors that cannot wait on the device.
 *
 * An executor sees a device operator only as an opaque weft_exec_op and the
 * calls below: never the engine's op block (src/deps/opr.h) or the engine.
 *
 * Fences: an operator granted on a var with fences it must respect (a
 * writer: every fence; a reader: the fences of writers) either waits for
 * them on the device (a GPU operator of the same device: they are added to
 * its devwait[], each holding a reference on the fence's operator so its
 * event outlives the wait) or on the host (anything else: one more count on
 * its wait counter per such var, taken off by the device_done that removes
 * the var's last relevant fence). Successors on the same device thus never
 * make a host round trip; CPU successors and weft_var_wait are released by
 * the poller. A graph's GPU node (a held operator, ext.h) leaves no fence:
 * its layer releases its same-device GPU successors at its launch (ext.h,
 * launched) with the node in their devwait[], the same way.
 */
#ifndef WEFT_DEPS_EXECUTOR_H
#define WEFT_DEPS_EXECUTOR_H
#include "deps/layer.h" /* layer guard: no include from a lower layer */

#include <stdbool.h>

#include "common/fifo.h"
#include "weft/weft.h"

/* A device operator, as an executor sees it: opaque. Valid from submit
 * until the executor's release_op() of it. */
typedef struct weft_opr weft_exec_op;

typedef struct weft_executor_ops {
  /* At engine creation, for the engine's pool: *self and the number of
   * devices (0 is fine: GPU operators are then refused with WEFT_ENODEV).
   * Returns 0 or WEFT_E* (creation fails with it). */
  int (*open)(weft_pool *pool, void **self, int *num_devices);
  /* A ready device operator (ctx.type WEFT_DEV_GPU, 0 <= ctx.id < devices).
   * Never fails: the executor queues it, or ends it at once with
   * weft_exec_op_fail() and the cause. Called from any thread. */
  void (*submit_op)(void *self, weft_exec_op *op);
  /* The operator's block is about to be recycled: give back what the
   * executor attached to it (weft_exec_op_state: its event). */
  void (*release_op)(void *self, weft_exec_op *op);
  /* The naive engine: runs the operator (weft_exec_op_call) on a stream of
   * its device and waits for the stream; returns fn's status, or
   * WEFT_EDEVICE. */
  int (*run_sync)(void *self, weft_exec_op *op);
  /* Frees what the executor recorded for a run (weft_exec_run.cache, not
   * NULL): the run's graph is being destroyed, no launch of it runs. From
   * any thread, before close. */
  void (*run_free)(void *self, void *cache);
  /* After the engine drained: stops the workers and frees everything. */
  void (*close)(void *self);
} weft_executor_ops;

/* weft_engine_create with the device executor exec (NULL: none, so no
 * device: GPU operators are refused with WEFT_ENODEV) and the operator
 * kinds ext defined above the engine (ext.h; NULL: none, so no graph). The
 * public weft_engine_create is the composition root's (src/layers.c): the
 * engine never calls up for its executor or its kinds. */
struct weft_opr_ext_ops;
int weft_engine_create_with(weft_engine **out, const weft_engine_config *cfg,
                            const weft_executor_ops *exec, const struct weft_opr_ext_ops *ext);

/* ------------------------------------------------ what an operator says */

weft_ctx weft_exec_op_ctx(const weft_exec_op *op);
weft_prop weft_exec_op_prop(const weft_exec_op *op);
/* Its name for traces and messages; never NULL ("op" when unnamed). */
const char *weft_exec_op_name(const weft_exec_op *op);
/* Calls its fn with rc (on the calling thread, as the thread's current
 * operator); returns fn's status. */
int weft_exec_op_call(weft_exec_op *op, const weft_run_ctx *rc);

/* The executor's own per-operator state (NULL until set): owned by the
 * thread that holds the operator (submit, then its device worker). */
void *weft_exec_op_state(const weft_exec_op *op);
void weft_exec_op_set_state(weft_exec_op *op, void *state);
/* A FIFO node (common/fifo.h) for the executor's queues, free for its use
 * from submit until the operator is launched or failed. */
weft_fifo_node *weft_exec_op_node(weft_exec_op *op);
weft_exec_op *weft_exec_op_of_node(weft_fifo_node *node);

/* The device waits the engine handed over: predecessors on the same device
 * whose work op must wait for on the device (their state holds their
 * event). Read by the thread that holds op after submit. */
int weft_exec_op_ndevwaits(const weft_exec_op *op);
weft_exec_op *weft_exec_op_devwait(const weft_exec_op *op, int k);
/* Every device wait is issued (or never will be): drops the references
 * they hold on the predecessors. */
void weft_exec_op_devwaits_done(weft_exec_op *op);

/* A run of GPU operators that may replay as one device graph (a captured
 * graph's, WEFT_OP_GPU_GRAPH: weft.h). Its first member leads it: the
 * executor receives the leader alone, the others are not submitted. */
typedef struct weft_exec_run {
  int n;                          /* members, n >= 2 */
  weft_exec_op *const *member;    /* [n]: in the order their work is enqueued; [0] the leader */
  /* The executor's record of the run (NULL until it made one), kept across
   * launches; the leader's device worker alone touches it (one launch at a
   * time), and run_free frees it with the graph. */
  void **cache;
} weft_exec_run;

/* Whether leader op replays its run as one this launch (no var of the run
 * is failed): fills *run. Read by the device worker that holds op, after
 * its device waits are issued; false for any other operator. */
bool weft_exec_op_run(weft_exec_op *op, weft_exec_run *run);

/* ------------------------------------------------ what an executor says */

/* The status of a failed var op uses (0: run it), unless WEFT_OP_NOSKIP. */
int weft_exec_op_skip_status(const weft_exec_op *op);
/* Ends an operator that will not launch with status (non-zero: the cause,
 * e.g. WEFT_ENODEV, WEFT_ENOMEM, the backend's error): drops its device
 * waits and completes it; its written vars fail with status. */
void weft_exec_op_fail(weft_exec_op *op, int status);
/* Its device work is enqueued (status: what fn returned): releases its vars,
 * leaving fences on them, and dispatches what that makes ready. */
void weft_exec_op_launched(weft_exec_op *op, int status);
/* Leader op's run (weft_exec_op_run) is enqueued as one, its event after
 * it (status: 0, or why it could not be: every member then fails with
 * it): as weft_exec_op_launched, for the whole run; op's device_done
 * finishes every member. */
void weft_exec_op_run_launched(weft_exec_op *op, int status);
/* Its device work completed (status 0) or failed (WEFT_EDEVICE): removes its
 * fences and finishes it (the status fn returned at launch wins). Exactly
 * once per launched operator. */
void weft_exec_op_device_done(weft_exec_op *op, int status);
/* Marks the calling thread as an executor's (a device worker, a poller):
 * operators it makes ready never run inline on it (WEFT_PROP_ASYNC ones go
 * to the pool), and var and engine waits on it return WEFT_EDEADLK: it is
 * the thread that completes device work, so it must not block on the
 * engine. It never claims a pool's solo injection queue either (it only
 * passes successors on: weft_pool_solo_decline). */
void weft_engine_executor_thread(void);

#endif /* WEFT_DEPS_EXECUTOR_H */
