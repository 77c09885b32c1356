/*
 * Engine life cycle, configuration and waiting (weft_wait_all, and the
 * common wait used by var waits, destroy and back pressure).
 */
#include <limits.h>
#include <string.h>

#include "common/alloc.h"
#include "common/env.h"
#include "common/error.h"
#include "common/fork.h"
#include "common/sync.h"
#include "deps/engine.h"
#include "deps/executor.h"
#include "pool/pool_ext.h"

void weft_engine_config_default(weft_engine_config *cfg)
{
  if (!cfg)
    return;
  cfg->pool = NULL;
  cfg->kind = NULL;
  cfg->max_inflight = -1;
}

int weft_gpu_count(const weft_engine *eng)
{
  return eng ? eng->num_devices : 0;
}

static pthread_mutex_t sync_lock = PTHREAD_MUTEX_INITIALIZER;
static weft_engine_sync *sync_free; /* under sync_lock */
static pthread_once_t sync_fork_once = PTHREAD_ONCE_INIT;

/* fork: the list is consistent in the child (common/fork.h). */
static void sync_fork_prepare(void)
{
  pthread_mutex_lock(&sync_lock);
}

static void sync_fork_release(void)
{
  pthread_mutex_unlock(&sync_lock);
}

static void sync_fork_register(void)
{
  weft_fork_register(WEFT_FORK_ENGINE_SYNC, sync_fork_prepare, sync_fork_release,
                     sync_fork_release);
}

/* A sync block with tallies for ntally threads, zeroed. A recycled block
 * may still be read by a completion of its previous engine (after that
 * engine drained): every field it reads is atomic, and what it computes
 * then is at worst a spurious wake-up. */
static weft_engine_sync *sync_get(int ntally)
{
  pthread_mutex_lock(&sync_lock);
  weft_engine_sync **pp = &sync_free;
  while (*pp && (*pp)->cap < ntally)
    pp = &(*pp)->next;
  weft_engine_sync *s = *pp;
  if (s)
    *pp = s->next;
  pthread_mutex_unlock(&sync_lock);
  if (!s) {
    s = weft_aligned_alloc(64, sizeof *s + (size_t)ntally * sizeof s->tally[0]);
    if (!s)
      return NULL;
    s->cap = ntally;
    atomic_init(&s->idle_seq, 0);
    atomic_init(&s->waiters, 0);
    atomic_init(&s->drain_waiters, 0);
    for (int i = 0; i < ntally; i++)
      for (int k = 0; k < 2; k++) {
        atomic_init(&s->tally[i].pushed[k], 0);
        atomic_init(&s->tally[i].done[k], 0);
      }
  }
  atomic_store_explicit(&s->ntally, ntally, memory_order_relaxed);
  atomic_store_explicit(&s->waiters, 0, memory_order_relaxed);
  atomic_store_explicit(&s->drain_waiters, 0, memory_order_relaxed);
  for (int i = 0; i < s->cap; i++) /* relaxed: published with the engine */
    for (int k = 0; k < 2; k++) {
      atomic_store_explicit(&s->tally[i].pushed[k], 0, memory_order_relaxed);
      atomic_store_explicit(&s->tally[i].done[k], 0, memory_order_relaxed);
    }
  return s;
}

static void sync_put(weft_engine_sync *s)
{
  pthread_mutex_lock(&sync_lock);
  s->next = sync_free;
  sync_free = s;
  pthread_mutex_unlock(&sync_lock);
}

void weft_engine_sync_notify(weft_engine_sync *sync)
{
  /* seq_cst: pairs with the waiter's increment before it re-checks. */
  if (atomic_load_explicit(&sync->waiters, memory_order_seq_cst) > 0) {
    /* release: pairs with the acquire load of idle_seq in weft_engine_wait. */
    atomic_fetch_add_explicit(&sync->idle_seq, 1, memory_order_release);
    weft_futex_wake(&sync->idle_seq, INT_MAX);
  }
}

void weft_engine_notify(weft_engine *eng)
{
  weft_engine_sync_notify(eng->sync);
}

