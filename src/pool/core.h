/* SPDX-License-Identifier: MIT */
/*
 * The pool's core: the structures every file of src/pool/ shares (the pool,
 * its workers), which pool the calling thread belongs to, and the counts that
 * destroy's drain waits on (core.c). It sits below every other pool file;
 * the files above it, from the bottom:
 *
 *   group.c     a group's pending count: spawn, finish, arm a waiter
 *   solo.c      who owns each solo injection queue (one outside thread)
 *   search.c    finding work off the own deque: priority, injection, steal
 *   idle.c      spin, then park; who wakes whom (the searching count)
 *   submit.c    queueing a task: deque or injection queue, then a wake
 *   split.c     one piece of a parallel loop (lazy binary splitting)
 *   run.c       running one task record (a task, or a loop piece)
 *   wait.c      group waits and helping
 *   parallel.c  parallel_for / parallel_launch
 *   worker.c    the worker thread and its loop
 *   pool.c      configuration, create, destroy, stats
 */
#ifndef WEFT_POOL_CORE_H
#define WEFT_POOL_CORE_H
#include "pool/layer.h" /* layer guard: no include from a lower layer */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/guard.h"
#include "common/prof.h"
#include "common/tunables.h"
#include "pool/deque.h"
#include "pool/inject.h"
#include "pool/park.h"
#include "pool/prio.h"
#include "pool/task.h"
#include "pool/topo.h"
#include "weft/weft.h"

typedef struct weft_worker {
  weft_deque deque;          /* push/take: owner; steal: anyone */
  weft_pool *pool;           /* immutable */
  int index;                 /* immutable */
  int cpu;                   /* immutable after start: bound CPU, or -1 */
  uint64_t rng;              /* owner only: victim selection */
  weft_prof_track *prof;     /* immutable: its trace track; NULL: profiling off.
                                Recorded into by the owner only */
  weft_task_cache tasks;     /* owner only */
  int *victims;              /* immutable: other workers, nearest first */
  int nnear;                 /* immutable: how many of victims share a cache */
  uint32_t park_gen_seen;    /* owner only: the pool's park_gen when it last slept */
  unsigned inject_turn;      /* owner only: which injection queue to try first (search.c) */
  bool fair_due;             /* owner only: take from the injection queues first, next turn */
  unsigned ticks;            /* owner only: pops of its deque in a row (WEFT_FAIR_TICKS) */
  /* owner only: the deque's top and the injection queues' heads at the last
   * weft_pool_yield_due: a queue whose end has not moved since then has
   * had nobody to serve it */
  int64_t fair_top;
  uint64_t fair_solo_head[WEFT_SOLO_QUEUES], fair_inject_head;
  uintptr_t steal_floor;     /* owner only: below this stack address a
                                waiter stops stealing (see wait.c) */
  pthread_t thread;          /* written by create, read by destroy */
  bool started;              /* written by create, read by destroy */
  /* Statistics. atomic, relaxed: written by the owner only (load + store, no
   * RMW), read by weft_pool_stats. */
  _Atomic uint64_t tasks_run, steals, failed_steal_rounds, parks, wakeups;
} weft_worker;

/* Pool life cycle (pool->state). */
enum { WEFT_POOL_RUNNING = 0, WEFT_POOL_DRAINING = 1, WEFT_POOL_EXITING = 2 };

struct weft_pool {
  /* Immutable after create. */
  int nworkers;
  int64_t spin_count;     /* idle rounds before parking */
  weft_worker *workers;
  char name[16];
  weft_worker_observer_fn observer; /* NULL: none (weft_pool_config.observer) */
  void *observer_arg;
  /* atomic: workers whose observer START returned; the futex word create
   * waits on, so that every START comes before any task of the pool. */
  _Atomic uint32_t nobserved;
  weft_topo topo;
  weft_prof *prof;        /* NULL: profiling off; written by destroy */
  unsigned long fork_gen; /* the fork generation at create (common/fork.h) */

