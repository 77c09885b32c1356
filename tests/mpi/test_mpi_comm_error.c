/* SPDX-License-Identifier: MIT */
/*
 * One rank's broken attachment reaches the others (np 2): every rank's wait
 * returns the same code, promptly, with no timeout set (timeout_ms 0: a rank
 * left waiting would wait forever; a watchdog fails the test then).
 *
 *   1. A sequence mismatch that breaks a transfer first: rank 1 registers
 *      rank 0's var with 4 elements instead of 8 and reads it, so its receive
 *      is truncated (an MPI error there). With both ranks sleeping a second
 *      before the wait, rank 1's attachment is broken when the wait begins;
 *      without the sleep the break may come during it. WEFT_EMISMATCH on
 *      both, from the wait, a later push and detach.
 *   2. An MPI error where the sequences agree: the shim below fails the
 *      receive rank 1 posts once its wait's sequence check began, while rank
 *      0's large send to it (a rendezvous: it waits for that receive) is
 *      pending. Rank 1 must tell rank 0, whose wait would never end
 *      otherwise. WEFT_ECOMM on both.
 *
 * Each rank sends its results to rank 0 by point to point after detach;
 * ranks leave with _exit (an abandoned request could hold MPI_Finalize), so
 * tests/mpi/meson.build reads the TAP lines.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpi_tap.h"

/* A hang (the defect this guards against) fails the test instead of
 * holding it until meson's timeout: each case's few transfers take
 * milliseconds, plus the one-second sleep. */
enum { WATCHDOG_S = 25 };

/* ---------------------------------------------------------------- the shim
 * MPI_Irecv and MPI_Iallgather as the library sees them (this executable
 * exports them: tests/mpi/meson.build). Armed, MPI_Irecv fails the first
 * data receive (tag > 0; tag 0 is the library's own) posted after an
 * MPI_Iallgather: the wait's sequence check. Relaxed throughout: each flag
 * publishes only itself. */
static atomic_bool shim_armed, shim_coll_seen, shim_fired;

int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
  atomic_store_explicit(&shim_coll_seen, true, memory_order_relaxed);
  return PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                         request);
}

int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
              MPI_Request *request)
{
  if (tag > 0 && atomic_load_explicit(&shim_armed, memory_order_relaxed) &&
      atomic_load_explicit(&shim_coll_seen, memory_order_relaxed) &&
      !atomic_exchange_explicit(&shim_fired, true, memory_order_relaxed))
    return MPI_ERR_OTHER;
  return PMPI_Irecv(buf, count, datatype, source, tag, comm, request);
}

/* ---------------------------------------------------------------- harness */

static int rank_, size_, tests_;

static void watchdog(int sig)
{
  (void)sig;
  static const char msg[] = "not ok - a rank hung (a wait that never ended)\n";
  ssize_t w = write(STDOUT_FILENO, msg, sizeof msg - 1);
  (void)w;
  _exit(1);
}

typedef struct result {
  double ok, wait, push, detach;
} result;

