/*
 * weft_mpi_wait_all: the collective wait.
 *
 *   1. The ranks compare their sequences (count and hash of every sequence
 *      call since attach) before anything else: a mismatch would leave
 *      transfers without a partner, and the local wait would never end.
 *   2. Each rank waits for its own engine; the progress thread carries the
 *      transfers (and breaks the wait with WEFT_ETIMEDOUT if a rank dies).
 *   3. The ranks compare their results, so every rank returns the same one.
 */
#include <stdlib.h>
#include <string.h>

#include "mpi/mpi_int.h"

/* Gathers n bytes from every rank into *all (size * n, malloc'ed; the
 * caller frees it), through the progress thread. On failure *all is NULL:
 * a collective that was abandoned (a broken attachment) keeps its buffers,
 * since MPI may still write them. */
static int allgather(weft_mpi *mpi, const void *mine, void **all, int n)
{
  *all = NULL;
  char *buf = malloc((size_t)n * (size_t)(mpi->size + 1));
  if (!buf)
    return WEFT_ENOMEM;
  memcpy(buf, mine, (size_t)n); /* the send buffer lives as long as the receive one */
  mpi_job job = {0};
  job.kind = JOB_ALLGATHER;
  job.peer = -1;
  job.sendbuf = buf;
  job.recvbuf = buf + n;
  job.nbytes = n;
  int rc = mpi_run_job(mpi, &job);
  if (!rc) {
    memmove(buf, buf + n, (size_t)n * (size_t)mpi->size);
    *all = buf;
  } else if (!job.abandoned) {
    free(buf);
  }
  return rc;
}

/* Ends the wait on a broken attachment: every pending transfer is failed
 * (nothing is posted any more), so the local wait ends too. */
static int end_broken(weft_mpi *mpi, int why)
{
  int expected = 0;
  atomic_compare_exchange_strong_explicit(&mpi->broken, &expected, why, memory_order_relaxed,
                                          memory_order_relaxed);
  mpi_job abort_job = {0};
  abort_job.kind = JOB_ABORT;
  abort_job.peer = -1;
  abort_job.status = atomic_load_explicit(&mpi->broken, memory_order_relaxed);
  mpi_run_job(mpi, &abort_job);
  weft_wait_all(mpi->eng);
  return atomic_load_explicit(&mpi->broken, memory_order_relaxed);
}

typedef struct seq_word {
  uint64_t hash, calls;
} seq_word;

static int check_sequences(weft_mpi *mpi)
{
  seq_word mine = {mpi->seq_hash, mpi->seq_calls};
  void *got;
  int rc = allgather(mpi, &mine, &got, (int)sizeof mine);
  if (rc)
    return rc;
  seq_word *all = got;
  int first_bad = -1;
  for (int r = 0; r < mpi->size && first_bad < 0; r++)
    if (all[r].hash != all[0].hash || all[r].calls != all[0].calls)
      first_bad = r;
  if (first_bad >= 0) {
    mpi_log(mpi, "the ranks submitted different sequences since weft_mpi_attach: rank 0 made "
                 "%llu sequence calls (hash %016llx), rank %d %llu (hash %016llx); this rank "
                 "%llu. Every rank must register, push and delete the same vars and "
                 "operators in the same order",
            (unsigned long long)all[0].calls, (unsigned long long)all[0].hash, first_bad,
            (unsigned long long)all[first_bad].calls, (unsigned long long)all[first_bad].hash,
            (unsigned long long)mine.calls);
    rc = WEFT_EMISMATCH;
  }
  free(all);
  return rc;
}

int weft_mpi_wait_all(weft_mpi *mpi)
{
  if (!mpi)
    return WEFT_EINVAL;
  int broken = atomic_load_explicit(&mpi->broken, memory_order_relaxed);
  if (broken)
    return end_broken(mpi, broken);

  int rc = check_sequences(mpi);
  if (rc)
    return end_broken(mpi, rc == WEFT_ENOMEM ? WEFT_ECOMM : rc);

  int local = weft_wait_all(mpi->eng);
  broken = atomic_load_explicit(&mpi->broken, memory_order_relaxed);
  if (broken)
    return end_broken(mpi, broken);

  void *got;
  if ((rc = allgather(mpi, &local, &got, (int)sizeof local)))
    return end_broken(mpi, rc == WEFT_ENOMEM ? WEFT_ECOMM : rc);
  int *all = got;
  /* The origin of a failure: the first rank whose own operator failed; a
   * WEFT_EREMOTE only says a failure came by message. */
  int result = 0, from = -1;
  for (int r = 0; r < mpi->size && from < 0; r++)
    if (all[r] && all[r] != WEFT_EREMOTE) {
      result = all[r];
      from = r;
    }
  for (int r = 0; r < mpi->size && from < 0; r++)
    if (all[r]) {
      result = all[r];
      from = r;
    }
  mpi_registry_after_wait(mpi, result != 0);
  if (result && from != mpi->rank)
    mpi_log(mpi, "weft_mpi_wait_all: an operator on rank %d failed with %d (%s)", from, result,
            weft_err_name(result) ? weft_strerror(result) : "its own status");
  free(all);
  return result;
}
