/* SPDX-License-Identifier: MIT */
/*
 * Host backend streams: a FIFO of items served by one thread, which sleeps
 * on a condition variable while the FIFO is empty; the markers' reference
 * counting (their holders are items and events); the registry of stream
 * slots that the handles operators receive name (see host.h). Also the
 * public weft_gpu_host_enqueue and the device-error test hook.
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

/* ------------------------------------------------------------ registry */

/*
 * A handle is gen << 32 | index << 8 | HANDLE_TAG. The tag is odd, so no
 * aligned address (a cudaStream_t, any object) and none of CUDA's special
 * streams (0, 1, 2) is ever taken for a handle; the generation is odd while
 * its stream lives, and moves on when the stream stops taking enqueues, so
 * a stale handle is refused even once its slot is reused (until the slot's
 * generation wraps, after 2^31 streams in that slot).
 *
 * Slots are taken and given back with atomics alone (no process-wide lock),
 * so a child of fork() finds the registry consistent: the slots its
 * parent's streams held stay taken there, the others are free.
 */
#define HANDLE_TAG 0xb5u
#define SLOTS_PER_CHUNK 64
#define MAX_CHUNKS 1024 /* 65,536 streams at once (each one a thread) */

_Static_assert(UINTPTR_MAX >= UINT64_MAX, "a handle needs 64 bits");
_Static_assert((uint64_t)MAX_CHUNKS * SLOTS_PER_CHUNK <= (1u << 24), "index: 24 bits");

/* atomic: each set once, NULL to a chunk of SLOTS_PER_CHUNK slots, never
 * freed (release CAS in chunk_make: publishes the slots' initialisation;
 * pairs with the acquire loads in slot_take and slot_of). */
static _Atomic(weft_host_stream *) chunks[MAX_CHUNKS];

/* Makes chunk c (or finds the one another thread made first); NULL: no
 * memory. */
static weft_host_stream *chunk_make(size_t c)
{
  size_t bytes = SLOTS_PER_CHUNK * sizeof(weft_host_stream);
  weft_host_stream *chunk = weft_aligned_alloc(_Alignof(weft_host_stream), bytes);
  if (!chunk)
    return NULL;
  memset(chunk, 0, bytes);
  for (size_t i = 0; i < SLOTS_PER_CHUNK; i++) {
    weft_host_stream *s = &chunk[i];
    atomic_init(&s->taken, 0);
    atomic_init(&s->gen, 0);
    s->index = (uint32_t)(c * SLOTS_PER_CHUNK + i);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work_cv, NULL);
    pthread_cond_init(&s->idle_cv, NULL);
  }
  weft_host_stream *found = NULL;
  /* release: publishes the slots above; pairs with the acquire loads of
   * chunks[]. acquire (on failure, the only use of acq_rel's): another
   * thread's chunk, read as those loads read it. */
  if (atomic_compare_exchange_strong_explicit(&chunks[c], &found, chunk, memory_order_acq_rel,
                                              memory_order_acquire))
    return chunk;
  for (size_t i = 0; i < SLOTS_PER_CHUNK; i++) {
    pthread_cond_destroy(&chunk[i].idle_cv);
    pthread_cond_destroy(&chunk[i].work_cv);
    pthread_mutex_destroy(&chunk[i].mu);
  }
  weft_free(chunk);
  return found;
}

/* Takes a free slot, making a chunk when all so far are taken: 0,
 * WEFT_ENOMEM, or WEFT_EAGAIN (the registry is full). */
static int slot_take(weft_host_stream **out)
{
  for (size_t c = 0; c < MAX_CHUNKS; c++) {
    /* acquire: pairs with chunk_make's release CAS (the slots' init). */
    weft_host_stream *chunk = atomic_load_explicit(&chunks[c], memory_order_acquire);
    if (!chunk && !(chunk = chunk_make(c)))
      return WEFT_ENOMEM;
    for (size_t i = 0; i < SLOTS_PER_CHUNK; i++) {
      weft_host_stream *s = &chunk[i];
      uint32_t free_slot = 0;
      /* relaxed: a glance that skips taken slots; the CAS decides. acquire
       * CAS: pairs with slot_give's release store, so the slot's last
       * stream is done with it before this one writes it. */
      if (atomic_load_explicit(&s->taken, memory_order_relaxed) == 0 &&
          atomic_compare_exchange_strong_explicit(&s->taken, &free_slot, 1, memory_order_acquire,
                                                  memory_order_relaxed)) {
        *out = s;
        return 0;
      }
    }
  }
  return WEFT_EAGAIN;
}