  weft_task_store tasks; /* internally locked */
  weft_inject inject;    /* internally locked */
  /* The solo injection queues (solo.h): producer of solo[i]: solo_owner[i]'s
   * thread only; consumers: any, as inject's. */
  weft_inject solo[WEFT_SOLO_QUEUES];
  /* atomic: the token of the thread outside the pool that owns solo[i],
   * NULL when none; claimed and given back by CAS */
  _Alignas(WEFT_CACHE_LINE) _Atomic(void *) solo_owner[WEFT_SOLO_QUEUES];
  /* atomic: solo queues ever claimed (only rises, claims take the lowest
   * free one): consumers look at solo[0, nsolo). Raised (release) before
   * the claimer's first push into the queue. */
  _Atomic int nsolo;
  uint64_t uid;                /* immutable after create: unique over the process's life */
  struct weft_pool *solo_next; /* under solo.c's registry lock */
  weft_prio prio;        /* internally locked: taken before any deque */

  /* The idle protocol, each on its own line: read on every submission,
   * written only on idle transitions. */
  _Alignas(WEFT_CACHE_LINE) weft_ec ec;
  /* atomic: workers searching for work (spinning, not parked). 64-bit so the
   * TSan stand-in for a fence can be an RMW on it. */
  _Alignas(WEFT_CACHE_LINE) _Atomic int64_t nsearching;
  /* atomic: a notify is in flight; suppresses repeated wake syscalls until
   * a worker reaches the searching state. */
  _Atomic int wake_pending;
  /* atomic, relaxed, on its own line (written at every idle entry): when a
   * worker last ran out of work (monotonic ns). The
   * last searcher spins until spin_count rounds after it, so a burst whose
   * workers finish at different times costs one spin, not one per worker. */
  _Alignas(WEFT_CACHE_LINE) _Atomic int64_t last_idle_ns;
  /* atomic, relaxed: bumped by weft_pool_park_idle; a spinning worker that
   * sees it differ from its park_gen_seen parks at once (idle.c). */
  _Atomic uint32_t park_gen;

  /* Life cycle and quiescence, for destroy. */
  _Alignas(WEFT_CACHE_LINE) _Atomic int state;
  /* Non-worker threads inside weft_pool_submit, group_spawn, a group wait
   * or a parallel loop enter it; destroy closes it and waits for them. */
  weft_guard guard;
  /* atomic: low 32 bits: threads that may take or run tasks (workers not
   * parked, helpers); high 32 bits: a count of transitions, so destroy can
   * tell "idle all along" from "idle at two instants". */
  _Atomic uint64_t busy;
  /* atomic: futex word destroy sleeps on while draining. */
  _Atomic uint32_t drain_seq;
  _Atomic int bind_warned; /* atomic: a refused bind was logged */
};

/* Defined in core.c. The calling thread's worker (set once by its main). */
#define WEFT_TLS __attribute__((tls_model("initial-exec")))
extern _Thread_local weft_worker *weft_tls_worker WEFT_TLS;
/* The pool whose task the calling thread is running (workers and helpers). */
extern _Thread_local weft_pool *weft_tls_task_pool WEFT_TLS;

/* The task cache a thread takes records from and gives them back to: a
 * worker's own, else the calling thread's (common/objstore.h, thread
 * caches), so that a user's thread spawning a burst takes a magazine under
 * the store's lock once per batch, not each record. NULL: none (no key for
 * the thread's exit): one record at a time under the lock. */
static inline weft_task_cache *weft_task_cache_of(weft_pool *pool, weft_worker *w)
{
  return w ? &w->tasks : weft_obj_thread_cache(&pool->tasks, WEFT_OBJ_TLS_TASKS);
}

/* The calling thread's worker, if it is one of pool's; else NULL. */
static inline weft_worker *weft_worker_of(weft_pool *pool)
{
  weft_worker *w = weft_tls_worker;
  return (w && w->pool == pool) ? w : NULL;
}

/* Bumps a worker's statistic. relaxed: a statistic with a single writer
 * (load + store, no RMW), read by weft_pool_stats. */
static inline void weft_stat_inc(_Atomic uint64_t *c)
{
  atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1, memory_order_relaxed);
}

/* Whether the calling thread is one of pool's workers or runs its task. */
bool weft_pool_is_inside(const weft_pool *pool);
/* A thread outside the pool's work entering an API call registers, so that
 * destroy waits for it before freeing the pool; refuse: fail with
 * WEFT_ESHUTDOWN once destroy began. *guest tells whether to leave. */
int weft_pool_guest_enter(weft_pool *pool, bool refuse, int *guest);
void weft_pool_guest_leave(weft_pool *pool, int guest);
/* A thread starts (+1) or stops (-1) being one that may take or run tasks:
 * the count destroy's drain waits to see at zero. */
void weft_busy_add(weft_pool *pool, int delta);

#endif /* WEFT_POOL_CORE_H */
