/* SPDX-License-Identifier: MIT */
/*
 * The GPU layer's executor (docs/design.md, "The GPU layer"): per device,
 * compute workers and copy workers, each a thread owning its stream(s)
 * (stream_worker.c), and a completion poller per engine (poller.c) that
 * watches the oldest launched operator of every stream. executor.c ties them
 * to the engine through the interface the engine defines
 * (src/deps/executor.h).
 *
 * An operator's executor state (weft_gpu_opstate) comes from a per-device
 * pool and carries the event recorded after its fn; it goes back to the pool
 * only when the engine recycles the operator's block, i.e. after its device
 * work completed and after every successor that waits for it on the device
 * issued that wait.
 */
#ifndef WEFT_GPU_GPU_H
#define WEFT_GPU_GPU_H
#include "gpu/layer.h" /* layer guard: no include from a lower layer */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/doorbell.h"
#include "common/fifo.h"
#include "common/prof.h"
#include "deps/executor.h"
#include "gpu/backend.h"
#include "gpu/mpsc.h"

struct weft_gpu_exec;
struct weft_gpu_worker;

/* How the completion thread learns that device work completed
 * (WEFT_GPU_COMPLETION; docs/config.md). */
typedef enum {
  WEFT_GPU_COMPLETION_HOSTWORD = 0, /* host words (backend.h), spin then block; default */
  WEFT_GPU_COMPLETION_EVENT,        /* event queries, spin then back-off sleeps */
  WEFT_GPU_COMPLETION_BLOCKING,     /* event queries, then event_sync on the oldest */
} weft_gpu_completion;

/* One stream a worker owns, with the operators launched on it whose work
 * the completion thread has not seen complete, oldest first (mpsc.h:
 * the worker appends, the completion thread takes from the head). */
typedef struct weft_gpu_lane {
  weft_gpu_stream *stream;     /* immutable after open */
  void *native;                /* immutable: what operators receive as rc.stream */
  struct weft_gpu_worker *worker; /* immutable: the owner */
  weft_gpu_word word;          /* immutable after open (hostword mode only, else zero):
                                  the stream writes each launched operator's seq */
  uint32_t seq;                /* the worker only: seq of its last launched operator */
  uint32_t written;            /* the worker only: the last seq whose word write it enqueued */
  weft_gpu_mpsc launched;  /* mpsc.h: worker appends, completion thread removes */
  int64_t head_since_ns;       /* completion thread only: when it first saw head pending */
  int64_t queried_ns;          /* completion thread only (hostword): its last query of an
                                  overdue head's event */
  bool overdue;                /* completion thread only: the watchdog fired on the current
                                  head (logged once); cleared when the head retires */
  bool given_up;               /* completion thread only: the watchdog fired on an operator
                                  of this stream; every operator retired from it from then
                                  on (that one, those behind it) fails with WEFT_EDEVICE */
  weft_prof_track *track;      /* the stream's trace track (completion thread only), or NULL */
  int64_t last_end;            /* completion thread only: its last traced completion */
} weft_gpu_lane;

/* An operator's life as the executor sees it; every step is asserted, so
 * that an operator completes exactly once (to the engine: one
 * weft_exec_op_fail or one launched + device_done). */
typedef enum {
  WEFT_GPU_OP_FREE = 0,   /* in the device's pool, or just made */
  WEFT_GPU_OP_SUBMITTED,  /* attached to an operator, queued on its worker */
  WEFT_GPU_OP_LAUNCHED,   /* its fn ran and its event is recorded: on its lane */
  WEFT_GPU_OP_DONE,       /* reported to the engine (failed, or device done) */
} weft_gpu_op_phase;

