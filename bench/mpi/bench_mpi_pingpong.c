/* SPDX-License-Identifier: MIT */
/*
 * The cost of a remote read through weft_mpi against a bare MPI round trip,
 * measured side by side in one run (mpirun -np 2).
 *
 *   bare: rank 0 MPI_Isend + MPI_Irecv, rank 1 MPI_Irecv then MPI_Isend
 *         back: one round trip of n bytes each way.
 *   hand-off: the bare round trip, but with MPI on a second thread of each
 *         rank and the data handed to the first one and back (flags, both
 *         threads spinning with sched_yield, as weft's worker and progress
 *         thread do): the floor of any runtime whose transfers run on a
 *         thread other than the one computing, on this machine.
 *   weft: x owned by rank 0, y by rank 1; iteration i pushes an operator on
 *         rank 0 that reads y and writes x, and one on rank 1 that reads x
 *         and writes y: each needs the other's last value, so an iteration
 *         is one round trip of transfers through the engines, progress
 *         threads and var queues. All iterations are pushed, then one
 *         collective wait.
 *
 * Both check their data: every message carries the iteration's stamp, and
 * the receiver verifies it (a mismatch exits non-zero). Prints, on rank 0,
 * one line per size: "pingpong: <bytes> B: bare <us> [min-max], hand-off <us>
 * [min-max], weft <us> [min-max] us per round trip, ratio <weft/bare>,
 * <weft/hand-off>" (medians over rounds).
 * Usage: mpirun -np 2 bench_mpi_pingpong [--iters N] [--rounds R]
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/weft_mpi.h>

static int rank_;

static void fail(const char *what, long a, long b)
{
  fprintf(stderr, "bench_mpi_pingpong: rank %d: %s: %ld, want %ld\n", rank_, what, a, b);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static double bare(char *buf, size_t n, int iters)
{
  int peer = 1 - rank_;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; i++) {
    MPI_Request r[2];
    if (rank_ == 0) {
      memcpy(buf, &i, sizeof i);
      MPI_Isend(buf, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &r[0]);
      MPI_Wait(&r[0], MPI_STATUS_IGNORE);
      MPI_Irecv(buf, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &r[1]);
      MPI_Wait(&r[1], MPI_STATUS_IGNORE);
    } else {
      MPI_Irecv(buf, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &r[1]);
      MPI_Wait(&r[1], MPI_STATUS_IGNORE);
      MPI_Isend(buf, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &r[0]);
      MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    }
    int got;
    memcpy(&got, buf, sizeof got);
    if (got != i)
      fail("bare stamp", got, i);
  }
  double t = MPI_Wtime() - t0;
  MPI_Barrier(MPI_COMM_WORLD);
  return t / iters;
}

/* The hand-off variant: the MPI thread and the computing thread meet on two
 * counters. */
typedef struct handoff_ctx {
  char *buf;
  size_t n;
  int iters;
  _Atomic int ready;   /* iterations the computing thread has finished */
  _Atomic int arrived; /* iterations whose message the MPI thread received */
} handoff_ctx;

static void spin_until(_Atomic int *c, int v)
{
  /* Acquire: pairs with the release store below; publishes the buffer. */
  while (atomic_load_explicit(c, memory_order_acquire) < v)
    sched_yield();
}

