/* SPDX-License-Identifier: MIT */
/*
 * weft — a work-stealing scheduler for task-parallel programs.
 *
 * The whole public API. C11; compiles as C++ too. Every function returns 0 or
 * a negative WEFT_E* code unless its comment says otherwise. A task's own
 * non-zero return value is passed through unchanged wherever it is reported.
 *
 * Thread safety: every function may be called from any thread, including from
 * inside a running task, unless its comment says otherwise.
 *
 * fork(): in the child, every pool and engine inherited from the parent is
 * unusable (its workers did not survive the fork): every call on one,
 * destroy included, returns WEFT_ESHUTDOWN at once and frees nothing. The
 * child may create and use pools and engines of its own.
 */
#ifndef WEFT_WEFT_H
#define WEFT_WEFT_H

#include <stddef.h>
#include <stdint.h>

#include "version.h"

#if defined(WEFT_BUILDING) && defined(__GNUC__)
#define WEFT_API __attribute__((visibility("default")))
#else
#define WEFT_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ errors */

/* Distinct negative codes, chosen away from small values that tasks commonly
 * return themselves (-1, -errno), so the two can be told apart.
 *
 * WEFT_ERRNO_MAP is the one list of them: the enum below, weft_strerror and
 * weft_err_name are generated from it (libuv's UV_ERRNO_MAP). XX(name, code,
 * message) stands for WEFT_<name> = code. Codes are never renumbered. */
#define WEFT_ERRNO_MAP(XX)                                                              \
  XX(EINVAL, -1001, "invalid argument: a bad argument, a dead handle or a malformed "   \
                    "environment value")                                                \
  XX(ENOMEM, -1002, "out of memory")                                                    \
  XX(EAGAIN, -1003, "resource temporarily unavailable: a thread could not be created")  \
  XX(ESHUTDOWN, -1004, "shutting down: the pool or engine is being destroyed")          \
  XX(EDEADLK, -1005, "the wait would deadlock")                                         \
  XX(ENODEV, -1006, "no such device")                                                   \
  XX(EDEVICE, -1007, "device failure")                                                  \
  XX(EBUSY, -1008, "busy: a graph launch still running, or a call not allowed while "   \
                   "capturing")                                                         \
  XX(EREMOTE, -1009, "an operator on another MPI rank failed, and this one used its "   \
                     "result (weft_mpi.h)")                                             \
  XX(ETIMEDOUT, -1010, "timed out: an MPI rank stopped answering (weft_mpi.h)")         \
  XX(EMISMATCH, -1011, "the MPI ranks submitted different sequences (weft_mpi.h)")      \
  XX(ECOMM, -1012, "communication failure: an MPI call failed (weft_mpi.h)")            \
  XX(ELIMIT, -1013, "a fixed limit was reached: 4294967295 vars or reusable "           \
                    "operators in one engine, or async operators awaiting their "       \
                    "signal")                                                           \
  XX(EEXCEPTION, -1014, "a C++ callable given to weft.hpp threw an exception (weft.hpp "  \
                        "catches it at the C boundary)")

typedef enum weft_errno {
#define WEFT_ERRNO_ENUM_(name, code, msg) WEFT_##name = (code),
  WEFT_ERRNO_MAP(WEFT_ERRNO_ENUM_)
#undef WEFT_ERRNO_ENUM_
  WEFT_ERRNO_FIRST_ = -1001, /* the range the codes occupy, for tests and bindings */
  WEFT_ERRNO_LAST_ = -1014
} weft_errno;

/* A static, human-readable message for code, ending in its name in
 * parentheses ("out of memory (WEFT_ENOMEM)"): every WEFT_E* code, 0
 * ("success"), and "unknown error" for anything else. Never NULL. */
WEFT_API const char *weft_strerror(int code);
/* The code's name ("WEFT_ENOMEM"), "0" for 0, NULL for anything else. */
WEFT_API const char *weft_err_name(int code);

/* ---------------------------------------------------------------- messages */

/* The library's messages (a malformed environment variable, a refused CPU
 * binding, a profile that could not be written, a second weft_done_signal)
 * are single lines without the "weft: " prefix or a newline. By default each
 * goes to stderr as "weft: <msg>\n". weft_set_log_callback(fn, arg) sends
 * them to fn(arg, msg) instead, on whichever thread raised them (fn must be
 * thread-safe and must not call back into weft); fn NULL restores stderr.
 * msg is valid only during the call. Process-wide; may be called any time,
 * from any thread (never from inside fn). When it returns, the previous fn
 * is not running on any thread and will not be called again, so its arg may
 * be freed; it waits for calls to the previous fn already under way. */
typedef void (*weft_log_fn)(void *arg, const char *msg);
WEFT_API void weft_set_log_callback(weft_log_fn fn, void *arg);

/* -------------------------------------------------------------------- pool */

typedef struct weft_pool weft_pool;
typedef int (*weft_task_fn)(void *arg);

/* A worker thread's start and end, for weft_pool_config.observer. */
typedef enum weft_worker_event { WEFT_WORKER_START = 0, WEFT_WORKER_STOP = 1 } weft_worker_event;
typedef void (*weft_worker_observer_fn)(void *arg, weft_worker_event event, int worker);

