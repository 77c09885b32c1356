/* SPDX-License-Identifier: MIT */
/*
 * Pool life cycle: configuration, create, destroy (drain), stats. The top of
 * the pool's files: it starts the workers (worker.c) and waits for the
 * drain (core.c's counts, idle.c's view of the queues).
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "common/env.h"
#include "common/error.h"
#include "common/fork.h"
#include "common/sync.h"
#include "pool/core.h"
#include "pool/solo.h"
#include "pool/idle.h"
#include "pool/pool_ext.h"
#include "pool/worker.h"

void weft_pool_config_default(weft_pool_config *cfg)
{
  if (!cfg)
    return;
  cfg->num_threads = 0;
  cfg->spin_count = -1;
  cfg->affinity = NULL;
  cfg->name = NULL;
  cfg->profile = NULL;
  cfg->observer = NULL;
  cfg->observer_arg = NULL;
  for (size_t k = 0; k < sizeof cfg->reserved / sizeof cfg->reserved[0]; k++)
    cfg->reserved[k] = NULL;
}

struct weft_prof *weft_pool_prof(const weft_pool *pool)
{
  return pool->prof;
}


bool weft_pool_forked(const weft_pool *pool)
{
  return weft_fork_stale(pool->fork_gen);
}

bool weft_pool_in_task(const weft_pool *pool)
{
  return weft_pool_is_inside(pool);
}

int weft_current_worker(void)
{
  weft_worker *w = weft_tls_worker;
  return w ? w->index : -1;
}

int weft_pool_num_threads(const weft_pool *pool)
{
  return pool ? pool->nworkers : WEFT_EINVAL;
}

int weft_pool_default_threads(void)
{
  long v;
  int rc = weft_env_int("WEFT_NUM_THREADS", 0, WEFT_MAX_THREADS, &v);
  if (rc < 0)
    return rc;
  if (rc == 0 && v > 0)
    return (int)v;
  weft_topo topo;
  rc = weft_topo_init(&topo);
  if (rc)
    return rc;
  int n = weft_topo_default_threads(&topo);
  weft_topo_destroy(&topo);
  return n;
}

int weft_pool_park_idle(weft_pool *pool)
{
  if (!pool)
    return WEFT_EINVAL;
  /* relaxed: a request, not a publication; each spinning worker reads it
   * once a round (idle.c) and parks through the usual handshake. */
  atomic_fetch_add_explicit(&pool->park_gen, 1, memory_order_relaxed);
  return 0;
}

int weft_pool_stats(const weft_pool *pool, weft_worker_stats *out, int max)
{
  if (!pool || max < 0 || (!out && max > 0))
    return WEFT_EINVAL;
  int n = max < pool->nworkers ? max : pool->nworkers;
  for (int i = 0; i < n; i++) {
    weft_worker *w = &pool->workers[i];
    out[i].tasks_run = atomic_load_explicit(&w->tasks_run, memory_order_relaxed);
    out[i].steals = atomic_load_explicit(&w->steals, memory_order_relaxed);
    out[i].failed_steal_rounds = atomic_load_explicit(&w->failed_steal_rounds, memory_order_relaxed);
    out[i].parks = atomic_load_explicit(&w->parks, memory_order_relaxed);
    out[i].wakeups = atomic_load_explicit(&w->wakeups, memory_order_relaxed);
  }
  return n;
}

