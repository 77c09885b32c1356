/*
 * The completion poller: one thread per engine with devices. It watches the
 * oldest launched operator of every lane (a stream's operators complete in
 * launch order, so only the head can be next) and finishes each operator
 * whose event completed, which releases its CPU successors and var waits.
 *
 * CPU use: while something is launched it polls, spinning for
 * WEFT_GPU_POLL_SPIN_NS after the last completion it saw, then sleeping
 * with a doubling back-off (WEFT_GPU_POLL_SLEEP_MIN_NS to _MAX_NS); with
 * nothing launched it sleeps on a condition variable until a worker
 * launches something.
 *
 * A device error fails only the operators whose own events report it (and
 * those not yet launched, at their worker): one on another stream of the
 * failed device completes when its own work does, never early.
 *
 * Watchdog: an operator whose event stays pending for the executor's
 * watchdog_ns fails with WEFT_EDEVICE, and its device with it.
 */
#include <inttypes.h>
#include <time.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/error.h"
#include "common/sync.h"
#include "common/tunables.h"
#include "gpu/gpu.h"

void weft_gpu_poller_add(weft_gpu_exec *x, weft_gpu_lane *lane, weft_gpu_opstate *st)
{
  pthread_mutex_lock(&x->poll_lock);
  WEFT_ASSERT(st->phase == WEFT_GPU_OP_LAUNCHED && !st->in_lane);
  WEFT_ASSERT((lane->nlaunched == 0) == weft_fifo_empty(&lane->launched));
  weft_fifo_push(&lane->launched, &st->lnode);
  st->in_lane = true;
  lane->nlaunched++;
  if (x->nlaunched++ == 0)
    pthread_cond_signal(&x->poll_cond);
  pthread_mutex_unlock(&x->poll_lock);
}

/* Finishes every completed operator at the head of lane; returns how many. */
static int drain_lane(weft_gpu_exec *x, weft_gpu_device *d, int device, weft_gpu_lane *lane,
                      int64_t now)
{
  int done = 0;
  for (;;) {
    pthread_mutex_lock(&x->poll_lock);
    weft_fifo_node *head = weft_fifo_peek(&lane->launched);
    pthread_mutex_unlock(&x->poll_lock);
    if (!head)
      return done;
    weft_gpu_opstate *st = weft_fifo_entry(head, weft_gpu_opstate, lnode);
    weft_exec_op *op = st->op;
    /* Its own event decides, also on a failed device: an operator of
     * another stream may still run there (its kernel reading a buffer a CPU
     * successor would overwrite), so it completes only once its event says
     * its work stopped: done, or failed (after a device error the backends
     * fail what is queued behind it: CUDA's errors are sticky, the host
     * backend's failed stream completes its later events as failed). Work
     * that never completes is the watchdog's. */
    int q = weft_gpu_event_query(x->b, st->ev);
    if (q == WEFT_GPU_EVENT_PENDING) {
      if (!x->watchdog_ns)
        return done;
      if (!lane->head_since_ns) {
        lane->head_since_ns = now;
        return done;
      }
      if (now - lane->head_since_ns < x->watchdog_ns)
        return done;
      weft_log("GPU %d: operator %s did not complete within %" PRId64
               " ms (WEFT_GPU_WATCHDOG_MS); the device is failed",
               device, weft_exec_op_name(op), x->watchdog_ns / 1000000);
      q = WEFT_EDEVICE;
    }
    lane->head_since_ns = 0;
    if (lane->track) {
      /* The stream's span for op: from its launch (or the stream's previous
       * completion, if later: the stream runs one operator at a time) to the
       * completion seen here. */
      int64_t t1 = weft_prof_now(), t0 = st->launched > lane->last_end ? st->launched : lane->last_end;
      weft_prof_span(lane->track, weft_exec_op_name(op), t0 < t1 ? t0 : t1, t1);
      lane->last_end = t1;
    }
    if (q != WEFT_GPU_EVENT_COMPLETE) /* release: pairs with the workers' acquire loads */
      atomic_store_explicit(&d->failed, 1, memory_order_release);
    /* Its own event decides: work that completed before another stream's
     * failure succeeded (operators launched after it fail at the worker). */
    int status = q == WEFT_GPU_EVENT_COMPLETE ? 0 : WEFT_EDEVICE;
    pthread_mutex_lock(&x->poll_lock);
    WEFT_ASSERT(weft_fifo_peek(&lane->launched) == head && lane->nlaunched > 0 && x->nlaunched > 0);
    weft_fifo_pop(&lane->launched);
    st->in_lane = false;
    lane->nlaunched--;
    x->nlaunched--;
    WEFT_ASSERT((lane->nlaunched == 0) == weft_fifo_empty(&lane->launched));
    pthread_mutex_unlock(&x->poll_lock);
    WEFT_ASSERT(st->phase == WEFT_GPU_OP_LAUNCHED); /* device done once per launch */
    st->phase = WEFT_GPU_OP_DONE;
    weft_exec_op_device_done(op, status);
    done++;
  }
}

