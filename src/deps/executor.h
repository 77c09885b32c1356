/*
 * Executors: how operators of a device context (WEFT_DEV_GPU) leave the pool.
 *
 * The engine defines this interface and knows nothing of what implements it
 * (design.md §1): the GPU layer (src/gpu/) fills a weft_executor_ops, and the
 * library's composition root (src/layers.c) hands it to the engine through
 * weft_engine_device_executor(). An executor receives ready device operators
 * and reports back through the entry points below.
 *
 * A device operator's life:
 *   1. ready (every grant in): the engine calls submit(); the executor queues
 *      it on a device worker.
 *   2. the worker checks weft_opr_skip_status() (a failed var: complete it
 *      with that status through weft_opr_complete(), after dropping the
 *      fences it holds), makes its stream wait for op->devwait[] (device-side
 *      fences of predecessors on the same device; weft_opr_fence_unref()
 *      each once the wait is issued), runs fn, records an event and calls
 *      weft_opr_launched(): its vars are released at once, each leaving a
 *      *fence* (the operator's pending device work) on the var.
 *   3. when its event completes, the executor's completion poller calls
 *      weft_opr_device_done(): the fences go, and with them what held back
 *      the successors that cannot wait on the device.
 *
 * Fences: an operator granted on a var with fences it must respect (a
 * writer: every fence; a reader: the fences of writers) either waits for
 * them on the device (a GPU operator of the same device: they are added to
 * its devwait[], each holding a reference on the fence's operator so its
 * event outlives the wait) or on the host (anything else: one more count on
 * its wait counter per such var, taken off by the device_done that removes
 * the var's last relevant fence). Successors on the same device thus never
 * make a host round trip; CPU successors and weft_var_wait are released by
 * the poller.
 */
#ifndef WEFT_DEPS_EXECUTOR_H
#define WEFT_DEPS_EXECUTOR_H
#include "deps/layer.h" /* layer guard: no include from a lower layer */

#include "weft/weft.h"

struct weft_opr;

typedef struct weft_executor_ops {
  /* At engine creation: *self and the number of devices (0 is fine: GPU
   * operators are then refused with WEFT_ENODEV). Returns 0 or WEFT_E*
   * (creation fails with it). */
  int (*open)(weft_engine *eng, void **self, int *num_devices);
  /* A ready device operator (ctx.type WEFT_DEV_GPU, 0 <= ctx.id < devices).
   * Never fails: the executor queues it. Called from any thread. */
  void (*submit)(void *self, struct weft_opr *op);
  /* The operator's block is about to be recycled: give back what the
   * executor attached to it (its event). */
  void (*release)(void *self, struct weft_opr *op);
  /* The naive engine: runs fn on a stream of ctx's device and waits for the
   * stream; returns fn's status, or WEFT_EDEVICE. */
  int (*run_sync)(void *self, const struct weft_opr *op);
  /* After the engine drained: stops the workers and frees everything. */
  void (*close)(void *self);
} weft_executor_ops;

/* The device executor the library was built with, or NULL (src/layers.c). */
const weft_executor_ops *weft_engine_device_executor(void);

/* Entry points for executors. */

/* The status of a failed var op uses (0: run it), unless WEFT_OP_NOSKIP. */
int weft_opr_skip_status(struct weft_opr *op);
/* Its device work is enqueued (status: what fn returned): releases its vars,
 * leaving fences on them, and dispatches what that makes ready. */
void weft_opr_launched(struct weft_opr *op, int status);
/* Its device work completed (status 0) or failed (WEFT_EDEVICE): removes its
 * fences and finishes it (the status fn returned at launch wins). */
void weft_opr_device_done(struct weft_opr *op, int status);
/* Marks the calling thread as an executor's (a device worker, a poller):
 * operators it makes ready never run inline on it (WEFT_PROP_ASYNC ones go
 * to the pool), and var and engine waits on it return WEFT_EDEADLK: it is
 * the thread that completes device work, so it must not block on the
 * engine. */
void weft_engine_executor_thread(void);
/* Drops a reference taken on a fence's operator (op->devwait[k]). */
void weft_opr_fence_unref(struct weft_opr *op);

#endif /* WEFT_DEPS_EXECUTOR_H */
