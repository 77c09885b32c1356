/* SPDX-License-Identifier: MIT */
/*
 * The GPU executor: the engine's device executor (src/deps/executor.h) on
 * top of a backend (backend.h). It opens the backend at engine creation;
 * a device's workers, streams and the poller start with the device's first
 * operator, so an engine that never runs GPU work starts no thread.
 *
 * Routing: a copy operator goes to a copy worker of its device (to the GPU:
 * the host-to-device stream; from it: the device-to-host stream); a compute
 * operator to the compute worker that launched one of the predecessors it
 * waits for on the device (same stream: no wait at all, OneFlow's
 * shortcut), unless another successor of that predecessor went there first
 * (a fan-out spreads), else to the next compute worker in turn.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/env.h"
#include "common/error.h"
#include "common/tunables.h"
#include "gpu/gpu.h"
#include "pool/pool_ext.h"

static _Atomic unsigned test_jitter_us; /* atomic, relaxed: a test's setting */

void weft_gpu_test_host_jitter(unsigned us)
{
  atomic_store_explicit(&test_jitter_us, us, memory_order_relaxed);
}

/* ------------------------------------------------------------ op states */

static weft_gpu_opstate *state_get(weft_gpu_exec *x, int device, int *err)
{
  weft_gpu_device *d = &x->dev[device];
  pthread_mutex_lock(&d->pool_lock);
  weft_gpu_opstate *st = d->free;
  if (st) {
    d->free = st->next_free;
    pthread_mutex_unlock(&d->pool_lock);
    return st;
  }
  if (d->nall == d->capall) {
    int cap = d->capall ? 2 * d->capall : 64;
    weft_gpu_opstate **all = weft_malloc(sizeof *all * (size_t)cap);
    if (!all) {
      pthread_mutex_unlock(&d->pool_lock);
      *err = WEFT_ENOMEM;
      return NULL;
    }
    if (d->nall)
      memcpy(all, d->all, sizeof *all * (size_t)d->nall);
    weft_free(d->all);
    d->all = all;
    d->capall = cap;
  }
  st = weft_calloc(1, sizeof *st);
  int rc = st ? weft_gpu_event_create(x->b, device, &st->ev) : WEFT_ENOMEM;
  if (rc) {
    weft_free(st);
    pthread_mutex_unlock(&d->pool_lock);
    *err = rc;
    return NULL;
  }
  d->all[d->nall++] = st;
  pthread_mutex_unlock(&d->pool_lock);
  return st;
}

static void x_release(void *self, weft_exec_op *op)
{
  weft_gpu_exec *x = self;
  weft_gpu_opstate *st = weft_exec_op_state(op);
  weft_gpu_device *d = &x->dev[weft_exec_op_ctx(op).id];
  WEFT_ASSERT(st->op == op);
  WEFT_ASSERT(st->phase == WEFT_GPU_OP_DONE); /* the engine recycles only a finished operator */
  WEFT_ASSERT(!st->in_lane); /* the poller took it off its lane */
  st->phase = WEFT_GPU_OP_FREE;
  st->op = NULL;
  st->lane = NULL;
  atomic_store_explicit(&st->followed, 0, memory_order_relaxed); /* relaxed: as in choose_lane */
  weft_exec_op_set_state(op, NULL);
  pthread_mutex_lock(&d->pool_lock);
  st->next_free = d->free;
  d->free = st;
  pthread_mutex_unlock(&d->pool_lock);
}

/* -------------------------------------------------------------- devices */

static void worker_close(weft_gpu_exec *x, weft_gpu_worker *w)
{
  weft_gpu_worker_stop(w);
  for (int l = 0; l < 2; l++) {
    if (w->lane[l].stream) /* drains: its word writes are done after this */
      weft_gpu_stream_destroy(x->b, w->lane[l].stream);
    weft_gpu_word_free(x->b, &w->lane[l].word);
  }
  pthread_cond_destroy(&w->cond);
  pthread_mutex_destroy(&w->lock);
}

