/* SPDX-License-Identifier: MIT */
/*
 * The bottom of libweft_mpi: what every other file of src/mpi uses and
 * nothing here calls back up. The process's one MPI lock under
 * MPI_THREAD_SERIALIZED, the sequence hash that every sequence call folds
 * into (compared across ranks by weft_mpi_wait_all) and its step, messages
 * and time.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "mpi/mpi_int.h"

pthread_mutex_t mpi_serial_lock = PTHREAD_MUTEX_INITIALIZER;

uint64_t mpi_hash_fold(uint64_t h, uint64_t v)
{
  /* FNV-1a over the 8 bytes, then a multiply-xorshift round. */
  h ^= 0xcbf29ce484222325ull;
  for (int i = 0; i < 8; i++, v >>= 8)
    h = (h ^ (v & 0xff)) * 0x100000001b3ull;
  h ^= h >> 29;
  return h * 0xbf58476d1ce4e5b9ull;
}

void mpi_seq_fold(weft_mpi *mpi, uint64_t v)
{
  mpi->seq_hash = mpi_hash_fold(mpi->seq_hash, v);
  mpi->seq_calls++;
}

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