typedef struct weft_pool_config {
  int num_threads;      /* 0: automatic (WEFT_NUM_THREADS, else the CPUs the
                           process may use: affinity mask and cgroup quota) */
  int spin_count;       /* -1: automatic (WEFT_SPIN_COUNT, else built in); the
                           idle rounds (about 1 us each) before a worker parks */
  const char *affinity; /* NULL: automatic (WEFT_AFFINITY, else "none");
                           "none" | "compact" | "scatter" | a cpu list "0,2,4-7" */
  const char *name;     /* NULL: "weft"; threads are named "<name>-w<N>" */
  const char *profile;  /* NULL: automatic (WEFT_PROFILE, else off); "": off;
                           else a path: the pool's destroy writes a Chrome
                           trace there (README "Profiling") */
  weft_worker_observer_fn observer; /* NULL: none. Called on each worker
                           thread as it starts (WEFT_WORKER_START, before it
                           runs any task) and as it ends (WEFT_WORKER_STOP,
                           after its last task): e.g. to name the thread or
                           set its NUMA policy. With an observer,
                           weft_pool_create returns after every START
                           returned. Must not call back into the pool it
                           observes (it may use other pools). */
  void *observer_arg;   /* passed to observer */
  /* Room to grow without breaking binaries: must be zero, as
   * weft_pool_config_default leaves it (WEFT_EINVAL otherwise). */
  void *reserved[8];
} weft_pool_config;

/* Sets every field to "automatic". */
WEFT_API void weft_pool_config_default(weft_pool_config *cfg);

/* Creates a pool and starts its workers. cfg NULL: all automatic. Returns
 * WEFT_EINVAL for a bad field or a malformed environment variable (with one
 * message naming it, see "messages"), WEFT_ENOMEM, or WEFT_EAGAIN when a thread could
 * not be started; on failure nothing is left allocated or running. */
WEFT_API int weft_pool_create(weft_pool **out, const weft_pool_config *cfg);

/* Runs everything already submitted, and everything that work submits, then
 * joins the workers and frees the pool. Submissions from other threads after
 * destroy began return WEFT_ESHUTDOWN. Must not be called from one of the
 * pool's own tasks (returns WEFT_EDEADLK). */
WEFT_API int weft_pool_destroy(weft_pool *pool);

/* Returns the number of workers (not an error code); WEFT_EINVAL for NULL. */
WEFT_API int weft_pool_num_threads(const weft_pool *pool);

/* Runs fn(arg) on the pool, some time later; its return value is ignored.
 * From a worker the task goes to that worker's own deque (LIFO), from any
 * other thread to the pool's injection queue. */
WEFT_API int weft_pool_submit(weft_pool *pool, weft_task_fn fn, void *arg);

/* Arguments stored with the task (a C++ lambda's captures, a small struct):
 * weft_pool_submit_arg and weft_group_spawn_arg copy size bytes from data,
 * and fn receives a pointer to that copy (aligned to WEFT_ARG_ALIGN) instead
 * of a pointer of the caller's. Up to WEFT_TASK_ARG_INLINE bytes the copy
 * travels in the task's own record, which comes from the worker's cache
 * (no allocation), and fn gets it in the running thread's frame. Larger, the copy is one allocation, freed after fn returned.
 * The copy is valid until fn returns; fn may change it. data may be reused
 * as soon as the call returns. size 0: fn receives NULL (data ignored).
 * Errors as weft_pool_submit / weft_group_spawn, and WEFT_EINVAL for NULL
 * data with size > 0; on an error nothing was copied. */
#define WEFT_TASK_ARG_INLINE 24 /* bytes */
#define WEFT_ARG_ALIGN 8        /* bytes: the copy's alignment */
WEFT_API int weft_pool_submit_arg(weft_pool *pool, weft_task_fn fn, const void *data, size_t size);

/* The calling thread's worker index in its pool (0..n-1), -1 on a thread that
 * is not a pool worker. Returns the index, not an error code. */
WEFT_API int weft_current_worker(void);

typedef struct weft_worker_stats {
  uint64_t tasks_run;           /* tasks this worker ran */
  uint64_t steals;              /* tasks it took from other workers' deques */
  uint64_t failed_steal_rounds; /* idle rounds in which it found nothing */
  uint64_t parks;               /* times it went to sleep */
  uint64_t wakeups;             /* times it was woken from sleep */
} weft_worker_stats;

/* The number of workers a pool with num_threads 0 (automatic) would start
 * now: WEFT_NUM_THREADS, else the CPUs the process may use. Returns it, or
 * WEFT_EINVAL for a malformed WEFT_NUM_THREADS (with a message naming it),
 * WEFT_ENOMEM. */
WEFT_API int weft_pool_default_threads(void);

/* Asks the pool's workers to park at once the next time they are idle,
 * instead of spinning first: those spinning now park within a round, the
 * others skip the spin of their next idle period. The request stands for
 * each worker until it has slept once (work found on the way to sleep
 * does not cancel it); then it spins as usual again.
 * For a caller that knows no work comes for a while (pthreadpool's
 * PTHREADPOOL_FLAG_YIELD_WORKERS). Returns 0 or WEFT_EINVAL (NULL pool). */
WEFT_API int weft_pool_park_idle(weft_pool *pool);

/* Fills out[0..k) for the first k = min(max, workers) workers and returns k,
 * or WEFT_EINVAL (NULL pool, NULL out with max > 0, max < 0). Counters are
 * read without stopping the workers: each is exact once the pool is idle. */