typedef struct weft_gpu_opstate {
  weft_gpu_event *ev;          /* owned: recorded on lane's stream after fn */
  /* The fields below are written by the thread that holds the operator at
   * each step: the submitter, then its worker, then the poller; the
   * hand-offs (the worker's queue lock, poll_lock, the engine's release of
   * the block) order those writes. */
  weft_exec_op *op;            /* the operator it belongs to (from submit to release) */
  weft_gpu_lane *lane;         /* set by the submitter: where it runs */
  int64_t launched;            /* profiling: when fn returned (weft_prof_now ticks) */
  weft_gpu_op_phase phase;     /* see weft_gpu_op_phase */
  uint32_t seq;                /* set by the worker before it appends the state to its
                                  lane: the word value that says its work completed */
  bool in_lane;                /* set by the worker before the append, cleared by the
                                  completion thread after the removal (release reads it
                                  after the engine recycled the operator) */
  weft_gpu_link lnode;         /* mpsc.h: its worker's queue's link from submit until
                                  the worker takes it, then its lane's once launched */
  /* atomic: a successor took this operator's lane (executor.c,
   * choose_lane: the first one follows it on its stream, the others
   * spread). relaxed: only steers placement. Reset when it is freed. */
  _Atomic int followed;
  struct weft_gpu_opstate *next_free; /* under the device's pool lock while free */
} weft_gpu_opstate;

enum { WEFT_GPU_COMPUTE = 0, WEFT_GPU_COPY = 1 };

typedef struct weft_gpu_worker {
  struct weft_gpu_exec *x;     /* immutable */
  int device;                  /* immutable */
  int kind;                    /* immutable: WEFT_GPU_COMPUTE / WEFT_GPU_COPY */
  int index;                   /* immutable: among the device's workers of its kind */
  weft_gpu_lane lane[2];       /* compute: [0]; copy: [0] host-to-device, [1] device-to-host */
  weft_prof_track *track;      /* its own trace track (fn's spans), or NULL */
  pthread_t thread;            /* immutable once started */
  bool started;                /* creator only */
  /* Ready operators, oldest first (mpsc.h: submitters append their
   * state's lnode, the worker takes them): no lock unless the worker is
   * parked (common/doorbell.h: submitters ring after each append). */
  weft_gpu_mpsc queue;
  _Atomic long queued;         /* atomic: appended, not yet taken (relaxed: a count) */
  weft_doorbell bell;          /* submitters ring, the worker parks on cond */
  pthread_mutex_t lock;        /* cond's; stop */
  pthread_cond_t cond;
  bool stop;                   /* under lock */
} weft_gpu_worker;

typedef struct weft_gpu_device {
  /* atomic: the workers run (set once, with release, under the executor's
   * start_lock; read with acquire). The arrays below are immutable then. */
  _Atomic int started;
  weft_gpu_worker *compute;    /* [ncompute] */
  weft_gpu_worker *copy;       /* [ncopy] */
  _Atomic unsigned rr_compute, rr_copy; /* atomic, relaxed: round-robin cursors */
  /* atomic: the device failed (an event reported an error, or the
   * watchdog fired); later operators on it fail with WEFT_EDEVICE. Set with
   * release by the poller, read with acquire by workers. */
  _Atomic int failed;
  pthread_mutex_t pool_lock;
  weft_gpu_opstate *free;      /* under pool_lock: states with an event, ready for reuse */
  weft_gpu_opstate **all;      /* under pool_lock: every state made, to free at close */
  int nall, capall;            /* under pool_lock */
  weft_gpu_stream *sync_stream; /* naive engine: under sync_lock */
  pthread_mutex_t sync_lock;
} weft_gpu_device;

