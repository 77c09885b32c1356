/* SPDX-License-Identifier: MIT */
/*
 * weft_mpi's life cycle: attach (checks, the communicator's duplicate, the
 * progress thread), detach, and the small accessors.
 *
 * Under MPI_THREAD_SERIALIZED every MPI call of the library, whichever
 * attachment makes it, is made under mpi_serial_lock, the process's one
 * lock (weft_mpi.call_lock), attach and detach's own calls included: the
 * checks before MPI's thread level is known, too. attach's collectives are
 * the nonblocking ones, completed by polling under the lock and sleeping
 * between polls without it: a blocking collective would hold the lock, and
 * so stop every other attachment's transfers, until every rank reached it.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/env.h"
#include "common/tunables.h"
#include "mpi/mpi_int.h"

void weft_mpi_config_default(weft_mpi_config *cfg)
{
  if (!cfg)
    return;
  memset(cfg, 0, sizeof *cfg);
  cfg->timeout_ms = -1;
}

/* WEFT_MPI_TIMEOUT_MS: unset or empty -> the default; malformed -> WEFT_EINVAL
 * (the library's one integer reader, common/env.h: the engine's rules and
 * message). */
static int timeout_from_env(int *out)
{
  char msg[WEFT_ENV_MSG_MAX];
  long v = WEFT_MPI_TIMEOUT_MS_DEFAULT;
  int rc =
      weft_env_int_read("WEFT_MPI_TIMEOUT_MS", 0, WEFT_MPI_TIMEOUT_MS_MAX, &v, msg, sizeof msg);
  if (rc < 0) {
    mpi_log(NULL, "%s", msg);
    return rc;
  }
  *out = (int)v;
  return 0;
}

static int check_config(const weft_mpi_config *cfg, int *timeout_ms)
{
  if (!cfg)
    return timeout_from_env(timeout_ms);
  for (size_t i = 0; i < sizeof cfg->reserved / sizeof cfg->reserved[0]; i++)
    if (cfg->reserved[i]) {
      mpi_log(NULL, "weft_mpi_attach: cfg->reserved[%zu] is not zero (use "
                    "weft_mpi_config_default)", i);
      return WEFT_EINVAL;
    }
  if (cfg->timeout_ms == -1)
    return timeout_from_env(timeout_ms);
  if (cfg->timeout_ms < 0 || cfg->timeout_ms > WEFT_MPI_TIMEOUT_MS_MAX) {
    mpi_log(NULL, "weft_mpi_attach: cfg->timeout_ms = %d: expected -1 or [0, %d]",
            cfg->timeout_ms, WEFT_MPI_TIMEOUT_MS_MAX);
    return WEFT_EINVAL;
  }
  *timeout_ms = cfg->timeout_ms;
  return 0;
}

/* MPI is initialized with at least MPI_THREAD_SERIALIZED; *level: the
 * level. Under mpi_serial_lock: the level is not known yet. */
static int check_mpi(int *level)
{
  int inited = 0, finalized = 0;
  *level = MPI_THREAD_SINGLE;
  pthread_mutex_lock(&mpi_serial_lock);
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  if (inited && !finalized)
    MPI_Query_thread(level);
  pthread_mutex_unlock(&mpi_serial_lock);
  if (!inited || finalized) {
    mpi_log(NULL, "weft_mpi_attach: MPI is %s", finalized ? "finalized" : "not initialized");
    return WEFT_EINVAL;
  }
  if (*level < MPI_THREAD_SERIALIZED) {
    mpi_log(NULL, "weft_mpi_attach: MPI was initialized with %s; weft_mpi needs "
                  "MPI_THREAD_SERIALIZED or MPI_THREAD_MULTIPLE (MPI_Init_thread): its progress "
                  "thread makes the MPI calls",
            *level == MPI_THREAD_SINGLE ? "MPI_THREAD_SINGLE" : "MPI_THREAD_FUNNELED");
    return WEFT_EINVAL;
  }
  return 0;
}

/* The lock around attach and detach's MPI calls (NULL: none needed, under
 * MPI_THREAD_MULTIPLE before the attachment has its own lock). */
static void lock_calls(pthread_mutex_t *lock)
{
  if (lock)
    pthread_mutex_lock(lock);
}

static void unlock_calls(pthread_mutex_t *lock)
{
  if (lock)
    pthread_mutex_unlock(lock);
}

/* Completes a nonblocking collective: MPI_Test under lock, sleeping
 * between tests without it (from 10 us, doubling to 1 ms), so that other
 * attachments' threads call MPI meanwhile. */
static int complete_unlocked(pthread_mutex_t *lock, MPI_Request *req)
{
  long ns = 10000;
  for (;;) {
    int done = 0;
    lock_calls(lock);
    int err = MPI_Test(req, &done, MPI_STATUS_IGNORE);
    unlock_calls(lock);
    if (err != MPI_SUCCESS || done)
      return err;
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
    ns = ns * 2 > 1000000 ? 1000000 : ns * 2;
  }
}

static void init_sync(weft_mpi *mpi, int level)
{
  pthread_mutex_init(&mpi->map_lock, NULL);
  pthread_mutex_init(&mpi->lock, NULL);
  pthread_mutex_init(&mpi->own_call_lock, NULL);
  mpi->call_lock = level == MPI_THREAD_MULTIPLE ? &mpi->own_call_lock : &mpi_serial_lock;
  pthread_cond_init(&mpi->work_cv, NULL);
  pthread_cond_init(&mpi->coll_cv, NULL);
}