void weft_engine_wait(weft_engine *eng, bool (*pred)(weft_engine *eng, void *arg), void *arg)
{
  /* Inside the pool's work (an operator, a task) a wait helps run work; a
   * thread outside sleeps until a completion wakes it. */
  bool help = weft_pool_worker_index(eng->pool) >= 0 || weft_pool_in_task(eng->pool);
  int64_t sleep_ns = WEFT_HELP_SLEEP_MIN_NS;
  for (;;) {
    if (pred(eng, arg))
      return;
    if (weft_opr_run_inline_one()) /* queued behind the op that waits */
      continue;
    if (help && weft_pool_help_one(eng->pool)) {
      sleep_ns = WEFT_HELP_SLEEP_MIN_NS;
      continue;
    }
    weft_engine_sync *sy = eng->sync;
    /* seq_cst: announce, then re-check; pairs with weft_engine_sync_notify. */
    atomic_fetch_add_explicit(&sy->waiters, 1, memory_order_seq_cst);
    /* acquire: pairs with the release bump in weft_engine_sync_notify. */
    uint32_t seq = atomic_load_explicit(&sy->idle_seq, memory_order_acquire);
    if (!pred(eng, arg))
      weft_futex_wait(&sy->idle_seq, seq, help ? sleep_ns : -1);
    atomic_fetch_sub_explicit(&sy->waiters, 1, memory_order_relaxed);
    if (sleep_ns < WEFT_HELP_SLEEP_MAX_NS)
      sleep_ns *= 2;
  }
}

/* The calling thread's tally: its worker's, or the shared one (own false). */
static weft_engine_tally *my_tally(weft_engine *eng, bool *own)
{
  int w = weft_pool_worker_index(eng->pool);
  *own = w >= 0;
  int shared = atomic_load_explicit(&eng->sync->ntally, memory_order_relaxed) - 1;
  return &eng->sync->tally[w >= 0 ? w : shared];
}

/* Adds one to a count of t (own: the calling worker's tally, else shared). */
static inline void tally_inc(_Atomic uint64_t *c, bool own, memory_order mo)
{
  if (own) /* the owner is the only writer: no read-modify-write */
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1, mo);
  else
    atomic_fetch_add_explicit(c, 1, mo);
}

/* Whether slot s of sy's tallies is drained. The finished counts are read
 * first: each finish counted there happened after its push, so the push
 * is in the pushed sum read afterwards, and equal sums mean that every
 * push read has finished. */
static bool tally_drained(weft_engine_sync *sy, int s)
{
  uint64_t done = 0, pushed = 0;
  int n = atomic_load_explicit(&sy->ntally, memory_order_relaxed);
  for (int i = 0; i < n; i++) /* seq_cst: pairs with the finishes' stores in count_done */
    done += atomic_load_explicit(&sy->tally[i].done[s], memory_order_seq_cst);
  for (int i = 0; i < n; i++) /* seq_cst: pairs with the pushes' epoch protocol */
    pushed += atomic_load_explicit(&sy->tally[i].pushed[s], memory_order_seq_cst);
  return pushed == done;
}

/* Roughly how many operators are pushed and not finished (relaxed loads of
 * every tally, the finished counts first: never below the true count of
 * those it read, which is all pacing needs). */
static uint64_t backlog(weft_engine_sync *sy)
{
  uint64_t done = 0, pushed = 0;
  int n = atomic_load_explicit(&sy->ntally, memory_order_relaxed);
  for (int i = 0; i < n; i++)
    for (int k = 0; k < 2; k++) /* relaxed: a hint for pacing, nothing is read through it */
      done += atomic_load_explicit(&sy->tally[i].done[k], memory_order_relaxed);
  for (int i = 0; i < n; i++)
    for (int k = 0; k < 2; k++) /* relaxed: as above */
      pushed += atomic_load_explicit(&sy->tally[i].pushed[k], memory_order_relaxed);
  return pushed > done ? pushed - done : 0;
}

/* Whether this thread is pacing: an operator it runs meanwhile (helping)
 * pushes on without pacing, so helping never nests. */
static _Thread_local bool pacing __attribute__((tls_model("initial-exec")));

