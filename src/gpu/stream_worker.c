/*
 * The stream worker: a thread per device worker that owns its stream(s),
 * takes ready GPU operators off its queue, makes its stream wait (on the
 * device) for the predecessors' events the engine handed over, runs the
 * operator's fn (which enqueues device work and returns), records the
 * operator's event and tells the engine the work is launched. It never
 * waits for the device: the poller sees the event complete.
 */
#include <stdio.h>

#include "common/alloc.h"
#include "common/error.h"
#include "gpu/gpu.h"

void weft_gpu_finish_unlaunched(weft_opr *op, int status)
{
  int n = atomic_load_explicit(&op->ndevwaits, memory_order_relaxed);
  for (int k = 0; k < n && k < WEFT_OPR_DEV_WAITS; k++)
    weft_opr_fence_unref(op->devwait[k]);
  atomic_store_explicit(&op->ndevwaits, 0, memory_order_relaxed);
  weft_opr_complete(op, status, false);
}

static void device_failed(weft_gpu_device *d)
{
  /* release: pairs with the acquire loads of failed (nothing to publish
   * beyond the flag; kept symmetric with the poller's store). */
  atomic_store_explicit(&d->failed, 1, memory_order_release);
}

static void run_one(weft_gpu_worker *w, weft_opr *op)
{
  weft_gpu_exec *x = w->x;
  weft_gpu_device *d = &x->dev[w->device];
  weft_gpu_opstate *st = op->exec_state;
  weft_gpu_lane *lane = st->lane;

  /* acquire: pairs with device_failed / the poller's store. */
  int status = atomic_load_explicit(&d->failed, memory_order_acquire) ? WEFT_EDEVICE
                                                                       : weft_opr_skip_status(op);
  if (status) {
    weft_gpu_finish_unlaunched(op, status);
    return;
  }
  /* Device-side waits for predecessors on other streams of this device;
   * those on this stream are ordered by the stream itself. */
  int n = atomic_load_explicit(&op->ndevwaits, memory_order_relaxed);
  for (int k = 0; k < n && k < WEFT_OPR_DEV_WAITS; k++) {
    weft_opr *fo = op->devwait[k];
    weft_gpu_opstate *fst = fo->exec_state;
    if (!status && fst->lane != lane)
      status = weft_gpu_stream_wait_event(x->b, lane->stream, fst->ev);
    weft_opr_fence_unref(fo); /* the wait is issued (or will never be) */
  }
  atomic_store_explicit(&op->ndevwaits, 0, memory_order_relaxed);
  if (status) {
    if (status == WEFT_EDEVICE) /* not for a mere WEFT_ENOMEM */
      device_failed(d);
    weft_opr_complete(op, status, false);
    return;
  }
  weft_run_ctx rc = {op->ctx, lane->native, -1};
  weft_opr *prev = weft_tls_opr;
  weft_tls_opr = op;
  weft_prof_mark pm = weft_prof_op_begin(true); /* fn's span on the worker's track */
  status = op->fn(&rc, op->arg);
  weft_prof_op_end(pm, op->name);
  weft_tls_opr = prev;
  if (w->track)
    st->launched = weft_prof_now();
  int rec = weft_gpu_event_record(x->b, st->ev, lane->stream);
  if (rec) {
    /* Its work cannot be tracked by an event: wait for the stream instead
     * (this error path only), so that nothing after the operator runs
     * before its work; the operator fails with rec. A stream that cannot
     * be synchronised either leaves the device unusable from now on. */
    if (weft_gpu_stream_sync(x->b, lane->stream))
      device_failed(d);
    weft_opr_launched(op, status ? status : rec);
    weft_opr_device_done(op, rec);
    return;
  }
  weft_opr_launched(op, status);
  weft_gpu_poller_add(x, lane, op);
}

static void *worker_main(void *arg)
{
  weft_gpu_worker *w = arg;
  char name[16];
  snprintf(name, sizeof name, "weft-g%d%c%d", w->device % 100,
           w->kind == WEFT_GPU_COMPUTE ? 'c' : 'x', w->index % 100);
  pthread_setname_np(pthread_self(), name);
  /* CUDA's current device is per thread: operators launch on ours. A
   * failure fails every operator this worker gets. */
  int bound = weft_gpu_bind_thread(w->x->b, w->device);
  weft_engine_executor_thread(); /* no user operator runs inline here */
  weft_prof_tls = w->track; /* NULL when profiling is off */
  for (;;) {
    pthread_mutex_lock(&w->lock);
    while (!w->qhead && !w->stop)
      pthread_cond_wait(&w->cond, &w->lock);
    weft_opr *op = w->qhead;
    if (!op) { /* stopped, queue empty */
      pthread_mutex_unlock(&w->lock);
      return NULL;
    }
    w->qhead = op->link;
    if (!w->qhead)
      w->qtail = NULL;
    pthread_mutex_unlock(&w->lock);
    if (bound)
      weft_gpu_finish_unlaunched(op, bound);
    else
      run_one(w, op);
  }
}

int weft_gpu_worker_start(weft_gpu_worker *w)
{
  int rc = weft_thread_create(&w->thread, NULL, worker_main, w);
  if (rc)
    return WEFT_EAGAIN; /* errno from pthread_create */
  w->started = true;
  return 0;
}

void weft_gpu_worker_push(weft_gpu_worker *w, weft_opr *op)
{
  op->link = NULL;
  pthread_mutex_lock(&w->lock);
  if (w->qtail)
    w->qtail->link = op;
  else
    w->qhead = op;
  w->qtail = op;
  pthread_cond_signal(&w->cond);
  pthread_mutex_unlock(&w->lock);
}

void weft_gpu_worker_stop(weft_gpu_worker *w)
{
  if (!w->started)
    return;
  pthread_mutex_lock(&w->lock);
  w->stop = true;
  pthread_cond_signal(&w->cond);
  pthread_mutex_unlock(&w->lock);
  pthread_join(w->thread, NULL);
  w->started = false;
}
