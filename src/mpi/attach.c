/*
 * weft_mpi's life cycle: attach (checks, the communicator's duplicate, the
 * progress thread), detach, and the small accessors.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/tunables.h"
#include "mpi/mpi_int.h"

void mpi_log(const weft_mpi *mpi, const char *fmt, ...)
{
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (mpi)
    fprintf(stderr, "weft_mpi: rank %d: %s\n", mpi->rank, msg);
  else
    fprintf(stderr, "weft_mpi: %s\n", msg);
}

double mpi_now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void weft_mpi_config_default(weft_mpi_config *cfg)
{
  if (!cfg)
    return;
  memset(cfg, 0, sizeof *cfg);
  cfg->timeout_ms = -1;
}

/* WEFT_MPI_TIMEOUT_MS: unset -> the default; malformed -> WEFT_EINVAL. */
static int timeout_from_env(int *out)
{
  const char *s = getenv("WEFT_MPI_TIMEOUT_MS");
  if (!s || !*s) {
    *out = WEFT_MPI_TIMEOUT_MS_DEFAULT;
    return 0;
  }
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || end == s || v < 0 || v > WEFT_MPI_TIMEOUT_MS_MAX) {
    mpi_log(NULL, "WEFT_MPI_TIMEOUT_MS=\"%s\": expected milliseconds in [0, %d]", s,
            WEFT_MPI_TIMEOUT_MS_MAX);
    return WEFT_EINVAL;
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

static int check_mpi(void)
{
  int inited = 0, finalized = 0, level = MPI_THREAD_SINGLE;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  if (!inited || finalized) {
    mpi_log(NULL, "weft_mpi_attach: MPI is %s", finalized ? "finalized" : "not initialized");
    return WEFT_EINVAL;
  }
  MPI_Query_thread(&level);
  if (level < MPI_THREAD_SERIALIZED) {
    mpi_log(NULL, "weft_mpi_attach: MPI was initialized with %s; weft_mpi needs "
                  "MPI_THREAD_SERIALIZED or MPI_THREAD_MULTIPLE (MPI_Init_thread): its progress "
                  "thread makes the MPI calls",
            level == MPI_THREAD_SINGLE ? "MPI_THREAD_SINGLE" : "MPI_THREAD_FUNNELED");
    return WEFT_EINVAL;
  }
  return 0;
}

static void init_sync(weft_mpi *mpi)
{
  pthread_mutex_init(&mpi->map_lock, NULL);
  pthread_mutex_init(&mpi->lock, NULL);
  pthread_mutex_init(&mpi->call_lock, NULL);
  pthread_cond_init(&mpi->work_cv, NULL);
  pthread_cond_init(&mpi->coll_cv, NULL);
}

/* Frees mpi itself, its thread joined or never started. */
static void free_attachment(weft_mpi *mpi)
{
  pthread_mutex_destroy(&mpi->call_lock);
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
  int rc = check_mpi();
  if (rc)
    return rc;
  /* Collective from here: every rank takes part in the duplicate and in the
   * agreement below, so all return the same success or failure (a bad
   * environment value on one rank fails every rank's attach). */
  MPI_Comm dup;
  if (MPI_Comm_dup(comm, &dup) != MPI_SUCCESS) {
    mpi_log(NULL, "weft_mpi_attach: MPI_Comm_dup failed");
    return WEFT_ECOMM;
  }
  MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  int timeout_ms = 0;
  rc = check_config(cfg, &timeout_ms);
  weft_mpi *mpi = rc ? NULL : calloc(1, sizeof *mpi);
  if (!rc && !mpi)
    rc = WEFT_ENOMEM;
  if (!rc) {
    mpi->eng = eng;
    mpi->timeout_ms = timeout_ms;
    mpi->comm = dup;
    MPI_Comm_rank(dup, &mpi->rank);
    MPI_Comm_size(dup, &mpi->size);
    int *ub = NULL, flag = 0;
    MPI_Comm_get_attr(dup, MPI_TAG_UB, &ub, &flag);
    mpi->tag_ub = flag && ub ? *ub : 32767;
    mpi->valid_words = ((size_t)mpi->size + 63) / 64;
    init_sync(mpi);
    if ((rc = mpi_progress_start(mpi))) {
      free_attachment(mpi);
      mpi = NULL;
    }
  }
  /* The progress thread is held: this is still the only thread calling MPI. */
  int worst = rc;
  if (MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MIN, dup) != MPI_SUCCESS)
    worst = WEFT_ECOMM;
  if (worst) {
    if (!rc) {
      int me = 0;
      MPI_Comm_rank(dup, &me);
      mpi_log(NULL, "weft_mpi_attach: rank %d: failed on another rank (%s)", me,
              weft_strerror(worst));
    }
    if (mpi) {
      mpi_progress_stop(mpi); /* it never made an MPI call */
      free_attachment(mpi);
    }
    MPI_Comm_free(&dup);
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
  if (!atomic_load_explicit(&mpi->broken, memory_order_relaxed))
    MPI_Comm_free(&mpi->comm);
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