static void slot_give(weft_host_stream *s)
{
  /* release: this stream's last use of the slot happens before the next
   * taker's; pairs with the acquire CAS in slot_take. */
  atomic_store_explicit(&s->taken, 0, memory_order_release);
}

/* The slot a handle names and the generation it carries; NULL when it
 * cannot be a handle (nothing is read through the caller's pointer). */
static weft_host_stream *slot_of(void *handle, uint32_t *gen)
{
  uint64_t h = (uint64_t)(uintptr_t)handle;
  uint64_t index = (h >> 8) & 0xffffffu;
  *gen = (uint32_t)(h >> 32);
  if ((h & 0xffu) != HANDLE_TAG || !(*gen & 1u) ||
      index >= (uint64_t)MAX_CHUNKS * SLOTS_PER_CHUNK)
    return NULL;
  /* acquire: pairs with chunk_make's release CAS (the slots' init). */
  weft_host_stream *chunk =
    atomic_load_explicit(&chunks[index / SLOTS_PER_CHUNK], memory_order_acquire);
  return chunk ? &chunk[index % SLOTS_PER_CHUNK] : NULL;
}

/* ------------------------------------------------------------ streams */

void weft_host_marker_unref(weft_host_marker *m)
{
  /* acq_rel: the last holder sees every other holder's use of the marker
   * before it frees it; pairs with the other holders' decrements. */
  if (atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) == 1)
    weft_free(m);
}

void weft_host_graph_unref(weft_host_graph *g)
{
  /* acq_rel: the last holder sees every other holder's use of the graph
   * (its replays, the launches' writes of last) before it frees it; pairs
   * with the other holders' decrements. */
  if (atomic_fetch_sub_explicit(&g->refs, 1, memory_order_acq_rel) == 1) {
    if (g->last)
      weft_host_marker_unref(g->last);
    pthread_mutex_destroy(&g->mu);
    weft_free(g);
  }
}

/* Completes a marker (st: DONE or FAILED), waking its waiters, and drops
 * the caller's reference. */
static void marker_complete(weft_host_marker *m, uint32_t st)
{
  /* release: publishes the effects of every item before the marker's
   * place; pairs with the acquire loads in event_query, event_sync and
   * marker_wait. */
  atomic_store_explicit(&m->state, st, memory_order_release);
  weft_futex_wake(&m->state, INT_MAX);
  weft_host_marker_unref(m);
}