static void *handoff_mpi(void *arg)
{
  handoff_ctx *h = arg;
  int peer = 1 - rank_;
  for (int i = 0; i < h->iters; i++) {
    MPI_Request r;
    if (rank_ == 0) {
      spin_until(&h->ready, i + 1);
      MPI_Isend(h->buf, (int)h->n, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    MPI_Irecv(h->buf, (int)h->n, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    /* Release: the received bytes, to the computing thread's acquire. */
    atomic_store_explicit(&h->arrived, i + 1, memory_order_release);
    if (rank_ == 1) {
      spin_until(&h->ready, i + 1);
      MPI_Isend(h->buf, (int)h->n, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
  }
  return NULL;
}

static double handoff(char *buf, size_t n, int iters)
{
  handoff_ctx h = {buf, n, iters, 0, 0};
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  pthread_t th;
  if (pthread_create(&th, NULL, handoff_mpi, &h))
    fail("pthread_create", 1, 0);
  for (int i = 0; i < iters; i++) {
    if (rank_ == 0)
      memcpy(buf, &i, sizeof i);
    else {
      spin_until(&h.arrived, i + 1);
      int got;
      memcpy(&got, buf, sizeof got);
      if (got != i)
        fail("hand-off stamp", got, i);
    }
    /* Release: the buffer, to the MPI thread's acquire in spin_until. */
    atomic_store_explicit(&h.ready, i + 1, memory_order_release);
    if (rank_ == 0) {
      spin_until(&h.arrived, i + 1);
      int got;
      memcpy(&got, buf, sizeof got);
      if (got != i)
        fail("hand-off stamp back", got, i);
    }
  }
  pthread_join(th, NULL);
  double t = MPI_Wtime() - t0;
  MPI_Barrier(MPI_COMM_WORLD);
  return t / iters;
}

typedef struct step {
  weft_mpi *mpi;
  weft_var *in, *out;
  int stamp; /* the in var's expected stamp, and out's new one is stamp + 1 */
  int *bad;
} step;

static int step_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  step *s = arg;
  const char *in = weft_mpi_var_data(s->mpi, s->in);
  char *out = weft_mpi_var_data(s->mpi, s->out);
  int got;
  memcpy(&got, in, sizeof got);
  if (got != s->stamp)
    (*s->bad)++;
  int next = s->stamp + 1;
  memcpy(out, &next, sizeof next);
  return 0;
}

static double through_weft(size_t n, int iters)
{
  weft_engine *eng = NULL;
  weft_mpi *mpi = NULL;
  if (weft_engine_create(&eng, NULL) || weft_mpi_attach(eng, MPI_COMM_WORLD, NULL, &mpi))
    fail("engine or attach", 1, 0);
  char *x = calloc(1, n), *y = calloc(1, n);
  weft_var *vx, *vy;
  weft_var_new(eng, &vx);
  weft_var_new(eng, &vy);
  weft_mpi_var_register(mpi, vx, 0, rank_ == 0 ? x : NULL, (int)n, MPI_BYTE);
  weft_mpi_var_register(mpi, vy, 1, rank_ == 1 ? y : NULL, (int)n, MPI_BYTE);
  int bad = 0;
  step *steps = calloc((size_t)iters * 2, sizeof *steps);
  /* Stamps: y starts at 0; rank 0's step i reads y = 2i, writes x = 2i + 1;
   * rank 1's reads x = 2i + 1, writes y = 2i + 2. */
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; i++) {
    steps[2 * i] = (step){mpi, vy, vx, 2 * i, &bad};
    steps[2 * i + 1] = (step){mpi, vx, vy, 2 * i + 1, &bad};
    for (int k = 0; k < 2; k++) {
      step *s = &steps[2 * i + k];
      weft_op_desc d = {0};
      d.fn = step_fn;
      d.arg = s;
      d.reads = &s->in;
      d.num_reads = 1;
      d.writes = &s->out;
      d.num_writes = 1;
      if (weft_mpi_push(mpi, &d, WEFT_MPI_OWNER))
        fail("push", 1, 0);
    }
  }
  int rc = weft_mpi_wait_all(mpi);
  double t = MPI_Wtime() - t0;
  if (rc)
    fail("wait_all", rc, 0);
  if (bad)
    fail("weft stamps wrong", bad, 0);
  weft_mpi_stats st;
  weft_mpi_get_stats(mpi, &st);
  if (st.recvs != (uint64_t)iters)
    fail("transfers received", (long)st.recvs, iters);
  weft_mpi_detach(mpi);
  weft_engine_destroy(eng);
  free(steps);
  free(x);
  free(y);
  return t / iters;
}

static int cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
  int provided, size, iters = 2000, rounds = 5;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--iters") && i + 1 < argc)
      iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
      rounds = atoi(argv[++i]);
    else {
      if (rank_ == 0)
        fprintf(stderr, "usage: mpirun -np 2 %s [--iters N] [--rounds R]\n", argv[0]);
      MPI_Finalize();
      return 2;
    }
  }
  if (size != 2 || iters < 1 || rounds < 1 || rounds > 64) {
    if (rank_ == 0)
      fprintf(stderr, "bench_mpi_pingpong: needs 2 ranks, iters >= 1, 1 <= rounds <= 64\n");
    MPI_Finalize();
    return 2;
  }
  static const size_t sizes[] = {8, 64 << 10, 2 << 20};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    size_t n = sizes[s];
    int it = n >= (1 << 20) ? (iters / 10 > 0 ? iters / 10 : 1) : iters;
    char *buf = calloc(1, n);
    double b[64], h[64], w[64];
    for (int r = 0; r < rounds; r++) { /* alternating, side by side */
      b[r] = bare(buf, n, it) * 1e6;
      h[r] = handoff(buf, n, it) * 1e6;
      w[r] = through_weft(n, it) * 1e6;
    }
    free(buf);
    qsort(b, (size_t)rounds, sizeof *b, cmp);
    qsort(h, (size_t)rounds, sizeof *h, cmp);
    qsort(w, (size_t)rounds, sizeof *w, cmp);
    double bm = b[rounds / 2], hm = h[rounds / 2], wm = w[rounds / 2];
    if (rank_ == 0)
      printf("pingpong: %zu B: bare %.2f [%.2f-%.2f], hand-off %.2f [%.2f-%.2f], weft %.2f "
             "[%.2f-%.2f] us per round trip, ratio %.2f, %.2f\n",
             n, bm, b[0], b[rounds - 1], hm, h[0], h[rounds - 1], wm, w[0], w[rounds - 1],
             wm / bm, wm / hm);
    fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}