WEFT_API int weft_pool_stats(const weft_pool *pool, weft_worker_stats *out, int max);

/* ---------------------------------------------------------------- fork-join */

/* A fork-join group. The type is complete so that it can live on the
 * caller's stack; its fields are private to the library. */
typedef struct weft_group {
  void *weft_private_[4];
} weft_group;

/* Prepares g for spawning into pool. A group may be reused after wait.
 * The thread that calls init is the one that waits (the group counts the
 * spawns made on that thread without atomics); the group's tasks may spawn
 * into it from any thread. */
WEFT_API void weft_group_init(weft_group *g, weft_pool *pool);

/* Runs fn(arg) as part of g. WEFT_EINVAL for NULL g/fn or an uninitialised
 * group, WEFT_ENOMEM, WEFT_ESHUTDOWN (from a non-pool thread after destroy
 * began). */
WEFT_API int weft_group_spawn(weft_group *g, weft_task_fn fn, void *arg);

/* weft_group_spawn with its argument copied into the task (see
 * weft_pool_submit_arg: up to WEFT_TASK_ARG_INLINE bytes, no allocation). */
WEFT_API int weft_group_spawn_arg(weft_group *g, weft_task_fn fn, const void *data, size_t size);

/* Waits until every task spawned into g (and every task they spawned into g)
 * has finished; returns the first non-zero value one of them returned, else 0
 * (WEFT_EINVAL from another thread than the one that called init).
 * The waiting thread runs other tasks meanwhile, so a worker is never blocked
 * and nested fork-join cannot deadlock: a worker its own deque's first, a
 * thread outside the pool what it spawned or pushed first. */
WEFT_API int weft_group_wait(weft_group *g);

/* weft_group_wait without helping: the calling thread runs nothing and
 * sleeps until g's tasks have finished, so that exactly the pool's workers
 * compute (Taskflow's future.get(), for a caller that wants its thread
 * count exact: spawn one task, or several, then wait here). Returns as
 * weft_group_wait; WEFT_EDEADLK from a worker of g's pool or from inside
 * one of the pool's tasks (it would block a thread the group's tasks may
 * need), waiting for nothing. */
WEFT_API int weft_group_wait_blocking(weft_group *g);

/* ----------------------------------------------------------- parallel loops */

typedef int (*weft_range_fn)(size_t begin, size_t end, void *arg);

/* Calls fn on disjoint chunks covering [begin, end), in parallel; the caller
 * takes part. grain: the smallest chunk one call receives, except the range's
 * last chunk (0: automatic). Chunks are split adaptively, as idle workers ask
 * for work. Returns 0, WEFT_EINVAL (NULL pool or fn, begin > end),
 * WEFT_ESHUTDOWN (from outside the pool's work once destroy began), or the
 * first non-zero value fn returned (the chunks not yet started are then
 * skipped). An empty range returns 0 without calling fn. */
WEFT_API int weft_parallel_for(weft_pool *pool, size_t begin, size_t end, size_t grain,
                               weft_range_fn fn, void *arg);

/* A parallel reduce (oneTBB's parallel_reduce, OpenMP's reduction): the
 * caller's range [begin, end) is split into chunks as for
 * weft_parallel_for; body(b, e, acc, arg) folds its chunk into the
 * accumulator acc (acc_size bytes, started as a copy of identity), and
 * combine(acc, other, arg) folds the accumulator other into acc. *result
 * (acc_size bytes, not overlapping identity) receives identity combined
 * with every chunk's contribution. Accumulators are the library's (one per
 * thread taking part, the caller's included, on cache lines of their own;
 * aligned to 64 bytes): no scratch is indexed by weft_current_worker().
 *
 * Order: combine must be associative and identity its identity. Without
 * WEFT_REDUCE_DETERMINISTIC the grouping follows the scheduling, so a
 * floating-point sum may differ in its last bits from run to run. With
 * it, the range is cut into chunks that depend only on begin, end and
 * grain (never on the threads or the timing: grain, or 0 for at most
 * WEFT_REDUCE_CHUNKS chunks), each folded from identity, then combined in
 * chunk order on the calling thread: the same result at every run and
 * every thread count (combine need not be commutative).
 *
 * Returns 0, WEFT_EINVAL (NULL pool, body, combine, identity or result;
 * acc_size 0; begin > end; an unknown flag), WEFT_ENOMEM (accumulators
 * that do not fit the call's stack room, about 2 KiB, are allocated),
 * WEFT_ESHUTDOWN (as parallel_for), or the first non-zero value body
 * returned (*result is then unspecified; without WEFT_REDUCE_DETERMINISTIC
 * the chunks not yet started are skipped). An empty range copies identity
 * to *result. */
typedef int (*weft_reduce_body_fn)(size_t begin, size_t end, void *acc, void *arg);
typedef void (*weft_reduce_combine_fn)(void *acc, const void *other, void *arg);
enum { WEFT_REDUCE_DETERMINISTIC = 1u << 0 };
#define WEFT_REDUCE_CHUNKS 256 /* deterministic chunks with grain 0, at most */
WEFT_API int weft_parallel_reduce(weft_pool *pool, size_t begin, size_t end, size_t grain,
                                  const void *identity, size_t acc_size, weft_reduce_body_fn body,
                                  weft_reduce_combine_fn combine, void *arg, void *result,
                                  unsigned flags);

typedef int (*weft_launch_fn)(void *arg, int task_id, int num_tasks);

