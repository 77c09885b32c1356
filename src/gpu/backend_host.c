/* SPDX-License-Identifier: MIT */
/*
 * The host backend: emulated devices whose streams are host threads
 * (host_stream.c), events with CUDA's semantics (see host.h), copies as
 * memcpy items. "Device memory" is host memory.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/error.h"
#include "common/sync.h"
#include "common/tunables.h"
#include "gpu/host.h"
#include "weft/weft.h"

typedef struct weft_host_backend {
  weft_gpu_backend base; /* first: the interface's view */
  unsigned jitter_us;    /* immutable: passed to every stream */
} weft_host_backend;

typedef struct weft_host_event {
  int device;              /* immutable */
  pthread_mutex_t mu;      /* guards latest */
  weft_host_marker *latest; /* the latest record's marker (a reference), NULL: never recorded */
} weft_host_event;

#define HS(s) ((weft_host_stream *)(void *)(s))
#define HE(e) ((weft_host_event *)(void *)(e))

/* Testing: thread_init calls (weft_gpu_host_test_thread_inits). atomic,
 * relaxed: a count. */
static _Atomic long thread_inits;

long weft_gpu_host_test_thread_inits(void)
{
  return atomic_load_explicit(&thread_inits, memory_order_relaxed);
}

/* Nothing to set up on a thread (no capture modes here): counted only. */
static int host_thread_init(weft_gpu_backend *b)
{
  (void)b;
  atomic_fetch_add_explicit(&thread_inits, 1, memory_order_relaxed);
  return 0;
}

static void host_close(weft_gpu_backend *b)
{
  weft_free(b);
}

static int host_stream_create(weft_gpu_backend *b, int device, weft_gpu_stream **out)
{
  weft_host_backend *hb = (weft_host_backend *)b;
  weft_host_stream *s = NULL;
  int rc = weft_host_stream_create(device, hb->jitter_us, &s);
  if (rc)
    return rc;
  *out = (weft_gpu_stream *)(void *)s;
  return 0;
}

static int host_stream_destroy(weft_gpu_backend *b, weft_gpu_stream *s)
{
  (void)b;
  weft_host_stream_destroy(HS(s));
  return 0;
}

static void *host_stream_native(weft_gpu_backend *b, weft_gpu_stream *s)
{
  (void)b;
  return weft_host_stream_handle(HS(s));
}

static int host_stream_sync(weft_gpu_backend *b, weft_gpu_stream *s)
{
  (void)b;
  return weft_host_stream_sync(HS(s));
}

static int host_event_create(weft_gpu_backend *b, int device, weft_gpu_event **out)
{
  (void)b;
  weft_host_event *e = weft_calloc(1, sizeof *e);
  if (!e)
    return WEFT_ENOMEM;
  e->device = device;
  pthread_mutex_init(&e->mu, NULL);
  *out = (weft_gpu_event *)(void *)e;
  return 0;
}

static int host_event_destroy(weft_gpu_backend *b, weft_gpu_event *ev)
{
  (void)b;
  weft_host_event *e = HE(ev);
  /* A pending record's marker lives on in its record and wait items. */
  if (e->latest)
    weft_host_marker_unref(e->latest);
  pthread_mutex_destroy(&e->mu);
  weft_free(e);
  return 0;
}

/* A new item of kind (RECORD, GRAPH) with a new pending marker of device,
 * which holds two references (the item's, and its owner's: the event, or
 * the graph as its last launch); NULL without memory. */
static weft_host_item *marker_item_new(weft_host_item_kind kind, int device)
{
  weft_host_marker *m = weft_calloc(1, sizeof *m);
  weft_host_item *it = weft_calloc(1, sizeof *it);
  if (!m || !it) {
    weft_free(m);
    weft_free(it);
    return NULL;
  }
  m->device = device;
  atomic_init(&m->state, WEFT_HOST_PENDING);
  atomic_init(&m->refs, 2);
  atomic_init(&m->logged, 0);
  it->kind = kind;
  it->marker = m;
  return it;
}

static int host_event_record(weft_gpu_backend *b, weft_gpu_event *ev, weft_gpu_stream *st)
{
  (void)b;
  weft_host_event *e = HE(ev);
  weft_host_stream *s = HS(st);
  if (e->device != s->device)
    return WEFT_EINVAL; /* as CUDA: an event records on its own device's streams */
  weft_host_item *it = marker_item_new(WEFT_HOST_ITEM_RECORD, s->device); /* event's, item's */
  if (!it)
    return WEFT_ENOMEM;
  weft_host_marker *m = it->marker;
  /* First the push, which a capturing stream refuses (leaving the event as
   * it was); a query meanwhile sees the previous record, as it would have
   * a moment before the call. */
  if (weft_host_stream_push(s, it) != 0) {
    weft_free(m);
    weft_free(it);
    return WEFT_EINVAL;
  }
  pthread_mutex_lock(&e->mu);
  weft_host_marker *old = e->latest;
  e->latest = m;
  pthread_mutex_unlock(&e->mu);
  if (old)
    weft_host_marker_unref(old);
  return 0;
}

