/* SPDX-License-Identifier: MIT */
/*
 * What the layers above the pool (the dependency engine) may use of it,
 * beyond the public API. Nothing here knows of them.
 */
#ifndef WEFT_POOL_EXT_H
#define WEFT_POOL_EXT_H
#include "pool/layer.h" /* layer guard: no include from a lower layer */

#include <stdbool.h>

#include "weft/weft.h"

/* Queues a task record that lives in the caller's own block (t->fn and
 * t->arg set; the pool fills the rest and never frees it): on the calling
 * worker's deque or the injection queue, or (prio) on the priority queue.
 * Returns 0, WEFT_ESHUTDOWN, or WEFT_ENOMEM (priority queue only: the deque
 * and injection queue need no memory). */
struct weft_task;
int weft_pool_submit_embedded(weft_pool *pool, struct weft_task *t, bool prio, int priority);

/* Fairness for a task that runs a long stream of work itself (an engine
 * operator's kept successors), asked now and then (not on every item: it
 * compares with the last call): whether other work waits for this worker,
 * i.e. sits in pool's priority queue, or in an injection queue or on the
 * calling worker's deque that nobody took from since the last call
 * (relaxed looks). If so, the task should hand the rest of its stream back
 * with weft_pool_submit_embedded_last and return: the worker's loop then
 * runs what waited first (the injection queues before its deque). False on
 * any thread but pool's workers. */
bool weft_pool_yield_due(weft_pool *pool);
/* As weft_pool_submit_embedded without prio, but behind every task that
 * waits already: on the injection queue, whatever the calling thread. */
int weft_pool_submit_embedded_last(weft_pool *pool, struct weft_task *t);

/* Runs one task of pool on the calling thread if it can find one (a worker
 * of pool: its deque, then elsewhere; another thread: only when it is not
 * already helping). Returns whether it ran one. */
bool weft_pool_help_one(weft_pool *pool);
/* The calling thread never claims a pool's solo injection queue
 * (pool/solo.h): for the library's own threads that only pass work on (a
 * GPU stream worker releasing an operator's successors), so that the
 * queue stays free for a user's thread that pushes. */
void weft_pool_solo_decline(void);

/* The pool's trace recorder (WEFT_PROFILE), or NULL when profiling is off;
 * layers above add tracks of their own to it (src/common/prof.h). */
struct weft_prof *weft_pool_prof(const weft_pool *pool);

/* The calling worker's pool and index (set once when a worker starts; NULL
 * and -1 on other threads): read on every operator, so inline. */
extern _Thread_local const weft_pool *weft_tls_self_pool __attribute__((tls_model("initial-exec")));
extern _Thread_local int weft_tls_self_index __attribute__((tls_model("initial-exec")));

/* The calling thread's worker index in pool, or -1. */
static inline int weft_pool_worker_index(const weft_pool *pool)
{
  return weft_tls_self_pool == pool ? weft_tls_self_index : -1;
}

/* Whether the calling thread is running one of pool's tasks. */
bool weft_pool_in_task(const weft_pool *pool);

/* Between tasks of a worker's main loop. A layer above may leave work for
 * later on a worker thread (the engine's drain check) when the calling
 * thread is a worker running a task straight from its main loop
 * (weft_pool_top_task); it then sets weft_tls_between, which that loop calls
 * before it runs the next task it found (next) and before it goes idle
 * (next NULL), and which clears itself once done. */
typedef void (*weft_between_fn)(struct weft_task *next);
extern _Thread_local weft_between_fn weft_tls_between __attribute__((tls_model("initial-exec")));
bool weft_pool_top_task(void);

/* Whether any task waits in pool's queues (its deques, injection and
 * priority queues): relaxed looks, a hint unless fenced. */
bool weft_pool_any_work(weft_pool *pool);

/* The CPU time pool's worker threads have run, together, since they
 * started, nanoseconds (each thread's CPU clock: a system call per worker).
 * A waiter outside the pool tells workers that ran and got nowhere from
 * workers that were not given a CPU by how it grows. */
int64_t weft_pool_workers_cpu_ns(const weft_pool *pool);

/* Whether pool was inherited through fork (unusable: common/fork.h). */
bool weft_pool_forked(const weft_pool *pool);

#endif /* WEFT_POOL_EXT_H */