/* MindSpore's ParallelLaunch: calls fn(arg, id, num_tasks) once for each id in
 * 0..num_tasks-1, in parallel; the caller takes part. Returns 0, WEFT_EINVAL
 * (NULL pool or fn, num_tasks < 0), WEFT_ESHUTDOWN (as parallel_for), or the
 * first non-zero value fn returned.
 * num_tasks == 0 returns 0 without calling fn. */
WEFT_API int weft_parallel_launch(weft_pool *pool, weft_launch_fn fn, void *arg, int num_tasks);

/* ------------------------------------------------------------------ engine */

/*
 * The dependency engine (MXNet's): operators declare the vars they read and
 * write; an operator runs once every operator pushed before it that writes a
 * var it uses, or reads a var it writes, has finished. Reads of a var run
 * together, writes alone and in push order.
 *
 * Once weft_engine_destroy began, every call from outside the engine's own
 * operators returns WEFT_ESHUTDOWN; operators may still push, and that work
 * runs before destroy returns.
 */
typedef struct weft_engine weft_engine;
typedef struct weft_var weft_var;   /* a handle (generation-tagged): dead once deleted */
typedef struct weft_op weft_op;     /* a reusable operator (handle, as vars) */
typedef struct weft_done weft_done; /* an async operator's completion token */

typedef enum { WEFT_DEV_CPU = 0, WEFT_DEV_GPU = 1 } weft_dev_type;
typedef struct weft_ctx {
  weft_dev_type type;
  int id; /* GPU: 0 <= id < weft_gpu_count(); ignored for the CPU */
} weft_ctx;

typedef enum {
  WEFT_PROP_NORMAL = 0,
  WEFT_PROP_COPY_TO_GPU,   /* a copy to the GPU ctx.id (GPU copy workers) */
  WEFT_PROP_COPY_FROM_GPU, /* a copy from the GPU ctx.id */
  WEFT_PROP_PRIORITIZED,   /* ahead of other ready work, higher priority first */
  WEFT_PROP_ASYNC          /* run inline by the thread that makes it ready */
} weft_prop;

/* WEFT_OP_NOSKIP: an operator that uses a failed var runs anyway; its own
 * status decides.
 * WEFT_OP_GPU_GRAPH: a GPU operator (WEFT_PROP_NORMAL) whose fn only
 * enqueues device work on rc->stream, with no synchronous call and no
 * host-side effect, and enqueues the same work at every launch. In a
 * replayed graph, a run of such operators on one device (see "graphs") is
 * recorded once (CUDA stream capture) and replayed as one device graph:
 * their fns are not called again. Ignored outside graphs; on any other
 * operator WEFT_EINVAL. */
enum { WEFT_OP_NOSKIP = 1u << 0, WEFT_OP_GPU_GRAPH = 1u << 1 };

typedef struct weft_run_ctx {
  weft_ctx ctx;
  void *stream; /* the device worker's stream for GPU operators, else NULL */
  int worker;   /* the pool worker running it, -1 elsewhere */
} weft_run_ctx;

/* A non-zero return fails the operator: every var it writes is marked failed. */
typedef int (*weft_op_fn)(const weft_run_ctx *rc, void *arg);
/* Completes later, by weft_done_signal(done, status) from any thread. Each
 * async operator holds a token from its start until its signal; with
 * 4294967295 of them held in the process (every engine's together), the
 * next one fails with WEFT_ELIMIT, as if it had returned that status,
 * without its async_fn being called (with a message). */
typedef void (*weft_async_op_fn)(const weft_run_ctx *rc, void *arg, weft_done *done);

/* Completes an async operator, exactly once, from any thread. A second
 * signal on the same token is detected and ignored (with a message). */
WEFT_API void weft_done_signal(weft_done *done, int status);

typedef struct weft_op_desc {
  weft_op_fn fn;             /* exactly one of fn and async_fn */
  weft_async_op_fn async_fn;
  void *arg;
  weft_var *const *reads;    /* may repeat vars; a var also written counts as written */
  size_t num_reads;
  weft_var *const *writes;
  size_t num_writes;
  weft_ctx ctx;
  weft_prop prop;
  int priority;              /* WEFT_PROP_PRIORITIZED: higher runs first */
  unsigned flags;            /* WEFT_OP_* */
  const char *name;          /* for traces; not copied, must outlive the operator */
} weft_op_desc;

typedef struct weft_engine_config {
  weft_pool *pool;   /* NULL: the engine creates and owns a pool (environment) */
  const char *kind;  /* NULL: automatic (WEFT_ENGINE, default "threaded");
                        "threaded" | "naive" (every push runs synchronously,
                        holding the engine: an async op's push returns once
                        it is signalled, so its signal must come from another
                        thread, one that calls nothing on this engine before
                        it signals: such a call would wait for that push) */
  int max_inflight;  /* -1: automatic (WEFT_MAX_INFLIGHT, default 0 = unbounded);
                        the most operators pushed but not finished. At the
                        cap, a push from inside an operator helps run others,
                        then goes over it; a push from any other thread waits
                        for a place. The stall rule: once no place has freed
                        for 100 ms while an async operator waits for its
                        weft_done_signal (it may be waiting for the very
                        operator being pushed), that push takes a place over
                        the cap, one per 100 ms stalled. So the cap holds
                        exactly while no async operator waits for a signal;
                        one signalled late costs an operator over it per
                        100 ms. */
  /* Room to grow without breaking binaries: must be zero, as
   * weft_engine_config_default leaves it (WEFT_EINVAL otherwise). */
  void *reserved[8];
} weft_engine_config;