/* Frees mpi itself, its thread joined or never started. */
static void free_attachment(weft_mpi *mpi)
{
  pthread_mutex_destroy(&mpi->own_call_lock);
  pthread_cond_destroy(&mpi->coll_cv);
  pthread_cond_destroy(&mpi->work_cv);
  pthread_mutex_destroy(&mpi->lock);
  pthread_mutex_destroy(&mpi->map_lock);
  free(mpi);
}

int weft_mpi_attach(weft_engine *eng, MPI_Comm comm, const weft_mpi_config *cfg, weft_mpi **out)
{
  if (out)
    *out = NULL;
  if (!eng || !out || comm == MPI_COMM_NULL)
    return WEFT_EINVAL;
  int level;
  int rc = check_mpi(&level);
  if (rc)
    return rc;
  pthread_mutex_t *lock = level == MPI_THREAD_MULTIPLE ? NULL : &mpi_serial_lock;
  /* Collective from here: every rank takes part in the duplicate and in the
   * agreement below, so all return the same success or failure (a bad
   * environment value on one rank fails every rank's attach). */
  MPI_Comm dup = MPI_COMM_NULL;
  MPI_Request req = MPI_REQUEST_NULL;
  lock_calls(lock);
  int err = MPI_Comm_idup(comm, &dup, &req);
  unlock_calls(lock);
  if (err == MPI_SUCCESS)
    err = complete_unlocked(lock, &req);
  if (err != MPI_SUCCESS) {
    mpi_log(NULL, "weft_mpi_attach: MPI_Comm_idup failed");
    return WEFT_ECOMM;
  }
  int timeout_ms = 0;
  rc = check_config(cfg, &timeout_ms);
  weft_mpi *mpi = rc ? NULL : calloc(1, sizeof *mpi);
  if (!rc && !mpi)
    rc = WEFT_ENOMEM;
  int me = 0;
  lock_calls(lock);
  MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  MPI_Comm_rank(dup, &me);
  if (!rc) {
    mpi->eng = eng;
    mpi->timeout_ms = timeout_ms;
    mpi->comm = dup;
    mpi->rank = me;
    MPI_Comm_size(dup, &mpi->size);
    int *ub = NULL, flag = 0;
    MPI_Comm_get_attr(dup, MPI_TAG_UB, &ub, &flag);
    mpi->tag_ub = flag && ub ? *ub : 32767;
    mpi->valid_words = ((size_t)mpi->size + 63) / 64;
  }
  unlock_calls(lock);
  if (!rc) {
    init_sync(mpi, level);
    if ((rc = mpi_progress_start(mpi))) {
      free_attachment(mpi);
      mpi = NULL;
    }
  }
  /* The progress thread is held: it makes no MPI call before
   * mpi_progress_go. */
  int worst = rc;
  lock_calls(lock);
  err = MPI_Iallreduce(&rc, &worst, 1, MPI_INT, MPI_MIN, dup, &req);
  unlock_calls(lock);
  if (err == MPI_SUCCESS)
    err = complete_unlocked(lock, &req);
  if (err != MPI_SUCCESS)
    worst = WEFT_ECOMM;
  if (worst) {
    if (!rc)
      mpi_log(NULL, "weft_mpi_attach: rank %d: failed on another rank (%s)", me,
              weft_strerror(worst));
    if (mpi) {
      mpi_progress_stop(mpi); /* it never made an MPI call */
      free_attachment(mpi);
    }
    lock_calls(lock);
    MPI_Comm_free(&dup);
    unlock_calls(lock);
    return rc ? rc : worst;
  }
  mpi_seq_fold(mpi, 0x61747461636821ull ^ (uint64_t)mpi->size); /* "attach!" */
  mpi_progress_go(mpi);
  *out = mpi;
  return 0;
}

int weft_mpi_detach(weft_mpi *mpi)
{
  if (!mpi)
    return WEFT_EINVAL;
  int rc = weft_mpi_wait_all(mpi);
  mpi_progress_stop(mpi);
  /* A broken attachment leaves the duplicate alone: a dead or silent rank
   * cannot take part in freeing it, and abandoned requests still use it. */
  if (!atomic_load_explicit(&mpi->broken, memory_order_relaxed)) {
    pthread_mutex_lock(mpi->call_lock); /* other attachments' threads call MPI too */
    MPI_Comm_free(&mpi->comm);
    pthread_mutex_unlock(mpi->call_lock);
  }
  mpi_registry_free(mpi);
  free_attachment(mpi);
  return rc;
}

int weft_mpi_rank(const weft_mpi *mpi)
{
  return mpi ? mpi->rank : WEFT_EINVAL;
}

int weft_mpi_size(const weft_mpi *mpi)
{
  return mpi ? mpi->size : WEFT_EINVAL;
}

int weft_mpi_get_stats(const weft_mpi *mpi, weft_mpi_stats *out)
{
  if (!mpi || !out)
    return WEFT_EINVAL;
  weft_mpi *m = (weft_mpi *)mpi; /* atomic loads take non-const pointers */
  out->ops_pushed = atomic_load_explicit(&m->n_ops, memory_order_relaxed);
  out->sends = atomic_load_explicit(&m->n_sends, memory_order_relaxed);
  out->recvs = atomic_load_explicit(&m->n_recvs, memory_order_relaxed);
  out->bytes_sent = atomic_load_explicit(&m->n_bytes_sent, memory_order_relaxed);
  out->bytes_received = atomic_load_explicit(&m->n_bytes_recv, memory_order_relaxed);
  out->cache_hits = atomic_load_explicit(&m->n_cache_hits, memory_order_relaxed);
  return 0;
}