/* Rank 0 prints one TAP line per rank: all four as wanted. */
static void report(const char *name, result mine, int want)
{
  fprintf(stderr, "rank %d: %s: setup %g, wait_all %g, push %g, detach %g\n", rank_, name,
          mine.ok, mine.wait, mine.push, mine.detach);
  if (rank_ != 0) {
    MPI_Send(&mine, 4, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD);
    return;
  }
  for (int r = 0; r < size_; r++) {
    result got = mine;
    if (r)
      MPI_Recv(&got, 4, MPI_DOUBLE, r, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    bool pass = got.ok == 1 && got.wait == want && got.push == want && got.detach == want;
    printf("%sok %d - %s: rank %d: wait_all, push and detach return %s (%g %g %g)\n",
           pass ? "" : "not ", ++tests_, name, r, weft_err_name(want), got.wait, got.push,
           got.detach);
  }
  fflush(stdout);
}

static int nop(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  (void)arg;
  return 0;
}

/* ------------------------------------------------------------------ cases */

static void truncated_mismatch(const char *name, bool sleep_first)
{
  alarm(WATCHDOG_S);
  weft_engine *eng = NULL;
  weft_mpi *mpi = NULL;
  bool ok = mt_attach(0, &eng, &mpi);
  int a[8] = {1, 2, 3, 4, 5, 6, 7, 8}, b[8] = {0};
  weft_var *va = NULL, *vb = NULL;
  ok = ok && weft_var_new(eng, &va) == 0 && weft_var_new(eng, &vb) == 0;
  ok = ok && weft_mpi_var_register(mpi, va, 0, rank_ == 0 ? a : NULL, rank_ == 0 ? 8 : 4,
                                   MPI_INT) == 0;
  ok = ok && weft_mpi_var_register(mpi, vb, 1, rank_ == 1 ? b : NULL, 8, MPI_INT) == 0;
  ok = ok && mt_push(mpi, nop, NULL, va, vb, 0, WEFT_MPI_OWNER) == 0; /* on rank 1 */
  if (sleep_first)
    sleep(1); /* rank 1's receive fails meanwhile */
  result r = {ok, 0, 0, 0};
  r.wait = weft_mpi_wait_all(mpi);
  r.push = mt_push(mpi, nop, NULL, va, vb, 0, WEFT_MPI_OWNER);
  r.detach = weft_mpi_detach(mpi);
  weft_engine_destroy(eng);
  alarm(0);
  report(name, r, WEFT_EMISMATCH);
}

enum { BIG = 1 << 18 }; /* ints: 1 MiB, far past Open MPI's eager limit */

/* Rank 1's operator that writes a: returns once this rank's wait posted its
 * sequence check, so the receive that follows it comes after. */
static int hold_until_check(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  (void)arg;
  struct timespec ms = {0, 1000000};
  while (!atomic_load_explicit(&shim_coll_seen, memory_order_relaxed))
    nanosleep(&ms, NULL);
  return 0;
}

static void error_after_check(void)
{
  alarm(WATCHDOG_S);
  weft_engine *eng = NULL;
  weft_mpi *mpi = NULL;
  bool ok = mt_attach(0, &eng, &mpi);
  int *a = rank_ == 0 ? calloc(BIG, sizeof *a) : NULL, g[4] = {0};
  weft_var *va = NULL, *vg = NULL;
  ok = ok && (rank_ != 0 || a) && weft_var_new(eng, &va) == 0 && weft_var_new(eng, &vg) == 0;
  ok = ok && weft_mpi_var_register(mpi, va, 0, a, BIG, MPI_INT) == 0;
  ok = ok && weft_mpi_var_register(mpi, vg, 1, rank_ == 1 ? g : NULL, 4, MPI_INT) == 0;
  /* Armed from here: MPI_Iallgather marks the wait's sequence check. */
  atomic_store_explicit(&shim_coll_seen, false, memory_order_relaxed);
  atomic_store_explicit(&shim_armed, rank_ == 1, memory_order_relaxed);
  /* Rank 1 receives a (before the wait: not failed), holds it until its
   * wait began, and sends it back; rank 0 writes it, and rank 1 reads it
   * again: that receive, after the check, fails, and rank 0's send of a to
   * it stays pending. */
  ok = ok && mt_push(mpi, hold_until_check, NULL, NULL, va, 0, 1) == 0;
  ok = ok && mt_push(mpi, nop, NULL, NULL, va, 0, 0) == 0;
  ok = ok && mt_push(mpi, nop, NULL, va, vg, 0, 1) == 0;
  result r = {ok, 0, 0, 0};
  r.wait = weft_mpi_wait_all(mpi);
  r.push = mt_push(mpi, nop, NULL, va, vg, 0, 1);
  r.detach = weft_mpi_detach(mpi);
  weft_engine_destroy(eng);
  alarm(0);
  if (rank_ == 1 && !atomic_load_explicit(&shim_fired, memory_order_relaxed)) {
    fprintf(stderr, "rank 1: the shim failed no receive (is it linked in?)\n");
    r.ok = 0;
  }
  atomic_store_explicit(&shim_armed, false, memory_order_relaxed);
  /* a is left allocated: rank 0's abandoned send may still read it. */
  report("an MPI error after the sequence check", r, WEFT_ECOMM);
}

int main(int argc, char **argv)
{
  if (!mt_init(&argc, &argv, &rank_, &size_))
    return 1;
  if (size_ != 2) {
    if (rank_ == 0)
      printf("1..0 # SKIP needs 2 ranks\n");
    MPI_Finalize();
    return 0;
  }
  signal(SIGALRM, watchdog);
  if (rank_ == 0) {
    printf("1..6\n");
    fflush(stdout);
  }
  truncated_mismatch("a truncating mismatch, broken before the wait", true);
  truncated_mismatch("a truncating mismatch, no sleep", false);
  error_after_check();
  /* The other ranks leave only once rank 0 printed everything: mpirun ends
   * the job when one rank leaves, and a rank 0 still waiting (the defect)
   * must live to print its failure. */
  int done = 1;
  alarm(WATCHDOG_S);
  if (rank_ == 0)
    for (int r = 1; r < size_; r++)
      MPI_Send(&done, 1, MPI_INT, r, 2, MPI_COMM_WORLD);
  else
    MPI_Recv(&done, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  _exit(0);
}
