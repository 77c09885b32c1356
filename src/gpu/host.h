/* SPDX-License-Identifier: MIT */
/*
 * The host backend's internals (emulated devices): streams are FIFOs of
 * items served by one thread each (host_stream.c); events point at the
 * marker of their latest record (backend_host.c), whose references
 * host_stream.c counts.
 *
 * A marker is one record's capture: the stream thread completes it when it
 * reaches the record's place in the FIFO, i.e. after every item enqueued
 * before the record ran. An event keeps a reference to its latest marker; a
 * stream-wait item keeps one to the marker it snapshotted at call time, so
 * a re-record (a new marker) cannot change an earlier wait, and an event may
 * be destroyed while waits on it are pending.
 *
 * Capture: a capturing stream appends its FN, COPY and ERROR items to a
 * capture list instead of its FIFO, whoever enqueues them (an item of the
 * stream itself too), and refuses every other kind (which invalidates the
 * capture). capture_end copies the list into a graph: an
 * immutable, reference-counted array of items. A launch enqueues one GRAPH
 * item, which holds a reference to the graph until it ran; it first waits
 * for the graph's previous launch (a marker the graph keeps), so launches
 * of one graph run one at a time, in launch order, as CUDA's do. The
 * stream's jitter comes before the GRAPH item, as before any item, and
 * again before each item it replays.
 */
#ifndef WEFT_GPU_HOST_H
#define WEFT_GPU_HOST_H
#include "gpu/layer.h" /* layer guard: no include from a lower layer */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/fifo.h"
#include "common/tunables.h"
#include "gpu/backend.h"

/* A marker's state. */
enum { WEFT_HOST_PENDING = 0, WEFT_HOST_DONE = 1, WEFT_HOST_FAILED = 2 };

typedef struct weft_host_marker {
  /* WEFT_HOST_*: written once by the recording stream's thread (release: it
   * publishes every effect of the items before the record), read by queries
   * and by waiting stream threads (acquire); also the futex word waits sleep
   * on. */
  _Atomic uint32_t state;
  /* References: the event while it is its latest record, the record item
   * until it ran, each wait item until it ran. acq_rel decrements: the last
   * one frees. */
  _Atomic int refs;
  /* Set once (relaxed exchange) by the first query that reports the failure,
   * so the log line appears once per marker. */
  _Atomic int logged;
  int device; /* immutable: the device of the recording stream */
} weft_host_marker;

typedef enum {
  WEFT_HOST_ITEM_FN,     /* run fn(arg) */
  WEFT_HOST_ITEM_COPY,   /* memcpy(dst, src, bytes) */
  WEFT_HOST_ITEM_RECORD, /* complete marker */
  WEFT_HOST_ITEM_WAIT,   /* sleep until marker completes */
  WEFT_HOST_ITEM_ERROR,  /* injected device error: the stream fails */
  WEFT_HOST_ITEM_WORD,   /* store value into word (a host word: backend.h) */
  WEFT_HOST_ITEM_GRAPH,  /* wait for prev, replay graph's items, complete marker */
} weft_host_item_kind;

typedef struct weft_host_graph weft_host_graph;

typedef struct weft_host_item {
  weft_fifo_node node;         /* the stream's FIFO link: under the stream's mu */
  weft_host_item_kind kind;    /* immutable once enqueued, as the fields below */
  void (*fn)(void *arg);
  void *arg;
  void *dst;
  const void *src;
  size_t bytes;
  weft_host_marker *marker; /* RECORD, WAIT, GRAPH (its launch's end): a reference the item owns */
  _Atomic uint32_t *word;   /* WORD */
  uint32_t value;           /* WORD */
  weft_host_graph *graph;   /* GRAPH: a reference the item owns */
  weft_host_marker *prev;   /* GRAPH: the graph's previous launch's end (a reference), or NULL */
} weft_host_item;

/* A stream's capture, instantiated (backend.h's weft_gpu_graph). */
struct weft_host_graph {
  /* References: the owner's (until graph_destroy), each GRAPH item until it
   * ran. acq_rel decrements: the last one frees. */
  _Atomic int refs;
  int device;         /* immutable: the capturing stream's */
  pthread_mutex_t mu; /* guards last */
  /* The latest launch's end marker (a reference), completed once that
   * replay ran; NULL: never launched. The next launch waits for it. */
  weft_host_marker *last;
  size_t n;                /* immutable */
  weft_host_item items[];  /* immutable: copies of the recorded FN, COPY, ERROR items */
};

/*
 * A stream lives in a slot of a process-wide registry (host_stream.c) whose
 * memory is never freed: slots are made in chunks, and a destroyed stream's
 * slot is reused by a later create. The handle operators receive (the
 * "native" stream, weft_run_ctx.stream) is not the slot's address but its
 * index and its generation, so weft_gpu_host_enqueue checks a handle
 * against the registry without reading through the caller's pointer, and a
 * stale handle (its stream destroyed, the slot perhaps reused) is refused.
 */