/* Sleeps until m completes; its final state. */
static uint32_t marker_wait(weft_host_marker *m)
{
  uint32_t st;
  /* acquire: pairs with marker_complete's release store, so this stream's
   * later items see the work before the marker. */
  while ((st = atomic_load_explicit(&m->state, memory_order_acquire)) == WEFT_HOST_PENDING)
    weft_futex_wait(&m->state, WEFT_HOST_PENDING, -1);
  return st;
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

/* The work of an FN, COPY or ERROR item, plain or replayed (the others
 * are not captured): run, or skipped on a failed stream. The stream thread
 * only, as run_item. */
static void run_work(weft_host_stream *s, const weft_host_item *it)
{
  WEFT_ASSERT(it->kind == WEFT_HOST_ITEM_FN || it->kind == WEFT_HOST_ITEM_COPY ||
              it->kind == WEFT_HOST_ITEM_ERROR);
  switch (it->kind) {
  case WEFT_HOST_ITEM_FN:
    if (!s->failed)
      it->fn(it->arg);
    break;
  case WEFT_HOST_ITEM_COPY:
    if (!s->failed)
      memcpy(it->dst, it->src, it->bytes);
    break;
  case WEFT_HOST_ITEM_ERROR:
    if (!s->failed) {
      weft_log("host device %d: device error on stream %p (injected): later work on it is "
               "not run",
               s->device, (void *)s);
      set_failed(s);
    }
    break;
  default:
    break;
  }
}

/* Runs (or, on a failed stream, skips) one item and frees it. The stream
 * thread only; `failed` is written by this thread alone, so reading it here
 * without the lock is safe. */
static void run_item(weft_host_stream *s, weft_host_item *it)
{
  switch (it->kind) {
  case WEFT_HOST_ITEM_FN:
  case WEFT_HOST_ITEM_COPY:
  case WEFT_HOST_ITEM_ERROR:
    run_work(s, it);
    break;
  case WEFT_HOST_ITEM_RECORD:
    marker_complete(it->marker, s->failed ? WEFT_HOST_FAILED : WEFT_HOST_DONE);
    break;
  case WEFT_HOST_ITEM_WAIT: {
    weft_host_marker *m = it->marker;
    if (marker_wait(m) == WEFT_HOST_FAILED && !s->failed)
      set_failed(s);
    weft_host_marker_unref(m);
    break;
  }
  case WEFT_HOST_ITEM_GRAPH: {
    /* After the graph's previous launch (on any stream): only the order
     * counts here, not how it ended (its stream's failure is its own). */
    if (it->prev) {
      (void)marker_wait(it->prev);
      weft_host_marker_unref(it->prev);
    }
    /* The replay: the recorded items in order, each after the stream's
     * jitter as a plain item (the launch had its own before it). */
    const weft_host_graph *g = it->graph;
    for (size_t i = 0; i < g->n; i++) {
      jitter(s);
      run_work(s, &g->items[i]);
    }
    marker_complete(it->marker, s->failed ? WEFT_HOST_FAILED : WEFT_HOST_DONE);
    weft_host_graph_unref(it->graph);
    break;
  }
  case WEFT_HOST_ITEM_WORD:
    /* release: publishes the effects of every item before this one (as
     * the device's system-scope fence before its write does); pairs with
     * the completion thread's acquire load of the word. A failed stream
     * never writes it, as a CUDA context after a sticky error. */
    if (!s->failed)
      atomic_store_explicit(it->word, it->value, memory_order_release);
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
    if (!node) {
      /* Closing and drained: from now on the stream takes no enqueue (its
       * handle is stale). relaxed: gen is written and read under mu. */
      atomic_store_explicit(&s->gen, atomic_load_explicit(&s->gen, memory_order_relaxed) + 1,
                            memory_order_relaxed);
      break;
    }
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
  weft_host_stream *s = NULL;
  int rc = slot_take(&s);
  if (rc)
    return rc;
  s->device = device;
  s->jitter_us = jitter_us;
  s->rng = ((uint64_t)(uintptr_t)s * 0x9E3779B97F4A7C15ull) ^ (uint64_t)weft_now_ns();
  if (!s->rng)
    s->rng = 1;
  /* An enqueue with a stale handle may take mu at any time (and finds gen
   * even): what mu guards is reset under it. */
  pthread_mutex_lock(&s->mu);
  weft_fifo_init(&s->items);
  s->enqueued = 0;
  s->executed = 0;
  s->sync_waiters = 0;
  s->closing = false;
  s->failed = false;
  s->capturing = false;
  s->capture_refused = NULL;
  weft_fifo_init(&s->captured);
  s->captured_n = 0;
  pthread_mutex_unlock(&s->mu);
  if (weft_thread_create(&s->thread, NULL, stream_main, s) != 0) {
    slot_give(s);
    return WEFT_EAGAIN;
  }
  char name[16];
  snprintf(name, sizeof name, "weft-hgpu%u", (unsigned)device % 1000u);
  pthread_setname_np(s->thread, name);
  pthread_mutex_lock(&s->mu);
  /* relaxed: under mu (odd: the stream takes enqueues from now on). */
  uint32_t gen = atomic_load_explicit(&s->gen, memory_order_relaxed) + 1;
  atomic_store_explicit(&s->gen, gen, memory_order_relaxed);
  pthread_mutex_unlock(&s->mu);
  s->handle = (void *)(uintptr_t)((uint64_t)gen << 32 | (uint64_t)s->index << 8 | HANDLE_TAG);
  *out = s;
  return 0;
}

/* The call that enqueues an item of this kind (what a refusal names). */
static const char *kind_call(weft_host_item_kind kind)
{
  switch (kind) {
  case WEFT_HOST_ITEM_RECORD:
    return "event_record";
  case WEFT_HOST_ITEM_WAIT:
    return "stream_wait_event";
  case WEFT_HOST_ITEM_WORD:
    return "stream_write_word";
  case WEFT_HOST_ITEM_GRAPH:
    return "graph_launch";
  default:
    return "an enqueue";
  }
}

/* Under mu, while capturing: a refused call invalidates the capture (the
 * first one is what capture_end names). */
static void refuse_locked(weft_host_stream *s, const char *call)
{
  if (!s->capture_refused)
    s->capture_refused = call;
}

/* Appends it to the FIFO, or to the capture while capturing: 0, or
 * WEFT_EINVAL when the capture cannot record its kind. Under mu. */
static int push_locked(weft_host_stream *s, weft_host_item *it)
{
  if (s->capturing) {
    if (it->kind != WEFT_HOST_ITEM_FN && it->kind != WEFT_HOST_ITEM_COPY &&
        it->kind != WEFT_HOST_ITEM_ERROR) {
      refuse_locked(s, kind_call(it->kind));
      return WEFT_EINVAL;
    }
    weft_fifo_push(&s->captured, &it->node);
    s->captured_n++;
    return 0;
  }
  weft_fifo_push(&s->items, &it->node);
  s->enqueued++;
  pthread_cond_signal(&s->work_cv);
  return 0;
}

int weft_host_stream_refuse(weft_host_stream *s, const char *call)
{
  pthread_mutex_lock(&s->mu);
  bool capturing = s->capturing;
  if (capturing)
    refuse_locked(s, call);
  pthread_mutex_unlock(&s->mu);
  return capturing ? WEFT_EINVAL : 0;
}

int weft_host_stream_push(weft_host_stream *s, weft_host_item *it)
{
  pthread_mutex_lock(&s->mu);
  /* relaxed: under mu. The owner pushes only while the stream lives. */
  WEFT_ASSERT(atomic_load_explicit(&s->gen, memory_order_relaxed) & 1u);
  int rc = push_locked(s, it);
  pthread_mutex_unlock(&s->mu);
  return rc;
}

/* Frees a list of captured items (they own no reference). */
static void free_captured(weft_fifo *q)
{
  weft_fifo_node *node;
  while ((node = weft_fifo_pop(q)))
    weft_free(weft_fifo_entry(node, weft_host_item, node));
}

int weft_host_stream_capture_begin(weft_host_stream *s)
{
  pthread_mutex_lock(&s->mu);
  bool was = s->capturing;
  if (!was) {
    s->capturing = true;
    s->capture_refused = NULL;
    weft_fifo_init(&s->captured);
    s->captured_n = 0;
  }
  pthread_mutex_unlock(&s->mu);
  return was ? WEFT_EINVAL : 0;
}

int weft_host_stream_capture_end(weft_host_stream *s, weft_host_graph **out,
                                 const char **refused)
{
  *refused = NULL;
  pthread_mutex_lock(&s->mu);
  if (!s->capturing) {
    pthread_mutex_unlock(&s->mu);
    return WEFT_EINVAL;
  }
  weft_fifo list = s->captured;
  size_t n = s->captured_n;
  const char *why = s->capture_refused;
  s->capturing = false;
  s->capture_refused = NULL;
  weft_fifo_init(&s->captured);
  s->captured_n = 0;
  pthread_mutex_unlock(&s->mu);

  if (!out || why) {
    free_captured(&list);
    *refused = why;
    return why && out ? WEFT_EINVAL : 0;
  }
  weft_host_graph *g = weft_calloc(1, sizeof *g + n * sizeof g->items[0]);
  if (!g) {
    free_captured(&list);
    return WEFT_ENOMEM;
  }
  atomic_init(&g->refs, 1); /* the owner's */
  g->device = s->device;
  pthread_mutex_init(&g->mu, NULL);
  g->last = NULL;
  g->n = n;
  for (size_t i = 0; i < n; i++) {
    weft_host_item *it = weft_fifo_entry(weft_fifo_pop(&list), weft_host_item, node);
    g->items[i] = *it;
    g->items[i].node.next = NULL;
    weft_free(it);
  }
  WEFT_ASSERT(weft_fifo_empty(&list));
  *out = g;
  return 0;
}

/* Appends it if the stream in s is the one of generation gen and takes
 * enqueues from the calling thread: until destroy began, from any thread;
 * then only from the stream's own items, until its thread exits. Returns
 * whether it did. Decided under mu, as the thread decides to exit, so an
 * item accepted here runs before destroy returns, and a destroy waits for
 * an enqueue that found the stream live (holding mu) to finish. */
static bool push_live(weft_host_stream *s, uint32_t gen, weft_host_item *it)
{
  pthread_mutex_lock(&s->mu);
  /* relaxed: gen is written under mu. s->thread is this generation's when
   * gen matches (written before gen was made odd, under mu). */
  bool live = atomic_load_explicit(&s->gen, memory_order_relaxed) == gen &&
              (!s->closing || pthread_equal(pthread_self(), s->thread));
  if (live) {
    int rc = push_locked(s, it); /* FN and ERROR: a capture records them */
    WEFT_ASSERT(rc == 0);
    (void)rc;
  }
  pthread_mutex_unlock(&s->mu);
  return live;
}

/* A first look, without mu: whether s may be the live stream of generation
 * gen (push_live decides). relaxed: a stale answer only costs an allocation
 * or returns what a call a moment earlier would have. */
static bool maybe_live(weft_host_stream *s, uint32_t gen)
{
  return atomic_load_explicit(&s->gen, memory_order_relaxed) == gen;
}

int weft_host_stream_sync(weft_host_stream *s)
{
  pthread_mutex_lock(&s->mu);
  if (s->capturing) {
    refuse_locked(s, "stream_sync");
    pthread_mutex_unlock(&s->mu);
    return WEFT_EINVAL;
  }
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
  if (s->capturing) {
    /* A capture still open is discarded: nothing of it runs. */
    free_captured(&s->captured);
    s->captured_n = 0;
    s->capturing = false;
    s->capture_refused = NULL;
  }
  s->closing = true;
  pthread_cond_signal(&s->work_cv);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->thread, NULL);
  /* Drained, and the thread made gen even as it exited. relaxed: the join
   * orders the thread's writes before these reads. */
  WEFT_ASSERT(weft_fifo_empty(&s->items) && s->executed == s->enqueued);
  WEFT_ASSERT(!(atomic_load_explicit(&s->gen, memory_order_relaxed) & 1u));
  slot_give(s);
}

/* ------------------------------------------------------------ public */

/* Appends a new item of kind (fn, arg) to the live stream the handle
 * names; WEFT_EINVAL when there is none. */
static int enqueue_item(void *stream, weft_host_item_kind kind, void (*fn)(void *arg), void *arg)
{
  uint32_t gen;
  weft_host_stream *s = slot_of(stream, &gen);
  if (!s || !maybe_live(s, gen))
    return WEFT_EINVAL;
  weft_host_item *it = weft_calloc(1, sizeof *it);
  if (!it)
    return WEFT_ENOMEM;
  it->kind = kind;
  it->fn = fn;
  it->arg = arg;
  if (!push_live(s, gen, it)) {
    weft_free(it);
    return WEFT_EINVAL;
  }
  return 0;
}

int weft_gpu_host_enqueue(void *stream, void (*fn)(void *arg), void *arg)
{
  if (!fn)
    return WEFT_EINVAL;
  return enqueue_item(stream, WEFT_HOST_ITEM_FN, fn, arg);
}

int weft_gpu_host_test_inject_error(void *stream)
{
  return enqueue_item(stream, WEFT_HOST_ITEM_ERROR, NULL, NULL);
}