/* Sets every field to "automatic". */
WEFT_API void weft_engine_config_default(weft_engine_config *cfg);
/* cfg NULL: all automatic. WEFT_EINVAL for a bad field or environment value
 * (one message names it, see "messages"), WEFT_ENOMEM, WEFT_EAGAIN. */
WEFT_API int weft_engine_create(weft_engine **out, const weft_engine_config *cfg);
/* Waits for every operator, frees the engine (and the pool it created).
 * Returns the first failure recorded since the last weft_wait_all, else 0.
 * From one of the engine's own operators: WEFT_EDEADLK. */
WEFT_API int weft_engine_destroy(weft_engine *eng);

/* Vars and reusable operators have no fixed cap below memory (a var takes
 * 128 bytes; the engine's tables grow as needed and never shrink before
 * destroy). The limit is the handle's: 4294967295 of each per engine, a
 * deleted one counting until its deletion has run (a var's: once every
 * operator pushed before it on the var has finished; a reusable
 * operator's: once its last push has). Past it, weft_var_new and
 * weft_op_new return WEFT_ELIMIT (with a message) and *out is NULL;
 * WEFT_ENOMEM when memory runs out first. */
WEFT_API int weft_var_new(weft_engine *eng, weft_var **out);
/* Deferred until every operator pushed before on var has finished; the
 * handle is dead when this returns 0. On WEFT_ENOMEM nothing happened: the
 * var is still live, and the call may be repeated. */
WEFT_API int weft_var_delete(weft_engine *eng, weft_var *var);

/* Pushes a one-shot operator; desc and its arrays are copied. */
WEFT_API int weft_push(weft_engine *eng, const weft_op_desc *desc);
/* Operators whose argument is stored with them (a C++ lambda's captures, a
 * small struct): weft_push_arg copies size bytes from data, and fn (or
 * async_fn) receives a pointer to that copy, aligned to WEFT_ARG_ALIGN,
 * instead of desc->arg, which must be NULL (WEFT_EINVAL otherwise, as for
 * NULL data with size > 0). Up to WEFT_OP_ARG_INLINE bytes the copy lives
 * in the operator's own block, which comes from the worker's cache: no
 * allocation; larger, it is one allocation. size 0: fn receives NULL.
 * data may be reused as soon as the call returns; fn may change the copy.
 *
 * drop (NULL: none) is called exactly once with the copy, once no fn can
 * use it any more: when the operator has finished (it ran, or was skipped
 * after a failure; an async operator once both its signal and its
 * async_fn's return have happened; a GPU operator once its device work
 * stopped). A push recorded by a graph's capture copies it into the graph,
 * where every launch's fn receives that copy: drop runs when the graph is
 * destroyed (or its capture ends without a graph). drop runs on whichever
 * thread that happens on and must not wait for the engine's work. On an
 * error nothing was copied and drop is not called. */
#define WEFT_OP_ARG_INLINE 64 /* bytes */
typedef void (*weft_arg_drop_fn)(void *arg);
WEFT_API int weft_push_arg(weft_engine *eng, const weft_op_desc *desc, const void *data,
                           size_t size, weft_arg_drop_fn drop);
/* A reusable operator, pushed any number of times with weft_op_push.
 * WEFT_ELIMIT past 4294967295 in the engine (see weft_var_new). */
WEFT_API int weft_op_new(weft_engine *eng, const weft_op_desc *desc, weft_op **out);
/* weft_op_new with its argument stored with the reusable operator (as
 * weft_push_arg: desc->arg NULL; every push's fn receives the one copy,
 * shared by pushes that run at once):
 * drop runs once the operator's deletion has run (its last push finished). */
WEFT_API int weft_op_new_arg(weft_engine *eng, const weft_op_desc *desc, const void *data,
                             size_t size, weft_arg_drop_fn drop, weft_op **out);
WEFT_API int weft_op_push(weft_engine *eng, weft_op *op);
/* Deferred until every push of op has finished; the handle is dead at once. */
WEFT_API int weft_op_delete(weft_engine *eng, weft_op *op);

/* Waits until every operator pushed before on var has finished. Returns the
 * var's failure status (and clears it), else 0.
 *
 * Inside an operator X, the wait runs other work meanwhile; it returns
 * WEFT_EDEADLK at once, waiting for nothing and clearing nothing, when it
 * would wait for X itself (X cannot finish before it returns):
 *   - X reads or writes var (inside a replayed operator: X's graph does,
 *     see "graphs");
 *   - or an operator on var that cannot finish before X does: one queued
 *     behind X on a var X uses, or behind such an operator on another var,
 *     and so on (X writes a, pushes Y that reads a and writes b, waits on
 *     b: WEFT_EDEADLK). Queued behind: a write waits for every earlier
 *     operator on its var, a read for the earlier writes and for what they
 *     wait for; a read does not wait for an earlier read (X reads a and
 *     pushes Y that reads a and writes b: a wait on b waits for Y). Who
 *     pushed them makes no difference, and a graph launch counts as one
 *     operator on all of the graph's vars.
 * X here is also each operator that this thread runs X inside, whatever
 * call ran X there (X ran nested in their weft_var_wait, weft_group_wait,
 * pacing or push at max_inflight: docs/api.md, "Nesting"), and an operator
 * waiting in its own weft_var_wait counts as queued behind what that wait
 * waits for. The check sees the operators pushed before the call and the
 * waits of other threads checked before it: of two waits that close a loop
 * together at the same moment, exactly one returns WEFT_EDEADLK. A loop that
 * a push on another thread closes at the same moment (appending behind X
 * the operator this wait then queues behind) may go unseen, and then the
 * wait never returns. The check locks and reads the
 * queue of each var X uses (a replayed operator: each var of its graph) and
 * of each operator queued behind X: its cost grows with those, not with the
 * rest of the engine's work. The naive engine runs each push at once, so no
 * such loop forms there. */