static int worker_open(weft_gpu_exec *x, weft_gpu_worker *w, int device, int kind, int index)
{
  memset(w, 0, sizeof *w);
  w->x = x;
  w->device = device;
  w->kind = kind;
  w->index = index;
  pthread_mutex_init(&w->lock, NULL);
  pthread_cond_init(&w->cond, NULL);
  weft_gpu_mpsc_init(&w->queue);
  atomic_init(&w->queued, 0);
  weft_doorbell_init(&w->bell);
  int nlanes = kind == WEFT_GPU_COPY ? 2 : 1;
  if (x->prof) { /* tracks: the worker's (fn) and each stream's (the device work) */
    static const char *lane_name[2][2] = {{"stream", ""}, {"h2d stream", "d2h stream"}};
    char name[64];
    snprintf(name, sizeof name, "GPU %d %s %d launches", device,
             kind == WEFT_GPU_COPY ? "copy" : "compute", index);
    w->track = weft_prof_track_new(x->prof, name);
    for (int l = 0; l < nlanes; l++) {
      snprintf(name, sizeof name, "GPU %d %s %d %s", device,
               kind == WEFT_GPU_COPY ? "copy" : "compute", index, lane_name[kind][l]);
      w->lane[l].track = weft_prof_track_new(x->prof, name);
    }
  }
  int rc = 0;
  for (int l = 0; l < nlanes && !rc; l++) {
    weft_gpu_lane *lane = &w->lane[l];
    weft_gpu_mpsc_init(&lane->launched);
    rc = weft_gpu_stream_create(x->b, device, &lane->stream);
    if (!rc) {
      lane->native = weft_gpu_stream_native(x->b, lane->stream);
      lane->worker = w;
    } else {
      lane->stream = NULL;
    }
    if (!rc && x->completion == WEFT_GPU_COMPLETION_HOSTWORD)
      rc = weft_gpu_word_alloc(x->b, device, &lane->word);
  }
  if (!rc)
    rc = weft_gpu_worker_start(w);
  if (rc)
    worker_close(x, w);
  return rc;
}

/* Starts device i's workers and, with the first device, the poller. Under
 * x->start_lock. */
static int device_start(weft_gpu_exec *x, int i)
{
  weft_gpu_device *d = &x->dev[i];
  d->compute = weft_calloc((size_t)x->ncompute, sizeof *d->compute);
  d->copy = weft_calloc((size_t)x->ncopy, sizeof *d->copy);
  int rc = d->compute && d->copy ? 0 : WEFT_ENOMEM;
  int nc = 0, ny = 0;
  for (; !rc && nc < x->ncompute; nc++)
    if ((rc = worker_open(x, &d->compute[nc], i, WEFT_GPU_COMPUTE, nc)))
      break;
  for (; !rc && ny < x->ncopy; ny++)
    if ((rc = worker_open(x, &d->copy[ny], i, WEFT_GPU_COPY, ny)))
      break;
  if (!rc && !x->poller_started)
    rc = weft_gpu_poller_start(x);
  if (rc) {
    while (nc-- > 0)
      worker_close(x, &d->compute[nc]);
    while (ny-- > 0)
      worker_close(x, &d->copy[ny]);
    weft_free(d->compute);
    weft_free(d->copy);
    d->compute = d->copy = NULL;
    return rc;
  }
  return 0;
}

/* 0 once device i runs (starting it if needed), or why it cannot. */
static int device_ready(weft_gpu_exec *x, int i)
{
  weft_gpu_device *d = &x->dev[i];
  /* acquire: pairs with the release store below (the workers' setup). */
  if (atomic_load_explicit(&d->started, memory_order_acquire))
    return 0;
  pthread_mutex_lock(&x->start_lock);
  int rc = 0;
  if (!atomic_load_explicit(&d->started, memory_order_relaxed)) {
    rc = device_start(x, i);
    if (!rc) /* release: publishes the workers to lock-free readers above */
      atomic_store_explicit(&d->started, 1, memory_order_release);
  }
  pthread_mutex_unlock(&x->start_lock);
  return rc;
}

