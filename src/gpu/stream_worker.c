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
#include "common/assert.h"
#include "common/error.h"
#include "common/tunables.h"
#include "gpu/gpu.h"

void weft_gpu_fail_submitted(weft_exec_op *op, int status)
{
  weft_gpu_opstate *st = weft_exec_op_state(op);
  WEFT_ASSERT(st->op == op);
  WEFT_ASSERT(st->phase == WEFT_GPU_OP_SUBMITTED); /* completes once, never launched */
  st->phase = WEFT_GPU_OP_DONE;
  weft_exec_op_fail(op, status);
}

static void device_failed(weft_gpu_device *d)
{
  /* release: pairs with the acquire loads of failed (nothing to publish
   * beyond the flag; kept symmetric with the poller's store). */
  atomic_store_explicit(&d->failed, 1, memory_order_release);
}

static void run_one(weft_gpu_worker *w, weft_exec_op *op)
{
  weft_gpu_exec *x = w->x;
  weft_gpu_device *d = &x->dev[w->device];
  weft_gpu_opstate *st = weft_exec_op_state(op);
  weft_gpu_lane *lane = st->lane;
  WEFT_ASSERT(lane->worker == w); /* queued on the worker that owns its lane */

  /* acquire: pairs with device_failed / the poller's store. */
  int status = atomic_load_explicit(&d->failed, memory_order_acquire) ? WEFT_EDEVICE
                                                                       : weft_exec_op_skip_status(op);
  if (status) {
    weft_gpu_fail_submitted(op, status);
    return;
  }
  /* Device-side waits for predecessors on other streams of this device;
   * those on this stream are ordered by the stream itself. */
  int n = weft_exec_op_ndevwaits(op);
  for (int k = 0; k < n && !status; k++) {
    weft_gpu_opstate *fst = weft_exec_op_state(weft_exec_op_devwait(op, k));
    if (fst->lane != lane)
      status = weft_gpu_stream_wait_event(x->b, lane->stream, fst->ev);
  }
  weft_exec_op_devwaits_done(op); /* the waits are issued (or never will be) */
  if (status) {
    if (status == WEFT_EDEVICE) /* not for a mere WEFT_ENOMEM */
      device_failed(d);
    weft_gpu_fail_submitted(op, status);
    return;
  }
  weft_run_ctx rc = {weft_exec_op_ctx(op), lane->native, -1};
  weft_prof_mark pm = weft_prof_op_begin(true); /* fn's span on the worker's track */
  status = weft_exec_op_call(op, &rc);
  weft_prof_op_end(pm, weft_exec_op_name(op));
  if (w->track)
    st->launched = weft_prof_now();
  int rec = weft_gpu_event_record(x->b, st->ev, lane->stream);
  WEFT_ASSERT(st->phase == WEFT_GPU_OP_SUBMITTED);
  st->phase = WEFT_GPU_OP_LAUNCHED;
  if (rec) {
    /* Its work cannot be tracked by an event: wait for the stream instead
     * (this error path only), so that nothing after the operator runs
     * before its work; the operator fails with rec. A stream that cannot
     * be synchronised either leaves the device unusable from now on. */
    if (weft_gpu_stream_sync(x->b, lane->stream))
      device_failed(d);
    weft_exec_op_launched(op, status ? status : rec);
    st->phase = WEFT_GPU_OP_DONE; /* before the block (and st) may be recycled */
    weft_exec_op_device_done(op, rec);
    return;
  }
  weft_exec_op_launched(op, status);
  st->seq = ++lane->seq; /* before the append publishes st */
  weft_gpu_poller_add(x, lane, st);
  if (x->completion == WEFT_GPU_COMPLETION_HOSTWORD && lane->seq - lane->written >= WEFT_GPU_WORD_BATCH)
    weft_gpu_lane_flush_word(x, lane);
}

void weft_gpu_lane_flush_word(weft_gpu_exec *x, weft_gpu_lane *lane)
{
  if (lane->seq == lane->written)
    return;
  /* A failed write (logged by the backend) leaves those operators to the
   * completion thread's overdue query of their events. */
  (void)weft_gpu_stream_write_word(x->b, lane->stream, &lane->word, lane->seq);
  lane->written = lane->seq;
}

/* Before the worker sleeps: every launched operator's word is on its way. */
static void flush_words(weft_gpu_worker *w)
{
  if (w->x->completion != WEFT_GPU_COMPLETION_HOSTWORD)
    return;
  for (int l = 0; l < (w->kind == WEFT_GPU_COPY ? 2 : 1); l++)
    weft_gpu_lane_flush_word(w->x, &w->lane[l]);
}

static void *worker_main(void *arg)
{
  weft_gpu_worker *w = arg;
  /* CUDA's current device is per thread: operators launch on ours. A
   * failure fails every operator this worker gets. */
  int bound = weft_gpu_bind_thread(w->x->b, w->device);
  weft_engine_executor_thread(); /* no user operator runs inline here */
  weft_prof_tls = w->track; /* NULL when profiling is off */
  for (;;) {
    pthread_mutex_lock(&w->lock);
    if (weft_fifo_empty(&w->queue)) { /* about to sleep: words first */
      pthread_mutex_unlock(&w->lock);
      flush_words(w);
      pthread_mutex_lock(&w->lock);
    }
    while (weft_fifo_empty(&w->queue) && !w->stop)
      pthread_cond_wait(&w->cond, &w->lock);
    weft_fifo_node *node = weft_fifo_pop(&w->queue);
    pthread_mutex_unlock(&w->lock);
    if (!node) /* stopped, queue empty */
      return NULL;
    weft_exec_op *op = weft_exec_op_of_node(node);
    if (bound)
      weft_gpu_fail_submitted(op, bound);
    else
      run_one(w, op);
  }
}

int weft_gpu_worker_start(weft_gpu_worker *w)
{
  int rc = weft_thread_create(&w->thread, NULL, worker_main, w);
  if (rc)
    return WEFT_EAGAIN; /* errno from pthread_create */
  /* Named here, not by the thread: it is "weft-g..." as soon as the
   * device started, whether or not it ran yet. */
  char name[16];
  snprintf(name, sizeof name, "weft-g%d%c%d", w->device % 100,
           w->kind == WEFT_GPU_COMPUTE ? 'c' : 'x', w->index % 100);
  pthread_setname_np(w->thread, name);
  w->started = true;
  return 0;
}

void weft_gpu_worker_push(weft_gpu_worker *w, weft_exec_op *op)
{
  pthread_mutex_lock(&w->lock);
  weft_fifo_push(&w->queue, weft_exec_op_node(op));
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
  WEFT_ASSERT(weft_fifo_empty(&w->queue)); /* it stops only once its queue is empty */
}
