/*
 * weft — a work-stealing scheduler for task-parallel programs.
 *
 * The whole public API. C11; compiles as C++ too. Every function returns 0 or
 * a negative WEFT_E* code unless its comment says otherwise. A task's own
 * non-zero return value is passed through unchanged wherever it is reported.
 *
 * Thread safety: every function may be called from any thread, including from
 * inside a running task, unless its comment says otherwise.
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
 * return themselves (-1, -errno), so the two can be told apart. */
#define WEFT_EINVAL    (-1001) /* bad argument, dead handle, malformed environment value */
#define WEFT_ENOMEM    (-1002) /* out of memory */
#define WEFT_EAGAIN    (-1003) /* a thread or other resource could not be created */
#define WEFT_ESHUTDOWN (-1004) /* the pool or engine is being destroyed */
#define WEFT_EDEADLK   (-1005) /* the wait could never be satisfied */
#define WEFT_ENODEV    (-1006) /* no such device */
#define WEFT_EDEVICE   (-1007) /* device failure */

/* A static, human-readable name for code: every WEFT_E* code, 0 ("success"),
 * and "unknown error" for anything else. Never NULL. */
WEFT_API const char *weft_strerror(int code);

/* -------------------------------------------------------------------- pool */

typedef struct weft_pool weft_pool;
typedef int (*weft_task_fn)(void *arg);

typedef struct weft_pool_config {
  int num_threads;      /* 0: automatic (WEFT_NUM_THREADS, else the CPUs the
                           process may use: affinity mask and cgroup quota) */
  int spin_count;       /* -1: automatic (WEFT_SPIN_COUNT, else built in); the
                           idle rounds (about 1 us each) before a worker parks */
  const char *affinity; /* NULL: automatic (WEFT_AFFINITY, else "none");
                           "none" | "compact" | "scatter" | a cpu list "0,2,4-7" */
  const char *name;     /* NULL: "weft"; threads are named "<name>-w<N>" */
} weft_pool_config;

/* Sets every field to "automatic". */
WEFT_API void weft_pool_config_default(weft_pool_config *cfg);

/* Creates a pool and starts its workers. cfg NULL: all automatic. Returns
 * WEFT_EINVAL for a bad field or a malformed environment variable (with one
 * line on stderr naming it), WEFT_ENOMEM, or WEFT_EAGAIN when a thread could
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

/* Prepares g for spawning into pool. A group may be reused after wait. */
WEFT_API void weft_group_init(weft_group *g, weft_pool *pool);

/* Runs fn(arg) as part of g. WEFT_EINVAL for NULL g/fn or an uninitialised
 * group, WEFT_ENOMEM, WEFT_ESHUTDOWN (from a non-pool thread after destroy
 * began). */
WEFT_API int weft_group_spawn(weft_group *g, weft_task_fn fn, void *arg);

/* Waits until every task spawned into g (and every task they spawned into g)
 * has finished; returns the first non-zero value one of them returned, else 0.
 * The waiting thread runs other tasks meanwhile, so a worker is never blocked
 * and nested fork-join cannot deadlock. */
WEFT_API int weft_group_wait(weft_group *g);

/* ----------------------------------------------------------- parallel loops */

typedef int (*weft_range_fn)(size_t begin, size_t end, void *arg);

/* Calls fn on disjoint chunks covering [begin, end), in parallel; the caller
 * takes part. grain: the smallest chunk one call receives, except the range's
 * last chunk (0: automatic). Chunks are split adaptively, as idle workers ask
 * for work. Returns 0, WEFT_EINVAL (NULL pool or fn, begin > end), or the
 * first non-zero value fn returned (the chunks not yet started are then
 * skipped). An empty range returns 0 without calling fn. */
WEFT_API int weft_parallel_for(weft_pool *pool, size_t begin, size_t end, size_t grain,
                               weft_range_fn fn, void *arg);

typedef int (*weft_launch_fn)(void *arg, int task_id, int num_tasks);

/* MindSpore's ParallelLaunch: calls fn(arg, id, num_tasks) once for each id in
 * 0..num_tasks-1, in parallel; the caller takes part. Returns 0, WEFT_EINVAL
 * (NULL pool or fn, num_tasks < 0), or the first non-zero value fn returned.
 * num_tasks == 0 returns 0 without calling fn. */
WEFT_API int weft_parallel_launch(weft_pool *pool, weft_launch_fn fn, void *arg, int num_tasks);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_WEFT_H */
