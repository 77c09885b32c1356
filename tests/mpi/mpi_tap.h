/* SPDX-License-Identifier: MIT */
/*
 * A TAP harness for programs that mpirun starts (tests/mpi): every rank runs
 * every case; a case passes when it passed on every rank (a reduction on
 * MPI_COMM_WORLD, between attachments); rank 0 prints the TAP stream, each
 * rank its own diagnostics on stderr.
 *
 *   static void my_case(mt_ctx *t) { MT_CHECK(t, x == 1, "x is %d", x); }
 *   static const mt_case cases[] = {{"name", my_case}, ...};
 *   int main(int argc, char **argv) { return mt_main(argc, argv, cases, n); }
 */
#ifndef WEFT_TESTS_MPI_TAP_H
#define WEFT_TESTS_MPI_TAP_H

#include <mpi.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <weft/weft_mpi.h>

typedef struct mt_ctx {
  int rank, size;
  bool failed;
  int checks;
} mt_ctx;

typedef struct mt_case {
  const char *name;
  void (*fn)(mt_ctx *t);
  int min_size; /* ranks the case needs; skipped below */
} mt_case;

static inline void mt_fail(mt_ctx *t, const char *file, int line, const char *fmt, ...)
{
  va_list ap;
  fprintf(stderr, "rank %d: %s:%d: ", t->rank, file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  t->failed = true;
}

/* Records a failure and goes on (the case must still make every sequence
 * call the other ranks make). */
#define MT_CHECK(t, cond, ...)                                                                     \
  do {                                                                                             \
    (t)->checks++;                                                                                 \
    if (!(cond))                                                                                   \
      mt_fail((t), __FILE__, __LINE__, __VA_ARGS__);                                               \
  } while (0)

/* MPI_Init_thread as weft_mpi needs it, and this rank's place; false if
 * MPI could not start. */
static inline bool mt_init(int *argc, char ***argv, int *rank, int *size)
{
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
    return false;
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  return true;
}

/* An operator that does nothing. */
static inline int mt_nop(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  (void)arg;
  return 0;
}

/* An engine (automatic) attached to MPI_COMM_WORLD with the given timeout;
 * false if either failed. */
static inline bool mt_attach(int timeout_ms, weft_engine **eng, weft_mpi **mpi)
{
  weft_mpi_config cfg;
  weft_mpi_config_default(&cfg);
  cfg.timeout_ms = timeout_ms;
  return weft_engine_create(eng, NULL) == 0 &&
         weft_mpi_attach(*eng, MPI_COMM_WORLD, &cfg, mpi) == 0;
}

/* Pushes fn(arg) reading in (NULL: nothing) and writing out, with flags,
 * on rank exec (WEFT_MPI_OWNER: out's owner). */
static inline int mt_push(weft_mpi *mpi, weft_op_fn fn, void *arg, weft_var *in, weft_var *out,
                          unsigned flags, int exec)
{
  weft_op_desc d = {0};
  d.fn = fn;
  d.arg = arg;
  d.reads = &in;
  d.num_reads = in != NULL;
  d.writes = &out;
  d.num_writes = 1;
  d.flags = flags;
  return weft_mpi_push(mpi, &d, exec);
}

static inline int mt_main(int argc, char **argv, const mt_case *cases, int n)
{
  mt_ctx base = {0};
  if (!mt_init(&argc, &argv, &base.rank, &base.size))
    return 1;
  if (base.rank == 0) {
    printf("1..%d\n", n);
    fflush(stdout);
  }
  int failures = 0;
  for (int i = 0; i < n; i++) {
    mt_ctx t = base;
    if (cases[i].min_size > base.size) {
      if (base.rank == 0)
        printf("ok %d - %s # SKIP needs %d ranks\n", i + 1, cases[i].name, cases[i].min_size);
      fflush(stdout);
      continue;
    }
    cases[i].fn(&t);
    int mine = t.failed || t.checks == 0, any = 0;
    if (t.checks == 0)
      fprintf(stderr, "rank %d: %s checked nothing\n", t.rank, cases[i].name);
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    failures += any;
    if (base.rank == 0) {
      printf("%sok %d - %s (np %d)\n", any ? "not " : "", i + 1, cases[i].name, base.size);
      fflush(stdout);
    }
  }
  MPI_Finalize();
  return failures ? 1 : 0;
}

#endif /* WEFT_TESTS_MPI_TAP_H */
