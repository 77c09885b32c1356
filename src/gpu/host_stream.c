/*
 * Host backend streams: a FIFO of items served by one thread, which sleeps
 * on a condition variable while the FIFO is empty; the markers' reference
 * counting (their holders are items and events). Also the public
 * weft_gpu_host_enqueue and the device-error test hook.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/error.h"
#include "common/sync.h"
#include "gpu/host.h"
#include "weft/weft.h"

void weft_host_marker_unref(weft_host_marker *m)
{
  /* acq_rel: the last holder sees every other holder's use of the marker
   * before it frees it; pairs with the other holders' decrements. */
  if (atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) == 1)
    weft_free(m);
}

static void jitter(weft_host_stream *s)
{
  if (!s->jitter_us)
    return;
  uint64_t x = s->rng;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  s->rng = x;
  long us = (long)((x * 0x2545F4914F6CDD1Dull) % ((uint64_t)s->jitter_us + 1));
  if (us == 0)
    return;
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static void set_failed(weft_host_stream *s)
{
  pthread_mutex_lock(&s->mu);
  s->failed = true;
  pthread_mutex_unlock(&s->mu);
}

/* Runs (or, on a failed stream, skips) one item and frees it. The stream
 * thread only; `failed` is written by this thread alone, so reading it here
 * without the lock is safe. */
static void run_item(weft_host_stream *s, weft_host_item *it)
{
  switch (it->kind) {
  case WEFT_HOST_ITEM_FN:
    if (!s->failed)
      it->fn(it->arg);
    break;
  case WEFT_HOST_ITEM_COPY:
    if (!s->failed)
      memcpy(it->dst, it->src, it->bytes);
    break;
  case WEFT_HOST_ITEM_RECORD: {
    weft_host_marker *m = it->marker;
    /* release: publishes the effects of every item before this record;
     * pairs with the acquire loads in event_query and the WAIT case. */
    atomic_store_explicit(&m->state, s->failed ? WEFT_HOST_FAILED : WEFT_HOST_DONE,
                          memory_order_release);
    weft_futex_wake(&m->state, INT_MAX);
    weft_host_marker_unref(m);
    break;
  }
  case WEFT_HOST_ITEM_WAIT: {
    weft_host_marker *m = it->marker;
    uint32_t st;
    /* acquire: pairs with the recording thread's release store above, so
     * this stream's later items see the recorded stream's earlier work. */
    while ((st = atomic_load_explicit(&m->state, memory_order_acquire)) == WEFT_HOST_PENDING)
      weft_futex_wait(&m->state, WEFT_HOST_PENDING, -1);
    if (st == WEFT_HOST_FAILED && !s->failed)
      set_failed(s);
    weft_host_marker_unref(m);
    break;
  }
  case WEFT_HOST_ITEM_ERROR:
    if (!s->failed) {
      weft_log("host device %d: device error on stream %p (injected): later work on it is "
               "not run",
               s->device, (void *)s);
      set_failed(s);
    }
    break;
  }
  weft_free(it);
}

static void *stream_main(void *arg)
{
  weft_host_stream *s = arg;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (weft_fifo_empty(&s->items) && !s->closing)
      pthread_cond_wait(&s->work_cv, &s->mu);
    weft_fifo_node *node = weft_fifo_pop(&s->items);
    if (!node)
      break; /* closing and drained */
    weft_host_item *it = weft_fifo_entry(node, weft_host_item, node);
    pthread_mutex_unlock(&s->mu);

    jitter(s);
    run_item(s, it);

    pthread_mutex_lock(&s->mu);
    s->executed++;
    if (s->sync_waiters)
      pthread_cond_broadcast(&s->idle_cv);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

int weft_host_stream_create(int device, unsigned jitter_us, weft_host_stream **out)
{
  weft_host_stream *s = weft_calloc(1, sizeof *s);
  if (!s)
    return WEFT_ENOMEM;
  s->device = device;
  s->jitter_us = jitter_us;
  s->rng = ((uint64_t)(uintptr_t)s * 0x9E3779B97F4A7C15ull) ^ (uint64_t)weft_now_ns();
  if (!s->rng)
    s->rng = 1;
  s->magic = WEFT_HOST_STREAM_MAGIC;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->work_cv, NULL);
  pthread_cond_init(&s->idle_cv, NULL);
  if (weft_thread_create(&s->thread, NULL, stream_main, s) != 0) {
    pthread_cond_destroy(&s->idle_cv);
    pthread_cond_destroy(&s->work_cv);
    pthread_mutex_destroy(&s->mu);
    weft_free(s);
    return WEFT_EAGAIN;
  }
  char name[16];
  snprintf(name, sizeof name, "weft-hgpu%u", (unsigned)device % 1000u);
  pthread_setname_np(s->thread, name);
  *out = s;
  return 0;
}

void weft_host_stream_push(weft_host_stream *s, weft_host_item *it)
{
  pthread_mutex_lock(&s->mu);
  weft_fifo_push(&s->items, &it->node);
  s->enqueued++;
  pthread_cond_signal(&s->work_cv);
  pthread_mutex_unlock(&s->mu);
}

int weft_host_stream_sync(weft_host_stream *s)
{
  pthread_mutex_lock(&s->mu);
  uint64_t target = s->enqueued;
  s->sync_waiters++;
  while (s->executed < target)
    pthread_cond_wait(&s->idle_cv, &s->mu);
  s->sync_waiters--;
  bool failed = s->failed;
  pthread_mutex_unlock(&s->mu);
  return failed ? WEFT_EDEVICE : 0;
}

void weft_host_stream_destroy(weft_host_stream *s)
{
  pthread_mutex_lock(&s->mu);
  s->closing = true;
  pthread_cond_signal(&s->work_cv);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->thread, NULL);
  WEFT_ASSERT(weft_fifo_empty(&s->items) && s->executed == s->enqueued); /* drained */
  s->magic = 0;
  pthread_cond_destroy(&s->idle_cv);
  pthread_cond_destroy(&s->work_cv);
  pthread_mutex_destroy(&s->mu);
  weft_free(s);
}

/* ------------------------------------------------------------ public */

static weft_host_stream *as_host_stream(void *stream)
{
  weft_host_stream *s = stream;
  return (s && s->magic == WEFT_HOST_STREAM_MAGIC) ? s : NULL;
}

int weft_gpu_host_enqueue(void *stream, void (*fn)(void *arg), void *arg)
{
  weft_host_stream *s = as_host_stream(stream);
  if (!s || !fn)
    return WEFT_EINVAL;
  weft_host_item *it = weft_calloc(1, sizeof *it);
  if (!it)
    return WEFT_ENOMEM;
  it->kind = WEFT_HOST_ITEM_FN;
  it->fn = fn;
  it->arg = arg;
  weft_host_stream_push(s, it);
  return 0;
}

int weft_gpu_host_test_inject_error(void *stream)
{
  weft_host_stream *s = as_host_stream(stream);
  if (!s)
    return WEFT_EINVAL;
  weft_host_item *it = weft_calloc(1, sizeof *it);
  if (!it)
    return WEFT_ENOMEM;
  it->kind = WEFT_HOST_ITEM_ERROR;
  weft_host_stream_push(s, it);
  return 0;
}