static int sweep(weft_gpu_exec *x)
{
  int64_t now = weft_now_ns();
  int done = 0;
  for (int i = 0; i < x->ndev; i++) {
    weft_gpu_device *d = &x->dev[i];
    /* acquire: pairs with the release that publishes a started device's
     * workers (executor.c, device_ready). */
    if (!atomic_load_explicit(&d->started, memory_order_acquire))
      continue;
    for (int k = 0; k < x->ncompute; k++)
      done += drain_lane(x, d, i, &d->compute[k].lane[0], now);
    for (int k = 0; k < x->ncopy; k++)
      for (int l = 0; l < 2; l++)
        done += drain_lane(x, d, i, &d->copy[k].lane[l], now);
  }
  return done;
}

static void *poller_main(void *arg)
{
  weft_gpu_exec *x = arg;
  pthread_setname_np(pthread_self(), "weft-gpu-poll");
  weft_engine_executor_thread(); /* no user operator runs inline here */
  int64_t sleep_ns = WEFT_GPU_POLL_SLEEP_MIN_NS;
  int64_t spin_end = 0;
  pthread_mutex_lock(&x->poll_lock);
  for (;;) {
    while (x->nlaunched == 0 && !x->poll_stop) {
      pthread_cond_wait(&x->poll_cond, &x->poll_lock);
      spin_end = weft_now_ns() + WEFT_GPU_POLL_SPIN_NS; /* fresh work: watch it closely */
      sleep_ns = WEFT_GPU_POLL_SLEEP_MIN_NS;
    }
    if (x->nlaunched == 0) /* stopped with nothing in flight */
      break;
    pthread_mutex_unlock(&x->poll_lock);
    if (sweep(x)) {
      spin_end = weft_now_ns() + WEFT_GPU_POLL_SPIN_NS;
      sleep_ns = WEFT_GPU_POLL_SLEEP_MIN_NS;
    } else if (weft_now_ns() < spin_end) {
      weft_cpu_pause();
    } else {
      struct timespec ts = {0, (long)sleep_ns};
      nanosleep(&ts, NULL);
      if (sleep_ns < WEFT_GPU_POLL_SLEEP_MAX_NS)
        sleep_ns *= 2;
    }
    pthread_mutex_lock(&x->poll_lock);
  }
  pthread_mutex_unlock(&x->poll_lock);
  return NULL;
}

int weft_gpu_poller_start(weft_gpu_exec *x)
{
  int rc = weft_thread_create(&x->poller, NULL, poller_main, x);
  if (rc)
    return WEFT_EAGAIN; /* errno from pthread_create */
  x->poller_started = true;
  return 0;
}

void weft_gpu_poller_stop(weft_gpu_exec *x)
{
  if (!x->poller_started)
    return;
  pthread_mutex_lock(&x->poll_lock);
  x->poll_stop = true;
  pthread_cond_signal(&x->poll_cond);
  pthread_mutex_unlock(&x->poll_lock);
  pthread_join(x->poller, NULL);
  x->poller_started = false;
}