void weft_engine_pace(weft_engine *eng)
{
  weft_engine_sync *sy = eng->sync;
  if (pacing)
    return;
  uint64_t left = backlog(sy);
  if (left <= WEFT_PACE_OPS)
    return;
  pacing = true;
  /* Progress is a new low: finishes alone could be other pushers' work
   * while what is left waits for the calling operator (its own vars). */
  uint64_t low = left;
  int64_t low_at = weft_now_ns();
  while ((left = backlog(sy)) > WEFT_PACE_OPS / 2) {
    if (left < low) {
      low = left;
      low_at = weft_now_ns();
    } else if (weft_now_ns() - low_at > WEFT_PACE_STALL_NS) {
      break; /* no progress: push on */
    }
    if (!weft_opr_run_inline_one() && !weft_pool_help_one(eng->pool))
      for (int i = 0; i < 32; i++)
        weft_cpu_pause();
  }
  pacing = false;
}

uint64_t weft_engine_count_push(weft_engine *eng)
{
  weft_opr *parent = weft_tls_opr;
  if (parent && parent->eng == eng) {
    /* Pushed from inside an operator: counted with it, so a weft_wait_all
     * that waits for the parent waits for what it pushes; the parent's own
     * count keeps that slot from draining meanwhile. relaxed: the push is
     * ordered before its finish by the operator's own hand-offs. */
    bool own;
    weft_engine_tally *t = my_tally(eng, &own);
    tally_inc(&t->pushed[parent->slot], own, memory_order_relaxed);
    return parent->epoch;
  }
  weft_engine_tally *shared =
      &eng->sync->tally[atomic_load_explicit(&eng->sync->ntally, memory_order_relaxed) - 1];
  for (;;) {
    /* seq_cst (all three): a weft_wait_all that flipped the epoch after we
     * read it either sees our count in the old slot, or we see its flip on
     * the re-read and move to the new slot. */
    uint64_t e = atomic_load_explicit(&eng->epoch, memory_order_seq_cst);
    atomic_fetch_add_explicit(&shared->pushed[e & 1], 1, memory_order_seq_cst);
    if (atomic_load_explicit(&eng->epoch, memory_order_seq_cst) == e)
      return e;
    weft_engine_count_done(eng, (int)(e & 1));
  }
}

void weft_engine_count_done_busy(weft_engine *eng, int slot)
{
  bool own;
  weft_engine_tally *t = my_tally(eng, &own);
  /* seq_cst: as in count_done. No one needs waking: the slot is not
   * drained, and the finish of the operator about to run checks again. */
  tally_inc(&t->done[slot], own, memory_order_seq_cst);
}


/* A drain check this worker left for between tasks (pool_ext.h): its last
 * finish counted down pend_epoch's slot of pend_sync while a thread waited
 * for a drain. NULL: none. */
static _Thread_local weft_engine_sync *pend_sync __attribute__((tls_model("initial-exec")));
static _Thread_local uint64_t pend_epoch __attribute__((tls_model("initial-exec")));

void weft_engine_drain_flush(void)
{
  weft_engine_sync *sy = pend_sync;
  if (!sy)
    return;
  pend_sync = NULL;
  weft_tls_between = NULL;
  /* The sync block outlives its engine (recycled, never freed): at worst
   * a spurious wake-up of a later engine's waiter. */
  if (tally_drained(sy, (int)(pend_epoch & 1)))
    weft_engine_sync_notify(sy);
}

void weft_engine_drain_before(const weft_opr *op)
{
  /* op counted in the same epoch: nothing of it has drained, and op's own
   * finish counts down again (and checks, or leaves the check again). */
  if (pend_sync && !(op->eng->sync == pend_sync && op->epoch == pend_epoch))
    weft_engine_drain_flush();
}

/* Uncounts an operator of epoch (only epoch & 1 matters unless deferring).
 * defer: a finished operator's count, whose drain check a worker in its
 * main loop may leave for between tasks. */
static void count_done(weft_engine *eng, uint64_t epoch, bool defer)
{
  weft_engine_sync *sy = eng->sync; /* eng may be freed once the count drains */
  int slot = (int)(epoch & 1);
  bool own;
  weft_engine_tally *t = my_tally(eng, &own);
  /* seq_cst: orders the count before the read of drain_waiters (a waiter
   * announces itself, then reads the sums: one of us sees the other). */
  tally_inc(&t->done[slot], own, memory_order_seq_cst);
  if (atomic_load_explicit(&sy->drain_waiters, memory_order_seq_cst) == 0)
    return;
  if (defer && own && weft_pool_top_task()) {
    /* A worker in its main loop: sum the tallies (every worker's lines,
     * which their owners keep writing) only once it is about to run
     * something not counted in this epoch, or to go idle. */
    if (pend_sync && (pend_sync != sy || pend_epoch != epoch))
      weft_engine_drain_flush();
    pend_sync = sy;
    pend_epoch = epoch;
    weft_tls_between = weft_engine_between;
    return;
  }
  if (tally_drained(sy, slot))
    weft_engine_sync_notify(sy);
}

