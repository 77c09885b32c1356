/* SPDX-License-Identifier: MIT */
/*
 * weft_mpi_wait_all: the collective wait.
 *
 *   1. The ranks compare their sequences (count and hash of every sequence
 *      call since attach) and whether their attachment broke, before
 *      anything else: a mismatch would leave transfers without a partner,
 *      and the local wait would never end.
 *   2. Each rank waits for its own engine; the progress thread carries the
 *      transfers (and breaks the wait with WEFT_ETIMEDOUT if a rank dies).
 *   3. The ranks compare their results and, again, whether their attachment
 *      broke, so every rank returns the same one.
 *
 * A rank whose attachment broke (an MPI error, there or on another rank:
 * progress.c) still takes part in both comparisons, so every rank reports
 * the break alike, with the same code, and in the same wait: it is known
 * by step 1 if it came before, by step 3 if it came during the wait (then
 * the progress thread's notices end the other ranks' local waits). Only a
 * rank that fell silent (a timeout) returns at once. A wait that reports a
 * break ends the attachment (every later call returns the code at once).
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

/* Ends the attachment with why on this rank: every pending transfer is
 * failed and nothing is posted any more (the progress thread falls silent),
 * so the local wait ends too; every later call returns why at once. */
static int end_attachment(weft_mpi *mpi, int why)
{
  atomic_store_explicit(&mpi->broken, why, memory_order_relaxed);
  mpi->ended = why;
  mpi_job abort_job = {0};
  abort_job.kind = JOB_ABORT;
  abort_job.peer = -1;
  abort_job.status = why;
  mpi_run_job(mpi, &abort_job);
  weft_wait_all(mpi->eng);
  return why;
}

/* Whether a rank's attachment broke, in the words the ranks compare. */
typedef struct break_word {
  int32_t code; /* its mpi->broken */
  int32_t here; /* its mpi->broke_here */
} break_word;

static break_word my_break(weft_mpi *mpi)
{
  break_word w = {atomic_load_explicit(&mpi->broken, memory_order_relaxed),
                  atomic_load_explicit(&mpi->broke_here, memory_order_relaxed)};
  return w;
}

/* The ranks' break words, in rank order: the code is the first rank's that
 * broke (the same on every rank); the message names the first rank where
 * it broke by that rank's own doing, not by another's notice. */
typedef struct breakage {
  int code, origin;
} breakage;

static void note_break(breakage *b, int r, break_word w)
{
  if (w.code && !b->code)
    b->code = w.code;
  if (w.code && w.here && b->origin < 0)
    b->origin = r;
}

static int report_break(weft_mpi *mpi, const breakage *b)
{
  if (b->code && b->origin >= 0 && b->origin != mpi->rank)
    mpi_log(mpi, "weft_mpi_wait_all: the attachment broke on rank %d (%s): it is unusable on "
                 "every rank", b->origin, weft_strerror(b->code));
  else if (b->code && b->origin < 0)
    mpi_log(mpi, "weft_mpi_wait_all: the attachment broke (%s): it is unusable on every rank",
            weft_strerror(b->code));
  return b->code;
}

/* The words the ranks compare in step 1 and in step 3. */
typedef struct seq_word {
  uint64_t hash, calls;
  break_word brk;
} seq_word;

typedef struct result_word {
  int32_t local; /* weft_wait_all's */
  break_word brk;
} result_word;

/* Step 1: 0, WEFT_EMISMATCH, the code some rank's attachment broke with, or
 * the collective's own failure (this rank only). */
static int check_sequences(weft_mpi *mpi)
{
  seq_word mine;
  memset(&mine, 0, sizeof mine);
  mine.hash = mpi->seq_hash;
  mine.calls = mpi->seq_calls;
  mine.brk = my_break(mpi);
  void *got;
  int rc = allgather(mpi, &mine, &got, (int)sizeof mine);
  if (rc)
    return rc;
  seq_word *all = got;
  int first_bad = -1;
  for (int r = 0; r < mpi->size && first_bad < 0; r++)
    if (all[r].hash != all[0].hash || all[r].calls != all[0].calls)
      first_bad = r;
  if (first_bad < 0) {
    breakage b = {0, -1};
    for (int r = 0; r < mpi->size; r++)
      note_break(&b, r, all[r].brk);
    rc = report_break(mpi, &b);
  } else {
    mpi_log(mpi, "the ranks submitted different sequences since weft_mpi_attach: rank 0 made "
                 "%llu sequence calls (hash %016llx), rank %d %llu (hash %016llx); this rank "
                 "%llu. Every rank must register (with the same owner, count and datatype, "
                 "built alike), push and delete the same vars and operators in the same "
                 "order",
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
  if (mpi->ended)
    return end_attachment(mpi, mpi->ended);
  /* A rank that timed out fell silent: it takes part in nothing. */
  if (atomic_load_explicit(&mpi->broken, memory_order_relaxed) == WEFT_ETIMEDOUT)
    return end_attachment(mpi, WEFT_ETIMEDOUT);

  int rc = check_sequences(mpi);
  if (rc)
    return end_attachment(mpi, rc == WEFT_ENOMEM ? WEFT_ECOMM : rc);

  result_word mine;
  mine.local = weft_wait_all(mpi->eng);
  mine.brk = my_break(mpi);
  if (mine.brk.code == WEFT_ETIMEDOUT)
    return end_attachment(mpi, WEFT_ETIMEDOUT);

  void *got;
  if ((rc = allgather(mpi, &mine, &got, (int)sizeof mine)))
    return end_attachment(mpi, rc == WEFT_ENOMEM ? WEFT_ECOMM : rc);
  result_word *all = got;
  breakage b = {0, -1};
  for (int r = 0; r < mpi->size; r++)
    note_break(&b, r, all[r].brk);
  if ((rc = report_break(mpi, &b))) {
    free(all);
    return end_attachment(mpi, rc);
  }
  /* The origin of a failure: the first rank whose own operator failed; a
   * WEFT_EREMOTE only says a failure came by message. */
  int result = 0, from = -1;
  for (int r = 0; r < mpi->size && from < 0; r++)
    if (all[r].local && all[r].local != WEFT_EREMOTE) {
      result = all[r].local;
      from = r;
    }
  for (int r = 0; r < mpi->size && from < 0; r++)
    if (all[r].local) {
      result = all[r].local;
      from = r;
    }
  mpi_registry_after_wait(mpi, result != 0);
  if (result && from != mpi->rank)
    mpi_log(mpi, "weft_mpi_wait_all: an operator on rank %d failed with %d (%s)", from, result,
            weft_err_name(result) ? weft_strerror(result) : "its own status");
  free(all);
  return result;
}