static int host_event_query(weft_gpu_backend *b, weft_gpu_event *ev)
{
  (void)b;
  weft_host_event *e = HE(ev);
  int rc = WEFT_GPU_EVENT_COMPLETE;
  pthread_mutex_lock(&e->mu);
  weft_host_marker *m = e->latest;
  if (m) {
    /* acquire: pairs with the stream thread's release store of the state,
     * so a caller that sees "complete" sees the recorded work's effects. */
    uint32_t st = atomic_load_explicit(&m->state, memory_order_acquire);
    if (st == WEFT_HOST_PENDING)
      rc = WEFT_GPU_EVENT_PENDING;
    else if (st == WEFT_HOST_FAILED) {
      rc = WEFT_EDEVICE;
      if (!atomic_exchange_explicit(&m->logged, 1, memory_order_relaxed))
        weft_log("host device %d: event %p completed on a failed stream (WEFT_EDEVICE)",
                 m->device, (void *)e);
    }
  }
  pthread_mutex_unlock(&e->mu);
  return rc;
}

static int host_stream_wait_event(weft_gpu_backend *b, weft_gpu_stream *st, weft_gpu_event *ev)
{
  (void)b;
  weft_host_event *e = HE(ev);
  weft_host_stream *s = HS(st);
  weft_host_item *it = weft_calloc(1, sizeof *it);
  if (!it)
    return WEFT_ENOMEM;
  pthread_mutex_lock(&e->mu);
  weft_host_marker *m = e->latest; /* the snapshot: the latest record now */
  if (m)
    /* relaxed: taking a reference while holding one (the event's) */
    atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
  pthread_mutex_unlock(&e->mu);
  if (!m) {
    weft_free(it); /* never recorded: complete, nothing to wait for */
    return weft_host_stream_refuse(s, "stream_wait_event"); /* but refused while capturing */
  }
  it->kind = WEFT_HOST_ITEM_WAIT;
  it->marker = m;
  if (weft_host_stream_push(s, it) != 0) {
    weft_host_marker_unref(m);
    weft_free(it);
    return WEFT_EINVAL;
  }
  return 0;
}

static int host_copy_async(weft_gpu_backend *b, weft_gpu_stream *st, void *dst, const void *src,
                           size_t bytes, weft_gpu_copy_kind kind)
{
  (void)b;
  (void)kind; /* host and device memory are the same memory */
  weft_host_item *it = weft_calloc(1, sizeof *it);
  if (!it)
    return WEFT_ENOMEM;
  it->kind = WEFT_HOST_ITEM_COPY;
  it->dst = dst;
  it->src = src;
  it->bytes = bytes;
  int rc = weft_host_stream_push(HS(st), it); /* a capture records copies: never refused */
  WEFT_ASSERT(rc == 0);
  return rc;
}

static int host_event_sync(weft_gpu_backend *b, weft_gpu_event *ev)
{
  (void)b;
  weft_host_event *e = HE(ev);
  pthread_mutex_lock(&e->mu);
  weft_host_marker *m = e->latest; /* the snapshot: the latest record now */
  if (m)
    /* relaxed: taking a reference while holding one (the event's) */
    atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
  pthread_mutex_unlock(&e->mu);
  if (!m)
    return 0; /* never recorded: complete */
  uint32_t st;
  /* acquire: pairs with the stream thread's release store of the state
   * (the recorded work's effects). */
  while ((st = atomic_load_explicit(&m->state, memory_order_acquire)) == WEFT_HOST_PENDING)
    weft_futex_wait(&m->state, WEFT_HOST_PENDING, -1);
  int rc = 0;
  if (st == WEFT_HOST_FAILED) {
    rc = WEFT_EDEVICE;
    if (!atomic_exchange_explicit(&m->logged, 1, memory_order_relaxed))
      weft_log("host device %d: event %p completed on a failed stream (WEFT_EDEVICE)",
               m->device, (void *)e);
  }
  weft_host_marker_unref(m);
  return rc;
}

/* A host word is an ordinary host allocation: the "device" is this
 * process. On a line of its own, as CUDA's pinned page would be. */
static int host_word_alloc(weft_gpu_backend *b, int device, weft_gpu_word *w)
{
  (void)b;
  _Atomic uint32_t *p = weft_aligned_alloc(WEFT_CACHE_LINE, WEFT_CACHE_LINE);
  if (!p)
    return WEFT_ENOMEM;
  atomic_init(p, 0);
  w->host = p;
  w->dev = (void *)p;
  w->device = device;
  return 0;
}

