/* SPDX-License-Identifier: MIT */
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
  weft_exec_run run;
  bool as_one = weft_exec_op_run(op, &run) && weft_gpu_run_enqueue(w, lane, op, &run, &status);
  if (!as_one) {
    weft_run_ctx rc = {weft_exec_op_ctx(op), lane->native, -1};
    weft_prof_mark pm = weft_prof_op_begin(true); /* fn's span on the worker's track */
    status = weft_exec_op_call(op, &rc);
    weft_prof_op_end(pm, weft_exec_op_name(op));
  }
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
    if (as_one)
      weft_exec_op_run_launched(op, status ? status : rec);
    else
      weft_exec_op_launched(op, status ? status : rec);
    st->phase = WEFT_GPU_OP_DONE; /* before the block (and st) may be recycled */
    weft_exec_op_device_done(op, rec);
    return;
  }
  if (as_one)
    weft_exec_op_run_launched(op, status);
  else
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

/* The next queued operator, or NULL when the queue is empty (the worker
 * only). */
static weft_exec_op *queue_take(weft_gpu_worker *w)
{
  weft_gpu_link *node = weft_gpu_mpsc_peek(&w->queue);
  if (!node)
    return NULL;
  weft_gpu_mpsc_pop(&w->queue, node); /* before run_one reuses the link */
  atomic_fetch_sub_explicit(&w->queued, 1, memory_order_relaxed); /* relaxed: a count */
  return ((weft_gpu_opstate *)((char *)node - offsetof(weft_gpu_opstate, lnode)))->op;
}

/* Parks until a push after `seen`, or a stop; returns whether stopped.
 * Submitters ring w->bell after each append (common/doorbell.h). */
static bool park(weft_gpu_worker *w, unsigned long seen)
{
  pthread_mutex_lock(&w->lock);
  weft_doorbell_arm(&w->bell);
  while (!w->stop && !weft_doorbell_rung(&w->bell, seen))
    pthread_cond_wait(&w->cond, &w->lock);
  weft_doorbell_disarm(&w->bell);
  bool stop = w->stop;
  pthread_mutex_unlock(&w->lock);
  return stop;
}

static void *worker_main(void *arg)
{
  weft_gpu_worker *w = arg;
  /* The backend's per-thread setup first (CUDA: relaxed capture mode, so
   * that a global-mode capture elsewhere in the process does not refuse
   * this thread's calls), then CUDA's current device, which is per thread:
   * operators launch on ours. A failure of either fails every operator
   * this worker gets. */
  int bound = weft_gpu_thread_init(w->x->b);
  if (!bound)
    bound = weft_gpu_bind_thread(w->x->b, w->device);
  weft_engine_executor_thread(); /* no user operator runs inline here */
  weft_prof_tls = w->track; /* NULL when profiling is off */
  for (;;) {
    /* Before the take: a push after it is taken next time round or ends
     * the park (the doorbell's seen). */
    unsigned long seen = weft_doorbell_seen(&w->bell);
    weft_exec_op *op = queue_take(w);
    if (op) {
      if (bound)
        weft_gpu_fail_submitted(op, bound);
      else
        run_one(w, op);
      continue;
    }
    /* relaxed: the doorbell's count (read above) ordered the appends this needs. */
    if (atomic_load_explicit(&w->queued, memory_order_relaxed) != 0) {
      weft_cpu_pause(); /* an append between its two steps (mpsc.h) */
      continue;
    }
    flush_words(w); /* about to sleep: every launched operator's word first */
    if (park(w, seen) && !weft_gpu_mpsc_peek(&w->queue))
      return NULL; /* stopped, queue empty */
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
  weft_gpu_opstate *st = weft_exec_op_state(op);
  WEFT_ASSERT(st->op == op && st->phase == WEFT_GPU_OP_SUBMITTED);
  /* relaxed: made visible by the ring below (a release). */
  atomic_fetch_add_explicit(&w->queued, 1, memory_order_relaxed);
  weft_gpu_mpsc_append(&w->queue, &st->lnode);
  weft_doorbell_ring(&w->bell, &w->lock, &w->cond);
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
  /* it stops only once its queue is empty */
  WEFT_ASSERT(atomic_load_explicit(&w->queued, memory_order_relaxed) == 0);
}