/* ------------------------------------------------------------- dispatch */

static weft_gpu_lane *choose_lane(weft_gpu_exec *x, weft_exec_op *op)
{
  weft_gpu_device *d = &x->dev[weft_exec_op_ctx(op).id];
  weft_prop prop = weft_exec_op_prop(op);
  if (prop == WEFT_PROP_COPY_TO_GPU || prop == WEFT_PROP_COPY_FROM_GPU) {
    /* relaxed: only spreads work. */
    unsigned k = atomic_fetch_add_explicit(&d->rr_copy, 1, memory_order_relaxed);
    return &d->copy[k % (unsigned)x->ncopy].lane[prop == WEFT_PROP_COPY_FROM_GPU];
  }
  /* Behind a predecessor on its stream (no wait at all), if no other
   * successor followed it there yet: a chain stays on one stream, while a
   * fan-out (a tile factorization's TRSMs after their POTRF) spreads over
   * the compute workers instead of queueing behind each other. */
  int n = weft_exec_op_ndevwaits(op);
  for (int k = 0; k < n; k++) {
    weft_gpu_opstate *pst = weft_exec_op_state(weft_exec_op_devwait(op, k));
    /* relaxed: only steers placement */
    if (pst->lane->worker->kind == WEFT_GPU_COMPUTE &&
        !atomic_exchange_explicit(&pst->followed, 1, memory_order_relaxed))
      return pst->lane;
  }
  unsigned k = atomic_fetch_add_explicit(&d->rr_compute, 1, memory_order_relaxed); /* relaxed: same */
  return &d->compute[k % (unsigned)x->ncompute].lane[0];
}

/* Sends op to a worker of its device, starting the device if needed;
 * returns 0, or why it cannot (op is then untouched). */
static int submit_one(weft_gpu_exec *x, weft_exec_op *op)
{
  int device = weft_exec_op_ctx(op).id;
  int rc = device_ready(x, device);
  if (rc)
    return rc;
  weft_gpu_opstate *st = state_get(x, device, &rc);
  if (!st)
    return rc;
  WEFT_ASSERT(st->phase == WEFT_GPU_OP_FREE && !st->op && !st->in_lane);
  st->phase = WEFT_GPU_OP_SUBMITTED;
  st->op = op;
  st->lane = choose_lane(x, op);
  weft_exec_op_set_state(op, st);
  weft_gpu_worker_push(st->lane->worker, op);
  return 0;
}

/* Failing an operator completes it, which may make the next GPU operator
 * of a chain ready and submit it from inside the failure, whose submit may
 * fail the same way: the outermost x_submit on this thread takes such
 * operators in a loop, not a recursion as deep as the chain. While it
 * does, a submit of the same executor on this thread that cannot go now is
 * queued here (through weft_exec_op_node) and tried again in turn; it then
 * fails with what that try finds. The thread's own. */
static _Thread_local weft_gpu_exec *submitting; /* the executor whose loop runs, or NULL */
static _Thread_local weft_fifo deferred;         /* its operators to try again */

static void x_submit(void *self, weft_exec_op *op)
{
  weft_gpu_exec *x = self;
  if (submitting == x) { /* inside the loop below */
    if (submit_one(x, op))
      weft_fifo_push(&deferred, weft_exec_op_node(op)); /* the loop tries it again */
    return;
  }
  /* Another executor's loop (a user operator run inline while it failed one
   * pushed to this engine) is suspended, not joined: its queue waits. */
  weft_gpu_exec *outer = submitting;
  weft_fifo outer_deferred = deferred;
  submitting = x;
  weft_fifo_init(&deferred);
  for (;;) {
    int rc = submit_one(x, op);
    if (rc) /* the cause, as submit_one saw it */
      weft_exec_op_fail(op, rc);
    weft_fifo_node *next = weft_fifo_pop(&deferred);
    if (!next)
      break;
    op = weft_exec_op_of_node(next);
  }
  submitting = outer;
  deferred = outer_deferred;
}