WEFT_API int weft_var_wait(weft_engine *eng, weft_var *var);
/* Waits until every operator pushed so far has finished. Returns the first
 * failure recorded since the previous weft_wait_all, and clears it and every
 * var's failed state. */
WEFT_API int weft_wait_all(weft_engine *eng);
/* The number of GPUs operators may use: 0 without devices (no CUDA driver or
 * device, a driver too old for the library's CUDA runtime, which one
 * message names, WEFT_GPU_BACKEND=none, or a build without CUDA unless
 * WEFT_GPU_BACKEND=host asks for emulated devices). Returns the count, not
 * an error code.
 *
 * GPU operators (ctx.type WEFT_DEV_GPU) run on the device's workers: fn gets
 * the worker's stream in weft_run_ctx.stream (a cudaStream_t, or a host
 * backend stream for weft_gpu_host_enqueue), enqueues device work on it and
 * returns; the operator finishes when that work completes on the stream,
 * not when fn returns; on a device worker fn runs in CUDA's relaxed stream
 * capture mode, so that another thread's global-mode capture does not stop
 * the engine (docs/api.md, "GPU operators on CUDA": the naive engine runs
 * fn on the pushing thread, in that thread's own mode). Successors on the same device
 * wait on the device; CPU successors and weft_var_wait wait for the
 * completion. Copy operators
 * (WEFT_PROP_COPY_TO_GPU / COPY_FROM_GPU) run on the copy workers' own
 * streams. A GPU operator takes fn, not async_fn (WEFT_EINVAL). A device
 * error fails the operator with WEFT_EDEVICE, its dependents with it, and
 * every later operator on that device. So does device work still pending
 * after WEFT_GPU_WATCHDOG_MS (logged), and the operators queued behind it on
 * its stream with it; but they keep their vars until the device says their
 * work stopped (completed or failed), as it may still use the buffers: CPU
 * successors, weft_var_wait and weft_wait_all wait for that, and work that
 * never stops holds its vars for good (engine destroy waits for it too). */
WEFT_API int weft_gpu_count(const weft_engine *eng);

/* The host backend (WEFT_GPU_BACKEND=host: emulated devices, for machines
 * without a GPU and for tests): an operator on such a device enqueues its
 * "device work" on the stream it received in weft_run_ctx.stream. fn(arg)
 * runs later on the stream's thread, after everything enqueued on that
 * stream before it, like a kernel on a CUDA stream; it must not block on
 * other work of the engine. Returns 0, WEFT_EINVAL (NULL fn, or stream is
 * not a live host-backend stream: e.g. NULL or a cudaStream_t), or
 * WEFT_ENOMEM. */
WEFT_API int weft_gpu_host_enqueue(void *stream, void (*fn)(void *arg), void *arg);

/* ------------------------------------------------------------------ graphs */

