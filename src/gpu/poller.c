/* SPDX-License-Identifier: MIT */
/*
 * The completion thread ("weft-gpu-poll"): one per engine with devices. It
 * sweeps the lanes (retire.c), which retires every operator whose device
 * work completed and so releases its CPU successors and var waits; this
 * file decides what it does between sweeps, per WEFT_GPU_COMPLETION:
 *
 *  hostword (default): spins (reading host words: no driver call) for
 *    x->spin_ns after its last progress; then blocks. With one lane busy
 *    it hands that lane's head event to its waiter thread
 *    ("weft-gpu-wait"), which sleeps in event_sync (a BlockingSync event:
 *    no CPU while a long kernel runs), and parks until the waiter returns
 *    or a worker launches more; with several busy lanes it parks with a
 *    short doubling timeout (WEFT_GPU_WORD_SLEEP_MIN_NS.._MAX_NS), woken
 *    early the same ways.
 *  event: spins on event queries for x->spin_ns, then sleeps with a
 *    doubling back-off (WEFT_GPU_POLL_SLEEP_MIN_NS.._MAX_NS).
 *  blocking: no spin at all: event queries at each wake-up, and between
 *    them its waiter sleeps in event_sync on the first pending head while
 *    it parks (woken by the waiter or by a launch); completions on other
 *    lanes wait for that head or for the next launch (or the back-off's
 *    timeouts when the waiter is busy): StarPU's and OneFlow's trade.
 *
 * With nothing launched it parks until a worker launches something.
 *
 * The parking protocol is the doorbell's (common/doorbell.h): a worker
 * rings x->bell after each launch's append, and the completion thread
 * arms it under poll_lock before it waits on poll_cond. No wake-up is
 * lost, and a worker signals only while the completion thread parks: a
 * launch costs no lock otherwise.
 */
#include <errno.h>
#include <time.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/error.h"
#include "common/sync.h"
#include "common/tunables.h"
#include "gpu/gpu.h"

/* A single-lane block's timeout, so that the watchdog and the overdue
 * checks still run while a kernel never ends, ns. */
#define BLOCK_MAX_NS 100000000

void weft_gpu_poller_add(weft_gpu_exec *x, weft_gpu_lane *lane, weft_gpu_opstate *st)
{
  WEFT_ASSERT(st->phase == WEFT_GPU_OP_LAUNCHED && !st->in_lane);
  st->in_lane = true;
  weft_gpu_mpsc_append(&lane->launched, &st->lnode);
  /* relaxed: made visible by the ring below (it is a release) */
  atomic_fetch_add_explicit(&x->nlaunched, 1, memory_order_relaxed);
  weft_doorbell_ring(&x->bell, &x->poll_lock, &x->poll_cond);
}

static void deadline_after(struct timespec *ts, int64_t ns)
{
  clock_gettime(CLOCK_MONOTONIC, ts);
  ns += ts->tv_nsec;
  ts->tv_sec += ns / 1000000000;
  ts->tv_nsec = ns % 1000000000;
}

enum { PARK_STOP, PARK_WOKEN, PARK_TIMEOUT };

/* Parks until a launch after `seen`, a return of the waiter, the timeout
 * or a stop. timeout_ns < 0: none. post (hostword): an event for the
 * waiter to sleep on; if it takes it, the park's timeout is BLOCK_MAX_NS
 * instead (the waiter wakes it). */
static int park(weft_gpu_exec *x, unsigned long seen, int64_t timeout_ns, weft_gpu_event *post)
{
  pthread_mutex_lock(&x->poll_lock);
  if (post && x->wait_busy && x->wait_cur == post) {
    timeout_ns = BLOCK_MAX_NS; /* the waiter already sleeps on it */
  } else if (post && !x->wait_busy && !x->wait_req) {
    x->wait_req = post;
    pthread_cond_signal(&x->wait_cond);
    timeout_ns = BLOCK_MAX_NS;
  }
  struct timespec ts;
  if (timeout_ns >= 0)
    deadline_after(&ts, timeout_ns);
  unsigned long returns = x->wait_returns;
  weft_doorbell_arm(&x->bell);
  int why = PARK_WOKEN;
  while (!x->poll_stop && !weft_doorbell_rung(&x->bell, seen) && x->wait_returns == returns) {
    if (timeout_ns < 0) {
      pthread_cond_wait(&x->poll_cond, &x->poll_lock);
    } else if (pthread_cond_timedwait(&x->poll_cond, &x->poll_lock, &ts) == ETIMEDOUT) {
      why = PARK_TIMEOUT;
      break;
    }
  }
  weft_doorbell_disarm(&x->bell);
  if (x->poll_stop)
    why = PARK_STOP;
  pthread_mutex_unlock(&x->poll_lock);
  return why;
}

