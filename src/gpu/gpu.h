/*
 * The GPU layer's executor (design.md §4): per device, compute workers and
 * copy workers, each a thread owning its stream(s) (stream_worker.c), and a
 * completion poller per engine (poller.c) that watches the oldest launched
 * operator of every stream. executor.c ties them to the engine through the
 * interface the engine defines (src/deps/executor.h).
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

#include "common/fifo.h"
#include "common/prof.h"
#include "deps/executor.h"
#include "gpu/backend.h"

struct weft_gpu_exec;
struct weft_gpu_worker;

/* One stream a worker owns, with the operators launched on it whose work
 * the poller has not seen complete, oldest first. */
typedef struct weft_gpu_lane {
  weft_gpu_stream *stream;     /* immutable after open */
  void *native;                /* immutable: what operators receive as rc.stream */
  struct weft_gpu_worker *worker; /* immutable: the owner */
  weft_fifo launched;          /* under the executor's poll_lock: weft_gpu_opstate (lnode),
                                  launched, not done */
  long nlaunched;              /* under poll_lock: the length of launched */
  int64_t head_since_ns;       /* poller only: when the poller first saw head pending */
  weft_prof_track *track;      /* the stream's trace track (poller only), or NULL */
  int64_t last_end;            /* poller only: when its last traced operator completed */
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
  bool in_lane;                /* under poll_lock: lnode is on lane->launched (release
                                  reads it after the poller's removal, without it) */
  weft_fifo_node lnode;        /* under poll_lock: lane->launched link */
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
  pthread_mutex_t lock;
  pthread_cond_t cond;
  weft_fifo queue;             /* under lock: ready operators (weft_exec_op_node) */
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

  pthread_t poller;            /* immutable once started */
  bool poller_started;         /* creator only */
  pthread_mutex_t poll_lock;   /* the lanes' launched lists, nlaunched, poll_stop */
  pthread_cond_t poll_cond;    /* the poller sleeps here while nothing is launched */
  long nlaunched;              /* under poll_lock */
  bool poll_stop;              /* under poll_lock */
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

/* poller.c */
int weft_gpu_poller_start(weft_gpu_exec *x);
/* Appends a launched operator (its state) to its lane (the poller takes it
 * from there). */
void weft_gpu_poller_add(weft_gpu_exec *x, weft_gpu_lane *lane, weft_gpu_opstate *st);
void weft_gpu_poller_stop(weft_gpu_exec *x);

/* executor.c */
extern const weft_executor_ops weft_gpu_executor_ops;
/* Testing: engines created from now on give the host backend this per-item
 * jitter, microseconds (0: none). */
void weft_gpu_test_host_jitter(unsigned us);

#endif /* WEFT_GPU_GPU_H */