void weft_engine_count_done(weft_engine *eng, int slot)
{
  count_done(eng, (uint64_t)slot, false);
}

void weft_engine_count_done_op(weft_engine *eng, uint64_t epoch)
{
  count_done(eng, epoch, true);
}

/* arg: a slot, or NULL for both. */
static bool drained(weft_engine *eng, void *arg)
{
  if (arg)
    return tally_drained(eng->sync, *(int *)arg);
  return tally_drained(eng->sync, 0) && tally_drained(eng->sync, 1);
}

/* Waits until drained(eng, slot) holds, announced as a drain waiter. */
static void wait_drained(weft_engine *eng, int *slot)
{
  weft_engine_sync *sy = eng->sync;
  /* seq_cst: pairs with the read of drain_waiters in count_done. */
  atomic_fetch_add_explicit(&sy->drain_waiters, 1, memory_order_seq_cst);
  weft_engine_wait(eng, drained, slot);
  atomic_fetch_sub_explicit(&sy->drain_waiters, 1, memory_order_relaxed);
}

static bool inside_own_op(const weft_engine *eng)
{
  return weft_tls_opr && weft_tls_opr->eng == eng;
}

/* Clears the failed state of the listed vars whose failure came from an
 * operator pushed in an epoch up to upto; later ones stay listed. One clear
 * at a time (wait_lock): a var taken off the list here is back on it, or
 * cleared, before another clear looks. */
static void clear_failures(weft_engine *eng, uint64_t upto)
{
  pthread_mutex_lock(&eng->wait_lock);
  pthread_mutex_lock(&eng->fail_lock);
  weft_var_impl *list = eng->failed_vars;
  eng->failed_vars = NULL;
  pthread_mutex_unlock(&eng->fail_lock);
  weft_var_impl *keep = NULL, *keep_tail = NULL;
  while (list) {
    weft_var_impl *v = list;
    list = v->failed_next; /* ours: a listed var is not relinked by a setter */
    weft_spin_lock(&v->q.lock);
    if (weft_var_failed(v) && v->failed_epoch > upto) { /* a failure pushed after the wait began */
      v->failed_next = keep;
      keep = v;
      if (!keep_tail)
        keep_tail = v;
    } else {
      weft_var_failed_store(v, 0);
      v->failed_listed = false;
    }
    weft_spin_unlock(&v->q.lock);
  }
  if (keep) {
    pthread_mutex_lock(&eng->fail_lock);
    keep_tail->failed_next = eng->failed_vars;
    eng->failed_vars = keep;
    pthread_mutex_unlock(&eng->fail_lock);
  }
  pthread_mutex_unlock(&eng->wait_lock);
}

static int take_failure(weft_engine *eng)
{
  pthread_mutex_lock(&eng->fail_lock);
  int rc = eng->first_failure;
  eng->first_failure = 0;
  eng->first_failure_name = NULL;
  pthread_mutex_unlock(&eng->fail_lock);
  return rc;
}

static int wait_all(weft_engine *eng);

int weft_wait_all(weft_engine *eng)
{
  if (!eng)
    return WEFT_EINVAL;
  if (inside_own_op(eng) || weft_tls_executor)
    return WEFT_EDEADLK; /* the calling operator is one of those waited for */
  bool guest;
  int rc = weft_engine_enter(eng, &guest);
  if (rc)
    return rc;
  rc = wait_all(eng);
  weft_engine_leave(eng, guest);
  return rc;
}