static void host_word_free(weft_gpu_backend *b, weft_gpu_word *w)
{
  (void)b;
  weft_free((void *)w->host);
}

static int host_stream_write_word(weft_gpu_backend *b, weft_gpu_stream *st, weft_gpu_word *w,
                                  uint32_t value)
{
  (void)b;
  weft_host_stream *s = HS(st);
  if (w->device != s->device)
    return WEFT_EINVAL; /* as CUDA: only its own device maps it (portable aside) */
  weft_host_item *it = weft_calloc(1, sizeof *it);
  if (!it)
    return WEFT_ENOMEM;
  it->kind = WEFT_HOST_ITEM_WORD;
  it->word = w->host;
  it->value = value;
  if (weft_host_stream_push(s, it) != 0) {
    weft_free(it);
    return WEFT_EINVAL;
  }
  return 0;
}

static int host_capture_begin(weft_gpu_backend *b, weft_gpu_stream *st)
{
  (void)b;
  return weft_host_stream_capture_begin(HS(st));
}

static int host_capture_end(weft_gpu_backend *b, weft_gpu_stream *st, weft_gpu_graph **out)
{
  (void)b;
  weft_host_stream *s = HS(st);
  weft_host_graph *g = NULL;
  const char *refused = NULL;
  int rc = weft_host_stream_capture_end(s, out ? &g : NULL, &refused);
  if (rc == WEFT_EINVAL && refused)
    weft_log("host device %d: the capture on stream %p was invalidated: %s is not capturable "
             "(WEFT_EINVAL)",
             s->device, (void *)s, refused);
  if (out)
    *out = rc ? NULL : (weft_gpu_graph *)(void *)g;
  return rc;
}

static int host_graph_launch(weft_gpu_backend *b, weft_gpu_graph *gr, weft_gpu_stream *st)
{
  (void)b;
  weft_host_graph *g = (weft_host_graph *)(void *)gr;
  weft_host_stream *s = HS(st);
  if (g->device != s->device)
    return WEFT_EINVAL; /* as CUDA: an executable graph belongs to its device */
  /* the marker's references: the graph's (as its last launch), the item's */
  weft_host_item *it = marker_item_new(WEFT_HOST_ITEM_GRAPH, s->device);
  if (!it)
    return WEFT_ENOMEM;
  weft_host_marker *m = it->marker;
  it->graph = g;
  /* relaxed: taking a reference while holding one (the caller's). */
  atomic_fetch_add_explicit(&g->refs, 1, memory_order_relaxed);

  /* Under the graph's lock from reading last to replacing it, so that the
   * launches chain in launch order; a refused push leaves last as it was. */
  pthread_mutex_lock(&g->mu);
  it->prev = g->last; /* the graph's reference passes to the item */
  int rc = weft_host_stream_push(s, it);
  if (rc == 0)
    g->last = m;
  pthread_mutex_unlock(&g->mu);
  if (rc) {
    weft_host_graph_unref(g);
    weft_free(m);
    weft_free(it);
    return WEFT_EINVAL;
  }
  return 0;
}

static void host_graph_destroy(weft_gpu_backend *b, weft_gpu_graph *g)
{
  (void)b;
  /* The owner's reference; launches still enqueued hold their own. */
  weft_host_graph_unref((weft_host_graph *)(void *)g);
}

static const weft_gpu_backend_ops host_ops = {
  .name = "host",
  .thread_init = host_thread_init,
  .close = host_close,
  .stream_create = host_stream_create,
  .stream_destroy = host_stream_destroy,
  .stream_native = host_stream_native,
  .stream_sync = host_stream_sync,
  .event_create = host_event_create,
  .event_destroy = host_event_destroy,
  .event_record = host_event_record,
  .event_query = host_event_query,
  .stream_wait_event = host_stream_wait_event,
  .copy_async = host_copy_async,
  .event_sync = host_event_sync,
  .word_alloc = host_word_alloc,
  .word_free = host_word_free,
  .stream_write_word = host_stream_write_word,
  .capture_begin = host_capture_begin,
  .capture_end = host_capture_end,
  .graph_launch = host_graph_launch,
  .graph_destroy = host_graph_destroy,
};

int weft_gpu_host_open(weft_gpu_backend **out, int devices, unsigned jitter_us)
{
  weft_host_backend *hb = weft_calloc(1, sizeof *hb);
  if (!hb)
    return WEFT_ENOMEM;
  hb->base.ops = &host_ops;
  hb->base.num_devices = devices;
  hb->jitter_us = jitter_us;
  *out = &hb->base;
  return 0;
}
