/*
 * The pool's internal structures, shared by the files of src/pool/.
 */
#ifndef WEFT_POOL_INTERNAL_H
#define WEFT_POOL_INTERNAL_H
#include "pool/layer.h" /* layer guard: no include from a lower layer */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

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
  uintptr_t steal_floor;     /* owner only: below this stack address a
                                waiter stops stealing (see group.c) */
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
  weft_topo topo;
  weft_prof *prof;        /* NULL: profiling off; written by destroy */
  unsigned long fork_gen; /* the fork generation at create (common/fork.h) */

  weft_task_store tasks; /* internally locked */
  weft_inject inject;    /* internally locked */
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

  /* Life cycle and quiescence, for destroy. */
  _Alignas(WEFT_CACHE_LINE) _Atomic int state;
  /* atomic: non-worker threads inside weft_pool_submit/group_spawn. */
  _Atomic int64_t nsubmitting;
  /* atomic: low 32 bits: threads that may take or run tasks (workers not
   * parked, helpers); high 32 bits: a count of transitions, so destroy can
   * tell "idle all along" from "idle at two instants". */
  _Atomic uint64_t busy;
  /* atomic: futex word destroy sleeps on while draining. */
  _Atomic uint32_t drain_seq;
  _Atomic int bind_warned; /* atomic: a refused bind was logged */
};

/* The group's private layout inside weft_group. */
/* Pending tasks = local + (state >> 2): spawns and finishes on the owner's
 * thread touch only `local`, so a spawn that is not stolen costs no atomic
 * read-modify-write; everyone else counts in `state`, which therefore goes
 * below zero (mod 2^32) when the owner's spawns finish elsewhere. */
typedef struct weft_group_impl {
  weft_pool *pool;      /* immutable after init */
  weft_worker *owner;   /* immutable after init: the initialising worker, or NULL */
  int32_t local;        /* owner only: spawns minus finishes on the owner's thread */
  /* atomic: others' spawns minus finishes << 2 | WEFT_GROUP_* waiter bits. */
  _Atomic uint32_t state;
  _Atomic int status;   /* atomic: first non-zero task return */
  uint32_t magic;       /* WEFT_GROUP_MAGIC once initialised */
} weft_group_impl;
#define WEFT_GROUP_MAGIC 0x77656674u
/* A thread outside the pool sleeps on the state word (futex). */
#define WEFT_GROUP_SLEEPING 1u
/* A worker waits parked on the pool's eventcount. */
#define WEFT_GROUP_PARKED 2u
#define WEFT_GROUP_ONE 4u /* one task in state */

/* The calling thread's worker, if it is one of pool's; else NULL. */
#define WEFT_TLS __attribute__((tls_model("initial-exec")))
extern _Thread_local weft_worker *weft_tls_worker WEFT_TLS;
/* The pool whose task the calling thread is running (workers and helpers). */
extern _Thread_local weft_pool *weft_tls_task_pool WEFT_TLS;

static inline weft_worker *weft_worker_of(weft_pool *pool)
{
  weft_worker *w = weft_tls_worker;
  return (w && w->pool == pool) ? w : NULL;
}

/* worker.c */
void *weft_worker_main(void *arg);
/* Runs t on the calling thread (w: its worker in pool, or NULL). */
void weft_run_task(weft_pool *pool, weft_worker *w, weft_task *t);
/* Anything to run that is not in w's own deque (w NULL: a helper). */
weft_task *weft_find_nonlocal(weft_pool *pool, weft_worker *w);
/* After a push to a deque: wake a parked worker if none is searching. */
void weft_pool_wake_heuristic(weft_pool *pool);
/* After an injection: the exact, fenced check. */
void weft_pool_wake_exact(weft_pool *pool);
bool weft_pool_any_work(weft_pool *pool);
void weft_busy_add(weft_pool *pool, int delta);

/* The idle protocol: searches, spins, then parks. g NULL: the worker loop's
 * idle phase; returns a task, or NULL when the pool is exiting. g non-NULL:
 * w waits for g; returns a task to run meanwhile, or NULL once g is done. */
weft_task *weft_worker_idle(weft_pool *pool, weft_worker *w, weft_group_impl *g);

/* pool.c: queues t from the calling thread (w: its worker in pool, or NULL:
 * then the caller is inside the pool's work or a registered guest). */
int weft_pool_enqueue(weft_pool *pool, weft_worker *w, weft_task *t);
/* Whether the calling thread is one of pool's workers or runs its task. */
bool weft_pool_is_inside(const weft_pool *pool);
/* A thread outside the pool's work entering an API call registers, so that
 * destroy waits for it before freeing the pool; refuse: fail with
 * WEFT_ESHUTDOWN once destroy began. *guest tells whether to leave. */
int weft_pool_guest_enter(weft_pool *pool, bool refuse, bool *guest);
void weft_pool_guest_leave(weft_pool *pool);

/* group.c: help run tasks until the group is done. */
int weft_group_wait_impl(weft_group_impl *g, weft_worker *w); /* w: weft_worker_of(g->pool) */

/* The signed count held in a group's state word. */
static inline int32_t weft_group_state_count(uint32_t s)
{
  return (int32_t)(s & ~3u) / 4;
}

/* Tasks of g not yet finished, as seen from the calling thread (w: its worker
 * in g's pool, or NULL). acquire: pairs with the release in task_done. */
static inline int32_t weft_group_pending(weft_group_impl *g, weft_worker *w)
{
  int32_t n = weft_group_state_count(atomic_load_explicit(&g->state, memory_order_acquire));
  return (w && w == g->owner) ? n + g->local : n;
}

/* Before a waiter sleeps: moves the owner's count into state and sets flag
 * (WEFT_GROUP_SLEEPING or _PARKED), so that the last finisher wakes it.
 * Returns false when nothing is pending (nothing was set). */
bool weft_group_arm(weft_group_impl *g, weft_worker *w, uint32_t flag);

#endif /* WEFT_POOL_INTERNAL_H */