static int wait_all(weft_engine *eng)
{
  if (eng->naive) {
    pthread_mutex_lock(&eng->naive_lock);
    int rc = take_failure(eng);
    clear_failures(eng, UINT64_MAX);
    pthread_mutex_unlock(&eng->naive_lock);
    return rc;
  }
  /* Move later pushes on to the next epoch, then wait for this one to
   * drain. The next epoch's slot is the one before this; it must be empty
   * before it is reused (an earlier wait_all may still be waiting for it:
   * those operators were pushed before us too, so wait for them first).
   * The lock is held only to flip, never while waiting: a wait_all nested
   * in a task that another wait_all on this thread is helping must not
   * wait for that one to return. */
  int slot;
  uint64_t waited;
  for (;;) {
    pthread_mutex_lock(&eng->wait_lock);
    /* seq_cst: pairs with the epoch reads in weft_engine_count_push. */
    uint64_t e = atomic_load_explicit(&eng->epoch, memory_order_seq_cst);
    int older = (int)((e + 1) & 1);
    if (drained(eng, &older)) {
      atomic_store_explicit(&eng->epoch, e + 1, memory_order_seq_cst); /* seq_cst: same */
      pthread_mutex_unlock(&eng->wait_lock);
      slot = (int)(e & 1);
      waited = e;
      break;
    }
    pthread_mutex_unlock(&eng->wait_lock);
    wait_drained(eng, &older);
  }
  wait_drained(eng, &slot);
  int rc = take_failure(eng);
  clear_failures(eng, waited);
  return rc;
}

static int config(weft_engine *eng, const weft_engine_config *cfg)
{
  const char *kind = cfg->kind, *origin = "weft_engine_config.kind";
  if (!kind) {
    kind = weft_env_str("WEFT_ENGINE");
    origin = "WEFT_ENGINE";
  }
  if (!kind || strcmp(kind, "threaded") == 0) {
    eng->naive = false;
  } else if (strcmp(kind, "naive") == 0) {
    eng->naive = true;
  } else {
    weft_log("malformed %s=\"%s\": expected threaded or naive", origin, kind);
    return WEFT_EINVAL;
  }
  if (cfg->max_inflight < -1) {
    weft_log("bad weft_engine_config.max_inflight = %d: expected -1 (automatic) or >= 0",
             cfg->max_inflight);
    return WEFT_EINVAL;
  }
  eng->max_inflight = cfg->max_inflight;
  if (eng->max_inflight < 0) {
    long v;
    int rc = weft_env_int("WEFT_MAX_INFLIGHT", 0, INT_MAX, &v);
    if (rc < 0)
      return rc;
    eng->max_inflight = rc == 0 ? (int)v : 0;
  }
  return 0;
}

static void free_op_slot(weft_slot *s)
{
  weft_op_impl *t = (weft_op_impl *)s;
  weft_free(t->uses); /* live reusable operators at destroy */
  t->uses = NULL;
}

static void free_engine(weft_engine *eng)
{
  if (eng->exec) /* drained: no device operator is left */
    eng->exec->close(eng->exec_self);
  weft_handles_destroy(&eng->vars, NULL);
  weft_handles_destroy(&eng->ops, free_op_slot);
  weft_obj_store_destroy(&eng->oprs);
  weft_obj_store_destroy(&eng->bigs);
  weft_free(eng->caches);
  if (eng->sync)
    sync_put(eng->sync);
  pthread_mutex_destroy(&eng->fail_lock);
  pthread_mutex_destroy(&eng->wait_lock);
  pthread_mutex_destroy(&eng->naive_lock);
  if (eng->own_pool)
    weft_pool_destroy(eng->pool);
  weft_free(eng);
}