/* The device a naive GPU operator running on this thread is bound to, or
 * -1: a nested one (its fn pushed another) binds back on return. */
static _Thread_local int naive_device = -1;

/* The naive engine: fn on the device's own stream, then wait for it. The
 * lock is recursive: fn may push another GPU operator, which runs here. */
static int x_run_sync(void *self, weft_exec_op *op)
{
  weft_gpu_exec *x = self;
  weft_ctx ctx = weft_exec_op_ctx(op);
  weft_gpu_device *d = &x->dev[ctx.id];
  pthread_mutex_lock(&d->sync_lock);
  int rc = 0, outer = naive_device;
  if (!d->sync_stream)
    rc = weft_gpu_stream_create(x->b, ctx.id, &d->sync_stream);
  if (!rc) /* fn launches from this thread (CUDA: its current device changes) */
    rc = weft_gpu_bind_thread(x->b, ctx.id);
  if (!rc) {
    naive_device = ctx.id;
    weft_run_ctx rctx = {ctx, weft_gpu_stream_native(x->b, d->sync_stream), -1};
    rc = weft_exec_op_call(op, &rctx);
    int s = weft_gpu_stream_sync(x->b, d->sync_stream);
    if (!rc)
      rc = s;
    naive_device = outer;
    if (outer >= 0 && outer != ctx.id) /* the outer fn goes on launching */
      weft_gpu_bind_thread(x->b, outer);
  }
  pthread_mutex_unlock(&d->sync_lock);
  return rc;
}

/* ----------------------------------------------------------- life cycle */

static void x_close(void *self)
{
  weft_gpu_exec *x = self;
  /* The engine drained: nothing is launched. The completion thread goes
   * first: it reads the lanes (their words) that worker_close frees. */
  weft_gpu_poller_stop(x);
  WEFT_ASSERT(atomic_load_explicit(&x->nlaunched, memory_order_relaxed) == 0);
  for (int i = 0; i < x->ndev; i++) {
    weft_gpu_device *d = &x->dev[i];
    if (atomic_load_explicit(&d->started, memory_order_relaxed)) {
      for (int k = 0; k < x->ncompute; k++)
        worker_close(x, &d->compute[k]);
      for (int k = 0; k < x->ncopy; k++)
        worker_close(x, &d->copy[k]);
    }
  }
  for (int i = 0; i < x->ndev; i++) {
    weft_gpu_device *d = &x->dev[i];
    if (d->sync_stream)
      weft_gpu_stream_destroy(x->b, d->sync_stream);
    for (int k = 0; k < d->nall; k++) {
      weft_gpu_event_destroy(x->b, d->all[k]->ev);
      weft_free(d->all[k]);
    }
    weft_free(d->all);
    weft_free(d->compute);
    weft_free(d->copy);
    pthread_mutex_destroy(&d->pool_lock);
    pthread_mutex_destroy(&d->sync_lock);
  }
  weft_free(x->dev);
  pthread_mutex_destroy(&x->start_lock);
  pthread_mutex_destroy(&x->poll_lock);
  pthread_cond_destroy(&x->poll_cond);
  pthread_cond_destroy(&x->wait_cond);
  weft_gpu_backend_close(x->b);
  weft_free(x);
}

/* WEFT_GPU_COMPLETION: hostword (unset or empty too), event or blocking;
 * anything else is WEFT_EINVAL with a line naming it. */
static int read_completion(weft_gpu_completion *out)
{
  static const struct {
    const char *name;
    weft_gpu_completion mode;
  } modes[] = {{"hostword", WEFT_GPU_COMPLETION_HOSTWORD},
               {"event", WEFT_GPU_COMPLETION_EVENT},
               {"blocking", WEFT_GPU_COMPLETION_BLOCKING}};
  *out = WEFT_GPU_COMPLETION_HOSTWORD;
  const char *s = weft_env_str("WEFT_GPU_COMPLETION");
  if (!s)
    return 0;
  for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
    if (!strcmp(s, modes[i].name)) {
      *out = modes[i].mode;
      return 0;
    }
  weft_log("malformed WEFT_GPU_COMPLETION=\"%s\": expected \"hostword\", \"event\" or "
           "\"blocking\"",
           s);
  return WEFT_EINVAL;
}