typedef struct weft_host_stream {
  /* The registry's: 1 while the slot belongs to a stream, from create until
   * destroy returns. An acquire CAS takes it (create), a release store gives
   * it back (destroy): the next user of the slot sees the last one done.
   * Aligned: slots are neighbours in a chunk, and each stream's lock is
   * busy on its own. */
  _Alignas(WEFT_CACHE_LINE) _Atomic uint32_t taken;
  uint32_t index; /* immutable: the slot's place in the registry */

  /* Written by create before the stream is handed out, immutable until
   * destroy returns. */
  int device;
  unsigned jitter_us; /* random sleep before each item, microseconds */
  pthread_t thread;   /* joined by destroy */
  void *handle;       /* what weft_gpu_host_stream_handle returns: index and gen */
  uint64_t rng;       /* the stream thread only: jitter's random state */

  /* Initialised once with the slot's chunk and never destroyed, so that an
   * enqueue with a stale handle may still take it. */
  pthread_mutex_t mu;      /* guards everything below */
  pthread_cond_t work_cv;  /* the thread sleeps here while the FIFO is empty */
  pthread_cond_t idle_cv;  /* stream_sync sleeps here until executed catches up */
  /* Odd while the stream takes enqueues (create made it odd, and the
   * stream's thread makes it even as it exits, closing with its FIFO
   * drained); a handle names the odd value of its stream. Written under mu;
   * atomic so that an enqueue may pre-check it (relaxed) before it
   * allocates, deciding under mu. */
  _Atomic uint32_t gen;
  weft_fifo items;         /* weft_host_item (node): enqueuers push, the thread pops */
  uint64_t enqueued;       /* items ever enqueued in this stream's life */
  uint64_t executed;       /* items the thread finished (run or skipped) */
  int sync_waiters;        /* threads in stream_sync */
  bool closing;            /* destroy began: the thread exits once the FIFO is empty;
                              only the stream's own items may enqueue meanwhile */
  bool failed;             /* a device error: later FN/COPY items are skipped,
                              later records complete as failed (written by the thread) */
  bool capturing;          /* capture_begin until capture_end (or destroy) */
  /* While capturing: NULL, or the first refused call (what invalidated the
   * capture; capture_end names it). */
  const char *capture_refused;
  weft_fifo captured;      /* while capturing: FN, COPY, ERROR items (node), in order */
  size_t captured_n;       /* how many */
} weft_host_stream;

/* host_stream.c */
/* WEFT_ENOMEM, WEFT_EAGAIN (no thread, or the registry is full). */
int weft_host_stream_create(int device, unsigned jitter_us, weft_host_stream **out);
/* Drains, joins and gives the slot back. Meanwhile only the stream's own
 * items may enqueue on it; once it returns the handle is refused. */
void weft_host_stream_destroy(weft_host_stream *s);
/* The stream's handle for operators (weft_gpu_host_enqueue takes it). */
static inline void *weft_host_stream_handle(const weft_host_stream *s)
{
  return s->handle;
}
/* Appends an item (ownership passes to the stream), or records it if the
 * stream captures (FN, COPY, ERROR); s is live: the caller owns it (a
 * device worker, a test), so no check is made. WEFT_EINVAL, the item
 * staying the caller's: the stream captures and cannot record the item's
 * kind (the capture is then invalid). */
int weft_host_stream_push(weft_host_stream *s, weft_host_item *it);
/* For a call that enqueues nothing: WEFT_EINVAL (invalidating the capture,
 * call naming the cause) if s captures, else 0. */
int weft_host_stream_refuse(weft_host_stream *s, const char *call);
/* Waits until every item enqueued before the call ran; WEFT_EDEVICE if the
 * stream failed, WEFT_EINVAL if it captures (invalidating the capture),
 * else 0. */
int weft_host_stream_sync(weft_host_stream *s);
/* backend.h's capture_begin and capture_end (without the log line: the
 * caller writes it); *refused: what invalidated the capture, or NULL. */
int weft_host_stream_capture_begin(weft_host_stream *s);
int weft_host_stream_capture_end(weft_host_stream *s, weft_host_graph **out,
                                 const char **refused);

/* Drops a marker reference; the last one frees it. */
void weft_host_marker_unref(weft_host_marker *m);
/* Drops a graph reference; the last one frees it. */
void weft_host_graph_unref(weft_host_graph *g);

/*
 * Testing hook (not part of the public API): enqueues a device error on a
 * host stream (its native handle). Items enqueued after it are not run;
 * events recorded on the stream after it report WEFT_EDEVICE, and so does
 * stream_sync; a stream waiting on such an event fails as well. Returns 0,
 * WEFT_EINVAL (not a host stream), WEFT_ENOMEM.
 */
int weft_gpu_host_test_inject_error(void *stream);

/* Testing hook (not part of the public API): the host backend's
 * thread_init calls so far, every backend of the process together (each
 * thread the GPU layer starts that calls the backend makes one: backend.h). */
long weft_gpu_host_test_thread_inits(void);

#endif /* WEFT_GPU_HOST_H */