/*
 * Captured graphs (CUDA graphs, Taskflow's taskflow, oneTBB's reused flow
 * graph): the pushes a thread makes to an engine between
 * weft_graph_begin_capture and weft_graph_end_capture are recorded, not
 * run. Their dependencies are resolved once, at the end of the capture;
 * weft_graph_launch then runs the recorded operators again, any number of
 * times, without registering them on their vars one by one.
 *
 * Graphs with explicit edges (Taskflow's a.precede(b), oneTBB's
 * make_edge): weft_graph_create makes an empty graph, weft_graph_add adds
 * operators to it as nodes (0, 1, ... in the order of adding), and
 * weft_graph_edge(g, a, b) makes node a run before node b. The nodes' vars
 * give dependencies among them as a capture's pushes would, in the order
 * of adding, and the edges add to those; a launch is ordered with the rest
 * of the engine as a captured graph's (below). Nodes and edges may be
 * added to any graph, captured ones included (the i-th push a capture
 * recorded is node i), between launches: the graph is resolved again at
 * the next launch, then replayed as a captured graph is. Failures pass
 * along explicit edges as along vars: a node after a failed (or skipped)
 * one by an edge is skipped with its status, unless it has WEFT_OP_NOSKIP.
 * A graph built so and launched once costs about what pushing its
 * operators costs, or less (the resolve at that launch does only what that
 * launch needs: see "Where they run"); relaunched, what a captured graph's
 * replay costs.
 *
 * Ordering: a launch is ordered with everything else on the engine as if it
 * were one operator that writes every var the graph writes and reads every
 * var it only reads: it starts after every operator pushed before it on
 * those vars has finished, and operators pushed after it on them (and
 * weft_var_wait) wait for the whole launch. Inside a launch the recorded
 * operators run in the order their pushes prescribe, as pushed ones would.
 * Each keeps every semantic of a pushed operator: failures mark the vars it
 * writes and skip the operators that use them (WEFT_OP_NOSKIP as usual),
 * weft_wait_all reports them, async operators complete with their
 * weft_done_signal, priorities and GPU operators go where they would go.
 *
 * Inside a replayed operator, the graph's launch holds every var of the
 * graph: weft_var_wait on any of them returns WEFT_EDEADLK (not only on the
 * operator's own vars), and an operator it pushes on one of them runs after
 * the launch. A recorded descriptor's arg and name are used at every
 * launch: they must outlive the graph.
 *
 * "Capture order" below is, for a graph with explicit edges, the order the
 * launch resolved: the order of adding where the edges allow it (of the
 * nodes ready to run, the one added first goes first), a topological
 * order either way; the naive engine runs the nodes in it, one at a time.
 *
 * Where they run: a graph whose operators are all CPU fns of
 * WEFT_PROP_NORMAL runs in capture order, on one worker or, on a pool of
 * several, split into lanes at capture (one per worker at most, each in
 * capture order, waiting only for what the others must run first). Which
 * of the two is faster depends on how long the operators run against the
 * cache lines their edges move between cores, so the first launches try
 * both in turn (2 each, then again every 256 launches) and the others run
 * the faster; the first of them also times each operator, and the lanes
 * are planned again with those costs. A lane tells the others as soon as
 * it has run an operator they wait for, so lanes run side by side as far
 * as the graph lets them. Operators timed at 5 us or more each, on
 * average, in a graph with parallelism, leave nothing to gain in lanes and
 * one lane would run them one at a time: from the next launch on, that
 * graph's operators are released along its edges, as pushed ones are, so
 * that a replay runs as many of them at once as pushing them would (until
 * the graph is changed: then it is timed again). Any other graph's
 * operators are released along its edges; so are those of a graph
 * resolved at a launch (one made with weft_graph_add, or changed since its
 * last launch) on a pool of several workers, at that launch: the lanes'
 * plan pays only over launches, and the graph's next launch resolves it
 * again to plan them (on one worker the first resolve is the only one).
 * A GPU operator whose
 * predecessor is a GPU
 * operator of the same device waits for it on the device: it is launched
 * as soon as its predecessor was (as pushed ones are).
 *
 * GPU runs: consecutive recorded GPU operators of one device, each with
 * WEFT_OP_GPU_GRAPH, each after the first depending on the ones before it
 * in the run only (at least one of them), form a run. The first launch
 * that reaches a run records its device work once (CUDA: stream capture on
 * one stream of the device, in capture order) and this and later launches
 * replay it as one device graph (one cudaGraphLaunch, one completion); the
 * operators of the run finish together, when the device graph completes,
 * and a device error fails them all. A launch in which a var of the run
 * is failed runs the run operator by operator (as without the flag), so
 * that each is skipped or not as usual; so does every launch of a run
 * whose recording failed (an operator's fn returned non-zero while it was
 * recorded, or the device refused the capture: one message names the
 * run's first operator; its fns are then called again, unrecorded).
 *
 * A graph belongs to the engine it was captured on; destroy it before the
 * engine. If the engine is destroyed first, the graph's operators are gone:
 * weft_graph_launch returns WEFT_ESHUTDOWN, and weft_graph_destroy frees
 * what is left. Either may also race weft_engine_destroy on another
 * thread: a launch that comes too late returns WEFT_ESHUTDOWN (one that
 * came first runs, and the engine's destroy waits for it), and a graph's
 * destroy that comes too late waits until the engine's destroy has let go
 * of the graph, then frees it.
 */
typedef struct weft_graph weft_graph;

/* The calling thread's pushes to eng (weft_push, weft_op_push) are recorded
 * from now on, not run: each returns 0, or the error its push would return
 * (the descriptor is checked and its vars must be live). Meanwhile, on this
 * thread and engine, weft_var_delete, weft_var_wait, weft_wait_all,
 * weft_graph_launch and weft_engine_destroy return WEFT_EBUSY and do
 * nothing; other threads and engines, and operators this thread happens to
 * run meanwhile, are not affected. The thread must end its capture (a
 * capture left open at its exit is lost: freed, nothing of it runs). An
 * engine destroyed by another thread while a capture on it is open ends
 * that capture: its end returns WEFT_ESHUTDOWN. WEFT_EBUSY if this thread is
 * already capturing; WEFT_EINVAL from inside one of eng's operators or on a
 * worker thread of its pool (capture from a thread of your own). */
WEFT_API int weft_graph_begin_capture(weft_engine *eng);
/* Ends the calling thread's capture on eng and makes its graph (*out; a
 * capture of nothing makes an empty graph, whose launch does nothing).
 * WEFT_EINVAL if this thread is not capturing on eng; WEFT_ENOMEM, or
 * WEFT_ESHUTDOWN once eng's destroy began (the capture ends all the same,
 * *out NULL). */
WEFT_API int weft_graph_end_capture(weft_engine *eng, weft_graph **out);
/* An empty graph of eng (its launch does nothing), to be filled with
 * weft_graph_add and weft_graph_edge. WEFT_EINVAL (NULL eng or out),
 * WEFT_ENOMEM, WEFT_ESHUTDOWN once eng's destroy began; *out NULL on an
 * error. Destroy it with weft_graph_destroy, before eng (as a captured
 * graph: see above). */