int weft_engine_create(weft_engine **out, const weft_engine_config *cfg_in)
{
  if (!out)
    return WEFT_EINVAL;
  *out = NULL;
  weft_engine_config cfg;
  if (cfg_in)
    cfg = *cfg_in;
  else
    weft_engine_config_default(&cfg);
  pthread_once(&sync_fork_once, sync_fork_register);
  if (cfg.pool && weft_pool_forked(cfg.pool))
    return WEFT_ESHUTDOWN; /* a pool inherited through fork */
  weft_engine *eng = weft_aligned_alloc(64, sizeof *eng);
  if (!eng)
    return WEFT_ENOMEM;
  memset(eng, 0, sizeof *eng);
  eng->fork_gen = weft_fork_generation();
  int rc = config(eng, &cfg);
  if (rc) {
    weft_free(eng);
    return rc;
  }
  pthread_mutexattr_t ma;
  pthread_mutexattr_init(&ma);
  pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE); /* naive ops push from inside */
  bool ok_naive = pthread_mutex_init(&eng->naive_lock, &ma) == 0;
  pthread_mutexattr_destroy(&ma);
  bool ok_fail = pthread_mutex_init(&eng->fail_lock, NULL) == 0;
  if (ok_fail && pthread_mutex_init(&eng->wait_lock, NULL)) {
    pthread_mutex_destroy(&eng->fail_lock);
    ok_fail = false;
  }
  bool ok_vars = weft_handles_init(&eng->vars, sizeof(weft_var_impl), WEFT_CACHE_LINE) == 0;
  bool ok_ops = weft_handles_init(&eng->ops, sizeof(weft_op_impl), WEFT_CACHE_LINE) == 0;
  bool ok_oprs = weft_obj_store_init(&eng->oprs, (sizeof(weft_opr) + 63) / 64 * 64,
                                     WEFT_OPR_BATCH) == 0;
  if (ok_oprs && weft_obj_store_init(&eng->bigs, sizeof(weft_opr_big), WEFT_OPR_BATCH / 8)) {
    weft_obj_store_destroy(&eng->oprs);
    ok_oprs = false;
  }
  if (!(ok_naive && ok_fail && ok_vars && ok_ops && ok_oprs)) {
    if (ok_naive)
      pthread_mutex_destroy(&eng->naive_lock);
    if (ok_fail) {
      pthread_mutex_destroy(&eng->fail_lock);
      pthread_mutex_destroy(&eng->wait_lock);
    }
    if (ok_vars)
      weft_handles_destroy(&eng->vars, NULL);
    if (ok_ops)
      weft_handles_destroy(&eng->ops, NULL);
    if (ok_oprs) {
      weft_obj_store_destroy(&eng->oprs);
      weft_obj_store_destroy(&eng->bigs);
    }
    weft_free(eng);
    return WEFT_ENOMEM;
  }
  eng->pool = cfg.pool;
  if (!eng->pool) {
    rc = weft_pool_create(&eng->pool, NULL);
    if (rc) {
      eng->pool = NULL;
      free_engine(eng);
      return rc;
    }
    eng->own_pool = true;
  }
  size_t ncaches = (size_t)weft_pool_num_threads(eng->pool);
  eng->caches = weft_aligned_alloc(WEFT_CACHE_LINE, ncaches * sizeof *eng->caches);
  if (eng->caches)
    memset(eng->caches, 0, ncaches * sizeof *eng->caches);
  eng->sync = sync_get(weft_pool_num_threads(eng->pool) + 1);
  if (!eng->caches || !eng->sync) {
    free_engine(eng);
    return WEFT_ENOMEM;
  }
  const weft_executor_ops *exec = weft_engine_device_executor();
  if (exec) {
    rc = exec->open(eng->pool, &eng->exec_self, &eng->num_devices);
    if (rc) {
      free_engine(eng);
      return rc;
    }
    eng->exec = exec;
  }
  atomic_init(&eng->epoch, 0);
  atomic_init(&eng->admitted, 0);
  atomic_init(&eng->cap_waiters, 0);

  atomic_init(&eng->state, WEFT_ENGINE_RUNNING);
  atomic_init(&eng->nsubmitting, 0);
  *out = eng;
  return 0;
}

int weft_engine_destroy(weft_engine *eng)
{
  if (!eng)
    return WEFT_EINVAL;
  if (weft_fork_stale(eng->fork_gen))
    return WEFT_ESHUTDOWN; /* a fork child's copy: frees nothing, waits for nothing */
  if (inside_own_op(eng) || weft_tls_executor || (eng->own_pool && weft_pool_in_task(eng->pool)))
    return WEFT_EDEADLK;
  /* seq_cst: pairs with the pushers' increment of nsubmitting. */
  atomic_store_explicit(&eng->state, WEFT_ENGINE_DRAINING, memory_order_seq_cst);
  while (atomic_load_explicit(&eng->nsubmitting, memory_order_seq_cst) != 0) /* seq_cst: same */
    sched_yield();
  if (eng->naive) { /* a push from inside one of its ops may still run */
    pthread_mutex_lock(&eng->naive_lock);
    pthread_mutex_unlock(&eng->naive_lock);
  } else {
    wait_drained(eng, NULL);
  }
  int rc = take_failure(eng);
  free_engine(eng);
  return rc;
}