int64_t weft_pool_workers_cpu_ns(const weft_pool *pool)
{
  int64_t sum = 0;
  for (int i = 0; i < pool->nworkers; i++) {
    const weft_worker *w = &pool->workers[i];
    clockid_t clock;
    struct timespec ts;
    /* Every worker is started before create returns, and runs until
     * destroy: its thread handle is valid as long as the pool. */
    if (w->started && pthread_getcpuclockid(w->thread, &clock) == 0 &&
        clock_gettime(clock, &ts) == 0)
      sum += (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
  }
  return sum;
}

/* Reads each automatic field from the environment (or the built-in default). */
static int resolve_config(weft_pool *pool, const weft_pool_config *cfg, int *nthreads,
                          const char **affinity, const char **affinity_origin)
{
  if (cfg->num_threads < 0 || cfg->num_threads > WEFT_MAX_THREADS) {
    weft_log("bad weft_pool_config.num_threads = %d: expected 0 (automatic) to %d",
             cfg->num_threads, WEFT_MAX_THREADS);
    return WEFT_EINVAL;
  }
  if (cfg->spin_count < -1) {
    weft_log("bad weft_pool_config.spin_count = %d: expected -1 (automatic) or >= 0",
             cfg->spin_count);
    return WEFT_EINVAL;
  }
  long v;
  int rc;
  *nthreads = cfg->num_threads;
  if (*nthreads == 0) {
    rc = weft_env_int("WEFT_NUM_THREADS", 0, WEFT_MAX_THREADS, &v);
    if (rc < 0)
      return rc;
    if (rc == 0)
      *nthreads = (int)v; /* "0" means automatic, as in the config */
    if (*nthreads == 0)
      *nthreads = weft_topo_default_threads(&pool->topo);
  }
  pool->spin_count = cfg->spin_count;
  if (pool->spin_count < 0) {
    rc = weft_env_int("WEFT_SPIN_COUNT", 0, WEFT_SPIN_COUNT_MAX, &v);
    if (rc < 0)
      return rc;
    pool->spin_count = rc == 0 ? (int64_t)v : WEFT_SPIN_COUNT_DEFAULT;
  }
  *affinity = cfg->affinity;
  *affinity_origin = "weft_pool_config.affinity";
  if (!*affinity) {
    *affinity = weft_env_str("WEFT_AFFINITY");
    *affinity_origin = "WEFT_AFFINITY";
  }
  if (!*affinity)
    *affinity = "none";
  char pname[48];
  snprintf(pname, sizeof pname, "%s pool", pool->name);
  return weft_prof_open(&pool->prof, cfg->profile, pname);
}

/* Victims of worker i: every other worker, those sharing a cache first. */
static int plan_victims(weft_pool *pool, weft_worker *w)
{
  int n = pool->nworkers;
  w->victims = weft_malloc(sizeof(int) * (size_t)(n > 1 ? n - 1 : 1));
  if (!w->victims)
    return WEFT_ENOMEM;
  int k = 0;
  w->nnear = 0;
  if (w->cpu >= 0) {
    for (int j = 0; j < n; j++)
      if (j != w->index && weft_topo_share_cache(&pool->topo, w->cpu, pool->workers[j].cpu))
        w->victims[k++] = j;
    w->nnear = k;
  }
  for (int j = 0; j < n; j++) {
    bool near = false;
    for (int m = 0; m < w->nnear; m++)
      near |= w->victims[m] == j;
    if (j != w->index && !near)
      w->victims[k++] = j;
  }
  return 0;
}

static void free_pool(weft_pool *pool)
{
  if (pool->workers) {
    for (int i = 0; i < pool->nworkers; i++) {
      weft_worker *w = &pool->workers[i];
      if (atomic_load_explicit(&w->deque.array, memory_order_relaxed))
        weft_deque_destroy(&w->deque);
      weft_free(w->victims);
    }
    weft_free(pool->workers);
  }
  weft_task_store_destroy(&pool->tasks);
  weft_solo_unregister(pool);
  weft_inject_destroy(&pool->inject);
  for (int i = 0; i < WEFT_SOLO_QUEUES; i++)
    weft_inject_destroy(&pool->solo[i]);
  weft_prio_destroy(&pool->prio);
  weft_topo_destroy(&pool->topo);
  weft_prof_destroy(pool->prof);
  weft_free(pool);
}

/* Stops and joins the workers; the queues must be empty. */
static void stop_workers(weft_pool *pool)
{
  /* seq_cst: workers check state after their re-check (idle.c, park). */
  atomic_store_explicit(&pool->state, WEFT_POOL_EXITING, memory_order_seq_cst);
  weft_fence_sc(&pool->nsearching);
  weft_ec_notify(&pool->ec, true);
  for (int i = 0; i < pool->nworkers; i++)
    if (pool->workers[i].started)
      pthread_join(pool->workers[i].thread, NULL);
}

int weft_pool_create(weft_pool **out, const weft_pool_config *cfg_in)
{
  if (!out)
    return WEFT_EINVAL;
  *out = NULL;
  weft_pool_config cfg;
  if (cfg_in)
    cfg = *cfg_in;
  else
    weft_pool_config_default(&cfg);
  /* Room for later fields: refused before anything is allocated or started. */
  for (size_t k = 0; k < sizeof cfg.reserved / sizeof cfg.reserved[0]; k++) {
    if (cfg.reserved[k]) {
      weft_log("bad weft_pool_config.reserved[%zu]: must be NULL (weft_pool_config_default)", k);
      return WEFT_EINVAL;
    }
  }

  weft_pool *pool = weft_aligned_alloc(WEFT_CACHE_LINE, sizeof *pool);
  if (!pool)
    return WEFT_ENOMEM;
  memset(pool, 0, sizeof *pool);
  weft_fork_init();
  pool->fork_gen = weft_fork_generation();
  int rc = weft_topo_init(&pool->topo);
  if (rc) {
    weft_free(pool);
    return rc;
  }
  if (weft_task_store_init(&pool->tasks)) {
    weft_topo_destroy(&pool->topo);
    weft_free(pool);
    return WEFT_ENOMEM;
  }
  if (weft_inject_init(&pool->inject)) {
    weft_task_store_destroy(&pool->tasks);
    weft_topo_destroy(&pool->topo);
    weft_free(pool);
    return WEFT_ENOMEM;
  }
  for (int i = 0; i < WEFT_SOLO_QUEUES; i++)
    weft_inject_init(&pool->solo[i]); /* cannot fail: no memory */
  weft_solo_register(pool);
  if (weft_prio_init(&pool->prio)) {
    weft_solo_unregister(pool);
    for (int i = 0; i < WEFT_SOLO_QUEUES; i++)
      weft_inject_destroy(&pool->solo[i]);
    weft_inject_destroy(&pool->inject);
    weft_task_store_destroy(&pool->tasks);
    weft_topo_destroy(&pool->topo);
    weft_free(pool);
    return WEFT_ENOMEM;
  }
  weft_ec_init(&pool->ec);
  atomic_init(&pool->nsearching, 0);
  atomic_init(&pool->wake_pending, 0);
  atomic_init(&pool->last_idle_ns, 0);
  atomic_init(&pool->park_gen, 0);
  atomic_init(&pool->state, WEFT_POOL_RUNNING);
  weft_guard_init(&pool->guard);
  atomic_init(&pool->drain_seq, 0);
  atomic_init(&pool->bind_warned, 0);
  atomic_init(&pool->nobserved, 0);
  snprintf(pool->name, sizeof pool->name, "%s", cfg.name ? cfg.name : "weft");
  pool->observer = cfg.observer;
  pool->observer_arg = cfg.observer_arg;

  int nthreads = 0;
  const char *affinity = NULL, *affinity_origin = NULL;
  rc = resolve_config(pool, &cfg, &nthreads, &affinity, &affinity_origin);
  if (rc) {
    free_pool(pool);
    return rc;
  }
  pool->workers = weft_aligned_alloc(WEFT_CACHE_LINE, sizeof(weft_worker) * (size_t)nthreads);
  if (!pool->workers) {
    free_pool(pool);
    return WEFT_ENOMEM;
  }
  memset(pool->workers, 0, sizeof(weft_worker) * (size_t)nthreads);
  pool->nworkers = nthreads;
  /* Every worker counts as busy until it first parks. */
  atomic_init(&pool->busy, (uint64_t)nthreads);

  int *cpus = weft_malloc(sizeof(int) * (size_t)nthreads);
  if (!cpus) {
    free_pool(pool);
    return WEFT_ENOMEM;
  }
  rc = weft_topo_plan(&pool->topo, affinity, affinity_origin, nthreads, cpus);
  for (int i = 0; rc == 0 && i < nthreads; i++) {
    weft_worker *w = &pool->workers[i];
    w->pool = pool;
    w->index = i;
    w->cpu = cpus[i];
    w->rng = 0x9E3779B97F4A7C15ULL * (uint64_t)(i + 1);
    if (pool->prof) {
      char tname[48];
      snprintf(tname, sizeof tname, "%s worker %d", pool->name, i);
      w->prof = weft_prof_track_new(pool->prof, tname); /* tid i: made first, in order */
      if (!w->prof)
        rc = WEFT_ENOMEM;
    }
  }
  weft_free(cpus);
  for (int i = 0; rc == 0 && i < nthreads; i++) {
    weft_worker *w = &pool->workers[i];
    rc = weft_deque_init(&w->deque, WEFT_DEQUE_INITIAL_CAPACITY);
    if (rc == 0)
      rc = plan_victims(pool, w);
  }
  if (rc) {
    free_pool(pool);
    return rc;
  }

  for (int i = 0; i < nthreads; i++) {
    weft_worker *w = &pool->workers[i];
    int err = weft_thread_create(&w->thread, NULL, weft_worker_main, w);
    if (err) {
      weft_log("could not start worker thread %d of %d: %s", i, nthreads, strerror(err));
      stop_workers(pool);
      free_pool(pool);
      return WEFT_EAGAIN;
    }
    w->started = true;
  }
  if (pool->observer) {
    /* Every worker's START callback returns before any task of the pool can
     * be submitted (worker.c counts them in nobserved). */
    uint32_t n;
    /* acquire: pairs with the release increment after START in worker.c. */
    while ((n = atomic_load_explicit(&pool->nobserved, memory_order_acquire)) < (uint32_t)nthreads)
      weft_futex_wait(&pool->nobserved, n, -1);
  }
  *out = pool;
  return 0;
}

int weft_pool_destroy(weft_pool *pool)
{
  if (!pool)
    return WEFT_EINVAL;
  if (weft_fork_stale(pool->fork_gen))
    return WEFT_ESHUTDOWN; /* a fork child's copy: frees nothing, joins no one */
  if (weft_pool_is_inside(pool))
    return WEFT_EDEADLK; /* from its own work: the drain would wait on us */
  /* seq_cst: pairs with the loads of state in the idle and busy paths. */
  atomic_store_explicit(&pool->state, WEFT_POOL_DRAINING, memory_order_seq_cst);
  weft_guard_close(&pool->guard); /* new submissions from outside: WEFT_ESHUTDOWN */
  weft_guard_wait_empty(&pool->guard);
  /* Drain: wait until every worker is parked with nothing queued, and
   * nothing moved between two readings of busy. */
  for (;;) {
    /* acquire: pairs with the release bump in weft_busy_add. */
    uint32_t seq = atomic_load_explicit(&pool->drain_seq, memory_order_acquire);
    /* seq_cst (both readings): pairs with weft_busy_add; see its comment. */
    uint64_t b1 = atomic_load_explicit(&pool->busy, memory_order_seq_cst);
    if ((uint32_t)b1 == 0) {
      bool work = weft_pool_any_work(pool);
      uint64_t b2 = atomic_load_explicit(&pool->busy, memory_order_seq_cst);
      if (!work && b1 == b2)
        break;
      if (work) { /* defensive: make sure someone is looking */
        weft_fence_sc(&pool->nsearching);
        weft_ec_notify(&pool->ec, true);
      }
    }
    /* Spinning workers park at once while draining; the last one to park
     * bumps drain_seq. The timeout only bounds a missed bump. */
    weft_futex_wait(&pool->drain_seq, seq, 10 * 1000 * 1000);
  }
  stop_workers(pool);
  /* A waiter on an older group may have entered after the first wait. */
  weft_guard_wait_empty(&pool->guard);
  weft_prof_write(pool->prof); /* the trace belongs to the pool; failures are logged */
  free_pool(pool);
  return 0;
}