typedef struct weft_gpu_exec {
  weft_gpu_backend *b;         /* immutable, owned */
  weft_prof *prof;             /* immutable: the pool's trace recorder, or NULL */
  int ndev;                    /* immutable */
  int ncompute, ncopy;         /* immutable: workers per device */
  int64_t watchdog_ns;         /* immutable: 0 = off */
  weft_gpu_device *dev;        /* [ndev], immutable after open */
  pthread_mutex_t start_lock;  /* starting a device's workers and the poller */

  weft_gpu_completion completion; /* immutable: WEFT_GPU_COMPLETION */
  int64_t spin_ns;             /* immutable: the completion thread's spin budget (WEFT_GPU_SPIN_US) */

  /* The completion thread (poller.c) and, in hostword mode, its waiter. */
  pthread_t poller;            /* immutable once started */
  bool poller_started;         /* creator only */
  pthread_t waiter;            /* immutable once started (hostword mode) */
  bool waiter_started;         /* creator only */
  /* atomic: operators on lanes, not yet retired (relaxed: a count the
   * doorbell's ring publishes). */
  _Atomic long nlaunched;
  /* Workers ring after each launch; the completion thread parks on
   * poll_cond (common/doorbell.h). */
  weft_doorbell bell;
  pthread_mutex_t poll_lock;   /* poll_cond's; the fields below */
  pthread_cond_t poll_cond;    /* the completion thread parks here */
  bool poll_stop;              /* under poll_lock */
  /* hostword mode: what the waiter thread blocks on for the completion
   * thread (an event to event_sync), and how often it came back. */
  pthread_cond_t wait_cond;    /* the waiter sleeps here for a request */
  weft_gpu_event *wait_req;    /* under poll_lock: the next event to wait for, or NULL */
  bool wait_busy;              /* under poll_lock: the waiter is in event_sync */
  weft_gpu_event *wait_cur;    /* under poll_lock: the event it is in event_sync on */
  unsigned long wait_returns;  /* under poll_lock: event_sync calls that returned */
} weft_gpu_exec;

/* stream_worker.c */
int weft_gpu_worker_start(weft_gpu_worker *w);
/* Queues a ready operator on w (never fails). */
void weft_gpu_worker_push(weft_gpu_worker *w, weft_exec_op *op);
/* Stops w's thread once its queue is empty and joins it. */
void weft_gpu_worker_stop(weft_gpu_worker *w);
/* A submitted operator that will not launch: finishes it now with status
 * (non-zero), dropping the device waits it holds. */
void weft_gpu_fail_submitted(weft_exec_op *op, int status);

/* run.c: a run of operators as one device graph (deps/executor.h,
 * weft_exec_run). Enqueues the leader op's run on lane (recording it first
 * if it has no record yet): true, with *status 0 or why the enqueue failed
 * (the run then fails as one); false if the run has no usable record (its
 * recording failed, now or before: logged once), so that op goes alone,
 * its run node by node. The lane's worker only. */
bool weft_gpu_run_enqueue(weft_gpu_worker *w, weft_gpu_lane *lane, weft_exec_op *op,
                          const weft_exec_run *run, int *status);
/* The executor's run_free: frees a run's record. */
void weft_gpu_run_free(void *self, void *cache);

/* Enqueues the word write for the lane's operators launched since the
 * last one (the worker only; a no-op when all are covered). */
void weft_gpu_lane_flush_word(weft_gpu_exec *x, weft_gpu_lane *lane);

/* poller.c */
int weft_gpu_poller_start(weft_gpu_exec *x);
/* Appends a launched operator (its state) to its lane (the completion
 * thread takes it from there). The lane's worker only. */
void weft_gpu_poller_add(weft_gpu_exec *x, weft_gpu_lane *lane, weft_gpu_opstate *st);
void weft_gpu_poller_stop(weft_gpu_exec *x);

/* retire.c: one pass over every lane of started devices in the engine's
 * mode; returns how many operators it retired. pending: set to the number
 * of lanes with work still pending, and *head to one pending head's event
 * (the oldest lane's in scan order), or NULL. */
int weft_gpu_sweep(weft_gpu_exec *x, int *pending, weft_gpu_event **head);

/* executor.c */
extern const weft_executor_ops weft_gpu_executor_ops;
/* Testing: engines created from now on give the host backend this per-item
 * jitter, microseconds (0: none). */
void weft_gpu_test_host_jitter(unsigned us);

#endif /* WEFT_GPU_GPU_H */