static int read_env(long *ncompute, long *ncopy, long *watchdog_ms)
{
  *ncompute = WEFT_GPU_WORKERS_DEFAULT;
  *ncopy = WEFT_GPU_COPY_WORKERS_DEFAULT;
  *watchdog_ms = WEFT_GPU_WATCHDOG_MS_DEFAULT;
  int rc = weft_env_int("WEFT_GPU_WORKERS", 1, WEFT_GPU_WORKERS_MAX, ncompute);
  if (rc < 0)
    return rc;
  rc = weft_env_int("WEFT_GPU_COPY_WORKERS", 1, WEFT_GPU_WORKERS_MAX, ncopy);
  if (rc < 0)
    return rc;
  rc = weft_env_int("WEFT_GPU_WATCHDOG_MS", 0, WEFT_GPU_WATCHDOG_MS_MAX, watchdog_ms);
  return rc < 0 ? rc : 0;
}

static int x_open(weft_pool *pool, void **self, int *num_devices)
{
  long ncompute, ncopy, watchdog_ms, spin_us = WEFT_GPU_SPIN_US_DEFAULT;
  weft_gpu_completion completion;
  int rc = read_env(&ncompute, &ncopy, &watchdog_ms);
  if (!rc)
    rc = read_completion(&completion);
  if (!rc && weft_env_int("WEFT_GPU_SPIN_US", 0, WEFT_GPU_SPIN_US_MAX, &spin_us) < 0)
    rc = WEFT_EINVAL;
  if (rc)
    return rc;
  weft_gpu_exec *x = weft_calloc(1, sizeof *x);
  if (!x)
    return WEFT_ENOMEM;
  x->prof = weft_pool_prof(pool);
  x->ncompute = (int)ncompute;
  x->ncopy = (int)ncopy;
  x->watchdog_ns = (int64_t)watchdog_ms * 1000000;
  x->completion = completion;
  x->spin_ns = (int64_t)spin_us * 1000;
  weft_gpu_backend_config cfg;
  weft_gpu_backend_config_default(&cfg);
  cfg.host_jitter_us = atomic_load_explicit(&test_jitter_us, memory_order_relaxed);
  rc = weft_gpu_backend_open(&x->b, &cfg);
  if (rc) {
    weft_free(x);
    return rc;
  }
  x->ndev = weft_gpu_device_count(x->b);
  x->dev = weft_calloc(x->ndev ? (size_t)x->ndev : 1, sizeof *x->dev);
  if (!x->dev) {
    weft_gpu_backend_close(x->b);
    weft_free(x);
    return WEFT_ENOMEM;
  }
  pthread_mutexattr_t ma;
  pthread_mutexattr_init(&ma);
  pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE); /* nested naive GPU ops */
  for (int i = 0; i < x->ndev; i++) {
    pthread_mutex_init(&x->dev[i].pool_lock, NULL);
    pthread_mutex_init(&x->dev[i].sync_lock, &ma);
  }
  pthread_mutexattr_destroy(&ma);
  pthread_mutex_init(&x->start_lock, NULL);
  pthread_mutex_init(&x->poll_lock, NULL);
  pthread_condattr_t ca; /* poll_cond's timed waits count on CLOCK_MONOTONIC (poller.c) */
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&x->poll_cond, &ca);
  pthread_condattr_destroy(&ca);
  pthread_cond_init(&x->wait_cond, NULL);
  atomic_init(&x->nlaunched, 0);
  weft_doorbell_init(&x->bell);
  *self = x;
  *num_devices = x->ndev;
  return 0;
}

const weft_executor_ops weft_gpu_executor_ops = {
    .open = x_open,
    .submit_op = x_submit,
    .release_op = x_release,
    .run_sync = x_run_sync,
    .run_free = weft_gpu_run_free,
    .close = x_close,
};