WEFT_API int weft_graph_create(weft_engine *eng, weft_graph **out);
/* Adds a node to graph: any operator a push takes (CPU fns, async_fn, GPU
 * operators and copies, priorities, flags, a name; vars to read and
 * write), and *node (unless node is NULL) gets its index: 0, 1, ... in the
 * order of adding (a captured graph's nodes come first). desc is checked
 * as weft_push checks it (WEFT_EINVAL, WEFT_ENODEV; its vars must be live)
 * and copied with its arrays; desc->arg and desc->name are used at every
 * launch and must outlive the graph. Its vars order it with the graph's
 * other nodes as a push would: after the nodes added before it that write
 * a var it uses or read a var it writes; and the launch is ordered with
 * the engine's other operators on them. WEFT_EBUSY while a launch of the
 * graph runs or is queued (nothing is added: wait for it); WEFT_EINVAL for NULL graph
 * or desc; WEFT_ENOMEM; WEFT_ESHUTDOWN once the engine's destroy began.
 * On an error nothing is added. */
WEFT_API int weft_graph_add(weft_graph *graph, const weft_op_desc *desc, size_t *node);
/* weft_graph_add with its argument stored with the node, as weft_push_arg
 * stores it: desc->arg NULL (WEFT_EINVAL otherwise, as for NULL data with
 * size > 0); size bytes copied from data into the graph (data may be
 * reused at once), and every launch's fn receives that copy (aligned to
 * WEFT_ARG_ALIGN; size 0: NULL). drop (NULL: none) runs once with it when
 * the graph is destroyed, or its engine first. On an error nothing is
 * copied and drop is not called. */
WEFT_API int weft_graph_add_arg(weft_graph *graph, const weft_op_desc *desc, const void *data,
                                size_t size, weft_arg_drop_fn drop, size_t *node);
/* Node before runs before node after, at every launch: after waits for
 * before to finish (a failure of before skips after, unless after has
 * WEFT_OP_NOSKIP, as a failed var would; GPU nodes of one device wait on
 * the device, as pushed ones do). Edges may be added in any order and
 * between nodes added in any order; a duplicate edge (or one that a var
 * already makes) is merged. A cycle, through edges or vars or both, is
 * found by the next launch, which returns WEFT_EINVAL with one message
 * naming a node on it (its index and name) and runs nothing. WEFT_EINVAL
 * for NULL graph, before == after or a node not added yet; WEFT_EBUSY
 * while a launch of the graph runs or is queued; WEFT_ENOMEM; WEFT_ESHUTDOWN once the
 * engine's destroy began. On an error nothing is added. */
WEFT_API int weft_graph_edge(weft_graph *graph, size_t before, size_t after);
/* Runs the graph's operators once more (see above) and returns without
 * waiting for them (an earlier launch whose last operator has finished but
 * whose end is still being recorded, a few dozen instructions on another
 * thread, is waited out first). A launch made while an earlier one of the
 * graph still runs, or waits, is queued behind it: it takes its place on
 * the graph's vars now, as a push would (an operator pushed after the call
 * on one of them runs after this launch, one pushed before it runs
 * before), and its nodes start once the launch before it has ended, from
 * any thread, launches of several threads in the order they took their
 * places; weft_wait_all and weft_var_wait wait for queued launches too.
 * On the naive engine a launch from inside one of the graph's own nodes
 * runs once that launch's nodes are done (its failures go to the next
 * weft_wait_all). WEFT_EINVAL if a var it uses has been deleted
 * (nothing runs; a message names the operator and the var), or if its
 * edges and vars form a cycle (nothing runs; a message names a node on
 * it); WEFT_ENOMEM when the graph changed since its last launch and could
 * not be resolved again (nothing runs; a later launch tries again);
 * WEFT_ESHUTDOWN once its engine's destroy began. With max_inflight, a
 * launch takes one place. May be called from inside operators, as
 * weft_push. */
WEFT_API int weft_graph_launch(weft_graph *graph);
/* A node's argument for one launch (weft_graph_launch_args). */
typedef struct weft_graph_arg {
  size_t node; /* the node's index (weft_graph_add's *node; a captured graph's
                  pushes are nodes 0, 1, ... in the order they were pushed) */
  void *arg;   /* what its fn (or async_fn) receives in this launch */
} weft_graph_arg;
/* weft_graph_launch with nargs nodes' arguments replaced for this launch
 * alone (args is read before the call returns: it may be reused at once);
 * every other node, and every later launch, gets the argument its node was
 * added or captured with. A launch queued behind another keeps its own.
 * WEFT_EINVAL (nothing runs; a message names the node) for NULL args with
 * nargs > 0, more args than the graph has nodes, a node the graph does not
 * have, a node named twice, a node
 * whose argument is stored with the graph (weft_graph_add_arg, or a
 * captured weft_push_arg: its fn reads that copy) and a GPU operator;
 * otherwise as weft_graph_launch. */
WEFT_API int weft_graph_launch_args(weft_graph *graph, const weft_graph_arg *args, size_t nargs);
/* Frees the graph. WEFT_EBUSY while a launch of it runs or is queued
 * (nothing happens);
 * NULL: WEFT_EINVAL; WEFT_ESHUTDOWN in a fork child for a graph it
 * inherited (frees nothing, as for pools and engines). */
WEFT_API int weft_graph_destroy(weft_graph *graph);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_WEFT_H */