static void *poller_main(void *arg)
{
  weft_gpu_exec *x = arg;
  /* CUDA: relaxed capture mode for its queries (backend.h, thread_init). A
   * failure is logged by the backend; the thread goes on (a query a capture
   * refuses counts as pending, under the watchdog). */
  (void)weft_gpu_thread_init(x->b);
  weft_engine_executor_thread(); /* no user operator runs inline here */
  int64_t last_progress = weft_now_ns();
  int64_t sleep_ns = 0; /* the current back-off; 0: start over */
  for (;;) {
    /* Before the sweep: a launch after it is seen by the next sweep or
     * ends the park below (the doorbell's seen). */
    unsigned long seen = weft_doorbell_seen(&x->bell);
    int pending;
    weft_gpu_event *head;
    if (weft_gpu_sweep(x, &pending, &head)) {
      last_progress = weft_now_ns();
      sleep_ns = 0;
      continue;
    }
    /* relaxed: the doorbell's count (read above) ordered the appends this needs. */
    if (!pending && atomic_load_explicit(&x->nlaunched, memory_order_relaxed) == 0) {
      if (park(x, seen, -1, NULL) == PARK_STOP &&
          atomic_load_explicit(&x->nlaunched, memory_order_relaxed) == 0)
        break; /* stopped with nothing in flight: the engine drained */
      last_progress = weft_now_ns(); /* fresh work: watch it closely */
      sleep_ns = 0;
      continue;
    }
    if (!pending) { /* an append between its two steps (mpsc.h) */
      weft_cpu_pause();
      continue;
    }
    bool blocking = x->completion == WEFT_GPU_COMPLETION_BLOCKING;
    if (!blocking && weft_now_ns() - last_progress < x->spin_ns) {
      weft_cpu_pause();
      continue;
    }
    if (x->completion == WEFT_GPU_COMPLETION_EVENT) {
      sleep_ns = sleep_ns ? sleep_ns * 2 : WEFT_GPU_POLL_SLEEP_MIN_NS;
      if (sleep_ns > WEFT_GPU_POLL_SLEEP_MAX_NS)
        sleep_ns = WEFT_GPU_POLL_SLEEP_MAX_NS;
      struct timespec ts = {0, (long)sleep_ns};
      nanosleep(&ts, NULL);
      continue;
    }
    /* hostword, blocking: block. One busy lane (blocking: any number): its
     * head for the waiter, and a long park; several (or the waiter still on
     * an older event): a short one. */
    sleep_ns = sleep_ns ? sleep_ns * 2 : WEFT_GPU_WORD_SLEEP_MIN_NS;
    if (sleep_ns > WEFT_GPU_WORD_SLEEP_MAX_NS)
      sleep_ns = WEFT_GPU_WORD_SLEEP_MAX_NS;
    int why = park(x, seen, sleep_ns, pending == 1 || blocking ? head : NULL);
    if (why == PARK_STOP) /* stop comes once the engine drained: sweep on */
      continue;
    if (why == PARK_WOKEN) { /* a launch, or the waiter's event completed */
      last_progress = weft_now_ns();
      sleep_ns = 0;
    }
  }
  return NULL;
}

/* hostword, blocking: sleeps in event_sync on the event the completion
 * thread posts, then wakes it. */
static void *waiter_main(void *arg)
{
  weft_gpu_exec *x = arg;
  /* CUDA: relaxed capture mode for its event_sync (backend.h, thread_init);
   * a failure is logged by the backend. */
  (void)weft_gpu_thread_init(x->b);
  pthread_mutex_lock(&x->poll_lock);
  for (;;) {
    while (!x->wait_req && !x->poll_stop)
      pthread_cond_wait(&x->wait_cond, &x->poll_lock);
    if (!x->wait_req)
      break; /* stopped */
    weft_gpu_event *ev = x->wait_req;
    x->wait_req = NULL;
    x->wait_busy = true;
    x->wait_cur = ev;
    pthread_mutex_unlock(&x->poll_lock);
    /* Its outcome is the sweep's to read (the word, or the event's query):
     * this only ends the completion thread's park. Events are destroyed
     * only after this thread is joined (executor.c, x_close). */
    (void)weft_gpu_event_sync(x->b, ev);
    pthread_mutex_lock(&x->poll_lock);
    x->wait_busy = false;
    x->wait_cur = NULL;
    x->wait_returns++;
    pthread_cond_signal(&x->poll_cond);
  }
  pthread_mutex_unlock(&x->poll_lock);
  return NULL;
}

int weft_gpu_poller_start(weft_gpu_exec *x)
{
  if (x->completion != WEFT_GPU_COMPLETION_EVENT) {
    if (weft_thread_create(&x->waiter, NULL, waiter_main, x))
      return WEFT_EAGAIN; /* errno from pthread_create */
    x->waiter_started = true;
    /* Named by their creator: so named from the start (tests count them). */
    pthread_setname_np(x->waiter, "weft-gpu-wait");
  }
  if (weft_thread_create(&x->poller, NULL, poller_main, x)) {
    weft_gpu_poller_stop(x); /* the waiter */
    return WEFT_EAGAIN;
  }
  x->poller_started = true;
  pthread_setname_np(x->poller, "weft-gpu-poll");
  return 0;
}

void weft_gpu_poller_stop(weft_gpu_exec *x)
{
  if (!x->poller_started && !x->waiter_started)
    return;
  pthread_mutex_lock(&x->poll_lock);
  x->poll_stop = true;
  pthread_cond_signal(&x->poll_cond);
  pthread_cond_broadcast(&x->wait_cond);
  pthread_mutex_unlock(&x->poll_lock);
  if (x->poller_started)
    pthread_join(x->poller, NULL);
  if (x->waiter_started)
    pthread_join(x->waiter, NULL);
  x->poller_started = x->waiter_started = false;
  pthread_mutex_lock(&x->poll_lock);
  x->poll_stop = false; /* a failed start is tried again by a later submit */
  pthread_mutex_unlock(&x->poll_lock);
}
